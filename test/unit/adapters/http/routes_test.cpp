// SPDX-License-Identifier: BSL-1.0
/// @file
/// Application routes on the HTTP listener (`http::options::routes`) and `/metrics`
/// (`http::metrics_route`) over a real listener: served before the MCP endpoint, behind
/// the Host/Origin checks, GET only, a throwing handler answered 500; the exposition
/// counts the MCP requests the same listener served and carries its gauges.
#include <droid/adapters/primary/transport/http/metrics_route.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <doctest/doctest.h>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/metrics.hpp>
#include <droid/application/server/server.hpp>

#include "http_client.hpp"

namespace {

using droid::test::mcp_post;
using droid::test::raw_connection;

droid::server_options with(std::shared_ptr<droid::metrics> m) {
  droid::server_options so;
  so.log = [](std::string_view) {};
  so.observer = std::move(m);
  return so;
}

/// A listener with `/metrics`, `/healthz` and a route that throws, on its own thread.
struct fixture {
  std::shared_ptr<droid::metrics> m = std::make_shared<droid::metrics>();
  droid::server srv{droid::server_info{.name = "routes-test", .version = "1"}, with(m)};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  fixture() {
    srv.tool("greet", "Says hi", [](droid::tool_context&) -> droid::task<std::string> { co_return "hi"; });
    droid::http::options opts;
    opts.threads = 2;
    opts.routes.push_back(droid::http::metrics_route(m, srv));
    opts.routes.push_back(droid::http::route{
        "/healthz", [](const droid::http::listener&, std::string_view target) {
          return droid::http::route_response{200, "text/plain", "ok " + std::string(target) + "\n"};
        }});
    opts.routes.push_back(droid::http::route{"/broken", [](const droid::http::listener&, std::string_view)
                                                            -> droid::http::route_response {
                                               throw std::runtime_error("route broke");
                                             }});
    listener = std::make_unique<droid::http::listener>(srv, opts);
    runner = std::thread([this] { listener->run(); });
  }
  ~fixture() {
    listener->stop();
    runner.join();
  }
  /// GET `path` with `headers` (Host included unless `headers` gives its own).
  droid::test::http_response get(std::string_view path, std::string_view headers = "Host: 127.0.0.1\r\n") {
    raw_connection c(listener->port());
    std::string req = "GET ";
    req.append(path).append(" HTTP/1.1\r\n").append(headers).append("\r\n");
    c.send(req);
    auto r = c.read_response();
    REQUIRE(r);
    return *r;
  }
};

bool has_line(const std::string& text, std::string_view line) {
  std::string needle = "\n";
  needle.append(line).append("\n");
  return ("\n" + text).find(needle) != std::string::npos;
}

}  // namespace

TEST_SUITE("adapters/http routes") {
  TEST_CASE("/metrics counts the MCP requests served on the same listener and its gauges") {
    fixture f;
    raw_connection c(f.listener->port());
    c.send(mcp_post(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"));
    auto init = c.read_response();
    REQUIRE(init);
    REQUIRE(init->status == 200);
    const std::string sid = *init->header("mcp-session-id");
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})",
                    "Mcp-Session-Id: " + sid + "\r\n"));
    auto call = c.read_response();
    REQUIRE(call);
    REQUIRE(call->status == 200);

    const auto r = f.get("/metrics");
    CHECK(r.status == 200);
    CHECK(*r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
    INFO(r.body);
    CHECK(has_line(r.body, R"(droid_mcp_requests_total{method="initialize",outcome="ok"} 1)"));
    CHECK(has_line(r.body, R"(droid_mcp_requests_total{method="tools/call",outcome="ok"} 1)"));
    CHECK(has_line(r.body, R"(droid_mcp_request_duration_seconds_count{method="tools/call"} 1)"));
    CHECK(has_line(r.body, "droid_http_sessions 1"));
    CHECK(has_line(r.body, "# TYPE droid_http_connections gauge"));
    CHECK(has_line(r.body, "droid_http_streams 0"));
    CHECK(has_line(r.body, "droid_kept_frames 0"));
    CHECK(has_line(r.body, "droid_running_tasks 0"));
    // A scrape is not an MCP request: it counts nothing.
    CHECK(r.body.find("method=\"other\"") == std::string::npos);
  }

  TEST_CASE("a route gets the target with its query; other paths still reach MCP or 404") {
    fixture f;
    const auto r = f.get("/healthz?probe=1");
    CHECK(r.status == 200);
    CHECK(r.body == "ok /healthz?probe=1\n");
    CHECK(f.get("/nowhere").status == 404);
    // The MCP endpoint is unchanged: a GET without a session is refused as before.
    CHECK(f.get("/mcp", "Host: 127.0.0.1\r\nAccept: text/event-stream\r\n").status == 400);
  }

  TEST_CASE("routes keep the Host and Origin checks, answer GET and HEAD only, and a throw is 500") {
    fixture f;
    CHECK(f.get("/metrics", "Host: evil.example\r\n").status == 403);
    CHECK(f.get("/metrics", "Host: 127.0.0.1\r\nOrigin: https://evil.example\r\n").status == 403);
    CHECK(f.get("/metrics", "Host: 127.0.0.1\r\nOrigin: http://localhost:3000\r\n").status == 200);
    {
      raw_connection c(f.listener->port());
      c.send("POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 405);
      CHECK(*r->header("allow") == "GET, HEAD");
    }
    CHECK(f.get("/broken").status == 500);
    // No bearer token is asked for: a scraper carries none.
    CHECK(f.get("/metrics").status == 200);
  }
}
