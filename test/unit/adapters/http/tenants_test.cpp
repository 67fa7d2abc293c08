// SPDX-License-Identifier: BSL-1.0
/// @file
/// One tenant cannot take the server from the others (docs/security.md, "Limits per
/// tenant"): a call whose client hung up keeps its request slot until it ends, the
/// per-address cap holds whatever principals share the address, sessions are capped per
/// tenant, connections are capped per address, and a session whose client left is reaped
/// after the idle timeout with its running calls cancelled. Each case sets small limits so that it runs in seconds.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "adapters/primary/transport/http/sessions/sessions.hpp"
#include "auth_fixture.hpp"

using namespace droid::test::auth;

namespace {

/// A listener with no authentication, serving on a thread of its own.
struct plain_listener {
  droid::server srv{droid::server_info{.name = "plain", .version = "1"}};
  droid::http::listener listener;
  std::thread runner;
  explicit plain_listener(droid::http::options opts) : listener(srv, opts) {
    runner = std::thread([this] { listener.run(); });
  }
  ~plain_listener() {
    listener.stop();
    runner.join();
  }
};

std::string in_session(const std::string& sid, std::string_view token) {
  return "Mcp-Session-Id: " + sid + "\r\n" + bearer(token);
}

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("tenants: a new session whose id is taken already is refused, and the session holding it is left alone") {
    // Two random 128-bit ids do not collide in practice; if they did, answering
    // "admitted" would give the new client the other client's session.
    asio::io_context io;
    droid::server_options quiet;
    quiet.log = [](std::string_view) {};
    droid::server srv({.name = "ids", .version = "1"}, quiet);
    droid::http::detail::session_table table;
    table.spread_over(1);
    using admission = droid::http::detail::session_table::admission;
    auto first = droid::http::detail::session_entry::create(srv, io.get_executor(), nullptr);
    first->tenant = "a";
    REQUIRE(table.insert(first, 10, 1) == admission::admitted);
    auto second = droid::http::detail::session_entry::create(srv, io.get_executor(), nullptr);
    second->id = first->id;
    second->tenant = "b";
    CHECK(table.insert(second, 10, 1) == admission::duplicate);
    CHECK(table.find(first->id) == first);
    CHECK(table.size() == 1);
    // The refused entry took no place in its tenant's share: b's next session is admitted.
    auto third = droid::http::detail::session_entry::create(srv, io.get_executor(), nullptr);
    third->tenant = "b";
    CHECK(table.insert(third, 10, 1) == admission::admitted);
    CHECK(table.size() == 2);
    for (auto& gone : table.take_all()) gone->s.reset();
  }

