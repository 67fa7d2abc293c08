// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::middleware::access_log`: a line (or a record) per request, with its time, and
/// that time into `droid::metrics`.
///
/// Application layer, free of I/O of its own: lines go where `write` says (standard error
/// when unset, never standard output, which carries stdio's protocol).
///
///     auto m = std::make_shared<droid::metrics>();
///     server.use(droid::middleware::access_log({.metrics = m}));
///     // method=tools/call name=echo tenant=alice era=2026-07-28 outcome=ok code=0 us=84
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <droid/application/server/metrics.hpp>
#include <droid/application/server/middleware.hpp>

namespace droid::middleware {

/// One request as the access log saw it. Views are valid during the call only.
struct access_entry {
  std::string_view method{};  ///< the JSON-RPC method
  std::string_view name{};  ///< the tool, URI or prompt (empty for other methods)
  std::string_view tenant{};  ///< principal, else address, else empty
  std::string_view protocol_version{};  ///< the negotiated or requested version
  /// "ok", "tool_error", "error" (a JSON-RPC error) or "exception" (a later step threw;
  /// the client gets -32603).
  std::string_view outcome{};
  std::int64_t error_code = 0;  ///< the JSON-RPC code of an error
  /// From this middleware to the answer coming back through it. A tool that asked the
  /// client something counts the wait; a call that became a task counts until its tool
  /// ended (its client was answered with the task before).
  std::chrono::nanoseconds duration{0};
};

/// Where the access log goes.
struct access_log_options {
  /// Receives one logfmt line per request (values quoted and escaped when they hold a
  /// space, a quote, `=` or a control character, so a client-chosen name cannot forge a
  /// line); unset: standard error. Must not throw; called on the request's shard.
  std::function<void(std::string_view line)> write{};
  /// Receives each entry instead of a line, when set.
  std::function<void(const access_entry&)> record{};
  /// Also records each request's time here, as stage `stage`
  /// (`droid_middleware_duration_seconds{stage="..."}`).
  std::shared_ptr<droid::metrics> metrics{};
  std::string stage = "access_log";  ///< see `metrics`
};

/// The access-log middleware. Put it first to time everything after the transport, or
/// last to time the method alone. Throws `std::length_error` when `metrics` has no
/// room for another stage.
[[nodiscard]] handler access_log(access_log_options options = {});

/// `e` as the logfmt line `access_log` writes.
[[nodiscard]] std::string to_line(const access_entry& e);

}  // namespace droid::middleware
