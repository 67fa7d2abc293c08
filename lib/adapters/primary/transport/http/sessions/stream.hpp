// SPDX-License-Identifier: BSL-1.0
/// @file
/// The two halves of a server-sent event stream: `response_sink`, the queue of one HTTP
/// response on its connection's shard, and `logical_stream`, the stream as the session
/// knows it, which outlives connections so that a client can resume it.
///
/// Primary adapter, private.
///
///     session shard                                  connection shard
///     -------------                                  ----------------
///     session --send--> logical_stream --record--> event_store
///                            |  (attached sink, if any)
///                            +--push(id, data)--inbox----->  response_sink queue --> socket
///     client reconnects with Last-Event-ID: replay from the store into a new sink, then
///     attach it; a sink whose connection died is detached and events keep being recorded.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>

#include <droid/adapters/secondary/event_store/event_store.hpp>
#include <droid/application/server/outbound.hpp>

namespace droid::http::detail {

/// One event on its way to a client: its id ("stream-seq", empty for none) and data.
struct sse_event {
  std::string id;
  std::string data;
};

/// The queue of one HTTP response that carries events, drained by its connection.
///
/// Why a queue on the connection's shard: the session may run on another shard, and the
/// socket must be written by exactly one coroutine.
/// Invariants: all state changes happen on `home_`'s thread: a call from another shard
/// is queued in the sink's inbox, and one post runs the inbox there in the order of the
/// calls (`from_afar`). What waits for the reader is bounded by `max_queued`: an event
/// pushed while more than that waits already aborts the connection (a client that
/// stopped reading must not grow our memory), and the logical stream stays resumable from
/// the store. The bound is on a backlog, not on one event (so at most `max_queued` plus
/// one event is held): otherwise an answer larger than the cap could never be delivered,
/// even to a client reading at full speed. At most one coroutine waits on it.
class response_sink : public std::enable_shared_from_this<response_sink> {
 public:
  /// A wait with no timeout (the response ends when the request's stream does).
  static constexpr auto forever = std::chrono::steady_clock::duration::max();

  response_sink(asio::any_io_executor home, std::size_t max_queued);

  /// From any shard: queue an event / end the response / settle a pending GET.
  /// `replayed`: an event read back from a store for a resume, which the store's own
  /// bound limits already (a resume of a long stream must not trip the backlog cap).
  void push(sse_event e, bool replayed = false);
  void finish();
  void accept();
  void reject(int status, std::string message);
  /// Ends a `hold()`: the response may start (from any shard).
  void release();
  /// The answer about to be pushed refuses the request for a limit: a response not yet
  /// started is sent as one JSON document with this status (and Retry-After) instead of
  /// 200 (from any shard, before that push; `outbound::refuse_with_status`).
  void set_answer_status(int status, int retry_after = 0);

  // ---- connection shard only ---------------------------------------------------------
  /// Why an awaiter and not a task: a request waits on its sink at least once, and a
  /// coroutine frame per wait was one more allocation per request for a few stores.
  struct [[nodiscard]] waiter {
    response_sink& sink;
    std::chrono::steady_clock::duration timeout;
    bool for_verdict;
    bool await_ready() const noexcept { return sink.ready(for_verdict); }
    void await_suspend(std::coroutine_handle<> h);
    void await_resume() const noexcept {}
  };
  /// Suspends until something is queued, the sink is finished or dead, or `timeout`
  /// passes (`forever`: no timer at all).
  waiter wait(std::chrono::steady_clock::duration timeout = forever) noexcept { return {*this, timeout, false}; }
  /// Suspends until `accept()` or `reject()` (or the sink dies).
  waiter wait_settled() noexcept { return {*this, forever, true}; }
  /// Moves every queued event into `out` (cleared first), keeping both buffers' capacity.
  void drain(std::vector<sse_event>& out);
  /// Queues in `spare` (an empty vector with room, the last drained stream's) from now
  /// on: the events of a request's stream then need no allocation of their own. Before
  /// anything is queued.
  void lend_queue(std::vector<sse_event>&& spare) noexcept { queue_ = std::move(spare); }
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  [[nodiscard]] bool dead() const noexcept { return dead_; }
  [[nodiscard]] bool settled() const noexcept { return !held_ && (accepted_ || rejected_status_ != 0); }
  /// Keeps the response from starting, even once accepted or finished, until `release()`.
  /// Why: an answer that names something written behind to Redis (a new session, a
  /// task) must not leave before Redis has it (`cluster::accept_when_written`). Called on
  /// the home shard, before anything waits on the sink.
  void hold() noexcept { held_ = true; }
  [[nodiscard]] bool held() const noexcept { return held_; }
  [[nodiscard]] int rejected_status() const noexcept { return rejected_status_; }
  /// The status `set_answer_status` asked for (0: none, the usual 200).
  [[nodiscard]] int answer_status() const noexcept { return answer_status_; }
  /// The Retry-After seconds `set_answer_status` asked for (0: one).
  [[nodiscard]] int answer_retry_after() const noexcept { return answer_retry_after_; }
  [[nodiscard]] const std::string& rejected_message() const noexcept { return rejected_message_; }
  /// The connection is gone (or must go): drop everything from now on.
  void kill() noexcept;
  /// What to do when the sink overflows (the connection closes its socket): `abort(target)`
  /// if `target` still lives. Why a weak pointer and a function pointer, not a
  /// `std::function`: a lambda holding the weak pointer is too large for the function's
  /// inline storage, and every request paid an allocation for a callback that almost
  /// never runs.
  struct abort_hook {
    std::weak_ptr<void> target;
    void (*abort)(void* target) = nullptr;
  };
  abort_hook on_abort;

