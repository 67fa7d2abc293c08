// SPDX-License-Identifier: BSL-1.0
/// @file
/// Requests for sessions that another instance owns (cluster.hpp): forwarded there from
/// the instance the client reached, and served by the owner through a relay that
/// publishes each event back.
///
///     instance B (client's connection)               instance A (owner)
///     --------------------------------               ------------------
///     POST  -- "req" sid,B,tag,msg ------------------>  start_request(entry, msg, relay sink)
///     sink  <-- "evs" A,tag,batch,accepted,ended,... --  relay: drains the sink, publishes
///     client gone -- "stop" B,tag ------------------->  relay sink killed (stream resumable)
///
/// A and B are members (`cluster::member`: a name and an incarnation), so replies go to
/// the life of B that asked, and B takes them only from the life of A it asked.
///
/// Why a relay sink and not a new kind of outbound: the owner serves the request exactly
/// as for a connection of its own (priming event, verdict, recording, detaching), and
/// the relay is to the sink what a connection is: the one coroutine that drains it.
#include "adapters/primary/transport/http/endpoint_state.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include <droid/application/server/modern_request.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/server/principal.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/schema.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "cluster.hpp"
#include "adapters/primary/transport/http/connection.hpp"
#include "adapters/primary/transport/http/wire/responses.hpp"

