// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::redis::redis_task_store`: the in-memory task store with every change written
/// behind to Redis, so that another instance can answer for a task whose instance died.
///
/// Secondary adapter, private. Reads stay in memory: a task is served by the instance
/// that runs it (requests about it reaching another instance are forwarded there, see
/// the HTTP transport's cluster). What Redis holds, under `P t:ID` (a hash: the owning
/// instance and the record as JSON, expiring with the task), is for the instance that
/// answers once the owner is gone: a finished task's result survives it, and a task
/// that was still running is reported failed, saying why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <droid/application/server/task_store.hpp>

#include "adapters/primary/transport/http/cluster/shared_store.hpp"

namespace droid::redis {

/// A record as the JSON text Redis keeps, and back.
[[nodiscard]] std::string task_record_json(const task_record& r);
[[nodiscard]] std::optional<task_record> parse_task_record(std::string_view json);

/// The memory store, written through. Affinity: any thread (as every task store);
/// `write` carries each command to a Redis client on the calling thread's shard.
class redis_task_store final : public http::detail::shared_task_table {
 public:
  /// `write(command)`: sends one Redis command, not waiting for it.
  redis_task_store(std::shared_ptr<memory_task_store> local, std::string instance, std::string prefix,
                    std::function<void(std::vector<std::string>)> write)
      : local_(std::move(local)),
        instance_(std::move(instance)),
        prefix_(std::move(prefix)),
        write_(std::move(write)),
        next_revision_(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                      std::chrono::system_clock::now().time_since_epoch())
                                                      .count())) {}

  std::optional<task_refusal> create(task_record record) override;
  std::optional<task_record> get(std::string_view id, std::string_view owner) override { return local_->get(id, owner); }
  std::optional<task_page> list(std::string_view owner, std::string_view after, std::size_t limit) override {
    return local_->list(owner, after, limit);
  }
  bool ask(std::string_view id, std::string key, std::string request_json) override;
  std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) override;
  void set_message(std::string_view id, std::string message) override;
  bool finish(std::string_view id, task_status status, std::string result, std::string error,
              std::string message) override;
  void remove(std::string_view id) override;

  // shared_task_table (the cluster's port says what each is for).
  [[nodiscard]] bool holds(std::string_view id) override { return local_->peek(id).has_value(); }
  void adopt(task_record record, const std::string& why) override;
  [[nodiscard]] std::vector<std::string> held() override;
  void republish(std::string_view id) override { publish(id); }
  void drop(std::string_view id) override;

  /// The script every write of a task record goes through: it writes only while the
  /// record names this instance or there is none. Why: an instance whose lease lapsed
  /// may still be finishing a task that another has adopted (and reported failed, or
  /// cancelled); its late write must not turn the answer clients were given into another.
  /// It also keeps the newest of this instance's writes: each carries a revision, and
  /// one older than the record's is dropped. Why: a task changes on more than one shard
  /// (an answer forwarded from another instance is taken in on shard 0, the frame that
  /// finishes runs on its own), each shard writes through its own Redis connection, and
  /// two connections keep no order between them: an older snapshot (`working`) landing
  /// after a newer one (`completed`) made another instance report a finished task failed
  /// once this one stopped.
  static const std::string_view write_script;

 private:
  void publish(std::string_view id);
  std::shared_ptr<memory_task_store> local_;
  std::string instance_;
  std::string prefix_;
  std::function<void(std::vector<std::string>)> write_;
  std::mutex mutex_;
  std::unordered_set<std::string> published_;  ///< ids with a record out (see `held`)
  /// The revision of the next write, taken with its snapshot under `mutex_` so that
  /// revisions follow the order of the snapshots. Starts at the clock's microseconds, so
  /// that an instance restarted under the same id writes above what it wrote before.
  std::uint64_t next_revision_;
};

}  // namespace droid::redis
