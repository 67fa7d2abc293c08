// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::options::follow_sessions` over a real two-shard listener: a keep-alive
/// connection that keeps asking for a session of the other shard moves there (its
/// requests stop paying two thread hand-offs each), and goes on serving, timing out and
/// closing there; it stays put below three requests in a row, or with the option off,
/// and needs longer runs once it has moved back and forth.
///
/// New sessions are spread over the shards even when the connections that open them are
/// not (a client without keep-alive), and their connections follow them; the
/// connections of one session shared by many stay spread over both shards.
///
/// Which shard a connection is on is read from an application route, which the listener
/// serves on the connection's own shard: `/where` answers the serving thread's id.
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/server.hpp>

#include "http_client.hpp"

namespace {

using droid::test::mcp_post;
using droid::test::raw_connection;

std::string this_thread_name() {
  std::ostringstream out;
  out << std::this_thread::get_id();
  return out.str();
}

/// A two-shard listener answering in JSON, with `/where`, on its own thread.
struct fixture {
  droid::server srv{droid::server_info{.name = "follow-test", .version = "1"}, [] {
                      droid::server_options so;
                      so.log = [](std::string_view) {};
                      return so;
                    }()};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  explicit fixture(bool follow, std::chrono::milliseconds idle = std::chrono::milliseconds(60'000),
                   droid::http::streaming reply = droid::http::streaming::json) {
    srv.tool("greet", "Says hi", [](droid::tool_context&) -> droid::task<std::string> { co_return "hi"; });
    droid::http::options opts;
    opts.threads = 2;
    opts.reply = reply;
    opts.follow_sessions = follow;
    opts.idle_timeout = idle;
    opts.routes.push_back(droid::http::route{"/where", [](const droid::http::listener&, std::string_view) {
                                               return droid::http::route_response{200, "text/plain", this_thread_name()};
                                             }});
    listener = std::make_unique<droid::http::listener>(srv, opts);
    runner = std::thread([this] { listener->run(); });
  }
  ~fixture() {
    listener->stop();
    runner.join();
  }
};

std::string where(raw_connection& c) {
  c.send("GET /where HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

std::string initialize(raw_connection& c) {
  c.send(mcp_post(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const std::string sid = *r->header("mcp-session-id");
  c.send(mcp_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "Mcp-Session-Id: " + sid + "\r\n"));
  auto n = c.read_response();
  REQUIRE(n);
  REQUIRE(n->status == 202);
  return sid;
}

void call(raw_connection& c, const std::string& sid, int id) {
  c.send(mcp_post(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                      R"(,"method":"tools/call","params":{"name":"greet","arguments":{}}})",
                  "Mcp-Session-Id: " + sid + "\r\n"));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(r->body.find(R"("text":"hi")") != std::string::npos);
}

/// A session made on one connection, and a second connection on the other shard.
struct two_shards {
  raw_connection owner;
  std::string sid;
  std::string session_thread;
  std::vector<std::unique_ptr<raw_connection>> tried;  // kept open: closing one moves nothing
  raw_connection* other = nullptr;

  explicit two_shards(const fixture& f) : owner(f.listener->port()) {
    sid = initialize(owner);
    session_thread = where(owner);  // a session lives on the shard of the connection that made it
    // Connections are dealt out to the shards in turn (or, with accept_on_every_shard,
    // spread by a hash of their addresses): a few tries find one on the other.
    for (int i = 0; i < 64 && !other; ++i) {
      tried.push_back(std::make_unique<raw_connection>(f.listener->port()));
      if (where(*tried.back()) != session_thread) other = tried.back().get();
    }
    REQUIRE(other != nullptr);
  }
};

/// Sixteen more connections, each calling `s`'s session six times, one after the other
/// in rounds (so every one has asked before any could move); how many ended on each
/// shard, by thread.
std::map<std::string, int> sixteen_on_one_session(const fixture& f, const two_shards& s) {
  std::vector<std::unique_ptr<raw_connection>> clients;
  for (int i = 0; i < 16; ++i) clients.push_back(std::make_unique<raw_connection>(f.listener->port()));
  int id = 1;
  for (int round = 0; round < 6; ++round) {
    for (auto& c : clients) call(*c, s.sid, id++);
  }
  std::map<std::string, int> per_shard;
  for (auto& c : clients) ++per_shard[where(*c)];
  return per_shard;
}

}  // namespace

TEST_SUITE("adapters/http follow_sessions") {
  TEST_CASE("a connection that keeps asking for another shard's session moves there and goes on serving") {
    fixture f(true);
    two_shards s(f);
    const std::string start = where(*s.other);
    // Two requests in a row are not enough: a proxy's pooled connection would move on
    // every pair of requests for one session.
    call(*s.other, s.sid, 1);
    call(*s.other, s.sid, 2);
    CHECK(where(*s.other) == start);
    // The route in between was no session's request: the streak goes on from two.
    call(*s.other, s.sid, 3);
    CHECK(where(*s.other) == s.session_thread);
    for (int id = 4; id < 40; ++id) call(*s.other, s.sid, id);
    CHECK(where(*s.other) == s.session_thread);
    // The connection that made the session never moved.
    CHECK(where(s.owner) == s.session_thread);
  }

  TEST_CASE("a connection whose requests alternate between a session of its own shard and one of the other stays") {
    // What a proxy's pooled connection carries: each request served where the connection
    // is (a JSON answer on its own shard, json_answer) breaks the streak of the other's.
    fixture f(true);
    two_shards s(f);
    const std::string start = where(*s.other);
    const std::string own = initialize(*s.other);  // made here: a session of this shard
    for (int id = 1; id < 20; id += 2) {
      call(*s.other, s.sid, id);
      call(*s.other, own, id + 1);
    }
    CHECK(where(*s.other) == start);
  }

  TEST_CASE("a connection that moved a moment ago needs a longer run of requests to move again") {
    // What a proxy's pooled connection looks like to the server: sessions of both shards
    // in no order. Each quick move back doubles the run that the next move needs.
    fixture f(true);
    two_shards s(f);
    const std::string start = where(*s.other);
    const std::string own = initialize(*s.other);  // a session of the connection's first shard
    for (int id = 1; id <= 3; ++id) call(*s.other, s.sid, id);
    REQUIRE(where(*s.other) == s.session_thread);  // the first move takes three
    for (int id = 4; id <= 6; ++id) call(*s.other, own, id);
    REQUIRE(where(*s.other) == start);  // three requests after a move: this one takes three too...
    for (int id = 7; id <= 9; ++id) call(*s.other, s.sid, id);
    CHECK(where(*s.other) == start);  // ...and the next needs six
    for (int id = 10; id <= 12; ++id) call(*s.other, s.sid, id);
    CHECK(where(*s.other) == s.session_thread);
  }

  TEST_CASE("sessions opened by a client without keep-alive are spread over the shards") {
    // Each HTTP request on a connection of its own: `initialize` on one, the
    // `initialized` notification on the next. Connections are dealt to the shards in
    // turn, so every `initialize` arrives on the same shard; before sessions were placed
    // by load, all eight lived there and the other shard idled.
    fixture f(true);
    std::vector<std::string> sids;
    for (int i = 0; i < 8; ++i) {
      std::string sid;
      {
        raw_connection opening(f.listener->port());
        opening.send(mcp_post(
            R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
            "Connection: close\r\n"));
        auto r = opening.read_response();
        REQUIRE(r);
        REQUIRE(r->status == 200);
        sid = *r->header("mcp-session-id");
      }
      {
        raw_connection telling(f.listener->port());
        telling.send(mcp_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                              "Mcp-Session-Id: " + sid + "\r\nConnection: close\r\n"));
        auto n = telling.read_response();
        REQUIRE(n);
        REQUIRE(n->status == 202);
      }
      sids.push_back(sid);
    }
    // A keep-alive connection per session: three calls and it lives where its session does.
    std::map<std::string, int> per_shard;
    std::vector<std::unique_ptr<raw_connection>> clients;
    for (const std::string& sid : sids) {
      clients.push_back(std::make_unique<raw_connection>(f.listener->port()));
      for (int id = 1; id <= 4; ++id) call(*clients.back(), sid, id);
      ++per_shard[where(*clients.back())];
    }
    REQUIRE(per_shard.size() == 2);
    for (const auto& shard : per_shard) {
      const std::string& thread = shard.first;
      CAPTURE(thread);
      CHECK(shard.second >= 3);  // 5 and 3: a shard takes a session while it holds at most one more
    }
  }

  TEST_CASE("connections sharing one session stay on both shards rather than all following it to one") {
    // One session used by many pooled connections (the bench's shared-session rows).
    // Following it would put every connection on the session's shard and leave the
    // other thread idle; the follow rule sees that shard carrying clearly more work
    // (the connections living there, and those whose session lives there) and keeps
    // the others where they are, handing their requests off.
    fixture f(true);
    two_shards s(f);
    std::map<std::string, int> per_shard = sixteen_on_one_session(f, s);
    // Sixteen connections in a row are dealt eight to each shard; the rule keeps all
    // eight of the other shard's (with every connection following, none would be left).
    CHECK(per_shard.size() == 2);
    CHECK(per_shard[s.session_thread] == 8);
  }

  TEST_CASE("answered as event streams, connections sharing one session stay on both shards as well") {
    // A stream's calls from the session's shard (its priming event, answer, end and
    // verdict) reach the connection in one post, so handing it off is as cheap as a JSON
    // answer's and the rule applies alike (docs/benchmarks.md). Each of the 96 answers,
    // half of them handed across, is checked (`call`).
    fixture f(true, std::chrono::milliseconds(60'000), droid::http::streaming::event_stream);
    two_shards s(f);
    std::map<std::string, int> per_shard = sixteen_on_one_session(f, s);
    CHECK(per_shard.size() == 2);
    CHECK(per_shard[s.session_thread] == 8);
  }

  TEST_CASE("with follow_sessions off the connection stays where it was accepted") {
    fixture f(false);
    two_shards s(f);
    const std::string start = where(*s.other);
    for (int id = 1; id < 10; ++id) call(*s.other, s.sid, id);
    CHECK(where(*s.other) == start);
  }

  TEST_CASE("a moved connection is still closed by its idle deadline") {
    fixture f(true, std::chrono::milliseconds(300));
    two_shards s(f);
    for (int id = 1; id <= 3; ++id) call(*s.other, s.sid, id);
    CHECK(where(*s.other) == s.session_thread);
    // The new shard's sweep now owns its deadline.
    CHECK(s.other->hung_up(5'000));
  }

  TEST_CASE("a moved connection is closed by a stop") {
    fixture f(true);
    two_shards s(f);
    for (int id = 1; id <= 3; ++id) call(*s.other, s.sid, id);
    REQUIRE(where(*s.other) == s.session_thread);
    f.listener->stop();
    CHECK(s.other->hung_up(5'000));
  }
}
