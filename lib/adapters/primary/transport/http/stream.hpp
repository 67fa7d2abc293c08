// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::detail::event_stream`: the outbound side of one HTTP response that carries
/// JSON-RPC messages (a POST's answer, or the standalone GET stream).
///
/// Primary adapter, private. The session (on its shard) sends into it; the connection
/// (on its own shard, maybe another) drains it into the socket. Every cross-shard
/// touch is a `dispatch` to the connection's executor, so the queue itself is only ever
/// touched on one thread and needs no lock.
///
///     session shard                      connection shard
///     -------------                      ----------------
///     stream->send(msg)  --dispatch-->   queue_.push_back(msg); wake_.cancel()
///     stream->finish()   --dispatch-->   finished_ = true;      wake_.cancel()
///                                        connection: co_await wait(); drain(); write
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/task.hpp>

namespace droid::http::detail {

/// A queue of outgoing messages for one HTTP response, drained by its connection.
///
/// Invariants: `queue_`, `finished_` and `dead_` change only on `home_`'s thread.
/// Lifetime: shared by the session (through `outbound`) and the connection; a stream
/// whose connection is gone is `dead_` and drops what it is sent.
class event_stream final : public outbound, public std::enable_shared_from_this<event_stream> {
 public:
  explicit event_stream(asio::any_io_executor home);

  void send(std::string message) override;
  void finish() override;

  /// Suspends until a message is queued or the stream is finished (or `deadline`
  /// passes, for keep-alive comments). Connection shard only.
  [[nodiscard]] task<void> wait(std::chrono::steady_clock::duration deadline);
  /// Takes what is queued. Connection shard only.
  [[nodiscard]] std::deque<std::string> drain();
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The connection is gone: drop everything from now on. Connection shard only.
  void kill() noexcept;
  [[nodiscard]] bool dead() const noexcept { return dead_; }

 private:
  asio::any_io_executor home_;
  asio::steady_timer wake_;
  std::deque<std::string> queue_;
  bool finished_ = false;
  bool dead_ = false;
};

/// Formats one SSE event carrying `data` (one JSON text, no newlines) with `id`.
void append_sse_event(std::string& out, std::string_view id, std::string_view data);

}  // namespace droid::http::detail
