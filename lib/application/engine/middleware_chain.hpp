// SPDX-License-Identifier: BSL-1.0
/// @file
/// The engine's side of middleware: building a chain's request, running the chain, and
/// taking the engine's answer back out of its response.
///
/// Application layer, private. The runner (engine/request_runner.cpp) puts a request
/// through the chain when the server has one; the session and the stateless front put a
/// client's notifications through the notification chain (catalog/server_core.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include <droid/application/server/middleware.hpp>
#include <droid/domain/ir/json_node.hpp>

namespace droid::middleware::detail {

/// The friend of `request`, `response` and `next` that the engine goes through. Why one
/// struct: the public types keep every engine-facing member private, and a struct of
/// static functions is the one door the engine needs.
struct access {
  /// A request of `method` for the chain `c`, ending in `last`. `params` (null when
  /// absent) is read now; `params_text` is its text when the caller has it (empty: it is
  /// written from `params`), kept because the method runs after the current parse of the
  /// message is gone (the chain is a coroutine that may suspend before it calls next).
  [[nodiscard]] static request make(std::shared_ptr<const chain> c, std::string_view method,
                                    const ir::json_node* params, std::string_view params_text,
                                    const ir::request_id& id, const peer_info& peer, const request_origin* origin,
                                    terminal last);
  /// Runs the whole chain for `req`.
  [[nodiscard]] static task<response> run(request& req);
  /// The rest of the chain from handler `index` on.
  [[nodiscard]] static task<response> step(const chain* c, std::size_t index, request& req);
  /// The engine's answer a response carries.
  [[nodiscard]] static droid::detail::reply release(response&& r) noexcept { return std::move(r.reply_); }
  /// The params the method is served with: `req.params_text()`.
  [[nodiscard]] static std::string_view method_params(const request& req) noexcept { return req.params_text_; }
};

}  // namespace droid::middleware::detail
