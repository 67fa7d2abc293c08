// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::redis::redis_shared_store`: the cluster's shared store (the port in
/// adapters/primary/transport/http/cluster/shared_store.hpp) kept in Redis.
///
/// Secondary adapter, private. Under the deployment's key prefix P:
///
///     P s:ID        a session's record (a hash: owner, epoch and the session's state),
///                   with the session's idle time to live, refreshed on use
///     P i:MEMBER    a member's lease, a key that expires unless renewed
///     P c:MEMBER    a member's inbox, a pub/sub channel
///     P all         every member's channel (heartbeats, departures, changes)
///     P e:... r:... g:... x:...  session streams (redis_event_store.hpp)
///     P t:ID        a task's record (redis_task_store.hpp)
///
/// Each step the port promises to be indivisible is one Lua script (below, in the .cpp):
/// Redis runs a script with nothing else in between, which is what makes a check of a
/// lease and the change it permits one step.
///
/// Connections: one client per shard, made and used on that shard's thread, and one more
/// on shard 0 subscribed to the inbox.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>

#include "adapters/primary/transport/http/cluster/shared_store.hpp"
#include "client.hpp"

namespace droid::redis {

/// Where and how the store keeps things.
struct shared_store_options {
  client_options connection{};
  std::string key_prefix = "droid:";
  /// How long a session's record and streams outlive its last use.
  std::chrono::milliseconds session_ttl{300'000};
  /// Events kept per stream (oldest trimmed first).
  std::size_t max_events = 1024;
};

class redis_shared_store final : public http::detail::shared_store {
 public:
  /// `shards`: one executor per shard, in shard order.
  redis_shared_store(std::vector<asio::any_io_executor> shards, shared_store_options o);

  void start(std::string member, message_handler on_message, std::function<void()> on_lost) override;
  void stop() override;
  [[nodiscard]] bool inbox_connected() const override { return inbox_->connected(); }
  void probe_inbox() override { (void)inbox_->send({"PING"}); }
  [[nodiscard]] std::string last_failure(std::size_t shard) const override { return clients_[shard]->last_failure(); }

  task<renewal> renew_lease(std::string member, std::chrono::milliseconds ttl) override;
  task<bool> take_lease(std::string member, std::chrono::milliseconds ttl) override;
  task<std::optional<bool>> lease_exists(std::size_t shard, std::string member) override;
  void leave(std::string member) override;

  task<found_session> read_session(std::size_t shard, std::string id) override;
  task<takeover> take_over(std::size_t shard, std::string id, std::string from, std::string to,
                           std::chrono::milliseconds ttl) override;
  task<write_outcome> write_session(std::size_t shard, std::string id, http::detail::session_record r,
                                    std::chrono::milliseconds ttl) override;
  void touch_session(std::size_t shard, const std::string& id, std::chrono::milliseconds ttl) override;
  void forget_session(std::size_t shard, const std::string& id, const std::string& member,
                      std::uint64_t epoch) override;
  task<std::optional<std::vector<claim>>> claim_all(std::string member,
                                                    std::vector<std::pair<std::string, std::uint64_t>> sessions,
                                                    std::vector<std::string> tasks) override;

  [[nodiscard]] std::unique_ptr<event_store> session_events(std::size_t shard, const std::string& id,
                                                            std::uint64_t epoch,
                                                            std::unique_ptr<memory_event_store> local) override;
  task<read_outcome> read_stream(std::size_t shard, std::string id, std::uint64_t number, std::uint64_t after,
                                 http::detail::stored_stream& out) override;
  task<end_outcome> end_stream(std::size_t shard, std::string id, std::uint64_t number, std::uint64_t last,
                               std::string final_event) override;

  [[nodiscard]] std::shared_ptr<http::detail::shared_task_table> share_tasks(std::shared_ptr<memory_task_store> local,
                                                                             std::string member) override;
  task<found_task> task_owner(std::size_t shard, std::string id) override;
  task<adoption> adopt_task(std::size_t shard, std::string id, std::string from, std::string to) override;

  task<std::optional<std::int64_t>> publish(std::size_t shard, std::string member, std::string payload) override;
  void post(std::size_t shard, const std::string& member, const std::string& payload) override;
  void post_all(std::size_t shard, const std::string& payload) override;

  task<std::optional<std::string>> written(std::size_t shard) override;

 private:
  [[nodiscard]] std::string key(std::string_view kind, std::string_view id) const;

  std::vector<asio::any_io_executor> shards_;
  shared_store_options opts_;
  std::vector<std::shared_ptr<client>> clients_;
  std::shared_ptr<client> inbox_;
};

}  // namespace droid::redis
