// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::event_store`: where a session's server-sent events are kept so that a client
/// that lost its connection can resume a stream (`Last-Event-ID`), and the in-memory ring
/// that is the default.
///
/// Secondary adapter: the transport writes every event here before sending it, and asks
/// it for the events after a given one when a client reconnects. Another store (shared
/// between server instances, say) plugs in through `http::options::event_store` without
/// touching the transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <droid/adapters/secondary/event_store/retention_budget.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid {

/// The events of one session, by stream and sequence number.
///
/// Why per session: an event id presented on another session must never replay this
/// session's events (docs/reliability.md, A11); a store that only knows one session cannot.
/// Affinity: used only on the session's shard.
class event_store {
 public:
  virtual ~event_store() = default;
  /// Records event `seq` (1, 2, ... per stream) of `stream`.
  virtual void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) = 0;
  /// Calls `f(seq, data)` for every event of `stream` after `after_seq`, in order.
  /// Returns false, calling nothing, when that cannot be done exactly: the stream is
  /// unknown, `after_seq` is beyond its last event, or some of those events were evicted.
  virtual bool replay(std::uint64_t stream, std::uint64_t after_seq,
                      const std::function<void(std::uint64_t seq, std::string_view data)>& f) const = 0;
  /// `stream` begins: it answers request `id`. A no-op by default. Why it is told: a
  /// store shared by several instances records it, so that if this instance dies with
  /// the request unanswered, another can end the stream with an error response for that
  /// very request. (The id, not its JSON text: a store that keeps nothing must cost a
  /// request nothing.)
  virtual void begin(std::uint64_t stream, const ir::request_id& id) {
    (void)stream;
    (void)id;
  }
  /// `stream` is over at event `last_seq` (0: it had none): nothing more will be
  /// appended to it. Why it is told: a session opens a stream per request, and a store
  /// that kept every one it ever saw would grow with the session's age; it may forget the
  /// stream once a resume is no longer likely. A no-op by default (a store with its own
  /// expiry need not care).
  virtual void finish(std::uint64_t stream, std::uint64_t last_seq) {
    (void)stream;
    (void)last_seq;
  }
  /// Whether what is recorded leaves this process later, in writes behind to a store that
  /// other instances read (false by default). Why it is asked: the transport then hands
  /// each event to its connection only through `after_recorded`, so that no client holds
  /// an event id (one it may resume from anywhere) before that event is on its way.
  [[nodiscard]] virtual bool records_behind() const noexcept { return false; }
  /// Runs `f`, on the session's shard, once everything recorded before the call has left
  /// this process (so that the process dying cannot lose it), or can no longer; in the
  /// order called. At once by default.
  virtual void after_recorded(std::function<void()> f) { f(); }
};

/// Makes one store per session.
using event_store_factory = std::function<std::unique_ptr<event_store>()>;

namespace detail {

/// A first-in, first-out queue kept in one vector used as a ring.
///
/// Why not `std::deque`: libstdc++'s deque allocates its block map and a first block of
/// 512 bytes as soon as it is constructed, and every session's event store holds two
/// queues that mostly keep a handful of entries: two empty deques were about 1.1 KiB of
/// every idle session (bench memory section). This one allocates what it holds,
/// doubling as it grows; it does not shrink, and its owner bounds how many it holds.
template <class T>
class fifo {
 public:
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// Precondition: not empty.
  [[nodiscard]] const T& front() const noexcept { return slots_[head_]; }
  void push_back(T value) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = std::move(value);
    ++count_;
  }
  /// Precondition: not empty. The slot is reset, so what it held is freed now.
  void pop_front() {
    slots_[head_] = T();
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
  /// Calls `f(const T&)` for each entry, oldest first.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < count_; ++i) f(slots_[(head_ + i) % slots_.size()]);
  }

