// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::metrics`: a `request_observer` that counts and times requests and renders them
/// in the Prometheus text exposition format (version 0.0.4).
///
/// Application layer, free of I/O: it renders text, and a transport serves it (over HTTP,
/// `http::options::routes`; see docs/observability.md).
///
///     auto m = std::make_shared<droid::metrics>();
///     droid::server_options so;
///     so.observer = m;
///     droid::server srv({"demo", "1.0"}, so);
///     // later, on a scrape:
///     const droid::metrics::gauge open[] = {{"droid_http_sessions", "Open sessions.", 3}};
///     std::string text = m->render(open);
#pragma once

#include <array>
#include <chrono>
#include <mutex>
#include <vector>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <droid/application/server/observer.hpp>

namespace droid {

/// Request counts by method and outcome, duration histograms and byte counters by
/// method, and the gauges a caller supplies when it renders.
///
/// Why a fixed table of methods: a label set per arbitrary method string would let any
/// client grow the exposition (and the server's memory) without bound by inventing
/// methods; methods MCP does not define are counted under `method="other"`. Why atomics
/// and no mutex: every shard records into the same cells at once, and a relaxed
/// increment is all a counter needs (a scrape may see a request counted in one family
/// and not yet in the next, which Prometheus tolerates).
/// Affinity: `request_started`, `request_ended` and `render` may be called from any
/// thread at once.
class metrics final : public request_observer {
 public:
  /// A value the caller knows at render time (open sessions, connections, ...), rendered
  /// as a Prometheus gauge. `name` must match `[a-zA-Z_:][a-zA-Z0-9_:]*`.
  struct gauge {
    std::string_view name;  ///< the metric's name (`droid_http_sessions`)
    std::string_view help;  ///< its `# HELP` text
    double value = 0;       ///< its value now
  };

  /// Upper bounds of the duration histogram's buckets, in seconds: 100 µs to 10 s, about
  /// three per decade (a `ping` lands in the first, a sampled tool call in the last).
  static constexpr std::array<double, 16> bucket_bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                           0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                           1,      2.5,     5,      10};
  /// The methods with label sets of their own; anything else is `other` (the last).
  static constexpr std::array<std::string_view, 21> methods = {
      "initialize",         "ping",           "tools/list",
      "tools/call",         "resources/list", "resources/templates/list",
      "resources/read",     "prompts/list",   "prompts/get",
      "completion/complete", "logging/setLevel", "resources/subscribe",
      "resources/unsubscribe", "server/discover", "subscriptions/listen",
      "tasks/get",          "tasks/result",   "tasks/list",
      "tasks/cancel",       "tasks/update",   "other"};

  /// Empty tables: every count zero.
  metrics() = default;
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  /// Counts the request in flight.
  void request_started(const request_event& event) override;
  /// Counts the request by method and outcome, its duration and its bytes.
  void request_ended(const request_event& event) override;

  /// The exposition: every family that has recorded something, then `gauges` in order.
  /// Throws `std::invalid_argument` for a gauge whose name Prometheus would reject.
  [[nodiscard]] std::string render(std::span<const gauge> gauges = {}) const;

  /// A span of the request path that middleware times (`middleware::access_log` with
  /// metrics), rendered as `droid_middleware_duration_seconds{stage="..."}`.
  using stage = std::size_t;
  /// Stages one `metrics` holds. Why bounded: each is a label set of its own, and stages
  /// are named by code, so a handful covers every chain.
  static constexpr std::size_t max_stages = 8;
  /// The stage named `name` (a new one, or the one already named so). Throws
  /// `std::length_error` past `max_stages`. Affinity: any thread.
  [[nodiscard]] stage add_stage(std::string_view name);
  /// Records one request's time in stage `s`. Affinity: any thread; no lock.
  void record_stage(stage s, std::chrono::nanoseconds d) noexcept;

  /// The Content-Type a scrape is answered with.
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  /// `value` escaped as a label value of the text format (backslash, double quote and
  /// line feed), appended to `out`.
  static void append_label_value(std::string& out, std::string_view value);

 private:
  static constexpr std::size_t method_count = methods.size();
  /// The row of `method` in the tables (`other` when MCP does not define it).
  [[nodiscard]] static std::size_t row_of(std::string_view method) noexcept;

  /// One method's cells. Why aligned to a cache line: shards serving different methods
  /// then do not contend for one line.
  struct alignas(64) row {
    std::array<std::atomic<std::uint64_t>, request_outcome_count> outcomes{};
    std::array<std::atomic<std::uint64_t>, bucket_bounds.size()> buckets{};  ///< not cumulative
    std::atomic<std::uint64_t> over{0};  ///< above the last bound (`+Inf` minus the rest)
    std::atomic<std::uint64_t> duration_ns{0};
    std::atomic<std::uint64_t> bytes_in{0};
    std::atomic<std::uint64_t> bytes_out{0};
  };
  std::array<row, method_count> rows_{};
  /// One stage's histogram.
  struct alignas(64) stage_row {
    std::array<std::atomic<std::uint64_t>, bucket_bounds.size()> buckets{};
    std::atomic<std::uint64_t> over{0};
    std::atomic<std::uint64_t> duration_ns{0};
  };
  std::array<stage_row, max_stages> stages_{};
  /// Guards `stage_names_` (registration and rendering; recording reads no name).
  mutable std::mutex stage_mutex_;
  std::vector<std::string> stage_names_;
  std::atomic<std::int64_t> in_flight_{0};
};

}  // namespace droid
