// SPDX-License-Identifier: BSL-1.0
/// @file
/// `cluster`: one listener as an instance among several, sharing its 2025 sessions with
/// the others through Redis (`options::cluster`; docs/scale-out.md tells the whole design).
///
/// Primary adapter, private. The rule it keeps: a session has one owner, the instance
/// whose session table holds it and whose shard runs its frames; nothing that cannot
/// move (a suspended tool, an exchange waiting for the client) ever moves. What can is
/// in the shared store (shared_store.hpp, the port this module reaches Redis through):
/// each session's record (owner, epoch, state), each member's lease and inbox, the
/// session streams and the task records.
///
/// A request for a session that is not here goes one of three ways:
///
///     owner's lease current  ->  forwarded: "req" to the owner's inbox; the owner serves
///                                it through a relay sink that publishes its events back
///                                ("evs") to this instance, which writes them to
///                                the client as if the session were here (forwarded.cpp)
///     owner's lease gone     ->  taken over: one step swaps the record's owner to this
///                                member and raises its epoch, if the old owner's lease
///                                is still gone; the session is restored from the record
///                                and served here from then on
///     no record              ->  404, as for any unknown session
///
/// Notifications and answers for a remote session are forwarded ("msg") and get 202 at
/// once. A forwarded request whose owner's lease ends is ended here with an error
/// response; one the owner does not take up within `forward_timeout` is abandoned (the
/// owner confirms it never started) and looked for again. The lease: lease.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>
#include <functional>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/hosting.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/task.hpp>

#include "adapters/primary/transport/http/sessions/sessions.hpp"
#include "shared_store.hpp"

namespace droid::http::detail {

struct endpoint_state;

/// Length-prefixed fields ("3:req5:hello"): the inbox messages' encoding. Why not JSON:
/// a field is often a whole JSON-RPC message, which would be escaped into a string and
/// parsed twice; here it is copied as it is.
[[nodiscard]] std::string encode_fields(std::initializer_list<std::string_view> fields);
[[nodiscard]] std::string encode_fields(const std::vector<std::string_view>& fields);
/// Splits `text` into its fields (views into it); false for anything `encode_fields`
/// did not make.
[[nodiscard]] bool decode_fields(std::string_view text, std::vector<std::string_view>& out);

/// A forwarded request between its arrival and its start. Why: the asker may give up on
/// a request the owner has not started (`forward_timeout`), and only one of the two may
/// win: the owner's start, or the asker's abandonment, after which the request is looked
/// for again and served wherever its session is then. A lapse of the owner's lease in
/// between also stops it from starting: the asker may have taken the session over and
/// run it itself. (`cluster::may_start`, `cluster::abandon`.)
struct forward_gate {
  enum : std::uint8_t { pending, started, abandoned };
  std::atomic<std::uint8_t> phase{pending};
  std::uint64_t lapses = 0;  ///< the owner's lapses when it arrived
  /// The request's stream once it started (0: not yet); the session's shard only.
  std::uint64_t stream = 0;
};

/// Makes the shared store of a listener's cluster: for `o` (its `redis_url`), the
/// listener's `shards`, sessions idle for `session_ttl` at most and `max_events` kept per
/// stream.
using store_maker = std::function<std::shared_ptr<shared_store>(
    const options::scale_out& o, std::vector<asio::any_io_executor> shards, std::chrono::milliseconds session_ttl,
    std::size_t max_events)>;
/// The maker every listener uses: the Redis store (listener.cpp), unless a test put an
/// in-memory store in its place to drive the lease step by step. Set it before a
/// listener is made, never while one starts.
[[nodiscard]] store_maker& shared_store_maker();

/// The listener's cluster membership. Affinity: each shard uses the store on its own
/// thread; the inbox is read on shard 0 and hands work to the shards it concerns.
class cluster : public std::enable_shared_from_this<cluster> {
 public:
  /// `store`: what the instances share (`store_maker`).
  cluster(endpoint_state& st, const options::scale_out& o, std::vector<asio::any_io_executor> shards,
          std::shared_ptr<shared_store> store);