 private:
  void grow() {
    std::vector<T> bigger;
    bigger.reserve(slots_.empty() ? 2 : slots_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger.push_back(std::move(slots_[(head_ + i) % slots_.size()]));
    bigger.resize(bigger.capacity());
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace detail

/// A bounded ring of the latest events of a session, oldest evicted first.
///
/// Why bounded by count and by bytes: a client that never comes back must not pin
/// memory; `capacity` is how far back a reconnecting client can resume, and `max_bytes`
/// keeps a session whose answers are large (a tool that returns megabytes) from holding
/// `capacity` of them. An event larger than `max_bytes` is not kept at all: its stream
/// can then be resumed only after it. With an `account` (of a `retention_budget`), every
/// byte kept is also charged to the session's tenant and to the server: when either share
/// is full, the store evicts its own oldest events to make room, and keeps nothing of an
/// event that still does not fit (so one tenant's many sessions cannot keep gigabytes).
/// Invariants: a stream has state while it has events in the ring or while it is one of
/// the latest `finished_streams` finished ones, so there are never more than
/// `capacity + finished_streams` of them, however many the session opened. A stream
/// whose state went is unknown: it cannot be replayed, never replayed wrongly.
class memory_event_store final : public event_store {
 public:
  /// Why 64 finished streams: a client resumes the stream it just lost, soon after its
  /// end, not one from a thousand requests ago. Soon can be seconds: the TypeScript SDK
  /// 1.32 resumes a stream that ended with an error response (it waits for a result),
  /// after its reconnection delay of one to two and a half seconds, while the session
  /// goes on with other requests; 64 covers a session making about 25 requests a second
  /// meanwhile, at about 5 KB per session.
  explicit memory_event_store(std::size_t capacity, std::size_t finished_streams = 64,
                              std::size_t max_bytes = 8u << 20,
                              std::shared_ptr<retention_budget::account> account = nullptr)
      : capacity_(capacity), finished_cap_(finished_streams), max_bytes_(max_bytes), account_(std::move(account)) {}
  ~memory_event_store() override;
  memory_event_store(const memory_event_store&) = delete;
  memory_event_store& operator=(const memory_event_store&) = delete;
  void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) override;
  bool replay(std::uint64_t stream, std::uint64_t after_seq,
              const std::function<void(std::uint64_t seq, std::string_view data)>& f) const override;
  void finish(std::uint64_t stream, std::uint64_t last_seq) override;
  /// How many events the store holds, over all streams.
  [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }
  /// The bytes of event data it holds (at most `max_bytes`).
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// How many streams the store keeps state for (what a long session must not grow).
  [[nodiscard]] std::size_t streams() const noexcept { return streams_.size(); }

 private:
  struct event {
    std::uint64_t stream;
    std::uint64_t seq;
    std::string data;
  };
  struct stream_state {
    std::uint64_t last = 0;     ///< highest seq recorded
    std::uint64_t evicted = 0;  ///< highest seq evicted (0: none)
    std::size_t held = 0;       ///< events of the stream in the ring
    bool finished = false;      ///< in `finished_`, which decides when the state goes
  };
  /// Drops the front event; its stream's state goes with its last event unless finished.
  void evict_front();
  /// Removes the front event from the ring and its bytes from the count (and the account).
  void pop_front();
  /// Records that event `seq` of `stream` was sent but is not kept: a replay from before
  /// it must refuse rather than skip it.
  void forget_unkept(std::uint64_t stream, std::uint64_t seq);
  using stream_map = std::unordered_map<std::uint64_t, stream_state>;
  /// The state of `stream`, and whether it is new (then zeroed). A new one takes the
  /// node `drop` kept, if any.
  std::pair<stream_map::iterator, bool> state_of(std::uint64_t stream);
  /// Removes a stream's state, keeping its node for the next `state_of` when none is kept.
  void drop(stream_map::iterator it);
  std::size_t capacity_;
  std::size_t finished_cap_;
  std::size_t max_bytes_;
  /// The tenant's share of the server's budget; null: only this store's own bounds.
  std::shared_ptr<retention_budget::account> account_;
  std::size_t bytes_ = 0;
  /// Events of forgotten streams may stay until evicted: they are skipped, and bounded
  /// by `capacity_` like the rest.
  detail::fifo<event> events_;
  stream_map streams_;
  /// One node of `streams_` kept from the last state that went. Why: a session's every
  /// request opens a stream and, once 64 have finished since, forgets one, so a node
  /// allocated for each new stream and freed for each forgotten one was an allocation
  /// and a free per request; one kept node makes that none, for 48 bytes a session.
  stream_map::node_type spare_;
  /// Finished streams still known, oldest first.
  detail::fifo<std::uint64_t> finished_;
};

}  // namespace droid
