// SPDX-License-Identifier: BSL-1.0
/// @file
/// What the runner remembers of a request for its `request_observer`, between the start
/// and the end it reports.
///
/// Application layer, private. Made only when an observer is set, so a server without
/// one reads no clock and allocates nothing for it; the runner's record holds it by
/// pointer and every exit path of a request ends it once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <droid/application/server/observer.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/server.hpp>
#include <droid/domain/ir/json_node.hpp>

namespace droid::detail {

/// One observed request. Why copies of the strings: the request's method view, its
/// params and (for a retry) its peer are gone by the time a spawned request ends.
class observation {
 public:
  /// Starts observing a request of `method` for `peer` (`params` may be null) and tells
  /// `to`.
  observation(const server& srv, request_observer& to, std::string_view method, const ir::json_node* params,
              const peer_info& peer, std::size_t bytes_in)
      : srv_(srv), to_(to), start_(std::chrono::steady_clock::now()), method_(method),
        principal_(peer.principal), version_(peer.protocol_version), modern_(peer.is_modern()),
        bytes_in_(bytes_in) {
    if (params) name_ = name_of(method, *params);
    request_event e = event();
    try {
      to_.request_started(e);
    } catch (const std::exception& x) {
      failed(x.what());
    } catch (...) {
      failed("a non-standard exception");
    }
  }
  observation(const observation&) = delete;
  observation& operator=(const observation&) = delete;

  /// Reports the end once (later calls do nothing: a path that ends a request may be
  /// reached after another already reported it).
  void end(request_outcome outcome, std::int64_t code, std::size_t bytes_out) {
    if (ended_) return;
    ended_ = true;
    request_event e = event();
    e.outcome = outcome;
    e.error_code = code;
    e.bytes_out = bytes_out;
    e.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
    try {
      to_.request_ended(e);
    } catch (const std::exception& x) {
      failed(x.what());
    } catch (...) {
      failed("a non-standard exception");
    }
  }
  [[nodiscard]] bool ended() const noexcept { return ended_; }

  /// The params member that names what a request of `method` concerns ("name", "uri"),
  /// or empty for methods that name nothing.
  static std::string_view name_key(std::string_view method) noexcept {
    if (method == "tools/call" || method == "prompts/get") return "name";
    if (method == "resources/read" || method == "resources/subscribe" || method == "resources/unsubscribe") return "uri";
    return {};
  }
  /// What identifies the request within its method: a tool or prompt name, or a URI.
  static std::string name_of(std::string_view method, const ir::json_node& params) {
    const std::string_view key = name_key(method);
    ir::json_node v;
    if (key.empty() || params.kind() != ir::json_node::type::object || !params.find(key, v) ||
        v.kind() != ir::json_node::type::string)
      return {};
    return std::string(v.string());
  }

 private:
  void failed(std::string_view what) const {
    srv_.diagnose(diagnostic_level::error, "request observer failed", {{"method", method_}, {"error", what}});
  }
  [[nodiscard]] request_event event() const noexcept {
    request_event e;
    e.method = method_;
    e.name = name_;
    e.principal = principal_;
    e.protocol_version = version_;
    e.modern = modern_;
    e.bytes_in = bytes_in_;
    return e;
  }

  const server& srv_;
  request_observer& to_;
  std::chrono::steady_clock::time_point start_;
  std::string method_;
  std::string name_;
  std::string principal_;
  std::string version_;
  bool modern_ = false;
  bool ended_ = false;
  std::size_t bytes_in_ = 0;
};

/// Starts observing when `srv` has an observer (null otherwise: the one pointer test).
inline std::unique_ptr<observation> observe(const server& srv, std::string_view method, const ir::json_node* params,
                                            const peer_info& peer, std::size_t bytes_in) {
  request_observer* to = srv.options().observer.get();
  if (!to) return nullptr;
  return std::make_unique<observation>(srv, *to, method, params, peer, bytes_in);
}

/// The outcome a reply stands for.
inline request_outcome outcome_of(bool is_error, bool tool_error) noexcept {
  return is_error ? request_outcome::error : tool_error ? request_outcome::tool_error : request_outcome::ok;
}

}  // namespace droid::detail