  /// Connects every shard's client and the inbox, and starts the heartbeat.
  void start();
  /// Says goodbye (the others take this instance's sessions over at once rather than
  /// after `instance_ttl`), then closes every client on its shard.
  void stop();

  /// This process among the instances: the configured name and a random incarnation
  /// ("mcp-1#9f2c..."). Every key, channel and message that names an instance names this,
  /// so that a process restarted under the same `instance_id` is another member: nothing
  /// addressed to its previous life (a relay's events, a forward's reply, a lease) can
  /// reach it, and its previous life's sessions are taken over, not mistaken for its own.
  [[nodiscard]] const std::string& member() const noexcept { return member_; }
  [[nodiscard]] const options::scale_out& settings() const noexcept { return opts_; }
  /// Tells the server's diagnostics why the shared store failed on shard `index` last.
  /// Why not the client: the reason names the store's host and port and quotes its
  /// errors, which are the operator's business; a client is told only to retry.
  void report_store_failure(std::size_t index) const;

  // ---- sessions owned here --------------------------------------------------------------
  /// The event store of session `e` (on `e.shard`): the memory ring written behind to
  /// Redis; null when its streams cannot be resumed (JSON answers, a ring of capacity 0).
  /// An application's own `options::event_store` is not used in a cluster: what another
  /// instance replays must be in Redis.
  [[nodiscard]] std::unique_ptr<event_store> make_store(const session_entry& e) const;
  /// Writes `e`'s record whenever its state changes (from now on, on its shard).
  void own(const std::shared_ptr<session_entry>& e);
  /// Refreshes the record's time to live, at most a few times per idle timeout.
  void touch(session_entry& e);
  /// The session ended for good (DELETE, or idle): its record and streams go, so nobody
  /// takes it over. Call after `end_session` (its last writes come first).
  void forget(const session_entry& e);
  /// The same for a session not held here (on shard `shard`; `epoch`: its owner's).
  void forget_id(std::size_t shard, const std::string& id, std::uint64_t epoch);

  // ---- sessions that are not here -------------------------------------------------------
  /// Where a session not in this instance's table is.
  struct located {
    enum class where : std::uint8_t { nowhere, remote, here, unavailable } is = where::nowhere;
    std::string owner{};      ///< `remote`: the instance that owns it
    std::string principal{};  ///< `remote`: whom it belongs to
    std::shared_ptr<session_entry> entry{};  ///< `here`: taken over, now in the table
  };
  /// Finds session `id` in Redis and takes it over when its owner is gone. Runs on the
  /// shard `shard` (its client), for a connection of that shard (`executor`).
  task<located> locate(std::size_t shard, asio::any_io_executor executor, std::string id);

