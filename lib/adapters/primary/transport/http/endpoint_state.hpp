// SPDX-License-Identifier: BSL-1.0
/// @file
/// The MCP endpoints of the HTTP server, and the state they share: the Streamable HTTP
/// endpoint (POST, GET and DELETE on one path; 2025 sessions, stateless 2025 requests
/// and 2026-07-28 requests) and the legacy HTTP+SSE endpoint (MCP 2024-11-05).
///
///     connection --request--> listener (path, Host/Origin)
///                                 |-- streamable_endpoint --> session_table --> session (its shard)
///                                 |                      \--> request_runner (the connection's shard)
///                                 \-- legacy_endpoint ------> session_table --> session
///
/// Primary adapter, private.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/adapters/secondary/event_store/retention_budget.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/message.hpp>

#include "access/auth_gate.hpp"
#include "sessions/json_answer.hpp"
#include "sessions/sessions.hpp"

namespace droid {
class request_runner;
}

namespace droid::http::detail {

struct forward_gate;

class connection;
struct request;
struct endpoint_state;
class cluster;

/// Answers a POST whose body is no JSON-RPC message we serve: 400 with the decoder's
/// error, or 202 for what deserves no answer (a malformed notification, say).
task<bool> reply_rejection(connection& c, ir::rejection why);

/// True when `entry` may serve `who`: a session belongs to the principal that opened it
/// (both empty without authentication). Why: a session id that leaks (a log, a proxy)
/// must not let another user's token drive it.
[[nodiscard]] bool belongs_to(const session_entry& entry, const caller& who) noexcept;
/// Writes the 403 for a session used with another principal's token.
task<bool> refuse_foreign_session(connection& c);
/// Writes the refusal of a new session (`initialize` `id`, or a legacy stream's): 429
/// naming `max_sessions_per_tenant` when its tenant holds its share, 503 when the server
/// holds `max_sessions`; both with Retry-After.
task<bool> refuse_session(connection& c, session_table::admission why, const std::optional<ir::request_id>& id);

/// The 403 `insufficient_scope` answer when `msg` is a `tools/call` of a tool whose
/// `required_scopes` `who` lacks (written, with whether the connection may go on);
/// nothing when the call may go ahead (or is no such call). Why before the request is
/// served: the status line goes out first, and a client steps up on the 403 alone.
task<std::optional<bool>> refuse_unscoped(endpoint_state& st, connection& c, const caller& who,
                                          const ir::message& msg);

/// Serves the requests that belong to no session on one shard: 2026-07-28 requests, and
/// every request of a stateless 2025 server.
struct sessionless_shard {
  std::shared_ptr<request_runner> runner;
  /// Keys the runner's requests by `mint_key()`, not by the peer's id: unrelated
  /// clients' POSTs may all be id 1.
  std::int64_t next_key = 0;
  /// This shard's place among `shard_count`. Why: keys are unique across shards
  /// (`n * shard_count + index`), because a 2026 retry that reaches this shard for a
  /// frame kept on another is served there under the key minted here.
  std::int64_t index = 0;
  std::int64_t shard_count = 1;
  [[nodiscard]] std::int64_t mint_key() noexcept { return ++next_key * shard_count + index; }
};

/// What both endpoints and the listener's stop share.
struct endpoint_state {
  endpoint_state(droid::server& s, const options& o)
      : srv(s), opts(o), gate(o), kept(std::make_shared<retention_budget>(o.max_kept_bytes, o.max_kept_bytes_per_tenant)) {}

  droid::server& srv;
  const options& opts;
  /// Tokens, metadata and request limits, for every MCP path.
  auth_gate gate;
  session_table sessions;
  /// What the sessions' event rings keep, server-wide and per tenant.
  std::shared_ptr<retention_budget> kept;
  /// By shard index; each used on its own shard only.
  std::vector<std::unique_ptr<sessionless_shard>> sessionless;
  /// Each shard's executor, by index: where a new session is placed (session_table::place).
  std::vector<asio::any_io_executor> shard_executors;
  /// Sessionless requests being answered (listen streams excluded: they never end by
  /// themselves), so a graceful stop waits for them as it does for sessions' requests.
  std::atomic<std::size_t> sessionless_answering{0};
  /// This instance among several (`options::cluster`); null when it runs alone.
  std::shared_ptr<cluster> peers;
};

/// Whether `refuse_unscoped` has anything to check: a `tools/call` behind token
/// protection. Why asked first: without protection (the default) every request would
/// otherwise make a coroutine frame and await it only to learn there is nothing to do.
[[nodiscard]] inline bool may_lack_scopes(const endpoint_state& st, const ir::message& msg) {
  return st.gate.enabled() && msg.is_request() && msg.method() == "tools/call";
}

/// A 503 for a request that may be sent again: JSON-RPC -32603 naming the request `id`
/// (null when there is none, as for a GET) and `Retry-After: 1`, so that a client can
/// tell which call to retry and when.
task<bool> reply_unavailable(connection& c, const std::optional<ir::request_id>& id, std::string_view why);

/// The Streamable HTTP endpoint: POST carries one JSON-RPC message, GET opens or resumes
/// a session's event stream, DELETE ends a session.
///
/// Why one class for three eras' requests: the era is decided per message (a 2026
/// request, a stateless 2025 one, or one of a 2025 session), after the checks every POST
/// shares.
class streamable_endpoint {
 public:
  explicit streamable_endpoint(endpoint_state& st) : st_(st) {}

