// SPDX-License-Identifier: BSL-1.0
/// @file
/// Requests for sessions that another instance owns (cluster.hpp): forwarded there from
/// the instance the client reached, and served by the owner through a relay that
/// publishes each event back.
///
///     instance B (client's connection)               instance A (owner)
///     --------------------------------               ------------------
///     POST  -- "req" sid,B,tag,msg ------------------>  start_request(entry, msg, relay sink)
///     sink  <-- "evs" tag,accepted,ended,events... ----  relay: drains the sink, publishes
///     client gone -- "stop" B,tag ------------------->  relay sink killed (stream resumable)
///
/// Why a relay sink and not a new kind of outbound: the owner serves the request exactly
/// as for a connection of its own (priming event, verdict, recording, detaching), and
/// the relay is to the sink what a connection is: the one coroutine that drains it.
#include "application/server/server_core.hpp"
#include "endpoints.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include <droid/application/server/modern_request.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/spawn.hpp>
#include <droid/domain/ir/codec.hpp>

#include "cluster.hpp"
#include "connection.hpp"
#include "responses.hpp"

namespace droid::http::detail {

namespace {

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  (void)std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// Drains `sink` (on its home shard) and publishes its events to instance `to` under
/// `tag`. Ends when the stream does, or when the instance that asked says its client left
/// ("stop" kills the sink).
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
    peers->post_to(shard, to,
                   encode_fields({"rej", tag, std::to_string(sink->rejected_status()), sink->rejected_message()}));
    co_return;
  }
  bool accepted = false;
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
    fields.assign({"evs", tag, accepted ? "0" : "1", ended ? "1" : "0"});
    for (const sse_event& e : batch) {
      fields.push_back(e.id);
      fields.push_back(e.data);
    }
    peers->post_to(shard, to, encode_fields(fields));
    accepted = true;
    if (ended) co_return;
  }
}

/// Relays `sink` (whose home is `home`, on shard `shard`) to instance `to` under `tag`,
/// remembered as "to/tag" so that a "stop" can end it; `done` runs once it is over.
template <class Done>
void start_relay(const std::shared_ptr<cluster>& peers, asio::any_io_executor home, std::size_t shard,
                 std::shared_ptr<response_sink> sink, std::string_view to, std::string_view tag, Done done) {
  std::string key = std::string(to) + "/" + std::string(tag);
  peers->add_relay(key, sink, home);
  spawn(home, relay(peers, shard, std::move(sink), std::string(to), std::string(tag)),
        [peers, key = std::move(key), done = std::move(done)](std::exception_ptr) mutable {
          peers->remove_relay(key);
          done();
        });
}

}  // namespace

task<std::optional<bool>> streamable_endpoint::forward(connection& c, std::shared_ptr<response_sink> sink,
                                                       std::uint64_t tag, std::string owner, std::string payload,
                                                       forwarded_answer as, std::string session) {
  cluster& peers = *st_.peers;
  const std::size_t shard = c.home().index;
  const cluster::delivery told = co_await peers.send_to(shard, owner, std::move(payload));
  if (told != cluster::delivery::delivered) {
    peers.close_forward(shard, tag);
    if (told == cluster::delivery::nobody) {
      peers.presume_dead(owner);
      co_return std::nullopt;
    }
    co_return co_await c.reply_rpc_error(
        503, ir::errc::internal_error,
        "Service Unavailable: the server instance that owns this session or task cannot be reached; try again "
        "shortly",
        false, "Retry-After: 1\r\n");
  }
  co_await sink->wait_settled();
  bool keep = false;
  if (sink->rejected_status() == 404 && !session.empty()) {
    // The owner as remembered does not hold the session (any more): nothing was written
    // to the client, and the caller looks it up again (Redis says where it is, or that
    // it ended).
    peers.close_forward(shard, tag);
    peers.forget_owner(session);
    co_return std::nullopt;
  }
  if (sink->rejected_status() != 0) {
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
    const cluster::delivery told = co_await peers.send_to(c.home().index, owner, std::move(payload));
    if (told == cluster::delivery::nobody) {
      peers.presume_dead(owner);
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
  const std::uint64_t tag = peers.open_forward(sink, owner, msg.id().to_json());
  const std::string address = who.origin ? who.origin->remote_address : std::string();
  std::string payload = encode_fields(
      {"req", sid, peers.instance(), std::to_string(tag), json_mode ? "1" : "0", who.principal, address, msg.text()});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             json_mode ? forwarded_answer::json : forwarded_answer::events, std::move(sid));
}

task<std::optional<bool>> streamable_endpoint::forward_sessionless(connection& c, const ir::message& msg,
                                                                   std::string version, std::string owner,
                                                                   const caller& who) {
  cluster& peers = *st_.peers;
  // Task polls are answered with one JSON document (see is_task_poll in streamable.cpp).
  const bool json_mode = msg.method() != "tasks/result" || st_.opts.reply == streaming::json;
  auto sink = c.make_sink();
  const std::uint64_t tag = peers.open_forward(sink, owner, msg.id().to_json());
  const std::string address = who.origin ? who.origin->remote_address : std::string();
  std::string payload = encode_fields({"sreq", peers.instance(), std::to_string(tag), json_mode ? "1" : "0",
                                       who.principal, address, version, msg.text()});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             json_mode ? forwarded_answer::json : forwarded_answer::events);
}