  TEST_CASE("tenants: a call whose client hung up holds its request slot until it ends") {
    droid::http::options opts;
    opts.max_requests_per_principal = 2;
    auth_fixture f(opts, {}, /*json=*/false);  // event streams: a hung-up call runs on, resumable
    raw_connection c0(f.port());
    const std::string sid = session_of(c0, "alice");
    {
      raw_connection c1(f.port()), c2(f.port());
      c1.send(mcp_post(call_body(1, "wait", R"({"ms":1500})"), in_session(sid, "alice")));
      c2.send(mcp_post(call_body(2, "wait", R"({"ms":1500})"), in_session(sid, "alice")));
      REQUIRE(f.waits_started.wait_for(2));
    }  // both clients hang up; their calls run on
    auto r = ask(f.port(), mcp_post(call_body(3, "whoami"), in_session(sid, "alice")));
    REQUIRE(r);
    CHECK(r->status == 429);
    CHECK(r->header("retry-after"));
    CHECK(r->body.find(R"("id":3)") != std::string::npos);
    CHECK(r->body.find("max_requests_per_principal") != std::string::npos);
    CHECK(f.waits_ended.value() == 0);
    // The calls end: their slots come back.
    REQUIRE(f.waits_ended.wait_for(2));
    bool served = false;
    for (int i = 0; i < 100 && !served; ++i) {
      r = ask(f.port(), mcp_post(call_body(4, "whoami"), in_session(sid, "alice")));
      served = r && r->status == 200;
      if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(served);
  }

  TEST_CASE("tenants: a legacy HTTP+SSE call answered 202 holds its request slot until it ends") {
    droid::http::options opts;
    opts.legacy_sse = true;
    opts.max_requests_per_principal = 2;  // the event stream's, and one call's
    auth_fixture f(opts);
    raw_connection stream(f.port());
    const std::string path = legacy_endpoint_of(stream, "alice");
    raw_connection post(f.port());
    const auto send = [&](const std::string& body) {
      post.send(mcp_post(body, bearer("alice"), path));
      auto r = post.read_response();
      REQUIRE(r);
      return r->status;
    };
    CHECK(send(initialize_body) == 202);
    (void)stream.read_until("protocolVersion");
    CHECK(send(call_body(1, "wait", R"({"ms":1000})")) == 202);
    REQUIRE(f.waits_started.wait_for(1));
    // The call runs on after its 202: its slot is still taken.
    CHECK(send(call_body(2, "whoami")) == 429);
    REQUIRE(f.waits_ended.wait_for(1));
    (void)stream.read_until("waited");
    bool served = false;
    for (int i = 0; i < 100 && !served; ++i) {
      served = send(call_body(3, "whoami")) == 202;
      if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(served);
  }

  TEST_CASE("tenants: with authentication on, principals sharing an address share its cap") {
    droid::http::options opts;
    opts.max_requests_per_principal = 64;
    opts.max_requests_per_address = 2;
    auth_fixture f(opts);
    raw_connection ca(f.port()), cb(f.port());
    const std::string alice = session_of(ca, "alice"), bob = session_of(cb, "bob");
    raw_connection c1(f.port()), c2(f.port());
    c1.send(mcp_post(call_body(1, "wait", R"({"ms":600})"), in_session(alice, "alice")));
    c2.send(mcp_post(call_body(1, "wait", R"({"ms":600})"), in_session(bob, "bob")));
    REQUIRE(f.waits_started.wait_for(2));
    auto r = ask(f.port(), mcp_post(call_body(2, "whoami"), in_session(bob, "bob")));
    REQUIRE(r);
    CHECK(r->status == 429);
    CHECK(r->body.find("max_requests_per_address") != std::string::npos);
    for (raw_connection* c : {&c1, &c2}) {
      r = c->read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
    }
  }

  TEST_CASE("tenants: one address's connections are capped, with authentication on or off; another address's go on") {
    for (const bool auth : {true, false}) {
      CAPTURE(auth);
      droid::http::options opts;
      opts.max_connections_per_address = 3;
      std::unique_ptr<auth_fixture> with_auth;
      std::unique_ptr<plain_listener> without;
      std::uint16_t port = 0;
      if (auth) {
        with_auth = std::make_unique<auth_fixture>(opts);
        port = with_auth->port();
      } else {
        without = std::make_unique<plain_listener>(opts);
        port = without->listener.port();
      }
      const std::string probe = "GET /no-such-path HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
      // Three connections of 127.0.0.2 are served (each answers, so each was accepted).
      std::vector<std::unique_ptr<raw_connection>> held;
      for (int i = 0; i < 3; ++i) {
        held.push_back(std::make_unique<raw_connection>(port, 5000, "127.0.0.2"));
        held.back()->send(probe);
        auto r = held.back()->read_response();
        REQUIRE(r);
        CHECK(r->status == 404);
      }
      // Its fourth is closed before a byte is read.
      {
        raw_connection over(port, 5000, "127.0.0.2");
        CHECK(over.closed_by_peer());
      }
      // Another address is not affected.
      {
        raw_connection other(port, 5000, "127.0.0.3");
        other.send(probe);
        auto r = other.read_response();
        REQUIRE(r);
        CHECK(r->status == 404);
      }
      // A connection given back frees its place.
      held.pop_back();
      bool served = false;
      for (int i = 0; i < 100 && !served; ++i) {
        raw_connection again(port, 5000, "127.0.0.2");
        try {
          again.send(probe);
        } catch (const std::runtime_error&) {
        }
        auto r = again.read_response();
        served = r && r->status == 404;
        if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      CHECK(served);
    }
  }

  TEST_CASE("tenants: behind a trusted proxy each forwarded client is its own tenant; elsewhere the header is ignored") {
    droid::http::options opts;
    opts.max_sessions_per_tenant = 1;
    opts.trusted_proxies = {"127.0.0.2"};
    plain_listener p(opts);
    const auto initialize_from = [&](const char* peer, const std::string& forwarded_for) {
      raw_connection c(p.listener.port(), 5000, peer);
      c.send(mcp_post(initialize_body, forwarded_for.empty() ? std::string() : "X-Forwarded-For: " + forwarded_for + "\r\n"));
      auto r = c.read_response();
      REQUIRE(r);
      return r->status;
    };
    // Through the proxy (127.0.0.2): each client its own share of one session.
    CHECK(initialize_from("127.0.0.2", "198.51.100.1") == 200);
    CHECK(initialize_from("127.0.0.2", "198.51.100.2") == 200);
    CHECK(initialize_from("127.0.0.2", "198.51.100.1") == 429);
    // A client naming someone else before the proxy's entry is still itself.
    CHECK(initialize_from("127.0.0.2", "198.51.100.3, 198.51.100.1") == 429);
    // Straight from a peer that is no proxy: its header counts for nothing.
    CHECK(initialize_from("127.0.0.3", "198.51.100.4") == 200);
    CHECK(initialize_from("127.0.0.3", "198.51.100.5") == 429);
    CHECK(p.listener.sessions() == 3);
    // A listener refuses to start with a proxy that is no address or network.
    droid::http::options bad;
    bad.trusted_proxies = {"proxy.example"};
    droid::server srv{droid::server_info{.name = "bad", .version = "1"}};
    CHECK_THROWS_AS(droid::http::listener(srv, bad), std::invalid_argument);
  }

  TEST_CASE("tenants: a request without a valid token is answered 401 from its head, its body never read") {
    auth_fixture f;
    const std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Accept: application/json, text/event-stream\r\nContent-Length: 4000000\r\n";
    for (const std::string& credentials : {std::string(), bearer("forged")}) {
      CAPTURE(credentials);
      raw_connection c(f.port());
      // The head and 10 bytes of a 4 MB body: the answer comes now, not when the body
      // is complete or its deadline passes, and the connection ends (the rest unread).
      c.send(head + credentials + "\r\n{\"jsonrpc\"");
      const auto start = std::chrono::steady_clock::now();
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 401);
      CHECK(r->header("www-authenticate"));
      REQUIRE(r->header("connection"));
      CHECK(*r->header("connection") == "close");
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
      CHECK(c.hung_up(5'000));
    }
    {
      // Expect: 100-continue with no token: 401 instead of 100, no body sent at all.
      raw_connection c(f.port());
      c.send(head + "Expect: 100-continue\r\n\r\n");
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 401);
    }
    {
      // A valid token: the body is read to its end and served.
      const std::string body = call_body(1, "whoami");
      raw_connection c(f.port());
      const std::string sid = session_of(c, "alice");
      const std::string request = mcp_post(body, in_session(sid, "alice"));
      const std::size_t cut = request.size() - body.size() + 5;
      c.send(std::string_view(request).substr(0, cut));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      c.send(std::string_view(request).substr(cut));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(r->body.find("alice") != std::string::npos);
    }
  }

  TEST_CASE("tenants: one tenant's sessions are capped (429 naming the limit); another's go on") {
    droid::http::options opts;
    opts.max_sessions_per_tenant = 2;
    auth_fixture f(opts);
    raw_connection a1(f.port()), a2(f.port()), a3(f.port()), b1(f.port());
    const std::string first = session_of(a1, "alice");
    (void)session_of(a2, "alice");
    a3.send(mcp_post(initialize_body, bearer("alice")));
    auto r = a3.read_response();
    REQUIRE(r);
    CHECK(r->status == 429);
    CHECK(r->header("retry-after"));
    CHECK(r->body.find(R"("id":0)") != std::string::npos);
    CHECK(r->body.find("max_sessions_per_tenant") != std::string::npos);
    (void)session_of(b1, "bob");  // Bob's share is his own
    // Ending one of Alice's gives its place back.
    a1.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + in_session(first, "alice") + "\r\n");
    r = a1.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    raw_connection a4(f.port());
    (void)session_of(a4, "alice");
  }

  TEST_CASE("tenants: a request's slot is free once its answer is read, whichever shard serves the next") {
    // One request at a time per principal. A client that sends its next request as soon
    // as it has read an answer, on a new connection (another shard half the time), must
    // never be told it has too many in progress: the slot is given back when the request
    // ends, before its answer is written, not when the handler that wrote it returns.
    for (const bool json : {false, true}) {
      CAPTURE(json);
      droid::http::options opts;
      opts.max_requests_per_principal = 1;
      auth_fixture f(opts, {}, json);
      raw_connection c0(f.port());
      const std::string sid = session_of(c0, "alice");
      int refused = 0;
      for (int i = 0; i < 200; ++i) {
        raw_connection c(f.port());
        c.send(mcp_post(call_body(i + 1, "whoami"), in_session(sid, "alice")));
        auto r = c.read_response();
        REQUIRE(r);
        if (r->status == 429) ++refused;
      }
      CHECK(refused == 0);
    }
  }

  TEST_CASE("tenants: a session whose client left is reaped after the idle timeout, its calls cancelled") {
    droid::http::options opts;
    opts.max_requests_per_principal = 1;
    opts.session_idle_timeout = std::chrono::milliseconds(300);
    auth_fixture f(opts, {}, /*json=*/false);
    raw_connection c0(f.port());
    const std::string sid = session_of(c0, "alice");
    {
      raw_connection c1(f.port());
      c1.send(mcp_post(call_body(1, "wait", R"({"ms":60000})"), in_session(sid, "alice")));
      REQUIRE(f.waits_started.wait_for(1));
    }  // hung up, never resumed
    auto r = ask(f.port(), mcp_post(call_body(2, "whoami"), in_session(sid, "alice")));
    REQUIRE(r);
    CHECK(r->status == 429);  // the call runs on, and holds the slot
    // Within the idle timeout and a reaper's round: the session ends, the call with it.
    REQUIRE(f.waits_ended.wait_for(1, std::chrono::seconds(5)));
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      r = ask(f.port(), mcp_post(call_body(3, "whoami"), in_session(sid, "alice")));
      gone = r && r->status == 404;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(gone);
    // The slot is Alice's again. (Asked again on 429: the previous answer reaches the
    // client a moment before its handler lets its own slot go.)
    bool opened = false;
    for (int i = 0; i < 100 && !opened; ++i) {
      r = ask(f.port(), mcp_post(initialize_body, bearer("alice")));
      opened = r && r->status == 200;
      if (!opened) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(opened);
  }

  TEST_CASE("tenants: one tenant's tasks are capped (429 naming the limit, Retry-After); another's go on") {
    droid::server_options so;
    so.tasks.max_tasks_per_tenant = 1;
    auth_fixture f({}, so);
    const std::string task_caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";
    const auto create = [&](int id, std::string_view token) {
      auto r = ask(f.port(), modern_request(id, "tools/call", "confirm", R"("name":"confirm","arguments":{})", task_caps,
                                            token));
      REQUIRE(r);
      return *r;
    };
    const auto first = create(1, "alice");
    CHECK(first.status == 200);
    CHECK(boost::json::parse(first.body).at("result").at("resultType") == "task");
    // Alice's task counts for its lifetime (finished or not): her next one is refused,
    // with the status and Retry-After every other limit of hers answers with.
    const auto second = create(2, "alice");
    CHECK(second.status == 429);
    REQUIRE(second.header("retry-after"));
    CHECK(*second.header("retry-after") == "1");
    const auto refused = boost::json::parse(second.body);
    REQUIRE(refused.as_object().contains("error"));
    CHECK(refused.at("id") == 2);
    CHECK(refused.at("error").at("code") == -32600);
    CHECK(std::string(refused.at("error").at("message").as_string()).find("max_tasks_per_tenant") != std::string::npos);
    CHECK(boost::json::parse(create(3, "bob").body).at("result").at("resultType") == "task");
  }

  TEST_CASE("tenants: a 2025 session's task over the cap is a 429 even on an event-stream server; a full server a 503") {
    droid::server_options so;
    so.tasks.max_tasks_per_tenant = 1;
    so.tasks.max_tasks = 2;
    auth_fixture f({}, so, false);  // answers as event streams: the refusal must not hide in one
    const std::string init =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}},"clientInfo":{"name":"t","version":"1"}}})";
    const auto open = [&](std::string_view token) {
      auto r = ask(f.port(), mcp_post(init, bearer(token)));
      REQUIRE(r);
      REQUIRE(r->status == 200);
      REQUIRE(r->header("mcp-session-id"));
      const std::string sid = *r->header("mcp-session-id");
      auto done = ask(f.port(), mcp_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                         in_session(sid, token)));
      REQUIRE(done);
      return sid;
    };
    const auto create = [&](int id, const std::string& sid, std::string_view token) {
      auto r = ask(f.port(),
                   mcp_post(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                                R"(,"method":"tools/call","params":{"name":"confirm","arguments":{},"task":{}}})",
                            in_session(sid, token)));
      REQUIRE(r);
      return *r;
    };
    const std::string alice = open("alice");
    const auto first = create(1, alice, "alice");
    CHECK(first.status == 200);
    CHECK(first.body.find(R"("taskId")") != std::string::npos);
    const auto second = create(2, alice, "alice");
    CHECK(second.status == 429);
    CHECK(second.header("retry-after"));
    REQUIRE(second.header("content-type"));
    CHECK(*second.header("content-type") == "application/json");  // one document, not a stream
    const auto refused = boost::json::parse(second.body);
    CHECK(refused.at("id") == 2);
    CHECK(std::string(refused.at("error").at("message").as_string()).find("max_tasks_per_tenant") != std::string::npos);
    // Bob takes the server's last place; then the server is full for everyone, and its
    // own bound is what is named: 503 (Bob is within his share).
    const std::string bob = open("bob");
    CHECK(create(3, bob, "bob").status == 200);
    const auto full = create(4, bob, "bob");
    CHECK(full.status == 503);
    CHECK(full.header("retry-after"));
    CHECK(full.body.find("max_tasks)") != std::string::npos);
  }
}
