// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::request_observer`: told when each request the engine serves starts and ends.
///
/// Application layer, free of I/O. Set one in `server_options::observer` to count, time
/// or log requests (`droid::metrics` is one, for Prometheus). Unset, it costs the request
/// path one pointer test: no clock is read and nothing is allocated.
///
///     struct printer final : droid::request_observer {
///       void request_ended(const droid::request_event& e) override {
///         std::fprintf(stderr, "%.*s %s %lld us\n", int(e.method.size()), e.method.data(),
///                      droid::to_string(e.outcome).data(),
///                      static_cast<long long>(e.duration.count() / 1000));
///       }
///     };
///     droid::server_options o;
///     o.observer = std::make_shared<printer>();
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace droid {

/// How a request ended, as far as its client is concerned.
///
/// Why more than ok/error: a tool's own failure (`isError`) is a successful JSON-RPC
/// answer, and a 2026-07-28 `input_required` round or a request that became a task is
/// neither a failure nor the end of the work; a dashboard that lumped them together
/// would misreport both latency and errors.
enum class request_outcome : std::uint8_t {
  ok,              ///< a result
  error,           ///< a JSON-RPC error (`request_event::error_code` says which)
  tool_error,      ///< a `tools/call` result with `isError: true`
  cancelled,       ///< cancelled by the client (or the server's end); nothing was answered
  input_required,  ///< a 2026-07-28 round: the tool asked the client something
  task,            ///< answered with a task id; the tool runs on (docs/tasks.md)
};
/// Number of `request_outcome` values (for tables indexed by outcome).
inline constexpr std::size_t request_outcome_count = 6;

/// The outcome's lower-case name ("ok", "error", "tool_error", "cancelled",
/// "input_required", "task"), as metrics label it.
[[nodiscard]] constexpr std::string_view to_string(request_outcome o) noexcept {
  constexpr std::string_view names[request_outcome_count] = {"ok",        "error",          "tool_error",
                                                             "cancelled", "input_required", "task"};
  return names[static_cast<std::size_t>(o)];
}

/// One request as an observer sees it. Every view is valid only during the call it is
/// passed to: copy what you keep.
struct request_event {
  /// The JSON-RPC method (`tools/call`, ...).
  std::string_view method{};
  /// The tool's name (`tools/call`), the resource's URI (`resources/read`, and the
  /// subscribe methods), or the prompt's name (`prompts/get`); empty for other methods.
  std::string_view name{};
  /// Who the transport authenticated the request as (`peer_info::principal`, a
  /// `droid::principal::key()`); empty without authentication.
  std::string_view principal{};
  /// The negotiated (2025 session) or requested (2026-07-28) protocol version.
  std::string_view protocol_version{};
  /// True for a 2026-07-28 request (no session).
  bool modern = false;
  /// Size of the request message as received, in bytes (0 when unknown: a 2026-07-28
  /// retry handed to the shard that keeps its frame).
  std::size_t bytes_in = 0;

  // ---- set in `request_ended` only --------------------------------------------------
  request_outcome outcome = request_outcome::ok;  ///< how it ended
  std::int64_t error_code = 0;  ///< the JSON-RPC error code when `outcome` is `error`
  /// From admission to the answer leaving the engine (for a retry of a 2026 round, from
  /// the retry's admission: each round is a request of its own).
  std::chrono::nanoseconds duration{0};
  /// Size of the answer the engine sent for the request, in bytes (0 when cancelled).
  std::size_t bytes_out = 0;
};

/// Told at the start and the end of every request the engine serves, whichever protocol
/// era and transport carry it.
///
/// Why an interface and not two `std::function`s: a metrics table, a tracer and a logger
/// each keep state between the two calls, and one object with two virtuals is one
/// pointer test when unset.
/// Affinity: called on the shard that serves the request, so from several threads at
/// once (one per HTTP shard): an implementation must be thread-safe, and should not
/// block, because it runs on the request path. Every started request ends exactly once;
/// a request refused before admission (a duplicate id, a malformed retry) starts and
/// ends in the same moment. The 2025 session's own lifecycle methods (`initialize`,
/// `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`) are answered by
/// the session, not the engine, and are not reported.
/// Must not throw: an exception is caught and logged, and the request goes on.
class request_observer {
 public:
  virtual ~request_observer() = default;
  /// The request was admitted (`outcome` and later members are unset).
  virtual void request_started(const request_event& /*event*/) {}
  /// The request was answered, refused, cancelled, or became a round or a task.
  virtual void request_ended(const request_event& event) = 0;
};

}  // namespace droid
