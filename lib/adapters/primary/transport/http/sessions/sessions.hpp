// SPDX-License-Identifier: BSL-1.0
/// @file
/// The HTTP transport's sessions: one entry per live 2025 session (Streamable HTTP or
/// legacy HTTP+SSE), and the table that finds them by `Mcp-Session-Id`.
///
/// Primary adapter, private.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <asio/any_io_executor.hpp>

#include <droid/adapters/secondary/event_store/event_store.hpp>

#include "stream.hpp"

namespace droid {
class server;
class session;
}  // namespace droid

namespace droid::http::detail {

/// One live session as the transport sees it.
///
/// Why a session is driven on its own shard: the session engine is lock-free because one
/// thread touches it. A request arriving on another shard's connection is handed to the
/// session's shard with one post, and what the session answers comes back through the
/// stream's own dispatch.
/// Invariants: `s` is touched only on `executor`'s thread; the atomics are read by the
/// reaper on another shard.
struct session_entry {
  /// A new session on `executor`'s shard, with a fresh id and its standalone stream as
  /// its own outbound. `store` may be null (nothing to resume).
  /// Bound to `principal` (`principal::key()`; empty: no authentication).
  static std::shared_ptr<session_entry> create(droid::server& srv, asio::any_io_executor executor,
                                               std::unique_ptr<event_store> store, std::string principal = {});
  /// Gives the session `store` (one that needs the session's id, made after it).
  void set_store(std::unique_ptr<event_store> store);

  std::string id;
  std::shared_ptr<session> s;
  asio::any_io_executor executor;
  /// The index of `executor`'s shard (whose Redis client a cluster writes the session
  /// with).
  std::size_t shard = 0;
  /// How many times the session was taken over by another instance (cluster/); its
  /// streams are numbered from `epoch << 32`.
  std::uint64_t epoch = 0;
  /// When a cluster last refreshed the session's record in Redis (ns, as `last_used`).
  std::atomic<std::int64_t> record_touched{0};
  /// Open POST streams and the GET stream: a session with any is busy, never reaped.
  /// Requests that run on after their client left do not count: a client that means to
  /// resume has the idle timeout to do it, and work nobody resumes must end.
  std::atomic<int> active{0};
  std::atomic<std::int64_t> last_used{0};
  /// The last stream number handed out (0 is the standalone stream).
  std::atomic<std::uint64_t> next_stream{0};
  /// A GET is attached to the standalone stream.
  std::atomic<bool> has_standalone{false};
  /// A session of the legacy HTTP+SSE transport (reachable only through its paths).
  bool legacy = false;
  /// Whom the session belongs to (`principal::key()`; empty without authentication):
  /// every later request must come with a token of the same principal.
  std::string principal;
  /// Whose share of `options::max_sessions_per_tenant` it uses (`caller::tenant`; empty:
  /// nobody's, as a session another instance handed over).
  std::string tenant;

  // ---- the session's shard only -------------------------------------------------------
  /// Every event of the session, for resumption (null in JSON mode: nothing to resume).
  std::unique_ptr<event_store> store;
  /// Streams still being written (requests not yet answered), by number.
  std::unordered_map<std::uint64_t, std::shared_ptr<logical_stream>> streams;
  /// Stream 0: notifications that belong to no request.
  std::shared_ptr<logical_stream> standalone;
  /// Resumed streams (GET with Last-Event-ID of a request stream): they idle after their
  /// request is over and end with the session.
  std::vector<std::shared_ptr<response_sink>> resumed;
};

/// Ends a session on its own shard: cancels its calls and ends its GET stream. The
/// calls' own streams end as their tasks unwind.
void end_session(const std::shared_ptr<session_entry>& e);

/// The live sessions, by id.
///
/// Why global and not shard-local maps: any shard's connection may carry any session's
/// request, so lookup is global. Why striped: a lookup is one short critical section per
/// request, and with one mutex every shard's requests would take the same lock and move
/// its cache line between cores; with many shards that line becomes the bottleneck. Ids
/// are spread over the stripes by their first character (random for the ids this server
/// makes; a client's made-up id merely lands somewhere), so a request locks one stripe,
/// and shards rarely meet on one. The count is kept beside the stripes, for the cap.
class session_table {
 public:
  [[nodiscard]] std::shared_ptr<session_entry> find(std::string_view id) const;
  enum class admission : std::uint8_t { admitted, server_full, tenant_full, duplicate };
  /// Inserts `e` unless `cap` sessions live already (`server_full`) or `tenant_cap` of
  /// `e->tenant`'s do (`tenant_full`; 0: no share). Why a share per tenant: one client
  /// that opens every session the server allows locks everyone else out. An entry of
  /// `e->id` already there is left alone and `duplicate` said (two random ids that
  /// collided): answering `admitted` would hand the new client that id, and so the
  /// other client's session.
  admission insert(const std::shared_ptr<session_entry>& e, std::size_t cap, std::size_t tenant_cap = 0);
  /// Inserts `e`, or returns the entry of the same id already there (a session taken
  /// over by two requests at once); null when `cap` sessions live already.
  std::shared_ptr<session_entry> insert_or_get(const std::shared_ptr<session_entry>& e, std::size_t cap);
  std::shared_ptr<session_entry> erase(std::string_view id);
  /// Removes and returns every entry unused since before `cutoff` with no open stream.
  /// Requests still running count for nothing here: a session whose client left while
  /// its calls ran is taken too (ending it cancels them), so work nobody will read is
  /// bounded by the idle timeout.
  std::vector<std::shared_ptr<session_entry>> take_idle(std::int64_t cutoff);
  std::vector<std::shared_ptr<session_entry>> take_all();
  /// Every live entry, left in the table.
  [[nodiscard]] std::vector<std::shared_ptr<session_entry>> snapshot() const;
  [[nodiscard]] std::size_t size() const;
  /// Open POST and GET streams over every session (`session_entry::active`), for metrics.
  [[nodiscard]] std::size_t open_streams() const;
  /// True while any session has a POST stream open (a request being answered).
  [[nodiscard]] bool any_answering() const;