 private:
  [[nodiscard]] bool ready(bool for_verdict) const noexcept {
    if (dead_) return true;
    // Replayed events may be queued before a GET's verdict: only the verdict ends that
    // wait, or the connection would spin without letting the verdict's handler run.
    return for_verdict ? settled() : !queue_.empty() || finished_;
  }
  /// A call made from another shard, kept until the home shard runs it.
  struct remote_call {
    enum class kind : std::uint8_t { push, push_replayed, finish, accept, release, reject, answer_status };
    explicit remote_call(kind w, int s = 0, int r = 0, sse_event e = {}) noexcept
        : what(w), status(s), retry_after(r), event(std::move(e)) {}
    kind what;
    int status;       ///< reject, answer_status
    int retry_after;  ///< answer_status
    sse_event event;  ///< push (reject: the message, in `data`)
  };

  /// What each entry point does, on the home shard.
  void take(sse_event&& e, bool replayed);
  void finish_here();
  void accept_here();
  void release_here();
  void reject_here(int status, std::string&& message);
  void answer_status_here(int status, int retry_after) noexcept;
  void run(remote_call& c);
  /// Runs `c` at once on the home shard, else through the inbox. Every entry point but
  /// `push` goes through it; `push` takes its event directly, since a request's events
  /// are the hot path and `remote_call` would move each once more.
  void on_home(remote_call&& c);
  /// Queues `c` for the home shard; the first call since the inbox was last run posts
  /// its run. Why an inbox and not a closure per call: a request answered on another
  /// shard's session hands its sink the priming event, the answer, the end and the
  /// verdict one after another, four posts (each a scheduler lock and a wake of the
  /// connection's thread) that one post now carries; and one queue keeps the calls'
  /// order, whichever of them they are.
  void from_afar(remote_call&& c);
  /// Runs what the inbox holds (on the home shard).
  void run_inbox();

  /// Guards `inbox_`, the only member another shard touches. A run is posted exactly
  /// while the inbox is not empty.
  std::mutex inbox_mutex_;
  std::vector<remote_call> inbox_;
  /// The calls being run (home shard only); swapped with `inbox_`, so that both keep
  /// their capacity.
  std::vector<remote_call> running_;
  /// Resumes the waiter if what it waits for has happened (`force`: its timeout passed).
  /// Always through a post: the caller may be the session in the middle of a send, and
  /// the connection's next step must not run inside it.
  void wake(bool force = false) noexcept;

  asio::any_io_executor home_;
  /// Created by the first wait with a timeout (only event streams that send keep-alives).
  std::optional<asio::steady_timer> timer_;
  std::coroutine_handle<> waiter_;
  bool waiting_for_verdict_ = false;
  /// Tells a stale timer completion (one already queued when the wait ended) from the
  /// current wait's.
  std::uint64_t wait_number_ = 0;
  std::vector<sse_event> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t max_queued_;
  bool finished_ = false;
  bool dead_ = false;
  bool accepted_ = false;
  bool held_ = false;
  int rejected_status_ = 0;
  int answer_status_ = 0;
  int answer_retry_after_ = 0;
  std::string rejected_message_;
};

/// A stream as the session sees it: the `outbound` of one request (or the session's
/// standalone stream), recording every event and forwarding it to the attached sink.
///
/// Why separate from the sink: a client that loses the connection of a POST resumes the
/// *same* stream with a GET on a new connection; the stream, its sequence numbers and
/// its recorded events must outlive the first connection.
/// Affinity: the session's shard. Lifetime: shared by the session (as outbound) and the
/// transport's stream table.
class logical_stream final : public outbound {
 public:
  /// What runs once, when the stream is over (the transport forgets it then):
  /// `fn(owner, number)`, with `owner` kept alive until then. Why not a `std::function`: a
  /// lambda holding a `shared_ptr` and the number is too large for the function's inline
  /// storage, and every request paid an allocation for it.
  struct finish_hook {
    std::shared_ptr<void> owner;
    void (*fn)(void* owner, std::uint64_t number) = nullptr;
  };

