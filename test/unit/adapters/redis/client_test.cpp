// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Redis client against a real redis-server: replies of every kind, a deep pipeline,
/// and the failures a deployment meets (Redis absent, killed mid-command, frozen, back
/// again, refusing the password), each ending in a clear error and never a hang.
#include "adapters/secondary/redis/client.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <asio/io_context.hpp>
#include <doctest/doctest.h>

#include <droid/application/spawn.hpp>
#include <droid/application/task.hpp>

#include "redis_server.hpp"
#include "support.hpp"

namespace {

using droid::redis::client;
using droid::redis::reply;
namespace redis = droid::redis;

droid::redis::client_options options_for(const std::string& url) {
  std::string error;
  auto where = redis::parse_url(url, error);
  REQUIRE_MESSAGE(where.has_value(), error);
  droid::redis::client_options o;
  o.where = *where;
  o.command_timeout = std::chrono::milliseconds(200);
  o.connect_timeout = std::chrono::milliseconds(500);
  o.retry_min = std::chrono::milliseconds(5);
  o.retry_max = std::chrono::milliseconds(20);
  return o;
}

/// Steps the loop until `c` is connected (the reconnection loop's own timers drive it).
void until_connected(asio::io_context& io, client& c) {
  io.restart();
  while (!c.connected() && io.run_one() > 0) {
  }
  REQUIRE(c.connected());
}

droid::task<droid::result<reply>> one(std::shared_ptr<client> c, std::vector<std::string> args) {
  co_return co_await c->command(args);
}

}  // namespace

