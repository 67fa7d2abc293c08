// SPDX-License-Identifier: BSL-1.0
/// @file
/// `shared_store`: the port through which the cluster (cluster.hpp) reaches what its
/// instances share: leases, session and task records, session event streams and the
/// inboxes. The Redis adapter (adapters/secondary/redis/redis_shared_store.hpp) is the
/// one a deployment uses; tests also drive the cluster through an in-memory one.
///
/// Why a port: the cluster's rules (who owns a session, when a member is fenced, what a
/// forwarded request may do) are the part that must never be wrong, and they were spread
/// among Redis commands and Lua text. Here each shared step is one call whose outcome
/// the cluster decides on, and whose atomicity the adapter promises: a takeover, a
/// record write and a task adoption are each one indivisible step on the shared state
/// (in Redis, a script), so nothing another member does can come between their check
/// and their change.
///
/// Primary adapter, private. Shards: every call names the shard it is made on, and is
/// made on that shard's thread (the adapter keeps a connection per shard); calls made on
/// one shard reach the store in the order they were made, which `written` relies on.
/// Shard 0 also reads the inbox.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <chrono>

#include <asio/any_io_executor.hpp>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/adapters/secondary/event_store/event_store.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/server/task_store.hpp>
#include <droid/application/task.hpp>

namespace droid::http::detail {

/// A session's record as the store keeps it: who owns it, at which epoch, and what
/// another member needs to restore it.
struct session_record {
  std::string owner{};
  std::uint64_t epoch = 0;
  session_state state{};
};

/// The server's task store as the cluster shares it: the memory store, every change
/// written to the shared store behind it (only while its record names this member), and
/// what a member needs to learn which tasks are still its own after a lapse.
class shared_task_table : public task_store {
 public:
  /// Task `id` is held here (whoever owns it).
  [[nodiscard]] virtual bool holds(std::string_view id) = 0;
  /// Takes in a record another member wrote (its owner being gone): a task still running
  /// is failed, with `why` as its message; from then on it is served here.
  virtual void adopt(task_record record, const std::string& why) = 0;
  /// The tasks whose records were written from here and are still held.
  [[nodiscard]] virtual std::vector<std::string> held() = 0;
  /// Writes task `id`'s record again (the store lost it).
  virtual void republish(std::string_view id) = 0;
  /// Forgets task `id` here without a word to the store: another member owns it now.
  virtual void drop(std::string_view id) = 0;
};

/// A session stream written by an earlier owner, as the store holds it.
struct stored_stream {
  std::vector<std::pair<std::uint64_t, std::string>> events{};
  std::uint64_t last = 0;         ///< the highest event number recorded
  bool ended = false;             ///< its owner (or a successor) ended it
  std::string request_id_json{};  ///< the request it answers (empty: unknown)
};

class shared_store {
 public:
  virtual ~shared_store() = default;

  // ---- connections ------------------------------------------------------------------------
  /// What arrives on the inbox: the channel (this member's own, or the common one) and
  /// the payload, as published.
  using message_handler = std::function<void(std::string_view channel, std::string_view payload)>;
  /// Connects every shard and the inbox (shard 0), which hears `member`'s channel and the
  /// common one. `on_message` is called on shard 0 for each message; `on_lost` when the
  /// inbox's connection broke (whatever was published to it meanwhile is lost).
  virtual void start(std::string member, message_handler on_message, std::function<void()> on_lost) = 0;
  /// Closes the inbox, then every shard's connection after what it has queued (each on
  /// its shard).
  virtual void stop() = 0;
  /// The inbox hears what is published to it now. Why it matters: a member renews its
  /// lease only while it does (a deaf member would lose every request sent to it).
  [[nodiscard]] virtual bool inbox_connected() const = 0;
  /// Sends a liveness probe on the inbox's connection, so that one that died without a
  /// word is found (a subscribed connection has no traffic of its own).
  virtual void probe_inbox() = 0;
  /// Why shard `shard`'s connection last failed, for an error message ("" if it never did).
  [[nodiscard]] virtual std::string last_failure(std::size_t shard) const = 0;

  // ---- the lease (docs/scale-out.md#the-lease) --------------------------------------------
  enum class renewal : std::uint8_t { renewed, gone, unavailable };
  /// Extends `member`'s lease by `ttl` only if it still exists (shard 0).
  virtual task<renewal> renew_lease(std::string member, std::chrono::milliseconds ttl) = 0;
  /// Takes `member`'s lease again (it was gone); false: the store did not confirm it.
  virtual task<bool> take_lease(std::string member, std::chrono::milliseconds ttl) = 0;
  /// Whether `member`'s lease exists; nullopt when the store cannot be asked.
  virtual task<std::optional<bool>> lease_exists(std::size_t shard, std::string member) = 0;
  /// Ends `member`'s lease (shard 0, not waiting).
  virtual void leave(std::string member) = 0;