  /// `store` may be null (JSON answers: nothing to resume). `on_finish` runs once, when
  /// the stream is over.
  /// `refusal`, when not empty, is why tools may not ask the client questions on this
  /// stream (see `outbound::exchange_refusal`).
  /// `refusal` must outlive the stream (the transport passes string literals).
  logical_stream(std::uint64_t number, event_store* store, finish_hook on_finish,
                 std::string_view refusal = {})
      : number_(number),
        store_(store),
        behind_(store != nullptr && store->records_behind()),
        on_finish_(std::move(on_finish)),
        refusal_(refusal) {}

  void send(std::string message) override;
  /// Sends the attached sink the stream's priming event: its id, no data, so that a client
  /// can resume before the first event. Through the same path as every event, so that it
  /// too reaches the client only once the stream's beginning is recorded.
  void prime();
  void finish() override;
  void refuse_with_status(int http_status, int retry_after) override;
  /// Ends the attached sink's response (its connection may be reused) but not the
  /// stream: only a stream with a store can be resumed, so without one this does nothing.
  void interrupt() override;
  [[nodiscard]] std::string exchange_refusal() const override { return std::string(refusal_); }
  /// Keeps `held` (the request's slots under the server's limits) until the stream is
  /// over. Why here and not in the HTTP handler: a client that hangs up ends its handler,
  /// while the request runs on; its slots must count until the work ends.
  void hold(std::shared_ptr<const void> held) { held_ = std::move(held); }

  /// Makes `sink` the connection events go to (replacing and ending any previous one).
  /// A `resumed` sink (a GET with Last-Event-ID) is not ended when the stream finishes:
  /// clients treat a resumed stream that ends as one to resume again, so it idles until
  /// the session ends or the client leaves, as the reference server's do.
  void attach(std::shared_ptr<response_sink> sink, bool resumed = false);
  /// Forgets `sink` if it is the attached one (its connection died).
  void detach(const std::shared_ptr<response_sink>& sink);
  /// Replays events after `after_seq` into `sink`; false when they cannot all be replayed.
  bool replay(std::uint64_t after_seq, const std::shared_ptr<response_sink>& sink) const;

  [[nodiscard]] std::uint64_t number() const noexcept { return number_; }
  [[nodiscard]] bool is_finished() const noexcept { return finished_; }

 private:
  /// Runs `f(*sink)`, which hands something to the sink: at once, or through the store's
  /// `after_recorded` when it records behind (in order with every other; the sink is
  /// kept alive until then). At once costs no copy of the sink's pointer.
  template <class F>
  void relay(const std::shared_ptr<response_sink>& sink, F&& f) const {
    if (!behind_) return f(*sink);
    store_->after_recorded([sink, f = std::forward<F>(f)]() mutable { f(*sink); });
  }

  std::uint64_t number_;
  event_store* store_;
  /// `store_` records behind: what reaches the sink waits for its record to leave. Why:
  /// the sink may be on another shard, whose thread would otherwise write an event to the
  /// client before this shard's thread hands the event's record to Redis; if this
  /// instance then dies, the client holds an event id that no other instance can resume.
  bool behind_;
  finish_hook on_finish_;
  std::string_view refusal_;
  std::shared_ptr<const void> held_;
  std::shared_ptr<response_sink> sink_;
  bool sink_resumed_ = false;
  std::uint64_t seq_ = 0;
  bool finished_ = false;
};

/// The id of event `seq` of stream `stream`: "stream-seq".
[[nodiscard]] std::string event_id(std::uint64_t stream, std::uint64_t seq);
/// Parses an event id; false for anything we did not make.
[[nodiscard]] bool parse_event_id(std::string_view id, std::uint64_t& stream, std::uint64_t& seq) noexcept;

/// Replays the events of stream `number` after `after` from `store` into `sink` (through
/// `after_recorded` when the store records behind); false when they cannot all be.
[[nodiscard]] bool replay_into(event_store& store, std::uint64_t number, std::uint64_t after,
                               const std::shared_ptr<response_sink>& sink);

/// Appends one SSE event (`id:` line when `id` is not empty, then `data:`).
void append_sse_event(std::string& out, std::string_view id, std::string_view data);
/// The bytes `append_sse_event` appends, so that a writer can size its buffer once.
[[nodiscard]] std::size_t sse_event_size(std::string_view id, std::string_view data) noexcept;
/// Appends a stream's priming event: its id, how long to wait before reconnecting
/// (`retry`, milliseconds as text), and no data.
void append_priming_event(std::string& out, std::string_view id, std::string_view retry);
/// The bytes `append_priming_event` appends.
[[nodiscard]] std::size_t priming_event_size(std::string_view id, std::string_view retry) noexcept;

}  // namespace droid::http::detail
