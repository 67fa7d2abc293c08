// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::tool_context`: what a running tool can see and do besides computing its result.
///
/// Application layer. A tool receives a `tool_context&` as its first argument. Through
/// it the tool learns it was cancelled (a stop token), reports progress, sleeps without
/// blocking its shard, and reads what the client declared. Messages it sends travel on
/// the stream of the request it serves, before that request's response.
#pragma once

#include <chrono>
#include <coroutine>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <asio/any_io_executor.hpp>

#include <droid/application/server/peer_info.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid {

namespace detail {
/// The session-side half of a request in flight, as a tool's context sees it.
///
/// Why an interface: the context must not know the session type (a 2025 session today,
/// a stateless 2026 request later); it only needs "send this notification on my stream".
/// Lifetime: outlives the tool's frame (the session erases it after the frame completes).
class request_channel {
 public:
  virtual void notify(std::string_view method, std::string params_json) = 0;
  /// Ends the current connection of the request's stream, keeping the stream resumable.
  virtual void close_stream() = 0;

 protected:
  ~request_channel() = default;
};
}  // namespace detail

/// An awaitable that completes at once: sending is enqueueing for the stream's writer.
///
/// Why awaitable at all: back-pressure (a slow client) may make it suspend one day, and
/// making tools write `co_await` now means that change breaks nobody.
struct [[nodiscard]] send_awaiter {
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

/// The tool's view of the request it is serving.
///
/// Why: a tool needs cancellation, progress and the peer's capabilities, but must not
/// reach into the session (which another thread may own in another era or transport).
/// Affinity: use only from the tool's own coroutine, on the session's shard.
/// Lifetime: valid until the tool's task completes; do not keep it beyond that.
class tool_context {
 public:
  tool_context(detail::request_channel& channel, const peer_info& peer, ir::request_id id,
               std::optional<ir::request_id> progress_token, std::stop_token stop, asio::any_io_executor executor)
      : channel_(&channel),
        peer_(&peer),
        id_(std::move(id)),
        progress_token_(std::move(progress_token)),
        stop_(std::move(stop)),
        executor_(std::move(executor)) {}

  /// Requested when the peer cancels this request or the session ends. Pass it to
  /// `droid::use_task(token)` to make any Asio operation cancellable.
  [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
  [[nodiscard]] bool is_cancelled() const noexcept { return stop_.stop_requested(); }

  /// The id of the request being served, as the peer sent it.
  [[nodiscard]] const ir::request_id& request_id() const noexcept { return id_; }
  /// What the client declared: version, identity, capabilities.
  [[nodiscard]] const peer_info& peer() const noexcept { return *peer_; }
  /// The session's shard executor, for timers and sockets the tool creates.
  [[nodiscard]] const asio::any_io_executor& executor() const noexcept { return executor_; }

  /// Sends `notifications/progress` if the client asked for progress (it sent a
  /// `progressToken`); otherwise does nothing. `progress` should increase with each call.
  send_awaiter progress(double progress, std::optional<double> total = std::nullopt, std::string_view message = {});

  /// Suspends for `duration` without blocking the shard. Returns an empty error code when
  /// the time elapsed, or `droid::errc::cancelled` when the request was cancelled first.
  [[nodiscard]] task<std::error_code> sleep(std::chrono::steady_clock::duration duration);

  /// Sends an arbitrary notification related to this request (advanced use).
  send_awaiter notify(std::string_view method, std::string params_json);

  /// Closes the connection currently carrying this request's event stream, without
  /// ending the request: the client reconnects (GET with `Last-Event-ID`) and receives
  /// what follows, the response included. Why: long calls should not pin a connection
  /// (and proxies cut long ones anyway); MCP 2025-11-25 lets the server poll this way.
  /// Does nothing on transports without resumable streams (stdio, JSON answers).
  void close_stream() { channel_->close_stream(); }

 private:
  detail::request_channel* channel_;
  const peer_info* peer_;
  ir::request_id id_;
  std::optional<ir::request_id> progress_token_;
  std::stop_token stop_;
  asio::any_io_executor executor_;
};

}  // namespace droid