  /// Each serves a request the gate admitted, from `who`.
  task<bool> post(connection& c, request& req, const caller& who);
  task<bool> get(connection& c, request& req, const caller& who);
  task<bool> remove(connection& c, request& req, const caller& who);

 private:
  /// A 2026-07-28 request: routing headers and `_meta` checked, then served on this
  /// connection's shard with no session.
  task<bool> serve_modern(connection& c, request& req, ir::message msg, const std::string_view* version,
                          const caller& who);
  /// A request of a stateless 2025 server (`options::stateless`): served with no session,
  /// the client's version read from the MCP-Protocol-Version header.
  task<bool> serve_stateless(connection& c, ir::message msg, const std::string_view* version, const caller& who);
  /// A request of a 2025 session (or an `initialize` that opens one).
  task<bool> in_session(connection& c, request& req, ir::message msg, const caller& who);
  /// The steps of `post` after the message is decoded, split where one of them must wait
  /// (a coroutine of its own) so that the usual request goes through none but the one
  /// that serves it: `route_post` and `serve_2025` choose and hand back a task;
  /// `post_when_current` waits for a lapsed cluster lease, `post_scoped` for the scope
  /// check, `refuse_version` writes the 400 for a version we do not speak.
  task<bool> route_post(connection& c, request& req, ir::message msg, const std::string_view* version,
                        const caller& who);
  task<bool> serve_2025(connection& c, request& req, ir::message msg, const std::string_view* version,
                        const caller& who);
  task<bool> post_when_current(connection& c, request& req, ir::message msg, const std::string_view* version,
                               const caller& who);
  task<bool> post_scoped(connection& c, request& req, ir::message msg, const std::string_view* version,
                         const caller& who);
  task<bool> refuse_version(connection& c, ir::message msg, std::string_view version);
  /// Serves `msg` of `entry`, answered with one JSON document (json_answer: no stream,
  /// no sink): on this thread when the session lives on the connection's shard, else
  /// with one post there and one back.
  task<bool> answer_json(connection& c, const std::shared_ptr<session_entry>& entry, ir::message msg,
                         const caller& who, const std::string& extra_headers);

 public:
  // ---- several instances (cluster/cluster.hpp; cluster/forwarded.cpp) ----------------
  /// Hands `msg` of session `entry` to its shard, answering on `sink` (a connection's, or
  /// a relay's for a request forwarded from another instance).
  /// `gate`: a forwarded request's, which starts only if the owner's lease allows
  /// (`cluster::may_start`); a request of the client's own starts only while it does.
  void start_request(const std::shared_ptr<session_entry>& entry, ir::message msg,
                     const std::shared_ptr<response_sink>& sink, bool json_mode,
                     std::shared_ptr<const request_origin> origin, std::shared_ptr<forward_gate> gate = nullptr,
                     std::shared_ptr<const void> held = nullptr);
  /// Opens (`number` 0) or resumes a GET stream of `entry` into `sink`: the sink is
  /// accepted or rejected on the session's shard. A stream an earlier owner of a session
  /// taken over wrote is read from Redis.
  void start_get(const std::shared_ptr<session_entry>& entry, const std::shared_ptr<response_sink>& sink,
                 std::uint64_t number, std::uint64_t after, bool resume);
  /// Undoes `start_get` once the GET's connection (or relay) is done.
  void end_get(const std::shared_ptr<session_entry>& entry, const std::shared_ptr<response_sink>& sink,
               std::uint64_t number);
  /// Serves a message another instance forwarded to this one, the session's owner.
  void serve_forwarded(std::vector<std::string_view> fields);

