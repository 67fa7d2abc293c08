// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::task_store`: where the records of tasks (long-running tool calls a client
/// polls) are kept, and the bounded in-memory store that is the default.
///
/// Application layer: the port a task store implements. The engine writes a task's record here when
/// the task is created, whenever its status changes (a question to the client, its end),
/// and reads it for `tasks/get`, `tasks/list` and `tasks/result`. A record is data only
/// (text and numbers, no pointer into a running frame), so a store shared by several
/// server instances can hold it; the frame itself stays on the instance that runs it.
/// The in-memory store below is the default and needs no I/O, so it lives here too; a
/// store that does I/O (one shared by instances) is a secondary adapter implementing
/// this interface.
///
/// ## Why synchronous
/// Every call is short and made on a shard: the in-memory store takes one lock. A store
/// on the network must not block a shard on a round trip; it keeps what this instance
/// wrote and read in memory and writes behind, in call order (docs/tasks.md says what
/// the interface promises and what a shared store must add).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace droid {

/// Where a task is in its life. `completed`, `failed` and `cancelled` are terminal: a
/// terminal task never changes again (a task cancelled while its tool was finishing
/// stays cancelled).
enum class task_status : std::uint8_t { working, input_required, completed, failed, cancelled };

/// The status as the wire writes it (`working`, `input_required`, ...).
[[nodiscard]] std::string_view to_string(task_status s) noexcept;
/// True for `completed`, `failed` and `cancelled`.
[[nodiscard]] constexpr bool is_terminal(task_status s) noexcept {
  return s == task_status::completed || s == task_status::failed || s == task_status::cancelled;
}

/// One task as the store keeps it.
struct task_record {
  /// Unguessable (128 random bits, base64url): the id is what a client presents to see
  /// or cancel the task, so it is a capability, not a counter.
  std::string id{};
  /// Who may see the task: a 2025 session and its principal, or a 2026 request's
  /// principal; empty when nothing identifies the client (the id alone then guards it).
  std::string owner{};
  /// Whose share of the task table it uses (`server_options::task_options::
  /// max_tasks_per_tenant`): "p" and the principal, or "a" and the client's address;
  /// empty when neither is known (stdio), which no share limits.
  std::string tenant{};
  task_status status = task_status::working;  ///< where the task is in its life
  std::string status_message{};  ///< a sentence for the client (`statusMessage`), or empty
  std::chrono::system_clock::time_point created_at{};  ///< `createdAt`
  std::chrono::system_clock::time_point last_updated_at{};  ///< `lastUpdatedAt`
  /// How long after its creation the task (and its result) is kept.
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds poll_interval{0};  ///< the polling interval the client is told
  /// The protocol revision of the request that created it ("2025-11-25", "2026-07-28"):
  /// the two eras render a task differently.
  std::string revision{};
  /// The questions waiting for the client's answer, by key, each the JSON text of an
  /// `inputRequests` entry (`{"method":...,"params":...}`), in the order asked.
  std::vector<std::pair<std::string, std::string>> input_requests{};
  /// JSON text: the tool's result (`completed`; in a 2025 task also a tool error that is
  /// `failed`), or the JSON-RPC error object (`failed` by a protocol error).
  std::string result{};
  std::string error{};  ///< JSON text of the JSON-RPC error object that failed it, or empty

  /// When the task expires (`created_at + ttl`); the store may drop it from then on.
  [[nodiscard]] std::chrono::system_clock::time_point expires_at() const noexcept { return created_at + ttl; }
};

/// Why a store turned a new task away, and whose limit it was.
///
/// Why the kind and not only a sentence: over HTTP a refusal for the client's own share
/// is a 429 and one for a full server a 503, each with Retry-After, so that a client (or
/// the proxy in front) backs off instead of retrying at once or giving up for good.
struct task_refusal {
  /// Whose bound the new task would have passed.
  enum class limit : std::uint8_t {
    tenant,  ///< the client's share (`max_tasks_per_tenant`): 429
    server,  ///< the whole store (`max_tasks`, the results' bytes): 503
    other,   ///< anything else (an id taken, a request that cannot carry a task)
  };
  std::string message{};  ///< a sentence for the client, naming the option
  limit which = limit::other;  ///< whose bound it was
};

/// A page of `list`.
struct task_page {
  std::vector<task_record> tasks{};  ///< the tasks on this page
  /// Where the next page starts (empty: this page is the last).
  std::string next{};
};

/// The store's interface. Why these operations and not "save a record": updates come
/// from two places at once (the shard running the tool adds questions and ends the task;
/// any shard answers questions and cancels), so each is a change the store applies
/// atomically to its current record, never a whole record that would overwrite another
/// shard's change.
/// Affinity: every function may be called from any thread.
class task_store {
 public:
  virtual ~task_store() = default;