namespace droid::http::detail {

namespace {

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  (void)std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// What a forwarded request carries of its origin beyond the peer's address: the verified
/// principal (all of it: a tool on the owner reads `ctx.principal()` as it would on the
/// instance the client reached) and the copied headers. Empty when there is neither, which
/// is the common case and costs nothing. Why the principal and not the token, verified
/// again on the owner: the owner trusts its inbox as much as its own memory (Redis is part
/// of the server, docs/scale-out.md#security), and a second verification would cost a
/// signature check per forwarded request, or a JWKS fetch on an instance that has none.
std::string encode_origin(const request_origin* o) {
  if (!o || (!o->principal && o->headers.empty())) return {};
  boost::json::object out;
  if (const principal* p = o->principal.get()) {
    boost::json::array scopes;
    for (const std::string& s : p->scopes) scopes.emplace_back(s);
    out["principal"] = boost::json::object{
        {"iss", p->issuer},
        {"sub", p->subject},
        {"client_id", p->client_id},
        {"scopes", std::move(scopes)},
        {"claims", p->claims},
        {"exp_ms", std::chrono::duration_cast<std::chrono::milliseconds>(p->expires_at.time_since_epoch()).count()}};
  }
  if (!o->headers.empty()) {
    boost::json::array headers;
    for (const auto& [k, v] : o->headers) headers.emplace_back(boost::json::array{k, v});
    out["headers"] = std::move(headers);
  }
  return boost::json::serialize(out);
}

/// The origin of a forwarded request, as `encode_origin` wrote it (with the address).
/// Anything that does not read back leaves the origin without it: the principal key the
/// message also carries is what binds the request to its session, and it was checked.
std::shared_ptr<request_origin> decode_origin(std::string_view address, std::string_view text) {
  auto o = std::make_shared<request_origin>();
  o->remote_address = std::string(address);
  if (text.empty()) return o;
  boost::json::value v;
  if (!ir::parse_exact(text, v) || !v.is_object()) return o;
  const boost::json::object& obj = v.as_object();
  const auto str = [](const boost::json::object& from, std::string_view key) {
    const boost::json::value* x = from.if_contains(key);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  if (const boost::json::value* pv = obj.if_contains("principal"); pv && pv->is_object()) {
    const boost::json::object& po = pv->as_object();
    auto p = std::make_shared<principal>();
    p->issuer = str(po, "iss");
    p->subject = str(po, "sub");
    p->client_id = str(po, "client_id");
    if (const boost::json::value* s = po.if_contains("scopes"); s && s->is_array())
      for (const auto& scope : s->as_array())
        if (scope.is_string()) p->scopes.emplace_back(scope.as_string());
    if (const boost::json::value* c = po.if_contains("claims"); c && c->is_object()) p->claims = c->as_object();
    if (const boost::json::value* e = po.if_contains("exp_ms"); e && e->is_int64())
      p->expires_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(e->as_int64()));
    o->principal = std::move(p);
  }
  if (const boost::json::value* h = obj.if_contains("headers"); h && h->is_array())
    for (const auto& pair : h->as_array())
      if (pair.is_array() && pair.as_array().size() == 2 && pair.as_array()[0].is_string() &&
          pair.as_array()[1].is_string())
        o->headers.emplace_back(std::string(pair.as_array()[0].as_string()), std::string(pair.as_array()[1].as_string()));
  return o;
}

/// Drains `sink` (on its home shard) and publishes its events to member `to` under `tag`.
/// Ends when the stream does, when the member that asked says its client left ("stop"
/// kills the sink), or when a batch reaches nobody or cannot be published: the asker is
/// gone (a new life of it listens on another channel), or Redis is, and either way the
/// asker's client resumes the stream, which goes on being recorded.
///
/// Why one message per drain ("evs": accepted?, ended?, then id and data pairs): a plain
/// call's whole answer (the verdict, the priming event, the result, the end) is queued at
/// once, and one message for it instead of four cut the forwarded request's CPU time (bench
/// row droid-cluster-2, docs/scale-out.md).
task<void> relay(std::shared_ptr<cluster> peers, std::size_t shard, std::shared_ptr<response_sink> sink, std::string to,
                 std::string tag) {
  co_await sink->wait_settled();
  if (sink->dead()) co_return;
  if (sink->rejected_status() != 0) {
    peers->refuse_forward(shard, to, tag, sink->rejected_status(), sink->rejected_message());
    co_return;
  }
  bool accepted = false;
  std::uint64_t number = 0;
  std::vector<sse_event> batch;
  std::vector<std::string_view> fields;
  for (;;) {
    // The verdict goes out at once, with whatever is queued (for a call, its whole
    // answer): a GET's stream may have nothing to say for hours, and its client must not
    // wait for a first event to learn that the stream is open.
    if (accepted) co_await sink->wait();
    sink->drain(batch);
    if (sink->dead()) co_return;
    const bool ended = sink->finished();
    const std::string batch_number = std::to_string(number++);
    fields.assign({"evs", peers->member(), tag, batch_number, accepted ? "0" : "1", ended ? "1" : "0"});
    for (const sse_event& e : batch) {
      fields.push_back(e.id);
      fields.push_back(e.data);
    }
    if (co_await peers->send_to(shard, to, encode_fields(fields)) != cluster::delivery::delivered) {
      sink->kill();
      co_return;
    }
    accepted = true;
    if (ended) co_return;
  }
}

/// Relays `sink` (whose home is `home`, on shard `shard`) to instance `to` under `tag`,
/// remembered as "to/tag" so that a "stop" can end it; `done` runs once it is over.
template <class Done>
void start_relay(const std::shared_ptr<cluster>& peers, asio::any_io_executor home, std::size_t shard,
                 std::shared_ptr<response_sink> sink, std::string_view to, std::string_view tag, Done done,
                 std::shared_ptr<forward_gate> gate = nullptr, std::function<void()> cancel = {}) {
  std::string key = std::string(to) + "/" + std::string(tag);
  peers->add_relay(key, sink, home, std::move(gate), std::move(cancel));
  spawn(home, relay(peers, shard, std::move(sink), std::string(to), std::string(tag)),
        [peers, key = std::move(key), done = std::move(done)](std::exception_ptr) mutable {
          peers->remove_relay(key);
          done();
        });
}

}  // namespace

task<bool> reply_unavailable(connection& c, const std::optional<ir::request_id>& id, std::string_view why) {
  const std::string body = id ? rpc_error_body(*id, ir::errc::internal_error, why)
                              : rpc_error_body(ir::errc::internal_error, why);
  co_return co_await c.reply(503, "application/json", body, false, "Retry-After: 1\r\n");
}

task<std::optional<bool>> streamable_endpoint::forward(connection& c, std::shared_ptr<response_sink> sink,
                                                       std::uint64_t tag, std::string owner, std::string payload,
                                                       forwarded_answer as, std::optional<ir::request_id> id,
                                                       std::string session) {
  cluster& peers = *st_.peers;
  const std::size_t shard = c.home().index;
  const cluster::delivery told = co_await peers.deliver(shard, owner, std::move(payload));
  if (told != cluster::delivery::delivered) {
    peers.close_forward(shard, tag);
    if (told == cluster::delivery::nobody) {
      // Its lease is gone: the next look takes the session (or task) over.
      if (!session.empty()) peers.forget_owner(session);
      co_return std::nullopt;
    }
    co_return co_await reply_unavailable(
        c, id,
        "Service Unavailable: the server instance that owns this session or task cannot be reached; try again "
        "shortly");
  }
  co_await sink->wait_settled();
  bool keep = false;
  if (sink->rejected_status() == cluster::owner_silent) {
    // Not started there, and never will be (gone, fenced, or it never arrived): looked
    // for again, and served by whoever holds the session then.
    if (!session.empty()) peers.forget_owner(session);
    co_return std::nullopt;
  }
  if (sink->rejected_status() == 404 && !session.empty()) {
    // The owner as remembered does not hold the session (any more): nothing was written
    // to the client, and the caller looks it up again (Redis says where it is, or that
    // it ended).
    peers.close_forward(shard, tag);
    peers.forget_owner(session);
    co_return std::nullopt;
  }
  if (sink->rejected_status() == 503) {
    keep = co_await reply_unavailable(c, id, sink->rejected_message());
  } else if (sink->rejected_status() != 0) {
    keep = co_await c.reply_rpc_error(sink->rejected_status(), ir::errc::invalid_request, sink->rejected_message());
  } else if (as == forwarded_answer::json) {
    keep = co_await c.serve_json(sink, {});
  } else if (!sink->dead()) {
    c.watch_for_close(sink);
    keep = co_await c.serve_events(sink, {}, as == forwarded_answer::standing_stream);
    c.stop_watching();
  }
  peers.close_forward(shard, tag);
  co_return keep;
}

task<std::optional<bool>> streamable_endpoint::forward_post(connection& c, const ir::message& msg, std::string sid,
                                                            std::string owner, const caller& who) {
  cluster& peers = *st_.peers;
  if (!msg.is_request()) {
    // A notification or an answer: handed over, then 202, as for a session of this
    // instance's (an answer resumes the frame waiting for it there).
    // Payloads are named before the co_await: g++ 12 cannot keep a braced list's array
    // alive across one in the same full expression.
    std::string payload = encode_fields({"msg", sid, who.principal, msg.text()});
    const cluster::delivery told = co_await peers.deliver(c.home().index, owner, std::move(payload));
    if (told == cluster::delivery::nobody) {
      peers.forget_owner(sid);
      co_return std::nullopt;
    }
    if (told == cluster::delivery::unavailable)
      co_return co_await c.reply_rpc_error(
          503, ir::errc::internal_error,
          "Service Unavailable: the server instance that owns this session cannot be reached; try again shortly",
          false, "Retry-After: 1\r\n");
    co_return co_await c.reply(202, {}, {});
  }
  const bool json_mode = st_.opts.reply == streaming::json || msg.method() == "tasks/get" ||
                         msg.method() == "tasks/list" || msg.method() == "tasks/cancel";
  auto sink = c.make_sink();
  const std::uint64_t tag = peers.open_forward(sink, owner, msg.id().to_json(), json_mode);
  const std::string address = who.origin ? who.origin->remote_address : std::string();
  const std::string origin = encode_origin(who.origin.get());
  std::string payload = encode_fields({"req", sid, peers.member(), std::to_string(tag), json_mode ? "1" : "0",
                                       who.principal, address, origin, msg.text()});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             json_mode ? forwarded_answer::json : forwarded_answer::events, msg.id(), std::move(sid));
}

