// SPDX-License-Identifier: BSL-1.0
/// @file
/// Tasks: what a server's shards share about them, and how a task is written on the wire.
///
/// Application layer, private. A task is a `tools/call` whose frame is detached from the
/// request that started it: the request answers at once with the task's id, the tool
/// runs on, and the client polls. The runner does the detaching and the serving
/// (tasks/running_task.cpp); this file holds what is not one shard's:
///
/// - `task_engine`, per server: the store of task records, the id generator, and the
///   registry saying which runner runs each live task (a `tasks/update` or
///   `tasks/cancel` may reach any shard; the frame is on one);
/// - the two eras' renderings of a task: 2025-11-25 (`ttl`, `pollInterval`, results
///   behind `tasks/result`) and the 2026-07-28 extension (`ttlMs`, `pollIntervalMs`,
///   results inlined in `tasks/get`).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <droid/application/server/task_store.hpp>
#include <droid/application/server/server.hpp>

namespace droid {
class request_runner;
}

namespace droid::detail {

/// The `_meta` key that ties a message to its task (2025-11-25).
inline constexpr std::string_view related_task_key = "io.modelcontextprotocol/related-task";

/// Told when a task's record changes in this process (a question asked or answered, its
/// message set, its end), to push the new state to a client that asked for it
/// (`notifications/tasks` on a 2026 `subscriptions/listen` stream).
/// Affinity: called on whichever thread made the change; implementations post to their own.
class task_listener {
 public:
  virtual ~task_listener() = default;
  /// Task `id` changed; its record in the store is the new state.
  virtual void task_changed(std::string_view id) = 0;
};

/// The owner a 2026-07-28 request's tasks are recorded under: its principal, or nobody.
/// Why here: `subscriptions/listen` checks the tasks it is asked about as `tasks/get` does.
[[nodiscard]] std::string modern_task_owner(const peer_info& peer);

/// What a server's shards share about tasks.
///
/// Why per server and locked: a task runs on the shard whose request started it, while
/// the requests about it (2026: stateless, balanced anywhere) reach any shard; the lock
/// is taken when a task starts, ends, or is addressed, never on a plain call.
/// Affinity: any thread.
class task_engine {
 public:
  explicit task_engine(const server_options::task_options& options);

  [[nodiscard]] task_store& store() const noexcept { return *store_; }
  /// The default in-memory store, or null when the application gave its own.
  [[nodiscard]] const std::shared_ptr<memory_task_store>& memory() const noexcept { return memory_; }
  /// Puts `wrapper` (which wraps `store()`) in its place. Why: a transport that shares
  /// tasks with other instances writes every change through; it is installed before the
  /// server serves anything, never while a request may be reading the store.
  void wrap_store(std::shared_ptr<task_store> wrapper) { store_ = std::move(wrapper); }
  [[nodiscard]] const server_options::task_options& options() const noexcept { return options_; }
  /// 128 random bits, base64url: unguessable, so the id is a capability.
  [[nodiscard]] static std::string mint_id();

  /// Records that `runner` runs task `id` until `forget(id)`.
  void track(const std::string& id, std::weak_ptr<request_runner> runner);
  void forget(const std::string& id);
  /// The runner of live task `id` (null: not running here any more).
  [[nodiscard]] std::shared_ptr<request_runner> runner_of(const std::string& id) const;
  /// Stops task `id`'s tool on the shard that runs it, from any thread (nothing when it
  /// runs nowhere here). Why one place: a cancel, a task whose record Redis refused and a
  /// task another instance adopted all stop the tool the same way.
  void stop_tool(const std::string& id) const;
  [[nodiscard]] std::size_t running() const;

  /// Tells `listener` of every change to a task made through this process's store until
  /// the listener is destroyed (held weakly). A change made by another instance of a
  /// cluster is not seen here.
  void listen(const std::shared_ptr<task_listener>& listener);
  /// Tells the listeners that task `id` changed (the store decorator calls it).
  void changed(std::string_view id) const;

 private:
  server_options::task_options options_;
  std::shared_ptr<memory_task_store> memory_;
  std::shared_ptr<task_store> store_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<request_runner>> running_;
  /// Guards `listeners_`; `listening_` lets a change with no listener skip the lock.
  mutable std::mutex listeners_mutex_;
  mutable std::vector<std::weak_ptr<task_listener>> listeners_;
  mutable std::atomic<std::size_t> listening_{0};
};

/// `2026-12-01T15:30:00.123Z`: ISO 8601 in UTC with milliseconds, as both eras want.
[[nodiscard]] std::string iso8601(std::chrono::system_clock::time_point t);

/// The task's members (`"taskId":...,"status":...`, no braces) as `modern` (2026-07-28)
/// or 2025-11-25 clients read them. `detailed` (2026 `tasks/get`) inlines the
/// outstanding questions, the result or the error.
void append_task_members(std::string& out, const task_record& task, bool modern, bool detailed);
/// The same members as one JSON object (a `tasks/get` result, a status notification's
/// params, an entry of `tasks/list`).
[[nodiscard]] std::string task_object(const task_record& task, bool modern, bool detailed);

/// Adds `_meta["io.modelcontextprotocol/related-task"] = {taskId}` to the params object
/// `params_json` (keeping any `_meta` it has). Returns the params unchanged when they
/// are not an object.
[[nodiscard]] std::string with_related_task(std::string_view params_json, std::string_view task_id);

}  // namespace droid::detail
