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
#include <optional>
#include <string_view>

#include <droid/application/server/middleware.hpp>
#include <droid/domain/ir/json_node.hpp>

namespace droid::middleware::detail {

/// The friend of `request`, `response` and `next` that the engine goes through. Why one
/// struct: the public types keep every engine-facing member private, and a struct of
/// static functions is the one door the engine needs.
struct access {
  /// A request of `method` for the chain `c`, ending in `last`. `params` (null when
  /// absent) is the tree being admitted; its text is `params_text` when the caller has
  /// it, else `message`'s params, else written from the tree, and is copied only if asked
  /// for or if the chain has not reached the method when admission ends (`detach`).
  [[nodiscard]] static request make(std::shared_ptr<const chain> c, std::string_view method,
                                    const ir::json_node* params, const ir::message* message,
                                    std::string_view params_text, const ir::request_id& id, const peer_info& peer,
                                    const request_origin* origin, terminal last);
  /// Marks `req` as being admitted: until `detach`, its views of the message are valid,
  /// and `*live` points to it (cleared when it no longer needs them).
  static void admitting(request& req, request** live) noexcept {
    req.live_ = live;
    *live = &req;
  }
  /// Admission is over: `req` keeps its params as text from now on.
  static void detach(request& req);
  /// The tree the method is served from, when the request is still being admitted and
  /// its params were not rewritten (then `has_tree` is true; the tree is null for a
  /// request without params).
  [[nodiscard]] static const ir::json_node* live_tree(const request& req, bool& has_tree) noexcept {
    has_tree = req.live_ != nullptr;
    return req.tree_;
  }
  /// The whole chain for `req`: `co_await access::first(req)(req)`.
  [[nodiscard]] static next first(const request& req) noexcept { return next(req.chain_.get(), 0); }
  /// Runs the guards of a chain of guards alone: the first refusal, or nothing.
  [[nodiscard]] static std::optional<response> check(request& req) {
    for (const link& l : req.chain_->links)
      if (std::optional<response> refused = l.check(req)) return refused;
    return std::nullopt;
  }
  /// The method's answer for `req` (the chain's last step), once.
  [[nodiscard]] static std::variant<droid::detail::reply, task<droid::detail::reply>> serve(request& req);
  /// The engine's answer a response carries.
  [[nodiscard]] static droid::detail::reply release(response&& r) noexcept { return std::move(r.reply_); }
  /// The params the method is served with, as text (after admission, or rewritten).
  [[nodiscard]] static std::string_view method_params(const request& req) { return req.params_text(); }
};

}  // namespace droid::middleware::detail