  /// A request on its way to a remote owner: the sink its events are written to here.
  /// Returns the tag the owner's replies carry.
  std::uint64_t open_forward(std::shared_ptr<response_sink> sink, std::string owner, std::string request_id_json,
                             bool json);
  /// The client's connection ended (or the answer did): forget the tag, and tell the
  /// owner when the stream was still open (its relay stops; the stream stays resumable).
  void close_forward(std::size_t shard, std::uint64_t tag);
  /// The status a forward's sink is rejected with when its owner did not take it up and
  /// has not been heard from for `instance_ttl`: never sent to a client; the asker takes
  /// the owner for dead and looks for the session (or task) again.
  static constexpr int owner_silent = 421;
  /// What publishing on an inbox gave.
  enum class delivery : std::uint8_t { delivered, nobody, unavailable };
  /// Publishes `payload` on `owner`'s inbox: `nobody` when no instance listens there (the
  /// owner died, or lost Redis), `unavailable` when Redis cannot be reached.
  task<delivery> send_to(std::size_t shard, std::string owner, std::string payload);
  /// The owner of session `id` looked up in Redis is not to be trusted any more (it
  /// refused a forwarded request: the session ended, or moved).
  void forget_owner(const std::string& id);
  /// Publishes `payload` on `owner`'s inbox for a request that waits for its answer.
  /// Nobody listening there is not taken as death: the owner may be between two
  /// subscriptions (a Redis failover, a dropped connection), and what was published to
  /// nobody was heard by nobody, so it is published again until someone hears it or the
  /// owner's lease is gone (`nobody`: the session or task may now be taken over), bounded
  /// by `instance_ttl + forward_timeout` (`unavailable`).
  task<delivery> deliver(std::size_t shard, std::string owner, std::string payload);
  /// Tells member `asker` that its forward `tag` was refused ("rej": `status`, `why`): the
  /// one place that writes a refusal, whoever refuses (the session is not here, the owner
  /// is fenced, the request was abandoned or never arrived).
  void refuse_forward(std::size_t shard, std::string_view asker, std::string_view tag, int status,
                      std::string_view why);
  /// Publishes `payload` on `owner`'s inbox, not waiting for Redis (a refusal, a "stop").
  void post_to(std::size_t shard, const std::string& owner, const std::string& payload);
  /// The inbox's connection broke: whatever was published to it meanwhile is lost, so no
  /// forward in progress can be known to be whole (`break_forward` each).
  void inbox_lost();

  // ---- the lease (docs/scale-out.md#the-lease) ------------------------------------------
  /// This member cannot show that its lease (`i:MEMBER`) is current: its last confirmed
  /// renewal was sent more than `instance_ttl` minus a margin ago (its own monotonic
  /// clock), or Redis said the lease was gone and it has not finished taking back what is
  /// still its own. Why it matters: another instance may take a session or task over once
  /// the lease has expired in Redis, and a renewal's confirmation starts the lease no
  /// earlier than its sending did, so a member that stops at that deadline has stopped
  /// before anyone else may start. While fenced it serves nothing it holds: requests wait
  /// (`until_current`) or are refused, forwarded ones are sent back to be looked up again.
  [[nodiscard]] bool fenced() const noexcept;
  /// Waits until this member is not fenced, at most `instance_ttl + forward_timeout`
  /// (polling its own flag; nothing to ask Redis). False: still fenced.
  task<bool> until_current(asio::any_io_executor executor);

  [[nodiscard]] std::shared_ptr<forward_gate> new_gate() const;
  /// Whether a request may start now: never while fenced, and a forwarded one (`gate`)
  /// only if nobody abandoned it and no lapse came since it arrived (it is then abandoned
  /// for good). Call on the session's shard, right before the request starts.
  [[nodiscard]] bool may_start(forward_gate* gate) const;
  /// The asker `from` gives up on its forward `tag` if the owner has not started it:
  /// the reply ("rej") says which (503: it never will; 421: it never arrived, look again).
  void abandon(std::string_view from, std::string_view tag);

  /// Reads session `e`'s stream `number` (written by an earlier owner) into `sink` after
  /// event `after`: a stream that a dead owner left unfinished is ended with an error for
  /// its request. False when it cannot be replayed.
  task<bool> replay_foreign(std::size_t shard, std::shared_ptr<session_entry> e, std::uint64_t number,
                            std::uint64_t after, std::shared_ptr<response_sink> sink);

  // ---- tasks ------------------------------------------------------------------------------
  /// Where task `id` is, for a request about it that reached this instance.
  struct task_location {
    enum class where : std::uint8_t { here, remote, unavailable } is = where::here;
    std::string owner{};  ///< `remote`: the instance that runs it
  };
  /// Finds task `id`: here when this instance holds it, never heard of it (the request
  /// is then answered here, "not found"), or took it over from a dead owner just now
  /// (a running one failed, saying why); remote when its owner is alive.
  task<task_location> locate_task(std::size_t shard, std::string id);
  /// Tasks are shared (the server uses the default store, which the cluster wraps).
  [[nodiscard]] bool shares_tasks() const noexcept { return tasks_ != nullptr; }