  /// Records a new task. Refused (saying why, and whose limit it was) when the store or
  /// the task's tenant is full: a new task is turned away rather than an old result dropped.
  [[nodiscard]] virtual std::optional<task_refusal> create(task_record record) = 0;
  /// The task `id` if `owner` may see it, and it has not expired; none otherwise (an
  /// unknown id and another owner's are indistinguishable, on purpose).
  [[nodiscard]] virtual std::optional<task_record> get(std::string_view id, std::string_view owner) = 0;
  /// Up to `limit` of `owner`'s tasks, oldest first, from cursor `after` (empty: the
  /// first page). None when the cursor is not one this store made.
  [[nodiscard]] virtual std::optional<task_page> list(std::string_view owner, std::string_view after,
                                                      std::size_t limit) = 0;

  /// A question joins the task's outstanding ones (the task is then `input_required`).
  /// False when the task is gone or terminal.
  virtual bool ask(std::string_view id, std::string key, std::string request_json) = 0;
  /// The client answered: `keys` leave the outstanding questions (none left: `working`
  /// again). Returns the keys that were outstanding; the rest are ignored, as a client
  /// may answer a question twice or one that was withdrawn.
  [[nodiscard]] virtual std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) = 0;
  /// Sets the task's `statusMessage` (ignored once it is terminal).
  virtual void set_message(std::string_view id, std::string message) = 0;
  /// Ends the task: `status` terminal, with the result or error text. False when it had
  /// ended already (the first end wins: a cancelled task stays cancelled).
  virtual bool finish(std::string_view id, task_status status, std::string result, std::string error,
                      std::string message = {}) = 0;
  /// Removes the task at once (its session ended: nobody can see it any more).
  virtual void remove(std::string_view id) = 0;
};

/// The default store: in memory, bounded, expiring.
///
/// Why bounded twice: the number of tasks bounds the records, and the bytes of stored
/// results bound what finished tasks hold until their time to live passes (one tool can
/// return megabytes). Over either bound `create` refuses; expired tasks are dropped
/// whenever the store is used, so a full store frees itself as time passes.
class memory_task_store final : public task_store {
 public:
  /// The clock type a store reads its time from.
  using clock_fn = std::function<std::chrono::system_clock::time_point()>;
  /// `now`: the clock that judges expiry and stamps updates (tests give a manual one).
  /// `max_per_tenant`: tasks one tenant (`task_record::tenant`) may hold; 0: no share.
  explicit memory_task_store(std::size_t max_tasks = 1024, std::size_t max_result_bytes = 64u << 20,
                             clock_fn now = {}, std::size_t max_per_tenant = 0);

  std::optional<task_refusal> create(task_record record) override;
  std::optional<task_record> get(std::string_view id, std::string_view owner) override;
  std::optional<task_page> list(std::string_view owner, std::string_view after, std::size_t limit) override;
  bool ask(std::string_view id, std::string key, std::string request_json) override;
  std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) override;
  void set_message(std::string_view id, std::string message) override;
  bool finish(std::string_view id, task_status status, std::string result, std::string error,
              std::string message) override;
  void remove(std::string_view id) override;

  /// Task `id` whoever owns it (not expired), for a store that shares what this one holds
  /// with other instances (it writes the whole record out after each change).
  [[nodiscard]] std::optional<task_record> peek(std::string_view id);

  /// Tasks held (expired ones not yet swept included).
  [[nodiscard]] std::size_t size() const;
  /// Bytes of results and errors held.
  [[nodiscard]] std::size_t result_bytes() const;

 private:
  struct entry {
    task_record record;
    std::uint64_t order = 0;
  };
  using map = std::unordered_map<std::string, entry>;
  void sweep(std::chrono::system_clock::time_point now);
  void erase(map::iterator it);
  [[nodiscard]] std::chrono::system_clock::time_point now() const;

  std::size_t max_tasks_;
  std::size_t max_result_bytes_;
  clock_fn now_;
  std::size_t max_per_tenant_;
  /// Tasks held per tenant. Why a share: one client that fills the table (tasks live an
  /// hour by default) refuses everyone else's.
  std::unordered_map<std::string, std::size_t> per_tenant_;
  mutable std::mutex mutex_;
  map tasks_;
  /// Creation order to id: `list` pages through it, `sweep` finds the oldest first.
  std::map<std::uint64_t, std::string> by_order_;
  std::uint64_t next_order_ = 0;
  std::size_t result_bytes_ = 0;
};

}  // namespace droid
