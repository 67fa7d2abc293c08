// SPDX-License-Identifier: BSL-1.0
/// @file
/// Response sinks, logical streams, event ids and SSE framing.
#include "stream.hpp"

#include <charconv>

#include <asio/dispatch.hpp>

#include <droid/application/use_task.hpp>

namespace droid::http::detail {

response_sink::response_sink(asio::any_io_executor home, std::size_t max_queued)
    : home_(std::move(home)), wake_(home_), max_queued_(max_queued) {}

void response_sink::push(sse_event e) {
  // dispatch: inline when the session and the connection share a shard (the common
  // case), one post otherwise.
  asio::dispatch(home_, [self = shared_from_this(), e = std::move(e)]() mutable {
    if (self->dead_ || self->finished_) return;
    self->queued_bytes_ += e.id.size() + e.data.size();
    if (self->queued_bytes_ > self->max_queued_) {
      self->kill();
      if (self->on_abort) self->on_abort();
      return;
    }
    self->queue_.push_back(std::move(e));
    self->wake_.cancel();
  });
}

void response_sink::finish() {
  asio::dispatch(home_, [self = shared_from_this()] {
    self->finished_ = true;
    self->accepted_ = self->accepted_ || self->rejected_status_ == 0;
    self->wake_.cancel();
  });
}

void response_sink::accept() {
  asio::dispatch(home_, [self = shared_from_this()] {
    self->accepted_ = true;
    self->wake_.cancel();
  });
}

void response_sink::reject(int status, std::string message) {
  asio::dispatch(home_, [self = shared_from_this(), status, m = std::move(message)]() mutable {
    self->rejected_status_ = status;
    self->rejected_message_ = std::move(m);
    self->wake_.cancel();
  });
}

task<void> response_sink::wait(std::chrono::steady_clock::duration timeout) {
  if (!queue_.empty() || finished_ || dead_) co_return;
  wake_.expires_after(timeout);
  (void)co_await wake_.async_wait(use_task);
}

task<void> response_sink::wait_settled() {
  while (!settled() && !dead_) {
    // Replayed events may already be queued: only the verdict ends this wait, or the
    // connection could spin without ever letting the verdict's handler run.
    wake_.expires_after(std::chrono::hours(1));
    (void)co_await wake_.async_wait(use_task);
  }
}

std::deque<sse_event> response_sink::drain() {
  queued_bytes_ = 0;
  return std::exchange(queue_, {});
}

void response_sink::kill() noexcept {
  dead_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  wake_.cancel();
}

void logical_stream::send(std::string message) {
  if (finished_) return;
  const std::uint64_t seq = ++seq_;
  // Recorded first: whatever happens to the connection, a resuming client can have it.
  if (store_) store_->append(number_, seq, message);
  if (sink_) sink_->push(sse_event{store_ ? event_id(number_, seq) : std::string(), std::move(message)});
}

void logical_stream::finish() {
  if (finished_) return;
  finished_ = true;
  if (sink_ && !sink_resumed_) sink_->finish();
  sink_.reset();
  if (on_finish_) std::exchange(on_finish_, nullptr)();
}

void logical_stream::interrupt() {
  if (!store_ || finished_ || !sink_) return;
  sink_->finish();
  sink_.reset();
}

void logical_stream::attach(std::shared_ptr<response_sink> sink, bool resumed) {
  if (sink_ && sink_ != sink && !sink_resumed_) sink_->finish();
  sink_ = std::move(sink);
  sink_resumed_ = resumed;
  if (finished_ && sink_) {
    if (!sink_resumed_) sink_->finish();
    sink_.reset();
  }
}

void logical_stream::detach(const std::shared_ptr<response_sink>& sink) {
  if (sink_ == sink) sink_.reset();
}

bool logical_stream::replay(std::uint64_t after_seq, response_sink& sink) const {
  if (!store_ || after_seq > seq_) return false;
  return store_->replay(number_, after_seq, [&](std::uint64_t seq, std::string_view data) {
    sink.push(sse_event{event_id(number_, seq), std::string(data)});
  });
}

std::string event_id(std::uint64_t stream, std::uint64_t seq) {
  return std::to_string(stream) + "-" + std::to_string(seq);
}

bool parse_event_id(std::string_view id, std::uint64_t& stream, std::uint64_t& seq) noexcept {
  const auto dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return false;
  const char* end = id.data() + id.size();
  auto [p1, e1] = std::from_chars(id.data(), id.data() + dash, stream);
  if (e1 != std::errc() || p1 != id.data() + dash) return false;
  auto [p2, e2] = std::from_chars(id.data() + dash + 1, end, seq);
  return e2 == std::errc() && p2 == end;
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