  /// Accepts and releases `sink` (held: `response_sink::hold`) once every command shard
  /// `shard` sent Redis so far has been answered (a PING behind them on the same
  /// connection). Why: a session's record, or a task's, is written behind; the answer
  /// that names the session or the task must not reach the client before the record
  /// reaches Redis, or the client's next request, landing elsewhere, would find nothing.
  /// `refuse_unwritten`: when Redis is unreachable or refused a write meanwhile, the sink
  /// is rejected (503, saying why) instead of accepted; otherwise it is accepted all the
  /// same. Call on `shard`.
  ///
  /// `on_refused` (with `refuse_unwritten`) gets what the sink held before it was refused:
  /// the answer the client will not see (a new task's, whose task must then be stopped).
  void accept_when_written(std::size_t shard, std::shared_ptr<response_sink> sink, bool refuse_unwritten,
                           std::function<void(std::vector<sse_event>&)> on_refused = {});
  /// A task whose record Redis did not take is stopped and ended failed, unannounced: its
  /// creation was refused to the client (503), so no client knows its id, and it must
  /// not run on with nobody to hear of it. `answers`: what the refused response held.
  void stop_unkept_tasks(std::vector<sse_event>& answers);

  /// Serves messages forwarded here (called on shard 0, which reads the inbox).
  std::function<void(std::vector<std::string_view> fields)> on_request{};

  // ---- relays (this instance owns the session; another carries the client) -------------
  /// Remembers the relay sink of a forwarded request or GET, keyed "instance/tag", so
  /// that a "stop" from that instance can end it.
  /// `gate`: a forwarded request's (null for a GET); `cancel`: stops the request the relay
  /// carries, as `notifications/cancelled` would, when this member's lease lapses.
  void add_relay(std::string key, std::shared_ptr<response_sink> sink, asio::any_io_executor home,
                 std::shared_ptr<forward_gate> gate = nullptr, std::function<void()> cancel = {});
  void remove_relay(const std::string& key);
  /// The asking instance's client left: the relay's sink dies (on its shard), which ends
  /// the relay; the stream itself goes on being recorded.
  void stop_relay(const std::string& key);

 private:
  struct forward {
    std::weak_ptr<response_sink> sink;
    std::string owner;            ///< the member asked: replies from any other are ignored
    std::string request_id_json;  ///< empty for a GET
    bool json = false;            ///< answered with one JSON document, not a stream
    std::chrono::steady_clock::time_point deadline;  ///< to be taken up by
    bool settled = false;
    /// When an "abandon" was sent for it (never taken up in time), or never.
    std::optional<std::chrono::steady_clock::time_point> abandoned;
    /// The number the owner's next batch of events must carry. Why: pub/sub drops what is
    /// published while a subscription reconnects, and a stream with a hole in it would
    /// look whole to the client; a batch out of turn ends the client's stream instead, so
    /// that it resumes with Last-Event-ID and gets every event from the owner's record.
    std::uint64_t next_batch = 0;
  };
  /// The replies of forward `tag` (`f`, already out of the table) can no longer be known
  /// to arrive whole (a batch missed, or the inbox's connection lost): its owner is told to
  /// stop relaying, and its client's stream is ended where it stands (a stream is resumed;
  /// a JSON answer gets an error saying the answer was lost).
  void break_forward(std::uint64_t tag, const forward& f, const std::shared_ptr<response_sink>& sink);
  void on_message(std::string_view channel, std::string_view payload);
  void beat();
  /// Ends the forwards to owners that are gone, and refuses those not taken up in time.
  task<void> sweep();
  /// Whether `owner` is heard from, or its lease is current (Redis down: taken as alive).
  task<bool> alive(std::size_t shard, std::string owner);

