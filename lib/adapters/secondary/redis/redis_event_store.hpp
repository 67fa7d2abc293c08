// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::redis::redis_event_store`: a session's events kept in this instance's memory
/// ring and written behind to Redis Streams (another instance reads them back through
/// redis_shared_store.hpp).
///
/// Secondary adapter, private. The instance that owns a session replays from memory, as
/// one instance alone does: Redis is not on the path of a resume it can serve itself.
/// What Redis holds is for the instance that takes the session over when the owner dies.
///
/// Layout, under the deployment's key prefix P, for session S:
///
///     P e:S:N      a Redis Stream per event stream N: entry "seq-0" {d: data} per event,
///                  and "last+1-0" {end: 1} when the stream is over
///     P r:S:N      the JSON text of the id of the request stream N answers
///     P g:S:N      set when a write of stream N never reached Redis (its client was
///                  overloaded or disconnected): the stream has a hole, and a reader
///                  must not replay it as if whole
///     P x:S        the numbers N of the session's request streams, a set, so that ending
///                  the session removes every key of it at once (the standalone stream's
///                  are known without it: "0.E" for each epoch E up to the current one)
///
/// Why explicit entry ids: the id is the event's sequence number, so a replay reads
/// exactly "after seq", and an instance that ends a dead owner's stream with an error
/// writes at "last+1-0", which Redis refuses if the owner's own end got there first:
/// the stream ends once, never with two answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <droid/adapters/secondary/event_store/event_store.hpp>
#include <droid/application/task.hpp>

#include "client.hpp"

namespace droid::redis {

/// Where a session's streams live in Redis, and for how long.
struct stream_keys {
  std::string prefix{};   ///< the deployment's key prefix ("droid:")
  std::string session{};  ///< the session id
  /// Streams of a session taken over are numbered from `epoch << 32`; its standalone
  /// stream (number 0, which every owner numbers from 1 again) is kept per epoch.
  std::uint64_t epoch = 0;
  std::chrono::milliseconds ttl{300'000};  ///< how long a stream outlives its last event
  std::size_t max_events = 1024;           ///< per stream, oldest trimmed first

  [[nodiscard]] std::string events(std::uint64_t stream) const;
  [[nodiscard]] std::string request(std::uint64_t stream) const;
  [[nodiscard]] std::string index() const;
  [[nodiscard]] std::string gap(std::uint64_t stream) const;
};

/// The memory ring with Redis behind it. Affinity: the session's shard, whose client it
/// writes with.
class redis_event_store final : public event_store {
 public:
  redis_event_store(std::shared_ptr<client> c, stream_keys keys, std::unique_ptr<memory_event_store> local)
      : client_(std::move(c)), keys_(std::move(keys)), local_(std::move(local)) {}
  void begin(std::uint64_t stream, const ir::request_id& id) override;
  void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) override;
  bool replay(std::uint64_t stream, std::uint64_t after_seq,
              const std::function<void(std::uint64_t seq, std::string_view data)>& f) const override;
  void finish(std::uint64_t stream, std::uint64_t last_seq) override;
  [[nodiscard]] bool records_behind() const noexcept override { return true; }
  /// Once the client has handed what it was given to its socket: the session's shard
  /// owns the client, so that is everything this store wrote before.
  void after_recorded(std::function<void()> f) override { client_->after_sent(std::move(f)); }

 private:
  /// Notes that a write of `stream` was not taken (`sent` false): its gap mark is owed.
  void sent(bool sent, std::uint64_t stream);
  /// Sends the gap marks owed, as soon as the client takes commands again.
  void mark_gaps();

  std::shared_ptr<client> client_;
  stream_keys keys_;
  std::unique_ptr<memory_event_store> local_;
  /// Streams with a write Redis never got and no gap mark sent yet. Why: the events are
  /// written behind, and a client that refuses a command (its pipeline full under load,
  /// or no connection) drops it; without a mark, an instance that takes the session over
  /// would replay the stream with the hole in it as if it were whole.
  std::vector<std::uint64_t> unmarked_;
};

}  // namespace droid::redis
