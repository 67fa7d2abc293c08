// SPDX-License-Identifier: BSL-1.0
/// @file
/// Where connections are accepted. With `options::accept_on_every_shard`, every shard of
/// a listener accepts on a listening socket of its own that shares the port
/// (docs/benchmarks.md, "Connections"), so a new connection is served where it arrived,
/// without a hand-off from shard 0. The sharing must not extend to a second server: one
/// started on a port in use fails, as a single-socket server does, instead of silently
/// taking half the connections. Without the option (the default), shard 0 deals
/// connections out in turn; both ways are held to the same checks.
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/server.hpp>

#include "http_client.hpp"

namespace {

using droid::test::raw_connection;

std::string this_thread_name() {
  std::ostringstream out;
  out << std::this_thread::get_id();
  return out.str();
}

droid::server make_server() {
  droid::server_options so;
  so.log = [](std::string_view) {};
  return droid::server{droid::server_info{.name = "accept-test", .version = "1"}, so};
}

/// A listener of `threads` shards on `port` (0: any), with `/where` answering the
/// serving thread, run on a thread of its own.
struct fixture {
  droid::server srv = make_server();
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  explicit fixture(unsigned threads, bool every_shard, std::uint16_t port = 0) {
    droid::http::options opts;
    opts.threads = threads;
    opts.port = port;
    opts.accept_on_every_shard = every_shard;
    opts.follow_sessions = false;
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
  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
};

std::string where(raw_connection& c) {
  c.send("GET /where HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

}  // namespace

TEST_SUITE("adapters/http accept") {
  TEST_CASE("connections are served on both shards of a two-shard listener, each where it was accepted") {
    for (const bool every_shard : {false, true}) {
      CAPTURE(every_shard);
      fixture f(2, every_shard);
      std::vector<std::unique_ptr<raw_connection>> open;  // kept open, so each is a new connection
      std::set<std::string> threads;
      // In turn, the second connection is on the other shard; by the kernel's hash of the
      // connection's addresses, 64 all on one shard would be a one in 2^63 event.
      for (int i = 0; i < 64 && threads.size() < 2; ++i) {
        open.push_back(std::make_unique<raw_connection>(f.listener->port()));
        threads.insert(where(*open.back()));
      }
      CHECK(threads.size() == 2);
      // Each connection goes on being served where it was accepted.
      for (auto& c : open) CHECK(threads.count(where(*c)) == 1);
    }
  }

  TEST_CASE("a second listener on a port in use fails to start, with one shard or several") {
    for (const bool every_shard : {false, true}) {
      CAPTURE(every_shard);
      fixture first(2, every_shard);
      const std::uint16_t port = first.listener->port();
      for (const unsigned threads : {1u, 2u, 3u}) {
        CAPTURE(threads);
        droid::server other = make_server();
        droid::http::options opts;
        opts.threads = threads;
        opts.port = port;
        opts.accept_on_every_shard = true;  // the sharing kind of socket is the one to hold back
        CHECK_THROWS_AS(droid::http::listener(other, opts), std::system_error);
      }
      // The first is untouched: it still answers on every connection.
      for (int i = 0; i < 8; ++i) {
        raw_connection c(port);
        CHECK_FALSE(where(c).empty());
      }
    }
  }

  TEST_CASE("the shards of one listener share its port, and a stop closes every listening socket") {
    std::uint16_t port = 0;
    {
      fixture f(3, true);
      port = f.listener->port();
      REQUIRE(port != 0);
      raw_connection c(port);
      CHECK_FALSE(where(c).empty());
    }
    // Stopped and gone: the port is free again for a listener of any shape.
    fixture again(2, false, port);
    raw_connection c(again.listener->port());
    CHECK(again.listener->port() == port);
    CHECK_FALSE(where(c).empty());
  }
}