TEST_SUITE("adapters/redis") {
  TEST_CASE("URLs: TCP, credentials, database, Unix sockets, and what is refused") {
    std::string error;
    auto e = redis::parse_url("redis://127.0.0.1:6380/2", error);
    REQUIRE(e);
    CHECK(e->host == "127.0.0.1");
    CHECK(e->port == "6380");
    CHECK(e->db == 2);
    e = redis::parse_url("redis://app:s3cret@cache.internal", error);
    REQUIRE(e);
    CHECK(e->username == "app");
    CHECK(e->password == "s3cret");
    CHECK(e->port == "6379");
    CHECK(e->display() == "redis://app:***@cache.internal:6379");  // never the password
    e = redis::parse_url("redis://[::1]:7000", error);
    REQUIRE(e);
    CHECK(e->host == "::1");
    e = redis::parse_url("unix:///run/redis.sock?db=3", error);
    REQUIRE(e);
    CHECK(e->unix_path == "/run/redis.sock");
    CHECK(e->db == 3);
    for (const char* bad : {"http://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h:1/16",
                            "redis://h:1/x", "unix://relative", "rediss://h:1", "redis://[::1"}) {
      CAPTURE(bad);
      error.clear();
      CHECK_FALSE(redis::parse_url(bad, error));
      CHECK_FALSE(error.empty());
    }
  }

  TEST_CASE("every kind of reply, binary-safe values and a megabyte") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for(server.url()));
    auto r = droid::test::run(io, one(c, {"SET", "k", std::string("a\r\nb\0c", 6)}));
    REQUIRE(r.has_value());
    CHECK(r->type == reply::kind::status);
    CHECK(r->str == "OK");
    r = droid::test::run(io, one(c, {"GET", "k"}));
    REQUIRE(r.has_value());
    CHECK(r->type == reply::kind::string);
    CHECK(r->str == std::string("a\r\nb\0c", 6));
    r = droid::test::run(io, one(c, {"GET", "missing"}));
    REQUIRE(r.has_value());
    CHECK(r->is_nil());
    r = droid::test::run(io, one(c, {"INCRBY", "n", "41"}));
    REQUIRE(r.has_value());
    CHECK(r->integer == 41);
    (void)droid::test::run(io, one(c, {"RPUSH", "l", "x", "y"}));
    r = droid::test::run(io, one(c, {"LRANGE", "l", "0", "-1"}));
    REQUIRE(r.has_value());
    REQUIRE(r->type == reply::kind::array);
    REQUIRE(r->elements.size() == 2);
    CHECK(r->elements[1].str == "y");
    // An error reply is a reply: the command reached Redis, which said no.
    r = droid::test::run(io, one(c, {"INCR", "l"}));
    REQUIRE(r.has_value());
    CHECK(r->is_error());
    CHECK(r->str.find("WRONGTYPE") == 0);
    const std::string big(1 << 20, 'z');
    (void)droid::test::run(io, one(c, {"SET", "big", big}));
    r = droid::test::run(io, one(c, {"GET", "big"}));
    REQUIRE(r.has_value());
    CHECK(r->str == big);
    c->close();
  }

  TEST_CASE("a deep pipeline: ten thousand commands in flight, each reply to its own waiter") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    // What is tested is order and matching, not speed: the fixture's 200 ms command
    // timeout expired every one of the ten thousand under ThreadSanitizer on a busy
    // machine (0 of 10,000 answered, in a newcomer's first test run), so these wait as
    // long as the replies take.
    droid::redis::client_options o = options_for(server.url());
    o.command_timeout = std::chrono::seconds(60);
    o.connect_timeout = std::chrono::seconds(10);
    auto c = client::create(io.get_executor(), o);
    constexpr int n = 10000;
    int ok = 0, in_order = 0, done = 0;
    for (int i = 0; i < n; ++i) {
      droid::spawn(io.get_executor(), one(c, {"INCR", "counter"}),
                   [&, i](std::exception_ptr, droid::result<reply> r) {
                     if (r && r->integer == i + 1) ++in_order;
                     if (r) ++ok;
                     ++done;
                   });
    }
    // Issued before the connection is up: they wait for it, then go out together.
    io.restart();
    while (done < n && io.run_one() > 0) {
    }
    CHECK(ok == n);
    CHECK(in_order == n);
    CHECK(c->in_flight() == 0);
    c->close();
  }

  TEST_CASE("writes behind: sent without a waiter, in order with what follows") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for(server.url()));
    for (int i = 0; i < 100; ++i) CHECK(c->send({"RPUSH", "log", std::to_string(i)}));
    CHECK(c->send({"INCR", "log"}));  // an error reply, counted
    auto r = droid::test::run(io, one(c, {"LLEN", "log"}));
    REQUIRE(r.has_value());
    CHECK(r->integer == 100);
    CHECK(c->failed_writes() == 1);
    c->close();
  }

  TEST_CASE("Redis absent: a command fails at once, saying why, and the client comes up with Redis") {
    REQUIRE(droid::test::have_redis_server());
    const unsigned short port = droid::test::free_port();
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for("redis://127.0.0.1:" + std::to_string(port)));
    auto r = droid::test::run(io, one(c, {"PING"}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == redis::errc::unavailable);
    CHECK(c->last_failure().find("cannot connect to redis://127.0.0.1:" + std::to_string(port)) == 0);
    CHECK(c->last_failure().find("refused") != std::string::npos);
    // Down: refused without touching the network, not queued behind a reconnection.
    r = droid::test::run(io, one(c, {"PING"}));
    CHECK(r.error() == redis::errc::unavailable);
    CHECK_FALSE(c->send({"SET", "a", "b"}));
    droid::test::redis_server server({}, port);
    until_connected(io, *c);
    r = droid::test::run(io, one(c, {"PING"}));
    REQUIRE(r.has_value());
    CHECK(r->str == "PONG");
    c->close();
  }

  TEST_CASE("Redis killed with commands in flight: they fail, and service resumes when it is back") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for(server.url()));
    until_connected(io, *c);
    // Frozen first, so that the commands are surely in flight when it dies.
    server.freeze();
    std::vector<droid::result<reply>> outcomes;
    for (int i = 0; i < 3; ++i)
      droid::spawn(io.get_executor(), one(c, {"INCR", "x"}),
                   [&](std::exception_ptr, droid::result<reply> r) { outcomes.push_back(std::move(r)); });
    droid::test::poll(io);
    CHECK(c->in_flight() == 3);
    server.stop();
    io.restart();
    while (outcomes.size() < 3 && io.run_one() > 0) {
    }
    REQUIRE(outcomes.size() == 3);
    for (const auto& o : outcomes) CHECK(o.error() == redis::errc::unavailable);
    CHECK_FALSE(c->connected());
    server.start();
    until_connected(io, *c);
    auto r = droid::test::run(io, one(c, {"INCR", "x"}));
    REQUIRE(r.has_value());
    CHECK(r->integer == 1);  // a new server: nothing of the lost commands was applied
    c->close();
  }

  TEST_CASE("Redis frozen: commands time out, later ones fail at once, and it recovers when thawed") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto opts = options_for(server.url());
    opts.max_pending = 4;
    auto c = client::create(io.get_executor(), opts);
    until_connected(io, *c);
    server.freeze();
    std::vector<droid::result<reply>> outcomes;
    for (int i = 0; i < 5; ++i)
      droid::spawn(io.get_executor(), one(c, {"PING"}),
                   [&](std::exception_ptr, droid::result<reply> r) { outcomes.push_back(std::move(r)); });
    // The fifth is over the bound: refused at once, never queued.
    droid::test::poll(io);
    REQUIRE(outcomes.size() == 1);
    CHECK(outcomes[0].error() == redis::errc::overloaded);
    io.restart();
    while (outcomes.size() < 5 && io.run_one() > 0) {
    }
    REQUIRE(outcomes.size() == 5);
    for (std::size_t i = 1; i < 5; ++i) CHECK(outcomes[i].error() == redis::errc::timeout);
    CHECK(c->last_failure().find("did not answer within 200 ms") != std::string::npos);
    // While frozen, the reconnection is refused its PING and the client stays down: a
    // command fails at once instead of waiting out another timeout.
    auto r = droid::test::run(io, one(c, {"PING"}));
    CHECK(r.error() == redis::errc::unavailable);
    server.thaw();
    until_connected(io, *c);
    r = droid::test::run(io, one(c, {"PING"}));
    REQUIRE(r.has_value());
    c->close();
  }

  TEST_CASE("AUTH and SELECT come first on every connection; a wrong password is a clear failure") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server({"--requirepass", "s3cret"});
    asio::io_context io;
    auto wrong = client::create(io.get_executor(),
                                options_for("redis://:nope@127.0.0.1:" + std::to_string(server.port())));
    auto r = droid::test::run(io, one(wrong, {"PING"}));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == redis::errc::unavailable);
    CHECK(wrong->last_failure().find("Redis refused the connection's setup") == 0);
    wrong->close();
    auto db2 = client::create(io.get_executor(),
                              options_for("redis://:s3cret@127.0.0.1:" + std::to_string(server.port()) + "/2"));
    auto db0 = client::create(io.get_executor(),
                              options_for("redis://:s3cret@127.0.0.1:" + std::to_string(server.port())));
    REQUIRE(droid::test::run(io, one(db2, {"SET", "where", "two"})).has_value());
    r = droid::test::run(io, one(db0, {"GET", "where"}));
    REQUIRE(r.has_value());
    CHECK(r->is_nil());
    r = droid::test::run(io, one(db2, {"GET", "where"}));
    REQUIRE(r.has_value());
    CHECK(r->str == "two");
    db2->close();
    db0->close();
  }

  TEST_CASE("after_sent: a callback waits until the socket has taken what was queued before it") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    // What is tested is the order of callbacks, not the timeout: 2 s, because queuing a
    // 32 MiB command under ThreadSanitizer on a loaded machine took longer than 200 ms
    // once (CI), and the frozen Redis then failed the connection before the next send.
    droid::redis::client_options o = options_for(server.url());
    o.command_timeout = std::chrono::seconds(2);
    auto c = client::create(io.get_executor(), o);
    until_connected(io, *c);
    std::vector<int> ran;
    // Nothing queued: at once.
    c->after_sent([&] { ran.push_back(0); });
    CHECK(ran == std::vector<int>{0});
    // Queued: not before the write that carries it, which waits for the end of the turn.
    CHECK(c->send({"SET", "a", "1"}));
    c->after_sent([&] { ran.push_back(1); });
    CHECK(ran.size() == 1);
    droid::test::poll(io);
    CHECK(ran == std::vector<int>{0, 1});
    // A frozen Redis stops reading: a value larger than the socket buffers of both ends
    // keeps its write in progress, and a command queued behind it waits for the next.
    server.freeze();
    CHECK(c->send({"SET", "big", std::string(32 << 20, 'x')}));
    c->after_sent([&] { ran.push_back(2); });
    droid::test::poll(io);
    CHECK(c->send({"SET", "b", "2"}));
    c->after_sent([&] { ran.push_back(3); });
    for (int i = 0; i < 5; ++i) {
      droid::test::poll(io);
      ::usleep(10'000);  // well inside the command timeout
    }
    CHECK(ran.size() == 2);
    server.thaw();
    io.restart();
    while (ran.size() < 4 && io.run_one() > 0) {
    }
    CHECK(ran == std::vector<int>{0, 1, 2, 3});
    auto r = droid::test::run(io, one(c, {"GET", "b"}));
    REQUIRE(r.has_value());
    CHECK(r->str == "2");
    c->close();
  }

  TEST_CASE("after_sent: a callback whose command will never be written runs when the connection fails") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for(server.url()));
    until_connected(io, *c);
    server.freeze();
    CHECK(c->send({"SET", "big", std::string(32 << 20, 'x')}));
    bool ran = false;
    c->after_sent([&] { ran = true; });
    droid::test::poll(io);
    CHECK_FALSE(ran);
    // The frozen server outlasts the command timeout: the connection is failed, and the
    // callback is not left waiting for a write that will not happen.
    io.restart();
    while (!ran && io.run_one() > 0) {
    }
    CHECK(ran);
    CHECK_FALSE(c->connected());
    server.thaw();
    c->close();
  }

  TEST_CASE("close: what is in flight fails with closed, and so does every later command") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto c = client::create(io.get_executor(), options_for(server.url()));
    until_connected(io, *c);
    server.freeze();
    std::vector<droid::result<reply>> outcomes;
    droid::spawn(io.get_executor(), one(c, {"PING"}),
                 [&](std::exception_ptr, droid::result<reply> r) { outcomes.push_back(std::move(r)); });
    droid::test::poll(io);
    c->close();
    droid::test::poll(io);
    REQUIRE(outcomes.size() == 1);
    CHECK(outcomes[0].error() == redis::errc::closed);
    auto r = droid::test::run(io, one(c, {"PING"}));
    CHECK(r.error() == redis::errc::closed);
    server.thaw();
  }

  TEST_CASE("a subscriber gets what is published, and subscribes again after Redis comes back") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server server;
    asio::io_context io;
    auto sub = client::create(io.get_executor(), options_for(server.url()));
    auto pub = client::create(io.get_executor(), options_for(server.url()));
    std::vector<std::string> got;
    sub->on_message([&](std::string_view channel, std::string_view payload) {
      got.push_back(std::string(channel) + "=" + std::string(payload));
    });
    sub->subscribe("a");
    until_connected(io, *sub);
    sub->subscribe("b");  // while connected: sent at once
    const auto receivers = [&](const char* channel, const char* payload) {
      auto r = droid::test::run(io, one(pub, {"PUBLISH", channel, payload}));
      REQUIRE(r.has_value());
      return r->integer;
    };
    // PUBLISH says how many subscribers took it: the subscription is in place once it
    // says 1, which is what is waited for (no sleep).
    io.restart();
    while (receivers("b", "probe") == 0) {
    }
    CHECK(receivers("a", "1") == 1);
    CHECK(receivers("b", std::string("two\r\nlines").c_str()) == 1);
    CHECK(receivers("c", "unheard") == 0);
    io.restart();
    while (got.size() < 3 && io.run_one() > 0) {
    }
    REQUIRE(got.size() >= 3);
    CHECK(got[got.size() - 2] == "a=1");
    CHECK(got.back() == "b=two\r\nlines");
    server.stop();
    got.clear();
    io.restart();
    while (sub->connected() && io.run_one() > 0) {
    }
    server.start();
    until_connected(io, *sub);
    until_connected(io, *pub);
    while (receivers("a", "again") == 0) {
    }
    io.restart();
    while (got.empty() && io.run_one() > 0) {
    }
    CHECK(got.front() == "a=again");
    sub->close();
    pub->close();
  }

  TEST_CASE("a Unix socket, as unix:///path") {
    REQUIRE(droid::test::have_redis_server());
    char dir[] = "/tmp/droid-redis-unix-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    const std::string socket = std::string(dir) + "/redis.sock";
    {
      droid::test::redis_server server({"--unixsocket", socket, "--unixsocketperm", "700"});
      asio::io_context io;
      auto c = client::create(io.get_executor(), options_for("unix://" + socket + "?db=1"));
      REQUIRE(droid::test::run(io, one(c, {"SET", "k", "on a socket"})).has_value());
      auto r = droid::test::run(io, one(c, {"GET", "k"}));
      REQUIRE(r.has_value());
      CHECK(r->str == "on a socket");
      CHECK(c->where().display() == "unix://" + socket + "?db=1");
      c->close();
    }
    std::remove(socket.c_str());
    ::rmdir(dir);
  }
}