task<std::optional<bool>> streamable_endpoint::forward_sessionless(connection& c, const ir::message& msg,
                                                                   std::string version, std::string owner,
                                                                   const caller& who) {
  cluster& peers = *st_.peers;
  // Task polls are answered with one JSON document (see is_task_poll in streamable.cpp).
  const bool json_mode = msg.method() != "tasks/result" || st_.opts.reply == streaming::json;
  auto sink = c.make_sink();
  const std::uint64_t tag = peers.open_forward(sink, owner, msg.id().to_json(), json_mode);
  const std::string address = who.origin ? who.origin->remote_address : std::string();
  const std::string origin = encode_origin(who.origin.get());
  std::string payload = encode_fields({"sreq", peers.member(), std::to_string(tag), json_mode ? "1" : "0",
                                       who.principal, address, version, origin, msg.text()});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             json_mode ? forwarded_answer::json : forwarded_answer::events, msg.id());
}

task<std::optional<bool>> streamable_endpoint::forward_get(connection& c, std::string sid, std::string owner,
                                                           std::uint64_t number, std::uint64_t after, bool resume,
                                                           const caller& who) {
  cluster& peers = *st_.peers;
  auto sink = c.make_sink();
  const std::uint64_t tag = peers.open_forward(sink, owner, {}, false);
  std::string payload = encode_fields({"get", sid, peers.member(), std::to_string(tag), std::to_string(number),
                                       std::to_string(after), resume ? "1" : "0", who.principal});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             forwarded_answer::standing_stream, std::nullopt, std::move(sid));
}

