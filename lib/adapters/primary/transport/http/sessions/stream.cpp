// SPDX-License-Identifier: BSL-1.0
/// @file
/// Response sinks, logical streams, event ids and SSE framing.
#include "stream.hpp"

#include <charconv>

#include "adapters/primary/transport/http/wire/on_executor.hpp"


namespace droid::http::detail {

response_sink::response_sink(asio::any_io_executor home, std::size_t max_queued)
    : home_(std::move(home)), max_queued_(max_queued) {}

void response_sink::push(sse_event e, bool replayed) {
  // Directly when the session and the connection share a shard (the common case).
  // Directly, not through a closure: the closure's reference on the sink and the moves
  // of the event into it and out again cost about 570 instructions of an event-stream
  // answer (two events), a tenth of what it cost over a JSON one (docs/benchmarks.md).
  // The caller holds the sink meanwhile.
  if (runs_here(home_)) return take(std::move(e), replayed);
  from_afar(remote_call{replayed ? remote_call::kind::push_replayed : remote_call::kind::push, 0, 0, std::move(e)});
}

void response_sink::take(sse_event&& e, bool replayed) {
  if (dead_ || finished_) return;
  const std::size_t size = e.id.size() + e.data.size();
  // The backlog before this event is what the cap bounds (so one event of any size is
  // taken behind a backlog under it, a priming event say).
  if (!replayed && queued_bytes_ > max_queued_) {
    const std::shared_ptr<response_sink> hold = shared_from_this();  // through the abort
    kill();
    if (on_abort.abort) {
      if (const std::shared_ptr<void> target = on_abort.target.lock()) on_abort.abort(target.get());
    }
    return;
  }
  if (!replayed) queued_bytes_ += size;
  // A request's stream mostly carries two events, its priming event and its answer:
  // room for both at once, not one and then a move to a larger block.
  if (queue_.capacity() == 0) queue_.reserve(2);
  queue_.push_back(std::move(e));
  wake();
}

void response_sink::from_afar(remote_call&& c) {
  bool post = false;
  {
    const std::lock_guard<std::mutex> lock(inbox_mutex_);
    // An empty inbox has no run posted (the run empties it under this lock).
    post = inbox_.empty();
    // The four calls of a request answered elsewhere, in one block.
    if (inbox_.capacity() == 0) inbox_.reserve(4);
    inbox_.push_back(std::move(c));
  }
  if (post) detail::post_on(home_, [self = shared_from_this()] { self->run_inbox(); });
}

void response_sink::run_inbox() {
  running_.clear();
  {
    const std::lock_guard<std::mutex> lock(inbox_mutex_);
    // Emptied with the swap: a call queued while these run posts a run of its own,
    // which runs after these (one shard's posts run in order).
    running_.swap(inbox_);
  }
  for (remote_call& c : running_) run(c);
}

void response_sink::run(remote_call& c) {
  using k = remote_call::kind;
  switch (c.what) {
    case k::push: return take(std::move(c.event), false);
    case k::push_replayed: return take(std::move(c.event), true);
    case k::finish: return finish_here();
    case k::accept: return accept_here();
    case k::release: return release_here();
    case k::reject: return reject_here(c.status, std::move(c.event.data));
    case k::answer_status: return answer_status_here(c.status, c.retry_after);
  }
}

void response_sink::on_home(remote_call&& c) {
  if (runs_here(home_)) return run(c);
  from_afar(std::move(c));
}

void response_sink::finish() { on_home(remote_call{remote_call::kind::finish}); }

void response_sink::finish_here() {
  finished_ = true;
  accepted_ = accepted_ || rejected_status_ == 0;
  wake();
}

void response_sink::accept() { on_home(remote_call{remote_call::kind::accept}); }

void response_sink::accept_here() {
  accepted_ = true;
  wake();
}

void response_sink::release() { on_home(remote_call{remote_call::kind::release}); }

void response_sink::release_here() {
  held_ = false;
  wake();
}

void response_sink::reject(int status, std::string message) {
  on_home(remote_call{remote_call::kind::reject, status, 0, sse_event{{}, std::move(message)}});
}

void response_sink::reject_here(int status, std::string&& message) {
  rejected_status_ = status;
  rejected_message_ = std::move(message);
  wake();
}

void response_sink::set_answer_status(int status, int retry_after) {
  on_home(remote_call{remote_call::kind::answer_status, status, retry_after});
}

void response_sink::answer_status_here(int status, int retry_after) noexcept {
  answer_status_ = status;
  answer_retry_after_ = retry_after;
}

void response_sink::waiter::await_suspend(std::coroutine_handle<> h) {
  sink.waiter_ = h;
  sink.waiting_for_verdict_ = for_verdict;
  const std::uint64_t number = ++sink.wait_number_;
  if (timeout == forever) return;
  if (!sink.timer_) sink.timer_.emplace(sink.home_);
  sink.timer_->expires_after(timeout);
  sink.timer_->async_wait([self = sink.shared_from_this(), number](const std::error_code& ec) {
    if (!ec && number == self->wait_number_) self->wake(true);
  });
}

void response_sink::wake(bool force) noexcept {
  if (!waiter_ || (!force && !ready(waiting_for_verdict_))) return;
  ++wait_number_;  // whatever the timer does from now on is stale
  if (timer_) timer_->cancel();
  detail::post_on(home_, [h = std::exchange(waiter_, nullptr)] { h.resume(); });
}

void response_sink::drain(std::vector<sse_event>& out) {
  out.clear();
  out.swap(queue_);
  queued_bytes_ = 0;
}

void response_sink::kill() noexcept {
  dead_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  wake();
}

namespace {

/// Ends a sink's response (what `relay` hands it when a stream ends or lets it go).
void finish_sink(response_sink& s) { s.finish(); }

}  // namespace

void logical_stream::send(std::string message) {
  if (finished_) return;
  const std::uint64_t seq = ++seq_;
  // Recorded first: whatever happens to the connection, a resuming client can have it.
  if (store_) store_->append(number_, seq, message);
  if (!sink_) return;
  relay(sink_, [e = sse_event{store_ ? event_id(number_, seq) : std::string(), std::move(message)}](
                   response_sink& s) mutable { s.push(std::move(e)); });
}

void logical_stream::prime() {
  if (sink_) relay(sink_, [id = event_id(number_, 0)](response_sink& s) mutable { s.push(sse_event{std::move(id), {}}); });
}

void logical_stream::refuse_with_status(int http_status, int retry_after) {
  // A resumed sink has sent its status line already; only the request's own may change.
  if (!finished_ && sink_ && !sink_resumed_) sink_->set_answer_status(http_status, retry_after);
}

void logical_stream::finish() {
  if (finished_) return;
  finished_ = true;
  // What the request held (its slots under the per-client limits) is given back before
  // the sink hears of the end: a sink on another shard may write the answer at once, and
  // a client that then sends its next request must find the slot free (tenants_test).
  held_.reset();
  if (store_) store_->finish(number_, seq_);
  if (sink_ && !sink_resumed_) relay(sink_, finish_sink);
  sink_.reset();
  if (on_finish_.fn) {
    const finish_hook hook = std::exchange(on_finish_, {});  // holds the owner through the call
    hook.fn(hook.owner.get(), number_);
  }
}

void logical_stream::interrupt() {
  if (!store_ || finished_ || !sink_) return;
  relay(sink_, finish_sink);
  sink_.reset();
}

void logical_stream::attach(std::shared_ptr<response_sink> sink, bool resumed) {
  if (sink_ && sink_ != sink && !sink_resumed_) relay(sink_, finish_sink);
  sink_ = std::move(sink);
  sink_resumed_ = resumed;
  if (finished_ && sink_) {
    if (!sink_resumed_) relay(sink_, finish_sink);
    sink_.reset();
  }
}

void logical_stream::detach(const std::shared_ptr<response_sink>& sink) {
  if (sink_ == sink) sink_.reset();
}

bool logical_stream::replay(std::uint64_t after_seq, const std::shared_ptr<response_sink>& sink) const {
  if (!store_ || after_seq > seq_) return false;
  // Nothing after it: the store may not know a stream with no events yet, or have let
  // go of one whose events were all evicted, and neither is a loss.
  if (after_seq == seq_) return true;
  return replay_into(*store_, number_, after_seq, sink);
}

bool replay_into(event_store& store, std::uint64_t number, std::uint64_t after,
                 const std::shared_ptr<response_sink>& sink) {
  if (!store.records_behind()) {
    return store.replay(number, after, [&](std::uint64_t seq, std::string_view data) {
      sink->push(sse_event{event_id(number, seq), std::string(data)}, true);
    });
  }
  // Some of these may be recorded but not yet on their way: they reach the sink behind
  // their records, as live events do.
  std::vector<sse_event> events;
  const bool whole = store.replay(number, after, [&](std::uint64_t seq, std::string_view data) {
    events.push_back(sse_event{event_id(number, seq), std::string(data)});
  });
  if (!whole) return false;
  store.after_recorded([sink, events = std::move(events)]() mutable {
    for (sse_event& e : events) sink->push(std::move(e), true);
  });
  return true;
}

std::string event_id(std::uint64_t stream, std::uint64_t seq) {
  // Formatted in place: two numbers and a dash fit in the string's own buffer for any id
  // of a live server, where `to_string(a) + "-" + to_string(b)` made three strings.
  char text[2 * 20 + 1];
  char* end = std::to_chars(text, text + 20, stream).ptr;
  *end++ = '-';
  end = std::to_chars(end, end + 20, seq).ptr;
  return std::string(text, end);
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

namespace {

constexpr std::string_view id_field = "id: ";
constexpr std::string_view message_fields = "event: message\ndata: ";
constexpr std::string_view event_end = "\n\n";
constexpr std::string_view retry_field = "\nretry: ";
constexpr std::string_view empty_data = "\ndata: \n\n";

}  // namespace

void append_sse_event(std::string& out, std::string_view id, std::string_view data) {
  if (!id.empty()) {
    out += id_field;
    out += id;
    out += '\n';
  }
  out += message_fields;
  out += data;
  out += event_end;
}

std::size_t sse_event_size(std::string_view id, std::string_view data) noexcept {
  return (id.empty() ? 0 : id_field.size() + id.size() + 1) + message_fields.size() + data.size() + event_end.size();
}

void append_priming_event(std::string& out, std::string_view id, std::string_view retry) {
  out += id_field;
  out += id;
  out += retry_field;
  out += retry;
  out += empty_data;
}

std::size_t priming_event_size(std::string_view id, std::string_view retry) noexcept {
  return id_field.size() + id.size() + retry_field.size() + retry.size() + empty_data.size();
}

}  // namespace droid::http::detail