  // ---- sessions ---------------------------------------------------------------------------
  struct found_session {
    enum class what : std::uint8_t { found, none, unavailable } is = what::none;
    session_record record{};
  };
  virtual task<found_session> read_session(std::size_t shard, std::string id) = 0;
  /// The outcome of `take_over`: `epoch` is the session's epoch now (when `taken`).
  struct takeover {
    enum class what : std::uint8_t { taken, raced, owner_current, unavailable } is = what::unavailable;
    std::uint64_t epoch = 0;
  };
  /// One step: if session `id`'s record still names `from`, and `from`'s lease is gone,
  /// the record names `to` at a new epoch (`taken`); `raced` when it names another now,
  /// `owner_current` when `from`'s lease exists. When `from == to` (a member taking back
  /// what it gave up, or two of its requests racing), the session is taken at its epoch.
  /// The record's time to live becomes `ttl`.
  virtual task<takeover> take_over(std::size_t shard, std::string id, std::string from, std::string to,
                                   std::chrono::milliseconds ttl) = 0;
  enum class write_outcome : std::uint8_t { written, refused, unavailable };
  /// Writes session `id`'s record `r` (its owner and epoch included), in one step, only
  /// while the stored record names `r.owner` at `r.epoch` or there is none; `refused`:
  /// the session is another's now. A write that could not be made counts against
  /// `written` on this shard.
  virtual task<write_outcome> write_session(std::size_t shard, std::string id, session_record r,
                                            std::chrono::milliseconds ttl) = 0;
  /// Extends session `id`'s record by `ttl` (not waiting).
  virtual void touch_session(std::size_t shard, const std::string& id, std::chrono::milliseconds ttl) = 0;
  /// Removes session `id`'s record and every stream of it up to `epoch`, in one step,
  /// unless the record names another owner than `member` (not waiting).
  virtual void forget_session(std::size_t shard, const std::string& id, const std::string& member,
                              std::uint64_t epoch) = 0;
  /// What a member back from a lapse learns of each thing it holds.
  enum class claim : std::uint8_t {
    ours,     ///< still named its own: kept as it is
    missing,  ///< no record (the store lost it): to be written again
    another,  ///< another member's now: to be given up
  };
  /// One round trip for all of them: `sessions` (id, epoch) and `tasks` (ids), asked for
  /// `member`; the claims in the same order, sessions first. nullopt: unavailable.
  virtual task<std::optional<std::vector<claim>>> claim_all(std::string member,
                                                            std::vector<std::pair<std::string, std::uint64_t>> sessions,
                                                            std::vector<std::string> tasks) = 0;

  // ---- session streams --------------------------------------------------------------------
  /// The event store of session `id` at `epoch` owned here (on `shard`): `local` written
  /// behind to the shared store. `ttl`: how long a stream outlives its last event.
  [[nodiscard]] virtual std::unique_ptr<event_store> session_events(std::size_t shard, const std::string& id,
                                                                    std::uint64_t epoch,
                                                                    std::unique_ptr<memory_event_store> local) = 0;
  enum class read_outcome : std::uint8_t { ok, unknown, trimmed, unavailable };
  /// Stream `number` of session `id` after event `after`, as an earlier owner wrote it.
  virtual task<read_outcome> read_stream(std::size_t shard, std::string id, std::uint64_t number,
                                         std::uint64_t after, stored_stream& out) = 0;
  enum class end_outcome : std::uint8_t { ended, already, unavailable };
  /// Ends stream `number` with `final_event` after event `last`, unless someone ended it.
  virtual task<end_outcome> end_stream(std::size_t shard, std::string id, std::uint64_t number, std::uint64_t last,
                                       std::string final_event) = 0;

  // ---- tasks ------------------------------------------------------------------------------
  /// `local` shared: each change written behind, as `member`'s (any thread).
  [[nodiscard]] virtual std::shared_ptr<shared_task_table> share_tasks(std::shared_ptr<memory_task_store> local,
                                                                       std::string member) = 0;
  struct found_task {
    enum class what : std::uint8_t { found, none, unavailable } is = what::none;
    std::string owner{};
  };
  /// Who owns task `id`.
  virtual task<found_task> task_owner(std::size_t shard, std::string id) = 0;
  struct adoption {
    enum class what : std::uint8_t { adopted, refused, unavailable } is = what::unavailable;
    std::optional<task_record> record{};  ///< `adopted` (nullopt if it could not be read)
  };
  /// One step: if task `id` is still `from`'s and `from`'s lease is gone, it is `to`'s.
  virtual task<adoption> adopt_task(std::size_t shard, std::string id, std::string from, std::string to) = 0;

  // ---- messages ---------------------------------------------------------------------------
  /// Publishes `payload` on `member`'s inbox; how many heard it, nullopt when the store
  /// cannot be reached.
  virtual task<std::optional<std::int64_t>> publish(std::size_t shard, std::string member, std::string payload) = 0;
  /// The same, not waiting.
  virtual void post(std::size_t shard, const std::string& member, const std::string& payload) = 0;
  /// Publishes `payload` on the common channel, not waiting.
  virtual void post_all(std::size_t shard, const std::string& payload) = 0;

  // ---- acknowledgements -------------------------------------------------------------------
  /// Waits until everything shard `shard` sent so far was answered; nullopt when all of
  /// it was taken, otherwise why not (unreachable, or a write refused meanwhile, such as
  /// an out-of-memory store). Why: an answer that names a new session or task must not
  /// reach the client before its record is shared.
  virtual task<std::optional<std::string>> written(std::size_t shard) = 0;
};

/// The Redis store for `o` (its `redis_url`), the listener's `shards`, sessions idle for
/// `session_ttl` at most and `max_events` kept per stream; throws `std::invalid_argument`
/// naming the option when the URL is not one. Declared by the port and defined by the
/// Redis adapter (adapters/secondary/redis/redis_shared_store.cpp), so that the HTTP
/// transport never includes the Redis client's headers; a build configured with
/// `-Dredis=disabled` defines it to refuse every URL (adapters/secondary/redis/without_redis.cpp).
[[nodiscard]] std::shared_ptr<shared_store> make_redis_store(const options::scale_out& o,
                                                             std::vector<asio::any_io_executor> shards,
                                                             std::chrono::milliseconds session_ttl,
                                                             std::size_t max_events);

}  // namespace droid::http::detail
