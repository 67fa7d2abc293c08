// SPDX-License-Identifier: BSL-1.0
/// @file
/// Custom methods: requests and notifications an extension adds to MCP, registered with
/// typed params and results as tools are (`server::method`, `server::on_notification`).
///
/// Application layer. SEP-2133 lets an extension define methods of its own (a skills
/// registry's `skills/list`, a vendor's `com.example/search`). A server registers one
/// here; the engine serves it beside the built-in methods, in both protocol eras and on
/// every transport, with the same refusals: unknown to a client of an era it is not
/// offered in, gated on the extension it belongs to, `_meta` read as for any request.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/json/object.hpp>

#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/resource.hpp>
#include <droid/domain/mcp/schema.hpp>

namespace droid {

/// How a custom method is offered.
struct method_options {
  /// The extension the method belongs to (`com.example/search`), or empty. Set, the
  /// server declares the extension (with empty settings unless `server::extension` gave
  /// some), and a request from a client that did not declare it is refused: -32021 with
  /// `requiredCapabilities` naming it in 2026-07-28 (HTTP 400), -32601 in a 2025 session,
  /// whose `initialize` is where it would have declared it.
  std::string extension{};
  /// The cache hint a 2026-07-28 result carries (`ttlMs`, `cacheScope`); none: no hint.
  /// For methods whose result a client may keep, as `skills/list`'s.
  std::optional<cache_hint> cache{};
  bool in_2025 = true;  ///< offered to 2025 sessions (and stateless 2025 requests)
  bool in_2026 = true;  ///< offered to 2026-07-28 requests
};

namespace detail {

/// A registered custom request.
///
/// Why shared_ptr (in the catalog): as with tools, a method removed while a call runs must
/// outlive the call, whose coroutine refers to the handler's captures.
struct method_entry {
  std::string name;
  method_options options;
  /// Decodes `params` now (they are valid only during this call) and returns the task
  /// that computes the result object. Throws `protocol_error` (-32602) for params that do
  /// not decode; the task may throw `protocol_error` for any other JSON-RPC error, and
  /// any other exception becomes -32603. Why an object and not its text: the engine
  /// puts its `_meta` first before writing it, once.
  std::function<task<boost::json::object>(tool_context&, const ir::json_node* params)> invoke;
};

/// A registered custom notification's handler: the sender's view and its params (null
/// when it sent none).
struct notification_entry {
  std::string name;
  method_options options;
  std::function<void(const peer_info&, const ir::json_node* params)> deliver;
};

/// The params a custom method's handler takes: `params` without the protocol's `_meta`
/// (a 2026 request always has one), decoded into `P`. Throws `protocol_error` -32602
/// naming the first problem.
template <class P>
P decode_method_params(const ir::json_node* params) {
  P out{};
  std::string error;
  boost::json::value whole;
  if (params && !decode(*params, whole, error))
    throw protocol_error(-32602, "Invalid params: " + error);
  if (whole.is_object()) whole.as_object().erase("_meta");
  if constexpr (std::is_same_v<P, boost::json::object>) {
    if (whole.is_object()) out = std::move(whole.as_object());
    return out;
  } else {
    const std::string text = whole.is_object() ? ir::to_json_text(whole) : std::string("{}");
    bool ok = false;
    const std::error_code ec = ir::visit_json(text, [&](const ir::json_node& n) { ok = decode(n, out, error); });
    if (ec || !ok) throw protocol_error(-32602, "Invalid params: " + error);
    return out;
  }
}

/// A custom method's result as the object it is sent as: `{}` for `void`, a described
/// struct's members, or the object itself.
template <class R>
task<boost::json::object> method_result(task<R> work) {
  if constexpr (std::is_void_v<R>) {
    co_await std::move(work);
    co_return boost::json::object{};
  } else if constexpr (std::is_same_v<R, boost::json::object>) {
    co_return co_await std::move(work);
  } else {
    R value = co_await std::move(work);
    boost::json::value json = to_json_value(value);
    // A described struct is written as an object; this is the guard for one that is not.
    if (!json.is_object()) throw protocol_error(-32603, "Internal error: the method's result is not a JSON object");
    co_return std::move(json.as_object());
  }
}

}  // namespace detail
}  // namespace droid
