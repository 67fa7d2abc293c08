// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-response message queue and SSE event framing.
#include "stream.hpp"

#include <asio/dispatch.hpp>

#include <droid/application/use_task.hpp>

namespace droid::http::detail {

event_stream::event_stream(asio::any_io_executor home) : home_(std::move(home)), wake_(home_) {}

void event_stream::send(std::string message) {
  // dispatch: inline when the session and the connection share a shard (the common
  // case), one post otherwise.
  asio::dispatch(home_, [self = shared_from_this(), m = std::move(message)]() mutable {
    if (self->dead_ || self->finished_) return;
    self->queue_.push_back(std::move(m));
    self->wake_.cancel();
  });
}

void event_stream::finish() {
  asio::dispatch(home_, [self = shared_from_this()] {
    self->finished_ = true;
    self->wake_.cancel();
  });
}

task<void> event_stream::wait(std::chrono::steady_clock::duration deadline) {
  if (!queue_.empty() || finished_ || dead_) co_return;
  wake_.expires_after(deadline);
  (void)co_await wake_.async_wait(use_task);
}

std::deque<std::string> event_stream::drain() { return std::exchange(queue_, {}); }

void event_stream::kill() noexcept {
  dead_ = true;
  queue_.clear();
  wake_.cancel();
}

void append_sse_event(std::string& out, std::string_view id, std::string_view data) {
  if (!id.empty()) {
    out += "id: ";
    out += id;
    out += '\n';
  }
  out += "event: message\ndata: ";
  out += data;
  out += "\n\n";
}

}  // namespace droid::http::detail