task<std::optional<bool>> streamable_endpoint::forward_get(connection& c, std::string sid, std::string owner,
                                                           std::uint64_t number, std::uint64_t after, bool resume,
                                                           const caller& who) {
  cluster& peers = *st_.peers;
  auto sink = c.make_sink();
  const std::uint64_t tag = peers.open_forward(sink, owner, {});
  std::string payload = encode_fields({"get", sid, peers.instance(), std::to_string(tag), std::to_string(number),
                                       std::to_string(after), resume ? "1" : "0", who.principal});
  co_return co_await forward(c, std::move(sink), tag, std::move(owner), std::move(payload),
                             forwarded_answer::standing_stream, std::move(sid));
}

void streamable_endpoint::serve_forwarded(std::vector<std::string_view> f) {
  cluster& peers = *st_.peers;
  const std::string_view kind = f[0];
  // Tells the asking instance that the session is not (or no longer) here: its client
  // gets the 404 it would get from any instance.
  const auto refuse = [&](std::string_view from, std::string_view tag, int status, std::string_view why) {
    peers.post_to(0, std::string(from), encode_fields({"rej", tag, std::to_string(status), why}));
  };
  const auto local = [&](std::string_view sid, std::string_view principal) -> std::shared_ptr<session_entry> {
    auto e = st_.sessions.find(sid);
    if (!e || e->legacy || e->principal != principal) return nullptr;
    return e;
  };
  if (kind == "req" && f.size() == 8) {
    // sid, from, tag, json, principal, address, message
    auto entry = local(f[1], f[5]);
    if (!entry) return refuse(f[2], f[3], 404, "Not Found: unknown or ended session; initialize a new one");
    auto decoded = ir::decode(std::string(f[7]));
    auto* msg = std::get_if<ir::message>(&decoded);
    if (!msg) return refuse(f[2], f[3], 400, "Bad Request: the forwarded message did not decode");
    entry->last_used = now_ns();
    // Used through another instance: its record must live as long as it is used.
    peers.touch(*entry);
    auto origin = std::make_shared<request_origin>();
    origin->remote_address = std::string(f[6]);
    auto sink = std::make_shared<response_sink>(entry->executor, st_.opts.max_queued_bytes);
    start_request(entry, std::move(*msg), sink, f[4] == "1", std::move(origin));
    start_relay(st_.peers, entry->executor, entry->shard, sink, f[2], f[3], [entry] {
      --entry->active;
      entry->last_used = now_ns();
    });
    return;
  }
  if (kind == "sreq" && f.size() == 8) {
    // from, tag, json, principal, address, version, message: a 2026 request about a task
    // of this instance's, served by shard 0's sessionless runner as if it came here.
    auto decoded = ir::decode(std::string(f[7]));
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
      auto origin = std::make_shared<request_origin>();
      origin->remote_address = std::string(f[5]);
      peer.origin = std::move(origin);
      home.runner->serve_parsed(ir::request_id(home.mint_key()), msg->method(), msg->id(), params, stream, true,
                                std::move(peer), msg->text().size());
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
      peers.forget(*entry);
      end_session(entry);
    }
    return;
  }
}

}  // namespace droid::http::detail
