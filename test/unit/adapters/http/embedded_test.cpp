// SPDX-License-Identifier: BSL-1.0
/// @file
/// The HTTP listener embedded in an application: served on io_contexts the application
/// owns and runs, beside the application's own work, and stopped without the application
/// stopping its contexts (docs/http.md#embedding).
#include <droid/adapters/primary/transport/http/http.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <boost/describe.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>

#include "http_client.hpp"

using droid::test::mcp_post;
using droid::test::raw_connection;

namespace {

struct wait_args {
  int ms = 0;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))

const std::string initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

std::string call(int id, int ms) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"wait","arguments":{"ms":)" + std::to_string(ms) + "}}}";
}

/// An application with two io_contexts of its own, each run by one of its threads, and a
/// tool that records which thread it ran on.
struct application {
  droid::server srv{droid::server_info{.name = "embedded-test", .version = "1"}};
  asio::io_context io0{1}, io1{1};
  std::thread t0, t1;
  std::atomic<std::thread::id> tool_thread{};
  std::atomic<int> own_ticks{0};

  application() {
    srv.tool("wait", "Waits, then answers", [this](droid::tool_context& ctx, wait_args a) -> droid::task<std::string> {
      tool_thread = std::this_thread::get_id();
      co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      co_return "waited";
    });
  }
  /// Runs both contexts until they run out of work (nobody calls stop() on them).
  void run() {
    t0 = std::thread([this] { io0.run(); });
    t1 = std::thread([this] { io1.run(); });
  }
  void join() {
    t0.join();
    t1.join();
  }
};

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("embedded: serves on the application's contexts beside its work; stop() lets their run() return") {
    application app;
    // The application's own work on its first context: ten ticks, then it is done.
    asio::steady_timer timer(app.io0);
    std::function<void()> tick = [&] {
      timer.expires_after(std::chrono::milliseconds(5));
      timer.async_wait([&](const std::error_code& ec) {
        if (!ec && ++app.own_ticks < 10) tick();
      });
    };
    tick();
    droid::http::options opts;
    droid::http::listener l(app.srv, opts, {&app.io0, &app.io1});
    l.start();
    app.run();

    raw_connection c(l.port());
    c.send(mcp_post(initialize_body));
    auto init = c.read_response();
    REQUIRE(init);
    REQUIRE(init->status == 200);
    const std::string sid = *init->header("mcp-session-id");
    c.send(mcp_post(call(1, 1), "Mcp-Session-Id: " + sid + "\r\n"));
    auto answer = c.read_response();
    REQUIRE(answer);
    CHECK(answer->status == 200);
    CHECK(answer->body.find("waited") != std::string::npos);
    const auto ran_on = app.tool_thread.load();
    CHECK((ran_on == app.t0.get_id() || ran_on == app.t1.get_id()));
    CHECK(l.sessions() == 1);

    std::atomic<bool> stopped{false};
    std::atomic<std::thread::id> stopped_on{};
    l.stop([&] {
      stopped_on = std::this_thread::get_id();
      stopped = true;
    });
    const auto first_thread = app.t0.get_id();
    // Nothing stops the contexts: they return once the listener and the ticks are done.
    app.join();
    CHECK(stopped);
    CHECK(stopped_on.load() == first_thread);
    CHECK(app.own_ticks == 10);
    CHECK(l.sessions() == 0);
    CHECK(l.connections() == 0);
  }

  TEST_CASE("embedded: a listener destroyed mid-request leaves its last connection to finish on the contexts") {
    application app;
    std::uint16_t port = 0;
    {
      droid::http::options opts;
      opts.drain_timeout = std::chrono::milliseconds(50);
      droid::http::listener l(app.srv, opts, {&app.io0, &app.io1});
      l.start();
      port = l.port();
      app.run();
      raw_connection c(port);
      c.send(mcp_post(initialize_body));
      auto init = c.read_response();
      REQUIRE(init);
      const std::string sid = *init->header("mcp-session-id");
      c.send(mcp_post(call(1, 5'000), "Mcp-Session-Id: " + sid + "\r\n"));
      // The tool is running (its stream is open) when the listener goes away: the head of
      // the event stream goes out once the tool has begun and suspended.
      CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
      CHECK(app.tool_thread.load() != std::thread::id());
    }
    // The destructor stopped it; the tool is cancelled after the drain and the contexts
    // run out of work by themselves. Under the sanitizers this also proves that nothing the
    // last connection touches was freed before it.
    app.join();
    CHECK(app.tool_thread.load() != std::thread::id());
  }

  TEST_CASE("embedded: run() is refused, and so is an empty list of contexts") {
    application app;
    droid::http::listener l(app.srv, {}, {&app.io0});
    CHECK_THROWS_AS(l.run(), std::logic_error);
    CHECK_THROWS_AS(droid::http::listener(app.srv, {}, {}), std::invalid_argument);
  }
}
