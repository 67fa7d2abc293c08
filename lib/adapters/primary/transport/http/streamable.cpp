// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Streamable HTTP endpoint (endpoint_state.hpp): a POST's checks and era, a 2025
/// session's requests and streams, sessionless requests (stateless 2025 and 2026-07-28),
/// GET streams and their resumption, DELETE.
#include "endpoint_state.hpp"

#include <algorithm>
#include <optional>

#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>
#include <droid/application/server/hosting.hpp>
#include <droid/application/server/modern_request.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "access/request_rules.hpp"
#include "wire/on_executor.hpp"
#include "cluster/cluster.hpp"
#include "connection.hpp"
#include "access/routing_headers.hpp"

namespace droid::http::detail {

namespace {

/// The task methods a client polls with: answered at once, never with anything but
/// their response, so one JSON document serves them better than an event stream.
bool is_task_poll(std::string_view method) noexcept {
  return method == "tasks/get" || method == "tasks/list" || method == "tasks/cancel";
}

/// The task methods that name one task (tasks/list pages through this instance's own).
bool is_task_poll_or_update(std::string_view method) noexcept {
  return method == "tasks/get" || method == "tasks/cancel" || method == "tasks/update" || method == "tasks/result";
}

bool is_supported_version(std::string_view v) {
  return std::find(std::begin(supported_versions), std::end(supported_versions), v) != std::end(supported_versions);
}

/// Why a tool may not ask the client a question in a session's request answered with one
/// JSON document (see `outbound::exchange_refusal`).
constexpr std::string_view json_refusal =
    "this server answers each request with a single JSON document (http::options::reply is streaming::json), so "
    "a tool cannot ask the client a question: use streaming::event_stream";

/// The same for a sessionless request answered with one JSON document (no setting would
/// let it ask: a sessionless 2025 request has no session for the answer to find).
constexpr std::string_view sessionless_json_refusal =
    "this server answers each request with a single JSON document (http::options::reply is streaming::json), so "
    "a tool cannot ask the client a question";

/// What a request that reaches a member whose lease lapsed (cluster::fenced) is told when
/// the member does not get it back in time: it did not run.
constexpr std::string_view fenced_refusal =
    "Service Unavailable: this server instance is renewing its hold on its sessions (its connection to the shared "
    "store was interrupted); the request did not run, try again shortly";

/// Looks for a session's owner after the first; bounded, because each may wait up to a
/// lease for an owner that is gone.
constexpr int max_looks = 3;

/// A moment between two looks for a session, so that an owner renewing its lease (a few
/// milliseconds) has it back before the request is sent to it again.
task<void> pause_before_looking(connection& c) {
  asio::steady_timer pause(c.executor(), std::chrono::milliseconds(20));
  (void)co_await pause.async_wait(use_task);
}

/// The 503 for a session whose owner could not be reached in `max_looks` looks (it moves
/// between instances; it is there on the client's next try).
task<bool> refuse_moving(connection& c, const std::optional<ir::request_id>& id) {
  co_return co_await reply_unavailable(
      c, id, "Service Unavailable: the session is moving between server instances; try again shortly");
}

/// Replays stream `number` of session `entry`, which an earlier owner wrote (only Redis has
/// it), into `sink`, for any GET that resumes it, whether it reached this instance or was
/// forwarded here: a dead owner's stream resumes through every instance, not only through
/// the one that took the session over. Runs on the session's shard (its Redis client).
task<void> replay_earlier_owner(std::shared_ptr<cluster> peers, std::shared_ptr<session_entry> entry,
                                std::uint64_t number, std::uint64_t after, std::shared_ptr<response_sink> sink) {
  // Named, not awaited inside the condition: g++ 12 miscompiles that form (the frame was
  // resumed in an invalid state, a SIGILL at -O0).
  const bool replayed = co_await peers->replay_foreign(entry->shard, entry, number, after, sink);
  if (!replayed) {
    sink->reject(400, "Bad Request: Last-Event-ID is unknown or its events have expired; they cannot be replayed");
    co_return;
  }
  // The stream is over: the client reads what it missed, then idles as on a resumed
  // stream of this instance's.
  entry->resumed.push_back(sink);
  sink->accept();
}

/// Hands `msg` to `entry`'s session with `answer` for its output, on the session's shard;
/// when the cluster lease lapsed since the request arrived, it does not run and the answer
/// says so (as in `start_request`). Called in place or from a hand-off (`answer_json`).
void receive_answered(session_entry& entry, const std::shared_ptr<json_answer>& answer, ir::message msg,
                      std::shared_ptr<const request_origin> origin, const cluster* peers) {
  if (peers && !peers->may_start(nullptr)) {
    answer->send(rpc_error_body(msg.id(), ir::errc::internal_error, fenced_refusal));
    return answer->finish();
  }
  entry.s->receive(std::move(msg), answer, std::move(origin));
}

/// What `start_request` does on the session's shard: runs `msg` on a new stream of
/// `entry` attached to `sink` (or refuses it when the cluster lease lapsed). `peers` may
/// be null (one instance).
void begin_request(const std::shared_ptr<session_entry>& entry, const std::shared_ptr<response_sink>& sink,
                   bool json_mode, std::string_view refusal, ir::message m,
                   std::shared_ptr<const request_origin> origin, cluster* peers, std::shared_ptr<forward_gate> gate,
                   std::shared_ptr<const void> held) {
  if (peers && !peers->may_start(gate.get())) {
    // The lease lapsed since the request arrived (or its asker gave it up): it does not
    // run. A forwarded one is looked for again by its asker; a client's own is told.
    if (gate) return sink->reject(cluster::owner_silent, "the owner did not start it");
    if (m.method() == "initialize") return sink->reject(503, std::string(fenced_refusal));
    sink->push(sse_event{std::string(), rpc_error_body(m.id(), ir::errc::internal_error, fenced_refusal)});
    sink->accept();
    return sink->finish();
  }
  // Numbered on the session's shard: a session's requests may come through several
  // shards' connections (and instances), and each must get its own number.
  const std::uint64_t number = ++entry->next_stream;
  if (gate) gate->stream = number;
  auto stream = std::make_shared<logical_stream>(
      number, json_mode ? nullptr : entry->store.get(),
      logical_stream::finish_hook{entry,
                                  [](void* owner, std::uint64_t finished) {
                                    auto* e = static_cast<session_entry*>(owner);
                                    e->streams.erase(finished);
                                    // The idle clock starts at the answer: a client that
                                    // lost the stream has the whole timeout to resume it.
                                    e->last_used = now_ns();
                                  }},
      refusal);
  stream->hold(std::move(held));
  entry->streams.emplace(number, stream);
  if (!json_mode && entry->store) entry->store->begin(number, m.id());
  stream->attach(sink);
  // A client of 2025-11-25 or later gets a priming event first: an id to resume from
  // before any data. Decided by the session's negotiated version, not the request's
  // header (which some clients send as 2025-03-26 regardless). In a cluster it leaves
  // once the stream's beginning is on its way to Redis, since another instance may be
  // asked to resume from it (logical_stream::relay).
  if (!json_mode && entry->store && entry->s->peer().revision >= protocol_revision::v2025_11_25) stream->prime();
  const bool opens = m.method() == "initialize";
  entry->s->receive(std::move(m), stream, std::move(origin));
  // A new session's record must be in Redis before its id reaches the client.
  if (opens && peers) return peers->accept_when_written(entry->shard, sink, true);
  // The verdict comes after the tool's first step, which receive() ran (on this, the
  // session's thread), so everything a tool that finishes at once says (the priming
  // event, the answer, the end) is queued before it, and the connection writes the
  // response in one write instead of one per event. A tool that suspends gets its head
  // and priming event out at once all the same. A JSON answer needs no verdict (the
  // end accepts the response), unless a member of the cluster relays it: that one
  // tells its asker the request started as soon as it is accepted.
  if (!json_mode || gate) sink->accept();
}

}  // namespace

task<bool> reply_rejection(connection& c, ir::rejection why) {
  if (!why.answer) co_return co_await c.reply(202, {}, {});
  std::string body;
  ir::append_error(body, why.id, static_cast<std::int64_t>(why.code), why.message);
  co_return co_await c.reply(400, "application/json", body);
}

bool belongs_to(const session_entry& entry, const caller& who) noexcept { return entry.principal == who.principal; }

task<bool> refuse_foreign_session(connection& c) {
  co_return co_await c.reply_rpc_error(403, ir::errc::invalid_request,
                                       "Forbidden: this session belongs to another principal");
}

task<bool> refuse_session(connection& c, session_table::admission why, const std::optional<ir::request_id>& id) {
  if (why == session_table::admission::server_full)
    co_return co_await reply_unavailable(
        c, id, "Service Unavailable: the server holds as many sessions as it may (http::options::max_sessions)");
  // The new session's random id named a live one: refused rather than sharing it; the
  // client's next initialize draws another.
  if (why == session_table::admission::duplicate)
    co_return co_await reply_unavailable(c, id,
                                         "Service Unavailable: the new session could not be given an id; try again");
  const std::string_view text =
      "Too Many Requests: this client holds as many sessions as it may (http::options::max_sessions_per_tenant); "
      "end one (DELETE) or let one idle out";
  const std::string body = id ? rpc_error_body(*id, ir::errc::invalid_request, text)
                              : rpc_error_body(ir::errc::invalid_request, text);
  co_return co_await c.reply(429, "application/json", body, false, "Retry-After: 1\r\n");
}

task<std::optional<bool>> refuse_unscoped(endpoint_state& st, connection& c, const caller& who,
                                          const ir::message& msg) {
  if (!may_lack_scopes(st, msg)) co_return std::nullopt;
  const std::optional<std::string> name = ir::string_member(msg.params(), "name");
  if (!name) co_return std::nullopt;  // the dispatcher answers the malformed call
  const std::shared_ptr<const droid::detail::tool_entry> tool = droid::hosting::find_tool(st.srv, *name);
  if (!tool) co_return std::nullopt;
  if (!auth_gate::lacks_scopes(who, tool->info.required_scopes)) co_return std::nullopt;
  const std::string what = "tool " + *name;
  co_return co_await st.gate.refuse_scope(c, who, msg.id(), what, tool->info.required_scopes);
}

sessionless_shard& streamable_endpoint::local(connection& c) const { return *st_.sessionless[c.home().index]; }

task<bool> streamable_endpoint::post(connection& c, request& req, const caller& who) {
  // No coroutine: each way out hands back the task of the step that answers, which the
  // caller awaits at once (a frame less per request). What those tasks keep a reference
  // to (`c`, `req`, `who`, `version` in `req`) outlives them; the message is moved in.
  const options& o = st_.opts;
  // CSRF: a browser's simple request (text/plain, form encodings) cannot carry
  // application/json without a preflight, so requiring it closes that door (A4).
  const std::string_view* content_type = req.find("content-type");
  if (!content_type || !media_type_is(*content_type, "application/json"))
    return c.reply_rpc_error(415, ir::errc::invalid_request, "Unsupported Media Type: Content-Type must be application/json");
  const std::string_view* accept = req.find("accept");
  const bool server_json = o.reply == streaming::json;
  if (!accept || !accepts(*accept, "application/json") || (!server_json && !accepts(*accept, "text/event-stream")))
    return c.reply_rpc_error(406, ir::errc::invalid_request,
                             "Not Acceptable: Accept must include application/json and text/event-stream");
  const std::string_view* version = req.find("mcp-protocol-version");

  auto decoded = ir::decode(std::move(req.body));
  if (auto* why = std::get_if<ir::rejection>(&decoded)) return reply_rejection(c, std::move(*why));
  ir::message msg = std::get<ir::message>(std::move(decoded));
  // A member that cannot show its lease serves nothing it holds (docs/scale-out.md): the
  // request waits the moment it takes to get it back, and is refused, unrun, past that.
  if (st_.peers && st_.peers->fenced()) return post_when_current(c, req, std::move(msg), version, who);
  return route_post(c, req, std::move(msg), version, who);
}

task<bool> streamable_endpoint::post_when_current(connection& c, request& req, ir::message msg,
                                                  const std::string_view* version, const caller& who) {
  if (!co_await st_.peers->until_current(c.executor())) {
    // Named, not chosen by ?: inside the co_await: g++ 12 destroys such a temporary twice.
    std::optional<ir::request_id> id;
    if (msg.is_request()) id = msg.id();
    co_return co_await reply_unavailable(c, id, fenced_refusal);
  }
  co_return co_await route_post(c, req, std::move(msg), version, who);
}

task<bool> streamable_endpoint::route_post(connection& c, request& req, ir::message msg,
                                           const std::string_view* version, const caller& who) {
  // The era is decided per message, by the rule stdio applies too (is_modern_request).
  if (is_modern_request(msg, version)) return serve_modern(c, req, std::move(msg), version, who);
  if (version && !is_supported_version(*version)) return refuse_version(c, std::move(msg), *version);
  if (may_lack_scopes(st_, msg)) return post_scoped(c, req, std::move(msg), version, who);
  return serve_2025(c, req, std::move(msg), version, who);
}

task<bool> streamable_endpoint::serve_2025(connection& c, request& req, ir::message msg,
                                           const std::string_view* version, const caller& who) {
  if (st_.opts.stateless) return serve_stateless(c, std::move(msg), version, who);
  return in_session(c, req, std::move(msg), who);
}

task<bool> streamable_endpoint::post_scoped(connection& c, request& req, ir::message msg,
                                            const std::string_view* version, const caller& who) {
  if (auto refused = co_await refuse_unscoped(st_, c, who, msg)) co_return *refused;
  co_return co_await serve_2025(c, req, std::move(msg), version, who);
}

task<bool> streamable_endpoint::refuse_version(connection& c, ir::message msg, std::string_view version) {
  const request_refusal r = unsupported_version(version);
  // A named body, not a conditional expression in the co_await: g++ 12 destroys a
  // temporary selected by ?: twice when the full expression spans a suspension.
  std::string body = rpc_error_body(r.code, r.message);
  if (msg.is_request()) body = rpc_error_body(msg.id(), r.code, r.message, r.data);
  co_return co_await c.reply(400, "application/json", body);
}

std::shared_ptr<session_entry> streamable_endpoint::find_here(std::string_view sid, const caller& who) const {
  std::shared_ptr<session_entry> entry = valid_session_id(sid) ? st_.sessions.find(sid) : nullptr;
  if (!entry || entry->legacy || !belongs_to(*entry, who)) return nullptr;
  return entry;
}

task<streamable_endpoint::found_session> streamable_endpoint::find_session(connection& c, std::string sid,
                                                                         const caller& who) {
  found_session out;
  std::shared_ptr<session_entry> entry = valid_session_id(sid) ? st_.sessions.find(sid) : nullptr;
  if (entry && entry->legacy) entry = nullptr;  // a legacy session lives on its own paths
  if (!entry && st_.peers && valid_session_id(sid)) {
    cluster::located where = co_await st_.peers->locate(c.home().index, c.executor(), sid);
    switch (where.is) {
      case cluster::located::where::here: entry = std::move(where.entry); break;
      case cluster::located::where::remote:
        if (where.principal != who.principal) {
          out.answered = co_await refuse_foreign_session(c);
          co_return out;
        }
        out.owner = std::move(where.owner);
        co_return out;
      case cluster::located::where::unavailable: {
        // Fails fast and says when to come back. What failed (a host, a port, Redis's own
        // words) is the operator's to read, in the diagnostics, not every client's.
        st_.peers->report_store_failure(c.home().index);
        out.answered = co_await c.reply_rpc_error(
            503, ir::errc::internal_error,
            "Service Unavailable: the session store cannot be reached; try again shortly", false,
            "Retry-After: 1\r\n");
        co_return out;
      }
      case cluster::located::where::nowhere: break;
    }
  }
  if (!entry) {
    out.answered = co_await c.reply_rpc_error(404, ir::errc::invalid_request,
                                              "Not Found: unknown or ended session; initialize a new one");
    co_return out;
  }
  if (!belongs_to(*entry, who)) {
    out.answered = co_await refuse_foreign_session(c);
    co_return out;
  }
  out.entry = std::move(entry);
  co_return out;
}

task<bool> streamable_endpoint::in_session(connection& c, request& req, ir::message msg, const caller& who) {
  const options& o = st_.opts;
  const bool server_json = o.reply == streaming::json;
  const bool is_initialize = msg.is_request() && msg.method() == "initialize";
  std::shared_ptr<session_entry> entry;
  std::string new_session_header;
  const std::string_view* sid = req.find("mcp-session-id");
  if (is_initialize && !sid) {
    // No store (JSON answers, or a ring of capacity 0): streams cannot be resumed, and a
    // lost connection ends its request.
    std::unique_ptr<event_store> store;
    if (!server_json && !st_.peers && (o.event_store || o.event_ring_capacity > 0))
      store = o.event_store ? o.event_store()
                            : std::make_unique<memory_event_store>(o.event_ring_capacity, 64, o.event_ring_bytes,
                                                                   st_.kept->open(who.tenant));
    // Usually on this connection's shard; on the least loaded one when this one holds
    // more (session_table::place), and the connection follows it there.
    const std::size_t home = st_.sessions.place(c.home().index);
    entry = session_entry::create(st_.srv, st_.shard_executors[home], std::move(store), who.principal);
    entry->shard = home;
    entry->tenant = who.tenant;
    if (st_.peers) {
      // In a cluster the ring is written behind to Redis, under the session's id (which
      // the store needs, so it is made once the entry is).
      if (auto shared = st_.peers->make_store(*entry)) entry->set_store(std::move(shared));
      st_.peers->own(entry);
    }
    if (const auto admitted = st_.sessions.insert(entry, o.max_sessions, o.max_sessions_per_tenant);
        admitted != session_table::admission::admitted)
      co_return co_await refuse_session(c, admitted, msg.id());
    new_session_header = "Mcp-Session-Id: " + entry->id + "\r\n";
  } else {
    if (!sid)
      co_return co_await c.reply_rpc_error(400, ir::errc::invalid_request,
                                         "Bad Request: Mcp-Session-Id header is required");
    // The session's own table first, with no coroutine frame: it is where a session's
    // requests are found but in a cluster whose balancer sent one elsewhere.
    entry = find_here(*sid, who);
    if (!entry) {
      found_session found;
      // A few looks at most: a forward whose owner's lease is gone (the next look takes
      // the session over), that the owner sent back unstarted (it was renewing its lease,
      // or had not got to it), or whose owner no longer holds the session (the next look
      // asks Redis) is looked for again, a moment later.
      for (int look = 0;; ++look) {
        if (look > 0) co_await pause_before_looking(c);
        found = co_await find_session(c, std::string(*sid), who);
        if (found.answered) co_return *found.answered;
        if (found.owner.empty()) break;
        if (look == max_looks) {
          // Named, not chosen by ?: inside the co_await: g++ 12 destroys such a temporary twice.
          std::optional<ir::request_id> id;
          if (msg.is_request()) id = msg.id();
          co_return co_await refuse_moving(c, id);
        }
        if (auto forwarded = co_await forward_post(c, msg, std::string(*sid), found.owner, who)) co_return *forwarded;
      }
      entry = std::move(found.entry);
    }
    if (st_.peers) st_.peers->touch(*entry);
  }
  entry->last_used = now_ns();

  if (!msg.is_request()) {
    // Notifications and responses get 202 as soon as they are handed over.
    detail::dispatch_on(entry->executor, [s = entry->s, m = std::move(msg), origin = who.origin]() mutable {
      s->receive(std::move(m), nullptr, std::move(origin));
    });
    co_return co_await c.reply(202, {}, {});
  }

  // Polling a task is answered with one JSON document even on an event-stream server:
  // MCP 2025-11-25 asks servers not to upgrade `tasks/get` to a stream (the client is
  // polling), and these answers never carry anything but the response.
  const bool json_mode = server_json || is_task_poll(msg.method());
  if (json_mode && !(is_initialize && st_.peers)) {
    // One document: the answer is a string the connection reads when the request is over
    // (json_answer), no stream and no sink, whichever shard the session lives on.
    const bool keep = co_await answer_json(c, entry, std::move(msg), who, new_session_header);
    --entry->active;
    entry->last_used = now_ns();
    // The connection follows a session it keeps serving (options::follow_sessions), as
    // below.
    c.prefer_shard(entry->shard);
    co_return keep;
  }
  const ir::request_id request_id = msg.id();
  auto sink = c.make_sink();
  // A new session's answer, even finished at once, waits for its record in Redis
  // (cluster::accept_when_written); held here, on the sink's own shard, since the session
  // may live on another.
  if (is_initialize && st_.peers) sink->hold();
  start_request(entry, std::move(msg), sink, json_mode, who.origin, nullptr, std::move(who.slots));
  if (is_initialize && st_.peers) {
    // Held until Redis has the new session's record; refused when it did not take it. The
    // session is then dropped here: its id never reaches the client, and an
    // acknowledged session that no other instance can find is what must never be.
    co_await sink->wait_settled();
    if (sink->rejected_status() != 0) {
      --entry->active;
      if (auto gone = st_.sessions.erase(entry->id)) end_session(gone);
      co_return co_await reply_unavailable(c, request_id, sink->rejected_message());
    }
  }
  bool keep;
  if (json_mode) {
    keep = co_await c.serve_json(sink, new_session_header);
  } else {
    // Hanging up cancels a request still running, so that one is watched; one over and
    // settled already (most, when the session lives on this shard) is not, as in
    // answer_sessionless: the watch costs a queued peek, its cancel and its aborted
    // completion, for a request nothing can cancel any more.
    const bool watched = !sink->finished() || !sink->settled();
    if (watched) c.watch_for_close(sink);
    co_await sink->wait_settled();
    keep = co_await c.serve_events(sink, new_session_header, false);
    if (watched) c.stop_watching();  // drops the close watch, which holds this connection
  }
  if (sink->dead()) {
    // The client went away mid-stream. With a store the request goes on and its events
    // are recorded, so a GET with Last-Event-ID can pick them up; without one nothing
    // could ever reach the client again, so the request is cancelled (and any question
    // its tool waits on is withdrawn) rather than left waiting for the session's end.
    detail::dispatch_on(entry->executor, [entry, sink, request_id] {
      for (auto& [number, stream] : entry->streams) stream->detach(sink);
      if (!entry->store && !entry->legacy) entry->s->cancel(request_id);
    });
  }
  --entry->active;
  entry->last_used = now_ns();
  // The connection follows a session it keeps serving (options::follow_sessions).
  c.prefer_shard(entry->shard);
  co_return keep;
}

task<bool> streamable_endpoint::answer_json(connection& c, const std::shared_ptr<session_entry>& entry, ir::message msg,
                                            const caller& who, const std::string& extra_headers) {
  const bool here = entry->shard == c.home().index;
  auto answer = std::make_shared<json_answer>(c.home().io, json_refusal, !here);
  answer->hold(std::move(who.slots));
  ++entry->active;
  if (here) {
    receive_answered(*entry, answer, std::move(msg), who.origin, st_.peers.get());
  } else {
    detail::dispatch_on(entry->executor, [entry, answer, m = std::move(msg), origin = who.origin,
                                          peers = st_.peers]() mutable {
      receive_answered(*entry, answer, std::move(m), std::move(origin), peers.get());
    });
  }
  co_await answer->done();
  if (answer->hung_up()) co_return false;
  co_return co_await c.reply_answer(*answer, extra_headers);
}

void streamable_endpoint::start_request(const std::shared_ptr<session_entry>& entry, ir::message msg,
                                        const std::shared_ptr<response_sink>& sink, bool json_mode,
                                        std::shared_ptr<const request_origin> origin, std::shared_ptr<forward_gate> gate,
                                        std::shared_ptr<const void> held) {
  ++entry->active;
  // Why a tool on this stream could not ask the client anything (empty: it can).
  const std::string_view refusal = json_mode ? json_refusal : std::string_view();
  // Called in place on the session's own shard (the usual case), as `answer_json` does:
  // a closure holding the message and five references, moved once more by the
  // dispatch, cost about 250 instructions of an event-stream request (callgrind).
  if (runs_here(entry->executor))
    return begin_request(entry, sink, json_mode, refusal, std::move(msg), std::move(origin), st_.peers.get(),
                         std::move(gate), std::move(held));
  detail::dispatch_on(entry->executor, [entry, sink, json_mode, refusal, m = std::move(msg), origin = std::move(origin),
                                        peers = st_.peers, gate = std::move(gate), held = std::move(held)]() mutable {
    begin_request(entry, sink, json_mode, refusal, std::move(m), std::move(origin), peers.get(), std::move(gate),
                  std::move(held));
  });
}

task<bool> streamable_endpoint::serve_modern(connection& c, request& req, ir::message msg, const std::string_view* version,
                                             const caller& who) {
  // Checked before anything runs: a proxy may have routed on these headers, and a body
  // that says otherwise must not be served (SEP-2243).
  if (!version)
    co_return co_await c.reply(400, "application/json",
                             rpc_error_body(msg.id(), ir::errc::header_mismatch,
                                            "Header mismatch: the MCP-Protocol-Version header is required"));
  // A request about a task another instance runs goes there (its frame is there); one
  // whose instance died is answered here, from what Redis kept of it.
  if (st_.peers && st_.peers->shares_tasks() && is_task_poll_or_update(msg.method())) {
    if (std::optional<std::string> task_id = ir::string_member(msg.params(), "taskId")) {
      // A few looks, as for a session's request: a forward whose owner's lease is gone
      // (the next look adopts the task) or that the owner sent back unstarted (renewing
      // its lease) is looked for again; past them the request is refused, never answered
      // here as if the task did not exist.
      for (int look = 0;; ++look) {
        if (look == max_looks) {
          const std::optional<ir::request_id> id = msg.id();
          co_return co_await reply_unavailable(
              c, id, "Service Unavailable: the task is moving between server instances; try again shortly");
        }
        if (look > 0) co_await pause_before_looking(c);
        const cluster::task_location where = co_await st_.peers->locate_task(c.home().index, *task_id);
        if (where.is == cluster::task_location::where::unavailable) {
          st_.peers->report_store_failure(c.home().index);
          co_return co_await c.reply_rpc_error(503, ir::errc::internal_error,
                                               "Service Unavailable: the task store cannot be reached; try again shortly",
                                               false, "Retry-After: 1\r\n");
        }
        if (where.is == cluster::task_location::where::here) break;
        if (auto forwarded = co_await forward_sessionless(c, msg, std::string(*version), where.owner, who))
          co_return *forwarded;
      }
    }
  }
  // One read of the params for both checks (and the tool they name) and for the handler
  // that serves the request, not one each.
  std::optional<std::string> mismatch;
  std::optional<request_refusal> refused;
  std::optional<sessionless_call> call;
  // The tool a caller lacks the scopes of, for the 403 (null: none).
  std::shared_ptr<const droid::detail::tool_entry> unscoped;
  const auto check = [&](const ir::json_node* params) {
    std::shared_ptr<const droid::detail::tool_entry> tool;
    ir::json_node name;
    if (params && msg.method() == "tools/call" && params->find("name", name) &&
        name.kind() == ir::json_node::type::string)
      tool = droid::hosting::find_tool(st_.srv, name.string());
    mismatch = check_routing_headers(req, msg.method(), params, tool.get());
    if (mismatch) return;
    if (tool && auth_gate::lacks_scopes(who, tool->info.required_scopes)) {
      unscoped = std::move(tool);
      return;
    }
    peer_info peer;
    refused = admit_modern(st_.srv, msg.method(), params, *version, peer, tool.get());
    if (refused) return;
    peer.principal = who.principal;
    peer.origin = who.origin;
    // A call of a tool that may become a task: the task's record is written behind,
    // and the answer that names it waits for it (another instance may get the poll).
    const bool after_redis =
        st_.peers && st_.peers->shares_tasks() && tool && tool->info.tasks != droid::task_support::forbidden;
    call = start_sessionless(c, msg.method(), {}, std::move(who.slots), after_redis);
    if (after_redis) call->id = msg.id();
    local(c).runner->serve_parsed(call->key, msg.method(), msg.id(), params, call->out, true, std::move(peer),
                                  msg.text().size(), &msg);
  };
  if (msg.params_kind() == ir::json_kind::object) {
    (void)ir::visit_params(msg, [&](const ir::json_node& p) { check(&p); });
  } else {
    check(nullptr);
  }
  if (mismatch)
    co_return co_await c.reply(400, "application/json", rpc_error_body(msg.id(), ir::errc::header_mismatch, *mismatch));
  if (unscoped) {
    // A named string, not a temporary in the co_await's arguments (see `post`).
    std::string what = "tool ";
    what += unscoped->info.name;
    co_return co_await st_.gate.refuse_scope(c, who, msg.id(), what, unscoped->info.required_scopes);
  }
  if (refused)
    co_return co_await c.reply(refused->http_status, "application/json",
                             rpc_error_body(msg.id(), refused->code, refused->message, refused->data));
  co_return co_await answer_sessionless(c, std::move(*call));
}

task<bool> streamable_endpoint::serve_stateless(connection& c, ir::message msg, const std::string_view* version,
                                                const caller& who) {
  // No session holds a request that a notification could cancel or a question that an
  // answer could settle. Saying 202 to those would claim they were acted on: they are
  // refused instead, naming what does work. Other notifications (initialized, roots
  // changed) are accepted: there is nothing they need to reach.
  if (msg.is_response())
    co_return co_await c.reply_rpc_error(
        400, ir::errc::invalid_request,
        "Bad Request: this server is stateless (http::options::stateless) and never asks the client anything, "
        "so no question waits for this answer");
  if (msg.is_notification() && msg.method() == "notifications/cancelled")
    co_return co_await c.reply_rpc_error(
        400, ir::errc::invalid_request,
        "Bad Request: this server is stateless (http::options::stateless), so notifications/cancelled cannot "
        "find the request it names; close the request's connection to cancel it");
  peer_info peer;
  // No header: a client older than 2025-06-18, which did not send one (the spec's rule).
  peer.protocol_version = version ? std::string(*version) : "2025-03-26";
  peer.revision = parse_revision(peer.protocol_version).value_or(protocol_revision::v2025_03_26);
  peer.principal = who.principal;
  peer.origin = who.origin;
  if (!msg.is_request()) {
    // An extension's notification reaches its handler with what this request says of the
    // client: no capabilities, since no initialize is kept.
    if (msg.is_notification()) (void)hosting::deliver_notification(st_.srv, msg, peer);
    co_return co_await c.reply(202, {}, {});
  }
  if (msg.method() == "initialize") {
    const initialize_answer answer = answer_initialize(st_.srv, msg.params());
    std::string body;
    if (answer.error) {
      ir::append_error(body, msg.id(), static_cast<std::int64_t>(ir::errc::invalid_params), *answer.error);
    } else {
      ir::append_result(body, msg.id(), answer.result);
    }
    co_return co_await c.reply(200, "application/json", body);
  }
  sessionless_call call = start_sessionless(c, 
      msg.method(),
      "this server is stateless (http::options::stateless), so the client's answer could not find the question: "
      "serve with sessions to let tools ask the client",
      std::move(who.slots));
  ir::request_id key = call.key;
  local(c).runner->serve(std::move(key), std::move(msg), call.out, true, std::move(peer));
  co_return co_await answer_sessionless(c, std::move(call));
}

streamable_endpoint::sessionless_call streamable_endpoint::start_sessionless(connection& c, std::string_view method,
                                                                             std::string_view refusal,
                                                                             std::shared_ptr<const void> held,
                                                                             bool after_redis) {
  sessionless_call call;
  call.listen = method == "subscriptions/listen";
  // A listen is answered as a stream whatever `options::reply` says: as one JSON document
  // it could only be sent when the listen ends, and nothing it carries would ever arrive.
  call.json_mode = (st_.opts.reply == streaming::json || is_task_poll(method)) && !call.listen;
  call.after_redis = after_redis;
  call.key = ir::request_id(local(c).mint_key());
  // A listen stream is open until the client leaves; it must not hold up a graceful stop.
  if (!call.listen) ++st_.sessionless_answering;
  if (call.json_mode && !after_redis) {
    // The runner is this shard's: the answer is a string the connection reads at the end.
    call.answer = std::make_shared<json_answer>(c.home().io, sessionless_json_refusal);
    call.answer->hold(std::move(held));
    call.out = call.answer;
    return call;
  }
  call.sink = c.make_sink();
  // No store: a sessionless stream cannot be resumed, and its events carry no ids.
  call.stream = std::make_shared<logical_stream>(0, nullptr, logical_stream::finish_hook{},
                                                 call.json_mode ? sessionless_json_refusal : refusal);
  call.stream->attach(call.sink);
  call.stream->hold(std::move(held));
  if (after_redis) call.sink->hold();
  call.out = call.stream;
  return call;
}

task<bool> streamable_endpoint::answer_sessionless(connection& c, sessionless_call call) {
  if (call.answer) {
    // Admitted already, and its first step run: most requests are answered by now. One
    // still running is watched, since hanging up is the client's cancellation.
    const bool watched = !call.answer->finished();
    if (watched) c.watch_for_close(call.answer);
    co_await call.answer->done();
    bool keep = false;
    if (!call.answer->hung_up()) keep = co_await c.reply_answer(*call.answer, {});
    if (watched) c.stop_watching();
    if (call.answer->hung_up()) local(c).runner->cancel(call.key);
    --st_.sessionless_answering;
    co_return keep;
  }
  const std::shared_ptr<response_sink>& sink = call.sink;
  // Behind whatever the request's first step queued, as for a session's request.
  if (call.after_redis) {
    // Refused (503) when Redis did not take the task's record: another instance could
    // never answer for it. The task, which already runs here, is stopped and ended failed
    // before anyone hears of it (cluster::stop_unkept_tasks).
    asio::post(c.executor(), [peers = st_.peers, shard = c.home().index, sink] {
      peers->accept_when_written(shard, sink, true,
                                 [peers](std::vector<sse_event>& held) { peers->stop_unkept_tasks(held); });
    });
  } else {
    sink->accept();
  }
  // The request's first step ran when it was admitted (on this thread: the runner is
  // this shard's), so a request answered by it (most are) is finished here already, and
  // the wait below does not suspend.
  co_await sink->wait_settled();
  if (sink->rejected_status() != 0) {
    // Redis did not keep the new task (its task was stopped): the client is told to retry.
    if (!call.listen) --st_.sessionless_answering;
    co_return co_await reply_unavailable(c, call.id, sink->rejected_message());
  }
  // Hanging up is the client's cancellation, whichever way the answer comes, so a request
  // still running is watched. One answered already is not: the watch costs a queued
  // peek, a cancel and an aborted completion per request (when it was an epoll
  // registration: about 15% of a stateless request's CPU time), for a request that can
  // no longer be cancelled.
  const bool watched = !sink->finished();
  if (watched) c.watch_for_close(sink);
  bool keep;
  if (call.json_mode) {
    keep = co_await c.serve_json(sink, {});
  } else {
    // A listen stream idles like the 2025 standalone stream it replaces, so it carries
    // the same keep-alive comments: proxies and client timers would close it otherwise.
    keep = co_await c.serve_events(sink, {}, call.listen);
  }
  if (watched) {
    c.stop_watching();  // drops the close watch, which holds this connection
  }
  // A closed stream is the client's cancellation (2026-07-28 has no other on HTTP); a
  // request that is over already is not found and nothing happens. The stream is not
  // detached from its dead sink here: a retry handed to the shard that keeps its frame
  // uses the stream there, and a dead sink drops what it is given anyway.
  if (sink->dead()) local(c).runner->cancel(call.key);
  if (!call.listen) --st_.sessionless_answering;
  co_return keep;
}

task<bool> streamable_endpoint::get(connection& c, request& req, const caller& who) {
  const options& o = st_.opts;
  if (o.stateless || !o.standalone_stream)
    co_return co_await c.reply(405, "text/plain", "method not allowed\n", false,
                             o.stateless ? "Allow: POST\r\n" : "Allow: POST, DELETE\r\n");
  const std::string_view* accept = req.find("accept");
  if (!accept || !accepts(*accept, "text/event-stream"))
    co_return co_await c.reply_rpc_error(406, ir::errc::invalid_request,
                                       "Not Acceptable: Accept must include text/event-stream");
  const std::string_view* sid = req.find("mcp-session-id");
  if (!sid)
    co_return co_await c.reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: Mcp-Session-Id header is required");

  // Which stream, and from where: no Last-Event-ID opens the standalone stream afresh;
  // one names a stream of this session and the last event the client saw on it.
  std::uint64_t number = 0, after = 0;
  const std::string_view* last = req.find("last-event-id");
  if (last && !parse_event_id(*last, number, after))
    co_return co_await c.reply_rpc_error(400, ir::errc::invalid_request,
                                       "Bad Request: Last-Event-ID was not issued by this server");
  const bool resume = last != nullptr;
  if (st_.peers && st_.peers->fenced() && !co_await st_.peers->until_current(c.executor()))
    co_return co_await reply_unavailable(c, std::nullopt, fenced_refusal);
  found_session found;
  for (int look = 0;; ++look) {  // a few looks at most, as for a POST
    if (look > 0) co_await pause_before_looking(c);
    found = co_await find_session(c, std::string(*sid), who);
    if (found.answered) co_return *found.answered;
    if (found.owner.empty()) break;
    if (look == max_looks) co_return co_await refuse_moving(c, std::nullopt);
    if (auto forwarded = co_await forward_get(c, std::string(*sid), found.owner, number, after, resume, who))
      co_return *forwarded;
  }
  std::shared_ptr<session_entry> entry = std::move(found.entry);
  if (st_.peers) st_.peers->touch(*entry);
  const bool standalone = number == 0;
  if (standalone && entry->has_standalone.exchange(true))
    co_return co_await c.reply_rpc_error(409, ir::errc::invalid_request,
                                       "Conflict: this session already has a standalone stream open");

  auto sink = c.make_sink();
  start_get(entry, sink, number, after, resume);
  co_await sink->wait_settled();
  bool keep = false;
  if (sink->rejected_status() != 0) {
    keep = co_await c.reply_rpc_error(sink->rejected_status(), ir::errc::invalid_request, sink->rejected_message());
  } else if (!sink->dead()) {
    // Resumed request streams idle with keep-alives like the standalone one (see
    // logical_stream::attach).
    c.watch_for_close(sink);
    keep = co_await c.serve_events(sink, {}, true);
    c.stop_watching();
  }
  end_get(entry, sink, number);
  co_return keep;
}

void streamable_endpoint::start_get(const std::shared_ptr<session_entry>& entry,
                                    const std::shared_ptr<response_sink>& sink, std::uint64_t number,
                                    std::uint64_t after, bool resume) {
  ++entry->active;
  // A stream of an earlier owner of a session taken over: only Redis has it.
  if (st_.peers && number != 0 && entry->epoch > 0 && number < (entry->epoch << 32)) {
    spawn(entry->executor, replay_earlier_owner(st_.peers, entry, number, after, sink), [](std::exception_ptr) {});
    return;
  }
  detail::dispatch_on(entry->executor, [entry, sink, number, after, resume] {
    const auto refuse = [&] {
      sink->reject(400, "Bad Request: Last-Event-ID is unknown or its events have expired; they cannot be replayed");
    };
    if (number == 0) {
      if (resume && !entry->standalone->replay(after, sink)) return refuse();
      entry->standalone->attach(sink);
      sink->accept();
      return;
    }
    if (number > entry->next_stream.load() || entry->s->is_closed()) return refuse();
    if (auto it = entry->streams.find(number); it != entry->streams.end()) {
      if (!it->second->replay(after, sink)) return refuse();
      it->second->attach(sink, true);
    } else {
      // The request is over; its events may still be in the store.
      if (!entry->store || !replay_into(*entry->store, number, after, sink)) return refuse();
    }
    entry->resumed.push_back(sink);
    sink->accept();
  });
}

void streamable_endpoint::end_get(const std::shared_ptr<session_entry>& entry,
                                  const std::shared_ptr<response_sink>& sink, std::uint64_t number) {
  detail::dispatch_on(entry->executor, [entry, sink, number] {
    if (number == 0) {
      entry->standalone->detach(sink);
    } else {
      if (auto it = entry->streams.find(number); it != entry->streams.end()) it->second->detach(sink);
      std::erase(entry->resumed, sink);
    }
  });
  if (number == 0) entry->has_standalone = false;
  --entry->active;
  entry->last_used = now_ns();
}

task<bool> streamable_endpoint::remove(connection& c, request& req, const caller& who) {
  if (st_.opts.stateless) co_return co_await c.reply(405, "text/plain", "method not allowed\n", false, "Allow: POST\r\n");
  const std::string_view* sid = req.find("mcp-session-id");
  if (!sid)
    co_return co_await c.reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: Mcp-Session-Id header is required");
  if (st_.peers && st_.peers->fenced() && !co_await st_.peers->until_current(c.executor()))
    co_return co_await reply_unavailable(c, std::nullopt, fenced_refusal);
  auto found = valid_session_id(*sid) ? st_.sessions.find(*sid) : nullptr;
  if (found && !found->legacy && !belongs_to(*found, who)) co_return co_await refuse_foreign_session(c);
  if ((!found || found->legacy) && st_.peers && valid_session_id(*sid)) {
    // Owned by another instance: it ends the session there (and its record); one whose
    // owner is gone is taken over here first, then ended like any other.
    found_session where;
    for (int look = 0;; ++look) {  // a few looks at most, as for a POST
      if (look > 0) co_await pause_before_looking(c);
      where = co_await find_session(c, std::string(*sid), who);
      if (where.answered) co_return *where.answered;
      if (where.owner.empty()) break;
      if (look == max_looks) co_return co_await refuse_moving(c, std::nullopt);
      std::string payload = encode_fields({"del", std::string(*sid), who.principal});
      const cluster::delivery told = co_await st_.peers->deliver(c.home().index, where.owner, std::move(payload));
      // Its owner's lease is gone: the next look takes the session over, and it is ended
      // here like any other.
      if (told == cluster::delivery::nobody) {
        st_.peers->forget_owner(std::string(*sid));
        continue;
      }
      if (told == cluster::delivery::unavailable)
        co_return co_await reply_unavailable(
            c, std::nullopt, "Service Unavailable: the instance that owns this session cannot be reached; try again shortly");
      co_return co_await c.reply(200, {}, {});
    }
  }
  auto entry = st_.sessions.find(*sid);
  entry = entry && !entry->legacy ? st_.sessions.erase(*sid) : nullptr;
  if (!entry)
    co_return co_await c.reply_rpc_error(404, ir::errc::invalid_request, "Not Found: unknown or ended session");
  end_session(entry);
  if (st_.peers) st_.peers->forget(*entry);
  co_return co_await c.reply(200, {}, {});
}

}  // namespace droid::http::detail