 private:
  /// A request for session `sid`, owned by instance `owner`: forwarded there, its answer
  /// written here. Nothing (and nothing written) when nobody listens on the owner's
  /// inbox: it is presumed dead, and the caller looks for the session again, which takes
  /// it over. `msg` by reference: the caller keeps it for that second look, and awaits
  /// this at once.
  task<std::optional<bool>> forward_post(connection& c, const ir::message& msg, std::string sid, std::string owner,
                                         const caller& who);
  /// A GET for a stream of a session owned by `owner` (nothing: as `forward_post`).
  task<std::optional<bool>> forward_get(connection& c, std::string sid, std::string owner, std::uint64_t number,
                                        std::uint64_t after, bool resume, const caller& who);
  /// How a forwarded request's answer is written: one JSON document, an event stream that
  /// ends with the request, or a GET's stream that stays open (keep-alives).
  enum class forwarded_answer : std::uint8_t { json, events, standing_stream };
  /// Publishes `payload` on `owner`'s inbox and writes what comes back to `sink` (whose
  /// replies carry `tag`) as `as` says. Nothing when nobody heard it (see `forward_post`).
  /// `session`: the session it is about, whose owner came from the cache (a 404 from the
  /// owner then means "look again": nothing).
  /// `id`: the forwarded request's, which a 503 names (null for a GET).
  task<std::optional<bool>> forward(connection& c, std::shared_ptr<response_sink> sink, std::uint64_t tag,
                                    std::string owner, std::string payload, forwarded_answer as,
                                    std::optional<ir::request_id> id, std::string session = {});
  /// A 2026-07-28 request about a task instance `owner` runs: forwarded there, its answer
  /// written here (nothing: as `forward_post`). `version` is its MCP-Protocol-Version.
  task<std::optional<bool>> forward_sessionless(connection& c, const ir::message& msg, std::string version,
                                                std::string owner, const caller& who);
  /// Where a session named by a request is.
  struct found_session {
    std::shared_ptr<session_entry> entry;  ///< here (in the table, maybe just taken over)
    std::string owner;                     ///< or at this other instance
    std::optional<bool> answered;          ///< or nowhere: the refusal was written (keep?)
  };
  /// Session `sid` of `who` when this instance's table holds it (null otherwise: then
  /// `find_session` says where it is, or answers).
  [[nodiscard]] std::shared_ptr<session_entry> find_here(std::string_view sid, const caller& who) const;
  /// Finds session `sid` here or, in a cluster, through Redis (taking it over when its
  /// owner is gone). Checks that it belongs to `who`.
  task<found_session> find_session(connection& c, std::string sid, const caller& who);

  /// A sessionless request on its way: what the runner answers it on (`out`), and what
  /// the connection writes from: one JSON document from `answer` (the runner is this
  /// shard's, so no sink is needed), or a response from `sink`, fed by `stream` (an
  /// event stream, or an answer held until Redis has what it names).
  struct sessionless_call {
    std::shared_ptr<outbound> out;
    std::shared_ptr<json_answer> answer;
    std::shared_ptr<response_sink> sink;
    std::shared_ptr<logical_stream> stream;
    ir::request_id key;
    bool listen = false;
    bool json_mode = false;
    /// Answered only once what the request wrote to Redis is there (a task's record:
    /// see `cluster::accept_when_written`).
    bool after_redis = false;
    std::optional<ir::request_id> id{};  ///< the client's, for a refusal (503) to name
  };
  /// Prepares the answer of a sessionless request of `method`; the caller then hands it
  /// to the shard's runner under `key`, on `stream`. Why split from the answering: a
  /// 2026 request is handed over from inside the callback that read its params (one
  /// parse for the checks and the handler), where nothing can be awaited.
  /// `held`: the request's slots, kept until its stream is over. `after_redis`: the
  /// answer waits for what the request writes to Redis (`sessionless_call::after_redis`).
  sessionless_call start_sessionless(connection& c, std::string_view method, std::string_view refusal,
                                     std::shared_ptr<const void> held, bool after_redis = false);
  /// Writes the answer of `call` (an event stream or one JSON document); closing the
  /// connection cancels the request.
  task<bool> answer_sessionless(connection& c, sessionless_call call);
  [[nodiscard]] sessionless_shard& local(connection& c) const;

  endpoint_state& st_;
};

/// The legacy HTTP+SSE endpoint (MCP 2024-11-05): GET on `legacy_sse_path` opens a
/// session with its one event stream; POST on `legacy_messages_path?sessionId=...`
/// carries each message, whose answers travel on that stream.
class legacy_endpoint {
 public:
  explicit legacy_endpoint(endpoint_state& st) : st_(st) {}

  task<bool> stream(connection& c, request& req, const caller& who);
  task<bool> message(connection& c, request& req, const caller& who);

 private:
  endpoint_state& st_;
};

}  // namespace droid::http::detail