  endpoint_state& st_;
  options::scale_out opts_;
  std::string name_;
  std::string member_;
  std::vector<asio::any_io_executor> shards_;
  std::shared_ptr<shared_store> store_;
  std::optional<asio::steady_timer> heartbeat_;
  std::atomic<bool> stopping_{false};

  std::mutex mutex_;
  std::uint64_t next_tag_ = 0;
  std::unordered_map<std::uint64_t, forward> forwards_;
  struct relay_entry {
    std::weak_ptr<response_sink> sink;
    asio::any_io_executor home;
    std::shared_ptr<forward_gate> gate{};
    std::function<void()> cancel{};
  };
  std::unordered_map<std::string, relay_entry> relays_;
  /// When each other instance was last heard of (heartbeats on the common channel).
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> seen_;
  /// Remote sessions' owners as Redis said a moment ago (for `heartbeat`), so that a
  /// client's next requests are forwarded without a lookup each. Why a cache is safe: a
  /// request forwarded to an instance that no longer holds the session is refused by it,
  /// and looked up again (`forget_owner`); one to a dead instance is heard by nobody.
  struct cached_owner {
    std::string owner;
    std::string principal;
    std::chrono::steady_clock::time_point until;
  };
  static constexpr std::size_t max_owners_cached = 65536;
  std::unordered_map<std::string, cached_owner> owners_;
  void remember_owner(const std::string& id, const std::string& owner, const std::string& principal);
  /// Writes `e`'s record (on its shard), if Redis still names this member and `e`'s epoch
  /// as its owner (or has no record: a new session, or a Redis that lost it); when it names
  /// another, the session is no longer this member's and is given up here.
  void write_record(const std::shared_ptr<session_entry>& e);
  /// Gives session `id` up here: its frames end, its clients are told (it was taken over).
  void give_up(const std::string& id);

  // The lease. `lease_until_` (now_ns() time) is when the last confirmed renewal's lease
  // may have ended, less a margin for the clocks' drift; `recovering_` is set from a lapse
  // (Redis said the lease was gone) until `recover` has taken back what is still ours.
  std::atomic<std::int64_t> lease_until_{0};
  std::atomic<bool> recovering_{false};
  /// Lapses so far: a forwarded request that arrived before one never starts after it.
  std::atomic<std::uint64_t> lapses_{0};
  bool recovery_running_ = false;                 ///< shard 0
  std::uint64_t marks_sent_ = 0, marks_seen_ = 0;  ///< shard 0: see `recover`
  /// Notifications and answers that reached the inbox while fenced, served once the lease
  /// is current again (for the sessions still held then). Bounded.
  std::vector<std::string> deferred_;
  static constexpr std::size_t max_deferred = 4096;
  [[nodiscard]] std::int64_t lease_span_ns() const noexcept;
  /// Renews the lease (`SET XX`: only while it exists), or starts `recover` when it is gone.
  task<void> renew();
  /// After a lapse: the lease is taken again; every session and task still named this
  /// member's in Redis is kept (a record Redis lost is written again), every other given
  /// up here; then a mark published to this member's own inbox is awaited, so that every
  /// message queued there before it is refused, not served late. Only then is the member
  /// current again. Shard 0.
  task<void> recover();
  /// At a lapse: every relay stops and the request it carries is cancelled (its asker
  /// ends its client's stream: "brk"), since the asker may already have told the client
  /// that this member is gone.
  void end_relays();
  /// Carries this server's change notifications (list_changed, resources/updated) to the
  /// other instances, whose clients are told as this instance's are.
  std::shared_ptr<droid::hosting::change_listener> fanout_;
  /// The server's task store, written through to the shared store (null: the
  /// application's own store, which is not shared).
  std::shared_ptr<shared_task_table> tasks_;
};

}  // namespace droid::http::detail
