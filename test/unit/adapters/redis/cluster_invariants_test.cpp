// SPDX-License-Identifier: BSL-1.0
/// @file
/// The promises a cluster keeps under faults (docs/scale-out.md, "What always holds"): a
/// reply is taken only by the forward that asked, from the member it asked; a relayed
/// stream with a hole in it is ended, never passed off as whole; a forwarded request
/// carries its principal, so the tool on the owner sees the caller it would see on the
/// instance the client reached; and a new session is acknowledged only once Redis has
/// its record.
///
/// The cross-process cases (an instance killed and restarted under the same name) are in
/// test/peer/cluster_faults.mjs; these cause the same conditions inside one process, by
/// publishing on an instance's inbox what a stale or foreign sender would.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <droid/adapters/secondary/auth/token_verifier.hpp>

#include "application/catalog/server_core.hpp"
#include "application/tasks/task_engine.hpp"
#include "cluster_fixture.hpp"

using namespace droid::test::cluster;

namespace {

/// The inbox messages' encoding ("3:evs1:a..."), written out here rather than taken from
/// the library so that the test states the wire it checks.
std::string fields(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view p : parts) out.append(std::to_string(p.size())).append(":").append(p);
  return out;
}

/// The channel member `name` listens on ("droid:c:NAME#INCARNATION"), found in Redis.
std::string inbox_of(const droid::test::redis_server& redis, const std::string& name) {
  return redis_cli(redis, {"PUBSUB", "CHANNELS", "droid:c:" + name + "#*"});
}

/// Two instances, a session on `a`, and a call of `wait` (`ms`, 1.5 s unless said) through
/// `b`, which forwards it to `a`: what a forged reply on `b`'s inbox could be mistaken for.
struct forwarded_call {
  droid::test::redis_server redis;
  instance a{redis.url(), "a"}, b{redis.url(), "b"};
  raw_connection ca{a.port(), guard_ms}, cb{b.port(), guard_ms};
  std::string sid = initialize(ca);
  std::string b_inbox, a_member;

  explicit forwarded_call(int id, int ms = 1500) {
    cb.send(mcp_post(call(id, "wait", R"({"ms":)" + std::to_string(ms) + "}"), session_header(sid)));
    b_inbox = inbox_of(redis, "b");
    a_member = inbox_of(redis, "a").substr(std::string("droid:c:").size());
    REQUIRE(b_inbox.starts_with("droid:c:b#"));
    REQUIRE(a_member.starts_with("a#"));
  }
  /// Publishes `payload` on b's inbox, as a sender other than its instances would.
  [[nodiscard]] std::string publish(const std::string& payload) {
    return redis_cli(redis, {"PUBLISH", b_inbox, payload});
  }
};

/// Tokens by name: "alice" (scope read, tenant blue); anything else is refused.
struct table_verifier final : droid::auth::token_verifier {
  droid::task<droid::auth::verification> verify(std::string token, asio::any_io_executor) override {
    droid::auth::verification v;
    if (token == "alice") {
      auto p = std::make_shared<droid::principal>();
      p->issuer = "https://as.example";
      p->subject = "alice";
      p->scopes = {"read"};
      p->claims["tenant"] = "blue";
      p->expires_at = std::chrono::system_clock::now() + std::chrono::hours(1);
      v.who = std::move(p);
    } else {
      v.error = droid::auth::token_error::bad_signature;
      v.description = "the signature does not verify";
    }
    co_return v;
  }
};

void with_auth(droid::http::options& o) {
  o.auth.verifier = std::make_shared<table_verifier>();
  o.auth.authorization_servers = {"https://as.example"};
  o.auth.scopes_supported = {"read"};
  o.auth.required_scopes = {"read"};
  o.auth.resource_name = "Cluster isolation test";
}