void streamable_endpoint::serve_forwarded(std::vector<std::string_view> f) {
  cluster& peers = *st_.peers;
  const std::string_view kind = f[0];
  // Tells the asking instance that the session is not (or no longer) here: its client
  // gets the 404 it would get from any instance.
  const auto refuse = [&](std::string_view from, std::string_view tag, int status, std::string_view why) {
    peers.refuse_forward(0, from, tag, status, why);
  };
  const auto local = [&](std::string_view sid, std::string_view principal) -> std::shared_ptr<session_entry> {
    auto e = st_.sessions.find(sid);
    if (!e || e->legacy || e->principal != principal) return nullptr;
    return e;
  };
  if (kind == "req" && f.size() == 9) {
    // sid, from, tag, json, principal, address, origin, message
    auto entry = local(f[1], f[5]);
    if (!entry) return refuse(f[2], f[3], 404, "Not Found: unknown or ended session; initialize a new one");
    auto decoded = ir::decode(std::string(f[8]));
    auto* msg = std::get_if<ir::message>(&decoded);
    if (!msg) return refuse(f[2], f[3], 400, "Bad Request: the forwarded message did not decode");
    entry->last_used = now_ns();
    // Used through another instance: its record must live as long as it is used.
    peers.touch(*entry);
    auto sink = std::make_shared<response_sink>(entry->executor, st_.opts.max_queued_bytes);
    auto gate = peers.new_gate();
    // At a lapse of this member's lease the request is stopped (its asker has told, or
    // will tell, the client that this instance stopped): its stream gets an error answer,
    // which a resume then finds, and the tool is cancelled, as the client's
    // notifications/cancelled would, so that nothing more is sent for it.
    auto cancel = [entry, gate, id = msg->id()] {
      if (gate->stream == 0) return;  // never started
      auto it = entry->streams.find(gate->stream);
      if (it == entry->streams.end() || it->second->is_finished()) return;  // answered already
      it->second->send(rpc_error_body(id, ir::errc::internal_error,
                                      "Internal error: the server instance running this request lost its hold on the "
                                      "session (its shared store was unreachable for too long) and stopped the "
                                      "request; the session goes on, and the request may be sent again"));
      entry->s->cancel(id);
    };
    start_request(entry, std::move(*msg), sink, f[4] == "1", decode_origin(f[6], f[7]), gate);
    start_relay(st_.peers, entry->executor, entry->shard, sink, f[2], f[3], [entry] {
      --entry->active;
      entry->last_used = now_ns();
    }, std::move(gate), std::move(cancel));
    return;
  }
  if (kind == "sreq" && f.size() == 9) {
    // from, tag, json, principal, address, version, origin, message: a 2026 request about
    // a task of this instance's, served by shard 0's sessionless runner as if it came here.
    auto decoded = ir::decode(std::string(f[8]));
    auto* msg = std::get_if<ir::message>(&decoded);
    if (!msg) return refuse(f[1], f[2], 400, "Bad Request: the forwarded message did not decode");
    sessionless_shard& home = *st_.sessionless.front();
    auto sink = std::make_shared<response_sink>(home.runner->executor(), st_.opts.max_queued_bytes);
    auto stream = std::make_shared<logical_stream>(0, nullptr, logical_stream::finish_hook{},
                                                   "a forwarded task request cannot ask the client a question");
    stream->attach(sink);
    std::optional<request_refusal> refused;
    const std::string version(f[6]);
    const auto serve = [&](const ir::json_node* params) {
      peer_info peer;
      refused = admit_modern(st_.srv, msg->method(), params, version, peer);
      if (refused) return;
      peer.principal = std::string(f[4]);
      peer.origin = decode_origin(f[5], f[7]);
      home.runner->serve_parsed(ir::request_id(home.mint_key()), msg->method(), msg->id(), params, stream, true,
                                std::move(peer), msg->text().size(), msg);
    };
    if (const ir::raw_json params = msg->params(); params.kind == ir::json_kind::object) {
      (void)ir::visit_json(params.text, [&](const ir::json_node& p) { serve(&p); });
    } else {
      serve(nullptr);
    }
    if (refused) {
      sink->push(sse_event{std::string(), rpc_error_body(msg->id(), refused->code, refused->message, refused->data)});
      sink->finish();
    }
    asio::post(home.runner->executor(), [sink] { sink->accept(); });
    start_relay(st_.peers, home.runner->executor(), 0, sink, f[1], f[2], [] {});
    return;
  }
  if (kind == "msg" && f.size() == 4) {
    auto entry = local(f[1], f[2]);
    if (!entry) return;  // as a notification for an unknown session: dropped
    auto decoded = ir::decode(std::string(f[3]));
    auto* msg = std::get_if<ir::message>(&decoded);
    if (!msg) return;
    entry->last_used = now_ns();
    peers.touch(*entry);
    asio::dispatch(entry->executor, [s = entry->s, m = std::move(*msg)]() mutable { s->receive(std::move(m)); });
    return;
  }
  if (kind == "get" && f.size() == 8) {
    // sid, from, tag, number, after, resume, principal
    auto entry = local(f[1], f[7]);
    if (!entry) return refuse(f[2], f[3], 404, "Not Found: unknown or ended session");
    const std::uint64_t number = to_u64(f[4]);
    peers.touch(*entry);
    if (number == 0 && entry->has_standalone.exchange(true))
      return refuse(f[2], f[3], 409, "Conflict: this session already has a standalone stream open");
    auto sink = std::make_shared<response_sink>(entry->executor, st_.opts.max_queued_bytes);
    start_get(entry, sink, number, to_u64(f[5]), f[6] == "1");
    start_relay(st_.peers, entry->executor, entry->shard, sink, f[2], f[3],
                [this, entry, sink, number] { end_get(entry, sink, number); });
    return;
  }
  if (kind == "stop" && f.size() == 3) {
    peers.stop_relay(std::string(f[1]) + "/" + std::string(f[2]));
    return;
  }
  if (kind == "del" && f.size() == 3) {
    if (!local(f[1], f[2])) return;
    if (auto entry = st_.sessions.erase(f[1])) {
      end_session(entry);
      peers.forget(*entry);
    }
    return;
  }
}

}  // namespace droid::http::detail