  /// Sets how many shards sessions live on; called once, before any session is inserted.
  void spread_over(std::size_t shards);
  /// The shard a new session should live on: `arrived`, the shard of the connection that
  /// carries its `initialize`, unless that shard holds more than one session more than
  /// the least loaded one, which is then chosen.
  ///
  /// Why not always `arrived`: connections are placed on shards in turn, and a client
  /// that opens a connection per HTTP request (no keep-alive: `initialize` on one,
  /// `notifications/initialized` on the next) makes every other connection, so all its
  /// sessions, land on one shard; the others then idle while that one serves everything
  /// (the bench's session-per-connection row did exactly this). Why not always the least
  /// loaded: a session placed away from its connection pays a hand-off per request until
  /// the connection follows it (`options::follow_sessions`), so a balanced server keeps
  /// them together.
  [[nodiscard]] std::size_t place(std::size_t arrived) const noexcept;

 private:
  /// Live sessions on `shard`.
  [[nodiscard]] std::size_t on_shard(std::size_t shard) const noexcept;
  /// Lets `find` take the header's string_view as it is (no key string per request).
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return std::hash<std::string_view>{}(id); }
  };
  /// One lock and its share of the map, on a cache line of its own.
  struct alignas(64) stripe {
    mutable std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<session_entry>, id_hash, std::equal_to<>> map;
  };
  static constexpr std::size_t stripe_count = 16;
  [[nodiscard]] stripe& stripe_of(std::string_view id) const noexcept {
    return stripes_[id.empty() ? 0 : static_cast<unsigned char>(id.front()) % stripe_count];
  }
  /// Runs `f(map)` on every stripe in turn, each under its own lock.
  template <class F>
  void each_stripe(F&& f) const {
    for (stripe& s : stripes_) {
      std::lock_guard lock(s.mutex);
      f(s.map);
    }
  }
  /// Reserves a place under `cap`; false when none is left.
  bool reserve(std::size_t cap) noexcept;
  /// Counts a session of `tenant` unless it has `cap` (0: no cap) already.
  bool reserve_tenant(const std::string& tenant, std::size_t cap);
  /// Gives back the place `e` held in its tenant's count.
  void release_tenant(const session_entry& e);
  /// Moves `e`'s shard's count by `n` (+1 inserted, -1 removed).
  void count_on_shard(const session_entry& e, long n) noexcept;

  mutable stripe stripes_[stripe_count];
  std::atomic<std::size_t> size_{0};
  /// Live sessions per shard (`spread_over`), for `place`. Relaxed counts: two sessions
  /// placed at the same moment may both see the same figures, which costs balance by one.
  std::unique_ptr<std::atomic<std::size_t>[]> per_shard_;
  std::size_t shard_count_ = 0;
  /// Live sessions per tenant. One lock: taken when a session begins or ends, never per
  /// request.
  std::mutex tenants_mutex_;
  std::unordered_map<std::string, std::size_t> tenants_;
};

}  // namespace droid::http::detail