/// A ghost owner of session `sid`: its inbox has a listener (redis-cli, which reads and
/// never answers), its heartbeat key is set and the session's record names it. What an
/// instance forwards there is delivered and never taken up, as with an owner whose event
/// loop is stuck while its heartbeat goes on.
void make_ghost_owner(const droid::test::redis_server& redis, const std::string& ghost, const std::string& sid) {
  CHECK(redis_cli(redis, {"SET", "droid:i:" + ghost, "1", "PX", "60000"}) == "OK");
  CHECK(redis_cli(redis, {"HSET", "droid:s:" + sid, "owner", ghost, "version", "2025-11-25", "principal", ""}) == "3");
  const std::string listen = "timeout 20 redis-cli -p " + std::to_string(redis.port()) + " SUBSCRIBE 'droid:c:" +
                             ghost + "' >/dev/null 2>&1 &";
  REQUIRE(std::system(listen.c_str()) == 0);
  for (int i = 0; i < 500 && redis_cli(redis, {"PUBSUB", "NUMSUB", "droid:c:" + ghost}).ends_with("\n0"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

TEST_SUITE("adapters/redis") {
  TEST_CASE("a reply is taken only from the member the forward asked, for the forward that asked") {
    REQUIRE(droid::test::have_redis_server());
    forwarded_call fc(7);
    // Waits until b's forward is open (the owner has begun the call: its stream is in
    // Redis), so that the forgeries below meet a forward they could be mistaken for.
    for (int i = 0; i < 300 && redis_cli(fc.redis, {"KEYS", "droid:r:" + fc.sid + ":*"}).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string forged = R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"forged"}]}})";
    // Tag 1 is b's first forward: the same tag from a member b did not ask (another
    // instance, or a previous life of a, as after a restart under the same name)...
    CHECK(fc.publish(fields({"evs", "a#0000000000000000", "1", "0", "1", "1", "1-1", forged})) == "1");
    CHECK(fc.publish(fields({"rej", "a#0000000000000000", "1", "404", "forged"})) == "1");
    // ... and the right member's reply to a tag b never opened.
    CHECK(fc.publish(fields({"evs", fc.a_member, "99", "0", "1", "1", "1-1", forged})) == "1");
    auto r = fc.cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body.find("forged") == std::string::npos);
    CHECK(result_text(sse_messages(r->body)) == "waited");
  }

  TEST_CASE("a relayed stream with a hole in it is ended, and its resume gets every event") {
    REQUIRE(droid::test::have_redis_server());
    forwarded_call fc(8);
    // The priming event, relayed as the owner's batch 0, names the stream to resume.
    const std::string event = first_event_id(fc.cb);
    // A batch out of turn (batch 1 never came): as if pub/sub had dropped one.
    CHECK(fc.publish(fields({"evs", fc.a_member, "1", "5", "0", "0"})) == "1");
    // The stream ends without its answer: the client must resume, not wait forever.
    const std::string tail = fc.cb.read_until("0\r\n\r\n");
    CHECK(tail.find("waited") == std::string::npos);
    const std::string body = resume(fc.b.port(), fc.sid, event, "waited");
    CHECK(body.find("200 OK") != std::string::npos);
    CHECK(body.find("waited") != std::string::npos);
  }

  TEST_CASE("a forwarded request carries its principal: the tool on the owner sees the caller") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a", std::chrono::minutes(5), with_auth), b(redis.url(), "b", std::chrono::minutes(5), with_auth);
    const std::string token = "Authorization: Bearer alice\r\n";
    raw_connection ca(a.port(), guard_ms), cb(b.port(), guard_ms);
    ca.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                     R"("capabilities":{},"clientInfo":{"name":"c","version":"1"}}})",
                     token));
    auto init = ca.read_response();
    REQUIRE(init);
    REQUIRE(init->status == 200);
    const std::string sid = *init->header("mcp-session-id");
    // On the owner, then through the other instance: the same principal, claims and all.
    ca.send(mcp_post(call(1, "principal"), session_header(sid) + token));
    auto here = ca.read_response();
    REQUIRE(here);
    CHECK(result_text(sse_messages(here->body)) == "alice +read tenant=blue from=ip");
    cb.send(mcp_post(call(2, "principal"), session_header(sid) + token));
    auto there = cb.read_response();
    REQUIRE(there);
    CHECK(result_text(sse_messages(there->body)) == "alice +read tenant=blue from=ip");
  }

  TEST_CASE("a session is acknowledged only once Redis has its record: full or down, initialize gets 503") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    const std::string init =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{},"clientInfo":{"name":"c","version":"1"}}})";
    const auto refused = [&](const char* what) {
      raw_connection c(a.port(), guard_ms);
      c.send(mcp_post(init));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK_MESSAGE(r->status == 503, what);
      CHECK(r->header("retry-after"));
      CHECK(r->header("mcp-session-id") == nullptr);
      CHECK(r->body.find("shared store") != std::string::npos);
      // What failed (host, port, Redis's words) is for the operator's diagnostics only.
      CHECK(r->body.find(std::to_string(redis.port())) == std::string::npos);
      CHECK(r->body.find("OOM") == std::string::npos);
      CHECK(boost::json::parse(r->body).at("error").at("code") == -32603);
    };
    // Full, with the default policy (noeviction): Redis refuses the record's write.
    CHECK(redis_cli(redis, {"CONFIG", "SET", "maxmemory", "1"}) == "OK");
    refused("Redis full");
    CHECK(a.listener->sessions() == 0);
    // Room again: the session is acknowledged, and found through the other instance.
    CHECK(redis_cli(redis, {"CONFIG", "SET", "maxmemory", "0"}) == "OK");
    raw_connection ca(a.port(), guard_ms), cb(b.port(), guard_ms);
    const std::string sid = initialize(ca);
    cb.send(mcp_post(call(1, "echo", R"({"text":"found"})"), session_header(sid)));
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(result_text(sse_messages(r->body)) == "found");
    // Down: refused at once, not acknowledged as a session nobody else could find.
    const std::string port = std::to_string(redis.port());
    redis.stop();
    refused("Redis down");
    CHECK(a.listener->sessions() == 1);  // the earlier session is served from memory
    // A session b does not hold, with Redis down: 503 that names no host and no port.
    raw_connection other(b.port(), guard_ms);
    other.send(mcp_post(call(2, "echo", R"({"text":"x"})"), session_header("not-held-anywhere")));
    r = other.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->header("retry-after"));
    CHECK(r->body.find(port) == std::string::npos);
  }

  TEST_CASE("an owner that is heard from but never takes a request up: 503 naming the request, with Retry-After") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance b(redis.url(), "b");
    // A ghost owner (make_ghost_owner) that also beats on the common channel.
    const std::string ghost = "ghost#0000000000000001";
    const std::string sid = "ghost-session";
    make_ghost_owner(redis, ghost, sid);
    std::atomic<bool> beating{true};
    std::thread heart([&] {
      while (beating) {
        (void)redis_cli(redis, {"PUBLISH", "droid:all", fields({"hb", ghost})});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(call(9, "echo", R"({"text":"x"})"), session_header(sid)));
    auto r = cb.read_response();
    beating = false;
    heart.join();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->header("retry-after"));
    const auto body = boost::json::parse(r->body);
    CHECK(body.at("id") == 9);
    CHECK(body.at("error").at("code") == -32603);
    CHECK(std::string_view(body.at("error").at("message").as_string()).find("did not take the request up") !=
          std::string_view::npos);
  }

  TEST_CASE("a forwarded call whose asker's inbox breaks before the owner's first batch gets -32603 naming it, not an empty stream") {
    // The owner's first batch carries the priming event, the id a resume starts from. When
    // the asker's inbox connection breaks before that batch arrives (pub/sub drops what is
    // published meanwhile), the client has nothing to resume from: a stream ended there,
    // empty, would be a call with no answer. Caused with a ghost owner that never answers
    // and `CLIENT KILL TYPE pubsub` once the forward is out.
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance b(redis.url(), "b");
    make_ghost_owner(redis, "ghost#0000000000000002", "ghost-session-2");
    const std::string sid = "ghost-session-2";
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(call(11, "echo", R"({"text":"x"})"), session_header(sid)));
    // The forward is out once the ghost's listener has had the request (b publishes it as
    // soon as it has looked the session up); well inside the forward's timeout.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(redis_cli(redis, {"CLIENT", "KILL", "TYPE", "pubsub"}).empty());
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    const auto messages = sse_messages(r->body);
    REQUIRE(messages.size() == 1);
    const auto& answer = messages.front();
    CHECK(answer.at("id") == 11);
    CHECK(answer.at("error").at("code") == -32603);
    CHECK(std::string_view(answer.at("error").at("message").as_string()).find("the answer was lost") !=
          std::string_view::npos);
  }

  TEST_CASE("a forwarded call whose first batch arrives out of turn gets -32603 naming it, not an empty stream") {
    // Batch 0 (the verdict and the priming event) lost, batch 1 heard: the same hole as a
    // broken inbox, before the client had an event id. The ghost owner's batch is
    // published by hand, as pub/sub would deliver it after dropping the first.
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance b(redis.url(), "b");
    const std::string ghost = "ghost#0000000000000003";
    make_ghost_owner(redis, ghost, "ghost-session-3");
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(call(12, "echo", R"({"text":"x"})"), session_header("ghost-session-3")));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the forward is out
    const std::string b_inbox = inbox_of(redis, "b");
    REQUIRE(b_inbox.starts_with("droid:c:b#"));
    // Tag 1 is b's first forward; batch 1 where batch 0 is due.
    const std::string forged = R"({"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"late"}]}})";
    CHECK(redis_cli(redis, {"PUBLISH", b_inbox, fields({"evs", ghost, "1", "1", "1", "1", "1-1", forged})}) == "1");
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    const auto messages = sse_messages(r->body);
    REQUIRE(messages.size() == 1);
    CHECK(messages.front().at("id") == 12);
    CHECK(messages.front().at("error").at("code") == -32603);
    CHECK(r->body.find("late") == std::string::npos);
  }

  TEST_CASE("a record names its owner and epoch: a stale owner's write is refused, and it gives the session up") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a");
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca);
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + sid, "owner"}).starts_with("a#"));
    // Another member took the session over behind a's back (as once a's lease had
    // lapsed): the record names it at a later epoch, and its lease is current.
    const std::string other = "z#00000000000000ff";
    CHECK(redis_cli(redis, {"SET", "droid:i:" + other, "1", "PX", "60000"}) == "OK");
    (void)redis_cli(redis, {"HSET", "droid:s:" + sid, "owner", other, "epoch", "1"});
    // a changes the session's state from its stale copy: the write is refused by Redis.
    ca.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}})",
                     session_header(sid)));
    auto r = ca.read_response();
    REQUIRE(r);
    for (int i = 0; i < 300 && a.listener->sessions() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(a.listener->sessions() == 0);  // given up
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + sid, "owner"}) == other);
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + sid, "level"}) != "debug");
  }

  TEST_CASE("a lease that vanished is taken again, and the member keeps what Redis still says is its own") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms), cb(b.port(), guard_ms);
    const std::string kept = initialize(ca), lost = initialize(ca);
    const std::string member = redis_cli(redis, {"HGET", "droid:s:" + kept, "owner"});
    REQUIRE(member.starts_with("a#"));
    // a's lease vanishes; meanwhile b takes `lost` over (its lease is gone, so it may) and
    // `kept`'s record is lost with the rest of a Redis that restarted empty.
    // In one script, so that a's recovery sees all of it or none of it.
    const std::string script = "redis.call('DEL', KEYS[2], KEYS[3]) "
                               "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then "
                               "redis.call('HSET', KEYS[1], 'owner', ARGV[2]) return redis.call('HINCRBY', KEYS[1], 'epoch', 1) end return -1";
    CHECK(redis_cli(redis, {"EVAL", script, "3", "droid:s:" + lost, "droid:i:" + member, "droid:s:" + kept, member,
                            "b#0000000000000001"}) == "1");
    // Within a few heartbeats: the lease is back, `kept` written again, `lost` given up.
    for (int i = 0; i < 300 && (a.listener->sessions() != 1 || redis_cli(redis, {"EXISTS", "droid:s:" + kept}) != "1"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(redis_cli(redis, {"EXISTS", "droid:i:" + member}) == "1");
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + kept, "owner"}) == member);
    CHECK(a.listener->sessions() == 1);
    cb.send(mcp_post(call(2, "echo", R"({"text":"kept"})"), session_header(kept)));
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(result_text(sse_messages(r->body)) == "kept");
  }

  TEST_CASE("DELETE leaves nothing of the session in Redis") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms), cb(b.port(), guard_ms);
    const std::string sid = initialize(ca);
    for (int id = 1; id <= 3; ++id) {
      ca.send(mcp_post(call(id, "echo", R"({"text":"x"})"), session_header(sid)));
      REQUIRE(ca.read_response());
    }
    CHECK(redis_cli(redis, {"EXISTS", "droid:x:" + sid}) == "1");
    cb.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + session_header(sid) + "\r\n");
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    std::string left;
    for (int i = 0; i < 300; ++i) {
      left = redis_cli(redis, {"KEYS", "droid:*" + sid + "*"});
      if (left.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK_MESSAGE(left.empty(), left);
  }

  TEST_CASE("a task is acknowledged only once Redis has its record: Redis full, its creation gets 503 and it is stopped") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a");
    CHECK(redis_cli(redis, {"CONFIG", "SET", "maxmemory", "1"}) == "OK");
    raw_connection c(a.port(), guard_ms);
    c.send(mcp_post(modern_request(5, "tools/call", R"("name":"confirm","arguments":{})"),
                    modern_headers("tools/call", "confirm")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->header("retry-after"));
    const auto body = boost::json::parse(r->body);
    CHECK(body.at("id") == 5);
    CHECK(body.at("error").at("code") == -32603);
    // The task had started (its tool asks a question first): it is stopped, not left
    // running with nobody to know its id.
    droid::detail::task_engine& tasks = droid::detail::core(a.srv).tasks();
    for (int i = 0; i < 300 && tasks.running() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(tasks.running() == 0);
    // Room again: a task is acknowledged and answered for.
    CHECK(redis_cli(redis, {"CONFIG", "SET", "maxmemory", "0"}) == "OK");
    const auto created = modern(a.port(), 6, "tools/call", "confirm", R"("name":"confirm","arguments":{})");
    CHECK(created.at("result").at("resultType") == "task");
  }

  TEST_CASE("requests racing to take one session over end with one owner at one epoch, and it keeps serving") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    auto a = std::make_unique<instance>(redis.url(), "a");
    instance b(redis.url(), "b");
    std::string sid;
    {
      raw_connection ca(a->port(), guard_ms);
      sid = initialize(ca);
    }
    a->stop();  // its lease goes with it: the session may be taken over at once
    std::vector<std::unique_ptr<raw_connection>> racing;
    for (int id = 1; id <= 6; ++id) {
      racing.push_back(std::make_unique<raw_connection>(b.port(), guard_ms));
      racing.back()->send(mcp_post(call(id, "echo", R"({"text":"raced"})"), session_header(sid)));
    }
    for (auto& c : racing) {
      auto r = c->read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(result_text(sse_messages(r->body)) == "raced");
    }
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + sid, "epoch"}) == "1");
    // A change of state is written (the entry's epoch is the record's), not refused.
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(R"({"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}})",
                     session_header(sid)));
    REQUIRE(cb.read_response());
    for (int i = 0; i < 300 && redis_cli(redis, {"HGET", "droid:s:" + sid, "level"}) != "debug"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(redis_cli(redis, {"HGET", "droid:s:" + sid, "level"}) == "debug");
    CHECK(b.listener->sessions() == 1);
  }

  TEST_CASE("a relayed request whose owner's lease lapses is stopped with -32603, which its resume finds") {
    REQUIRE(droid::test::have_redis_server());
    forwarded_call fc(31, 10'000);  // `wait` 10 s on a (it never gets that far), its client on b
    const std::string event = first_event_id(fc.cb);
    // a's lease vanishes (a Redis that lost it, or a stall past it): at its next renewal a
    // finds it gone, stops what it relays (b may have told its client that a stopped) and
    // takes its sessions back.
    CHECK(redis_cli(fc.redis, {"DEL", "droid:i:" + fc.a_member}) == "1");
    // Which of the two notices first is a race, and both ends are right. Either a finds its
    // lease gone at its renewal: then b's client stream ends without the answer ("brk"),
    // for a resume. Or b finds a's lease gone first (its sweep; seen on a loaded machine):
    // then b answers on the stream itself, -32603, the request may be sent again, and
    // there is nothing to resume.
    const std::string tail = fc.cb.read_until("0\r\n\r\n");
    CHECK(tail.find("waited") == std::string::npos);
    std::string body;
    if (tail.find("may be sent again") != std::string::npos) {
      CHECK_MESSAGE(tail.find(R"("code":-32603)") != std::string::npos, tail);
      CHECK_MESSAGE(tail.find("stopped before it answered") != std::string::npos, tail);
    } else {
      // The resume finds the error the owner wrote, never silence and never "waited". (A
      // resumed stream may itself be cut before it, as any relayed stream may when the
      // asker's Redis connection is judged lost on a loaded machine: the client resumes
      // again, as the protocol has it. Three times at most.)
      for (int i = 0; i < 3 && body.find("may be sent again") == std::string::npos; ++i)
        body = resume(fc.b.port(), fc.sid, event, "may be sent again");
      CHECK_MESSAGE(body.find("lost its hold") != std::string::npos, body);
      CHECK(body.find("waited") == std::string::npos);
    }
    // a takes its lease again at its next renewal, which may come after b answered.
    for (int i = 0; i < 1000 && redis_cli(fc.redis, {"EXISTS", "droid:i:" + fc.a_member}) != "1"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(redis_cli(fc.redis, {"EXISTS", "droid:i:" + fc.a_member}) == "1");  // taken again
  }
}
