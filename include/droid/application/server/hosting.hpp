// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a transport needs of a server beyond the API a tool author calls: the tool a
/// request names, the changes the server announces, and the task engine's store and
/// running tools.
///
/// Application layer, transport-facing. Why a header of its own: the HTTP endpoint and the
/// scale-out module used to reach these through the engine's private headers
/// (`server_core`, `task_engine`), so a change inside the engine could break an adapter
/// that nobody thought of as its user. These few functions are the promise instead;
/// `scripts/check_layers` refuses an adapter that includes a private application header.
/// Writing a server never needs this header.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <droid/application/server/server.hpp>
#include <droid/application/server/task_store.hpp>

namespace droid::hosting {

/// Something to tell when what a server offers changes.
///
/// Why an interface: the server must not know who listens. A 2025 session filters by its
/// negotiated capabilities and subscriptions, a 2026 `subscriptions/listen` stream by its
/// filter, and the scale-out module republishes the change to the other instances.
/// Affinity: called on whichever thread made the change; implementations post to their own.
class change_listener {
 public:
  virtual ~change_listener() = default;
  /// `notifications/{tools,prompts,resources}/list_changed`, by `method`.
  virtual void list_changed(std::string_view method) = 0;
  /// `notifications/resources/updated` for `uri`.
  virtual void resource_updated(std::string_view uri) = 0;
};

/// The tool `srv` serves as `name`, or null. Why a transport asks: some checks run before
/// the engine sees a request (the scopes a tool requires, the `Mcp-Param-*` headers its
/// schema mirrors, whether its call may become a task). Any thread; no lock.
[[nodiscard]] std::shared_ptr<const detail::tool_entry> find_tool(const server& srv, std::string_view name);

/// Hands the client's notification `msg` (from `peer`) to the handler `srv` registered for
/// its method (`server::on_notification`), if any, after the notification middleware
/// (`server::use_on_notifications`) let it on; true when a handler ran. For a transport that
/// takes notifications outside a session (stateless HTTP). Runs the handler on the
/// calling thread; never throws.
bool deliver_notification(const server& srv, const ir::message& msg, const peer_info& peer);
/// Tells `listener` of every change `srv` announces until the listener is destroyed (held
/// weakly: dropping the last reference unsubscribes).
void listen(const server& srv, const std::shared_ptr<change_listener>& listener);
/// Tells `srv`'s sessions and listeners that a list changed (`method`), as a registration
/// would: for a change another instance of a cluster announced.
void announce_list_changed(const server& srv, std::string_view method);
/// Tells `srv`'s subscribed sessions and its listeners that `uri` changed.
void announce_resource_updated(const server& srv, std::string_view uri);

/// The store `srv`'s tasks are recorded in (the default in-memory one, the application's,
/// or the wrapper `wrap_task_store` installed).
[[nodiscard]] task_store& task_records(const server& srv);
/// The default in-memory store, or null when the application gave its own
/// (`server_options::tasks.store`).
[[nodiscard]] std::shared_ptr<memory_task_store> default_task_store(const server& srv);
/// Puts `wrapper` (which must wrap `task_records(srv)`) in its place. Why: a transport that
/// shares tasks with other instances writes every change through. Call it before `srv`
/// serves anything; never while a request may read the store.
void wrap_task_store(const server& srv, std::shared_ptr<task_store> wrapper);
/// Stops task `id`'s tool on the shard that runs it, from any thread; nothing when it runs
/// nowhere in this process. For a task another instance adopted, or whose record the
/// shared store lost.
void stop_task_tool(const server& srv, const std::string& id);

}  // namespace droid::hosting
