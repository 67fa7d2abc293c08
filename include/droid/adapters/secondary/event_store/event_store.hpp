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
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace droid {

/// The events of one session, by stream and sequence number.
///
/// Why per session: an event id presented on another session must never replay this
/// session's events (RELIABILITY A11); a store that only knows one session cannot.
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
};

/// Makes one store per session.
using event_store_factory = std::function<std::unique_ptr<event_store>()>;

/// A bounded ring of the latest events of a session, oldest evicted first.
///
/// Why bounded by count: a client that never comes back must not pin memory; `capacity`
/// is how far back a reconnecting client can resume.
class memory_event_store final : public event_store {
 public:
  explicit memory_event_store(std::size_t capacity) : capacity_(capacity) {}
  void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) override;
  bool replay(std::uint64_t stream, std::uint64_t after_seq,
              const std::function<void(std::uint64_t seq, std::string_view data)>& f) const override;
  [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }

 private:
  struct event {
    std::uint64_t stream;
    std::uint64_t seq;
    std::string data;
  };
  struct stream_state {
    std::uint64_t last = 0;     ///< highest seq recorded
    std::uint64_t evicted = 0;  ///< highest seq evicted (0: none)
  };
  std::size_t capacity_;
  std::deque<event> events_;
  std::unordered_map<std::uint64_t, stream_state> streams_;
};

}  // namespace droid
