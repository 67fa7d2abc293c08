// SPDX-License-Identifier: BSL-1.0
/// @file
/// `subscriptions/listen` (MCP 2026-07-28): a request whose answer is a stream of change
/// notifications, open until the client cancels it.
///
/// Application layer, private. It replaces the 2025 standalone GET stream and
/// `resources/subscribe`: the client names what it wants, the server acknowledges what it
/// will send, and every notification after that carries the listen request's id in
/// `_meta["io.modelcontextprotocol/subscriptionId"]`, so several listens can share one
/// channel (stdio) and the client can tell them apart.
#pragma once

#include <stop_token>
#include <variant>

#include <asio/any_io_executor.hpp>

#include <droid/application/server/tool_context.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/message.hpp>

#include "application/engine/dispatcher.hpp"

namespace droid::detail {

/// Serves one `subscriptions/listen`: checks the filter, sends the acknowledgement on
/// `channel`, then forwards every matching change until `stop` is requested (the client
/// closed the stream or sent `notifications/cancelled`, or the server is stopping).
///
/// With `taskIds`, it also pushes each of the caller's named tasks (`notifications/tasks`)
/// when it changes, and once at the start.
///
/// Lifetime: `channel` and `id` belong to the request's record, which outlives the task;
/// `params` and `peer` are read during the call only.
/// Errors: `invalid_params` when `notifications` is missing or not a filter object;
/// `missing_client_capability` for `taskIds` without the tasks extension.
[[nodiscard]] std::variant<reply, task<reply>> listen(server& srv, const ir::json_node* params, const peer_info& peer,
                                                      request_channel& channel,
                                                      const ir::request_id& id, std::stop_token stop,
                                                      const asio::any_io_executor& executor);

}  // namespace droid::detail
