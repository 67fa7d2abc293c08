// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Streamable HTTP transport end to end over loopback sockets: status codes, sessions,
/// both answer modes, pipelining, limits and Host/Origin (docs/reliability.md,
/// A1, A2, A4, A5, B1, B4, B5, B9, E8).
#include <droid/adapters/primary/transport/http/http.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>

#include "events.hpp"
#include "http_client.hpp"

using droid::test::mcp_post;
using droid::test::raw_connection;

namespace {

struct text_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(text_args, (), (text))

struct size_args {
  int bytes = 0;
};
BOOST_DESCRIBE_STRUCT(size_args, (), (bytes))

struct wait_args {
  int ms = 0;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))

const std::string initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

/// A listener on an ephemeral loopback port, run on a thread of its own.
struct server_fixture {
  droid::server srv{droid::server_info{.name = "http-test", .version = "1"}};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;
  /// Raised by `ask` when its question is withdrawn (`cancelled`) or its session ends.
  droid::test::event_count asks_cancelled;
  droid::test::event_count asks_ended;

  explicit server_fixture(droid::http::options opts = {}) {
    srv.tool("echo", "Echoes", [](droid::tool_context& ctx, text_args a) -> droid::task<droid::tool_result> {
      co_await ctx.progress(1, 1, "echoing");
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("wait", "Waits, then answers", [](droid::tool_context& ctx, wait_args a) -> droid::task<std::string> {
      co_await ctx.progress(0, 1, "started");
      co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      co_return "waited";
    });
    srv.tool("flood", "Sends 2,000 notifications of 10 KB without pausing",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               const std::string params = R"({"level":"info","data":")" + std::string(10'000, 'x') + "\"}";
               for (int i = 0; i < 2000; ++i) co_await ctx.notify("notifications/message", params);
               co_return "flooded";
             });
    srv.tool("ask", "Asks the client's model", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":1})");
      if (!answer && answer.error().condition == droid::errc::cancelled) asks_cancelled.raise();
      if (!answer && answer.error().condition == droid::errc::session_ended) asks_ended.raise();
      if (!answer) co_return droid::tool_result::error(answer.error().message);
      co_return droid::tool_result::text("model said " + droid::ir::to_json_text(answer.value().at("content")));
    });
    srv.tool("big", "Answers with `bytes` bytes of text",
             [](droid::tool_context&, size_args a) -> droid::task<std::string> {
               co_return std::string(static_cast<std::size_t>(a.bytes), 'b');
             });
    srv.tool("chatty", "Logs four 50 KB messages, a moment apart, closes its stream, then answers",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               const std::string params = R"({"level":"info","data":")" + std::string(50'000, 'x') + "\"}";
               for (int i = 0; i < 4; ++i) {
                 co_await ctx.notify("notifications/message", params);
                 (void)co_await ctx.sleep(std::chrono::milliseconds(30));
               }
               ctx.close_stream();
               (void)co_await ctx.sleep(std::chrono::milliseconds(50));
               co_return "resumed";
             });
    srv.tool("reconnect", "Closes its stream, then answers", [](droid::tool_context& ctx) -> droid::task<std::string> {
      ctx.close_stream();
      co_await ctx.sleep(std::chrono::milliseconds(50));
      co_return "resumed";
    });
    if (opts.threads == 0) opts.threads = 2;
    listener = std::make_unique<droid::http::listener>(srv, opts);
    runner = std::thread([this] { listener->run(); });
  }
  ~server_fixture() {
    listener->stop();
    runner.join();
  }
  [[nodiscard]] std::uint16_t port() const { return listener->port(); }

  /// Initializes a session (declaring `capabilities`) and returns its id.
  std::string initialize(raw_connection& c, const std::string& capabilities = "{}") {
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":)" +
                    capabilities + R"(,"clientInfo":{"name":"t","version":"1"}}})"));
    auto r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    const std::string* sid = r->header("mcp-session-id");
    REQUIRE(sid);
    return *sid;
  }
};

/// The JSON-RPC messages carried by an SSE body, parsed.
std::vector<boost::json::value> sse_messages(const std::string& body) {
  std::vector<boost::json::value> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    // Empty data is a priming event (an id to resume from), not a message.
    if (end > at + 6) out.push_back(boost::json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

std::string call_body(int id, const std::string& text) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" + text +
         R"("},"_meta":{"progressToken":1}}})";
}

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("initialize assigns a session and a request is answered as an event stream") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    CHECK(sid.size() >= 22);
    c.send(mcp_post(call_body(1, "hi"), "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(*r->header("content-type") == "text/event-stream");
    const auto messages = sse_messages(r->body);
    REQUIRE(messages.size() == 2);
    CHECK(messages[0].at("method") == "notifications/progress");  // before the response
    CHECK(messages[1].at("id") == 1);
    CHECK(messages[1].at("result").at("content").at(0).at("text") == "hi");
  }

  TEST_CASE("JSON mode answers one document, without the progress") {
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send(mcp_post(call_body(2, "x"), "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(*r->header("content-type") == "application/json");
    CHECK(boost::json::parse(r->body).at("result").at("content").at(0).at("text") == "x");
  }

  TEST_CASE("JSON mode: a tool that suspends, notifies or answers big gets its response alone, whichever shard its connection is on") {
    // A connection on the session's own shard is answered through a json_answer (no
    // stream, no sink), one on the other shard through the session's stream and a sink:
    // four connections dealt out over two shards use both, and must not be told apart.
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    o.follow_sessions = false;
    server_fixture f(o);
    raw_connection first(f.port());
    const std::string sid = f.initialize(first);
    std::vector<std::unique_ptr<raw_connection>> conns;
    for (int i = 0; i < 4; ++i) conns.push_back(std::make_unique<raw_connection>(f.port()));
    int id = 100;
    const auto call = [&](raw_connection& c, const std::string& tool, const std::string& arguments) {
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":)" + std::to_string(++id) + R"(,"method":"tools/call","params":{"name":")" +
                          tool + R"(","arguments":)" + arguments + R"(,"_meta":{"progressToken":1}}})",
                      "Mcp-Session-Id: " + sid + "\r\n"));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(*r->header("content-type") == "application/json");
      const boost::json::value answer = boost::json::parse(r->body);
      CHECK(answer.at("id") == id);
      return std::string(answer.at("result").at("content").at(0).at("text").as_string());
    };
    for (auto& c : conns) {
      CHECK(call(*c, "wait", R"({"ms":20})") == "waited");
      CHECK(call(*c, "chatty", "{}") == "resumed");
      CHECK(call(*c, "big", R"({"bytes":1000000})") == std::string(1'000'000, 'b'));
      CHECK(call(*c, "echo", R"({"text":"after"})") == "after");
    }
  }

  TEST_CASE("notifications and responses get 202 with no body") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send(mcp_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 202);
    CHECK(r->body.empty());
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":77,"result":{}})", "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 202);
  }

  TEST_CASE("a request without a session is 400, an unknown or deleted session 404") {
    server_fixture f;
    raw_connection c(f.port());
    c.send(mcp_post(call_body(1, "a")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(boost::json::parse(r->body).at("error").at("code") == -32600);
    c.send(mcp_post(call_body(1, "a"), "Mcp-Session-Id: nope\r\n"));
    CHECK(c.read_response()->status == 404);

    const std::string sid = f.initialize(c);
    CHECK(f.listener->sessions() == 1);
    c.send("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: " + sid + "\r\n\r\n");
    CHECK(c.read_response()->status == 200);
    CHECK(f.listener->sessions() == 0);
    c.send(mcp_post(call_body(1, "a"), "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("malformed JSON is a 400 carrying -32700, and the connection stays usable") {
    server_fixture f;
    raw_connection c(f.port());
    c.send(mcp_post(R"({"jsonrpc":"2.0",)"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(boost::json::parse(r->body).at("error").at("code") == -32700);
    (void)f.initialize(c);
  }

  TEST_CASE("an unsupported MCP-Protocol-Version is 400") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send(mcp_post(call_body(1, "a"), "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 1999-01-01\r\n"));
    CHECK(c.read_response()->status == 400);
    c.send(mcp_post(call_body(2, "a"), "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-06-18\r\n"));
    CHECK(c.read_response()->status == 200);
  }

  TEST_CASE("wrong methods get 405 with Allow, wrong paths 404 (B4)") {
    // OPTIONS is no wrong method: it answers 204 with Allow (and CORS preflights).
    server_fixture f;
    raw_connection c(f.port());
    for (const char* method : {"PUT", "PATCH", "TRACE"}) {
      c.send(std::string(method) + " /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 405);
      CHECK(*r->header("allow") == "GET, POST, DELETE");
    }
    c.send("GET /other HTTP/1.1\r\nHost: localhost\r\n\r\n");
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("an absolute-form target is served, and its authority is the host checked (B4, RFC 9112 §3.2.2)") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string target = "http://127.0.0.1:" + std::to_string(f.port()) + "/mcp";
    c.send(mcp_post(initialize_body, {}, target));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->header("mcp-session-id"));
    // The authority stands for Host: a rebinding name there is refused although the
    // Host field (ignored) names loopback.
    c.send(mcp_post(initialize_body, {}, "http://evil.example/mcp"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    c.send(mcp_post(initialize_body, {}, "http://127.0.0.1/other"));
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("a HEAD is answered with a head and no body, and the connection goes on (RFC 9110 §9.3.2)") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("HEAD /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n");
    auto r = c.read_response(true);
    REQUIRE(r);
    CHECK(r->status == 405);
    REQUIRE(r->header("content-length"));
    CHECK(*r->header("content-length") != "0");
    // Had a body followed, it would be read here as the next response's status line.
    c.send("GET /other HTTP/1.1\r\nHost: localhost\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 404);
  }

  TEST_CASE("non-JSON content types are 415 and run nothing (A4)") {
    server_fixture f;
    raw_connection c(f.port());
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"}) {
      const std::string body = initialize_body;
      c.send(std::string("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: ") + type +
             "\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body);
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 415);
    }
    CHECK(f.listener->sessions() == 0);
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: APPLICATION/JSON; charset=utf-8\r\n"
           "Accept: application/json, text/event-stream\r\nContent-Length: " +
           std::to_string(initialize_body.size()) + "\r\n\r\n" + initialize_body);
    CHECK(c.read_response()->status == 200);
  }

  TEST_CASE("an Accept without event streams is 406 in stream mode") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
           "Content-Length: " + std::to_string(initialize_body.size()) + "\r\n\r\n" + initialize_body);
    CHECK(c.read_response()->status == 406);
  }

  TEST_CASE("an Accept other than the SDKs' usual value is read range by range (q=0 refuses, */* admits)") {
    // The usual value is compared whole before any parsing: these must still reach it.
    server_fixture f;
    const std::pair<const char*, int> cases[] = {
        {"application/json;q=0, text/event-stream", 406}, {"text/event-stream, application/json;q=0.0", 406},
        {"text/event-stream", 406},                        {"text/event-stream, application/*", 200},
        {"*/*", 200},                                      {"TEXT/EVENT-STREAM;q=0.5, Application/JSON", 200},
        {"application/json,text/event-stream", 200}};
    for (const auto& item : cases) {
      const char* accept = item.first;  // named: clang 14 cannot CAPTURE a structured binding
      const int status = item.second;
      CAPTURE(accept);
      raw_connection c(f.port());
      c.send(std::string("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: ") +
             accept + "\r\nContent-Length: " + std::to_string(initialize_body.size()) + "\r\n\r\n" + initialize_body);
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == status);
    }
  }

  TEST_CASE("foreign Host or Origin values are 403 with a JSON-RPC body and run nothing (A1, A2)") {
    server_fixture f;
    for (const char* header : {"Host: evil.com\r\n", "Host: localhost.evil.com\r\n", "Host: 127.1\r\n",
                               "Host: localhost\r\nOrigin: http://evil.com\r\n",
                               "Host: localhost\r\nOrigin: null\r\n",
                               "Host: localhost\r\nOrigin: http://localhost\r\nOrigin: http://evil.com\r\n"}) {
      CAPTURE(header);
      raw_connection c(f.port());
      c.send(std::string("POST /mcp HTTP/1.1\r\n") + header +
             "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
             std::to_string(initialize_body.size()) + "\r\n\r\n" + initialize_body);
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 403);
      CHECK(boost::json::parse(r->body).at("id").is_null());
    }
    CHECK(f.listener->sessions() == 0);
    raw_connection ok(f.port());
    std::string request = mcp_post(initialize_body, "Origin: http://localhost:5173\r\n");
    request.replace(request.find("Host: 127.0.0.1"), 15, "Host: [::1]:9");
    ok.send(request);
    auto r = ok.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  TEST_CASE("a keep-alive connection's Host is judged on every request, not only on its first (A1)") {
    // The connection remembers the last Host that passed (connection::host_passes): a
    // different value later on the same connection must still be judged.
    server_fixture f;
    raw_connection c(f.port());
    const auto with_host = [](std::string_view host) {
      std::string request = mcp_post(initialize_body);
      request.replace(request.find("Host: 127.0.0.1"), 15, "Host: " + std::string(host));
      return request;
    };
    c.send(with_host("127.0.0.1"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    c.send(with_host("localhost:8080"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    c.send(with_host("evil.com"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(f.listener->sessions() == 2);
  }

  TEST_CASE("CORS: an allowed origin's preflight gets 204 with the methods and headers; its answers name it; others 403") {
    droid::http::options o;
    o.allowed_origins = {"https://app.example.com"};
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string preflight =
        "OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\n"
        "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, mcp-session-id, "
        "mcp-param-region\r\n\r\n";
    c.send(preflight);
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 204);
    CHECK(*r->header("access-control-allow-origin") == "https://app.example.com");
    CHECK(*r->header("access-control-allow-methods") == "GET, POST, DELETE");
    CHECK(*r->header("access-control-allow-headers") == "content-type, mcp-session-id, mcp-param-region");
    CHECK(*r->header("vary") == "Origin");
    REQUIRE(r->header("access-control-max-age"));
    // A malformed header list is not echoed: the MCP headers are listed instead.
    c.send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\n"
           "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: x\"y\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->header("access-control-allow-headers")->find("Mcp-Session-Id") != std::string::npos);
    // The actual requests: the session id is readable by the page, on JSON and on streams.
    c.send(mcp_post(initialize_body, "Origin: https://app.example.com\r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(*r->header("access-control-allow-origin") == "https://app.example.com");
    CHECK(r->header("access-control-expose-headers")->find("Mcp-Session-Id") != std::string::npos);
    const std::string sid = *r->header("mcp-session-id");
    c.send(mcp_post(call_body(1, "x"), "Origin: https://app.example.com\r\nMcp-Session-Id: " + sid + "\r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(*r->header("content-type") == "text/event-stream");
    CHECK(*r->header("access-control-allow-origin") == "https://app.example.com");
    // A request without Origin (not a browser's) gets no CORS headers.
    c.send(mcp_post(call_body(2, "y"), "Mcp-Session-Id: " + sid + "\r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK_FALSE(r->header("access-control-allow-origin"));
    // A plain OPTIONS says what the path allows.
    c.send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 204);
    CHECK(*r->header("allow") == "GET, POST, DELETE");
    CHECK_FALSE(r->header("access-control-allow-origin"));
    // Another origin's preflight keeps today's 403, with nothing a browser would accept.
    raw_connection other(f.port());
    other.send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n"
               "Access-Control-Request-Method: POST\r\n\r\n");
    r = other.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK_FALSE(r->header("access-control-allow-origin"));
    CHECK(f.listener->sessions() == 1);
  }

  TEST_CASE("the default bind is loopback, and another bind is logged (A5)") {
    droid::http::options o;
    CHECK(o.host == "127.0.0.1");
    server_fixture f;
    CHECK(f.listener->url().rfind("http://127.0.0.1:", 0) == 0);
    std::vector<std::string> logged;
    droid::server other(droid::server_info{.name = "x", .version = "1"},
                        droid::server_options{.log = [&](std::string_view l) { logged.emplace_back(l); }});
    droid::http::options any;
    any.host = "0.0.0.0";
    any.threads = 1;
    droid::http::listener exposed(other, any);
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("non-loopback") != std::string::npos);
  }

  TEST_CASE("100 pipelined requests are answered in order (B5)") {
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    std::string batch;
    for (int i = 1; i <= 100; ++i) batch += mcp_post(call_body(i, std::to_string(i)), "Mcp-Session-Id: " + sid + "\r\n");
    c.send(batch);
    for (int i = 1; i <= 100; ++i) {
      auto r = c.read_response();
      REQUIRE(r);
      REQUIRE(boost::json::parse(r->body).at("id") == i);
    }
  }

  TEST_CASE("a request pipelined after Connection: close never runs (B5)") {
    server_fixture f;
    raw_connection c(f.port());
    c.send(mcp_post(initialize_body, "Connection: close\r\n") + mcp_post(initialize_body));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK_FALSE(c.read_response());
    CHECK(f.listener->sessions() == 1);
  }

  TEST_CASE("an oversized Content-Length is refused with 413 before the body is sent (B1)") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\nContent-Length: 4194305\r\n\r\n");
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 413);
    CHECK(c.closed_by_peer());
  }

  TEST_CASE("Expect: 100-continue gets 100 before the body; an unknown expectation 417 (B4)") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: " +
           std::to_string(initialize_body.size()) + "\r\n\r\n");
    CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 100 Continue", 0) == 0);
    c.send(initialize_body);
    CHECK(c.read_response()->status == 200);
    raw_connection d(f.port());
    d.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n");
    CHECK(d.read_response()->status == 417);
  }

  TEST_CASE("an idle keep-alive connection is closed after the idle timeout (B9)") {
    droid::http::options o;
    o.idle_timeout = std::chrono::milliseconds(300);
    server_fixture f(o);
    raw_connection c(f.port());
    (void)f.initialize(c);
    const auto start = std::chrono::steady_clock::now();
    CHECK(c.closed_by_peer());
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(waited > std::chrono::milliseconds(200));
    CHECK(waited < std::chrono::milliseconds(2000));
  }

  TEST_CASE("a request whose headers stop arriving gets 408 and a close at the header deadline (B6)") {
    droid::http::options o;
    o.header_timeout = std::chrono::milliseconds(300);
    server_fixture f(o);
    raw_connection c(f.port());
    // Half a header section, then silence: the slowloris shape.
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: appl");
    const auto start = std::chrono::steady_clock::now();
    const auto r = c.read_response();
    const auto waited = std::chrono::steady_clock::now() - start;
    REQUIRE(r);
    CHECK(r->status == 408);
    CHECK(c.closed_by_peer());
    CHECK(waited > std::chrono::milliseconds(250));
    CHECK(waited < std::chrono::milliseconds(2000));
  }

  TEST_CASE("a body that stops arriving gets 408 and a close at its deadline (B7)") {
    droid::http::options o;
    o.body_grace = std::chrono::milliseconds(300);
    o.min_body_rate = 1'000'000;  // 1,000 bytes add nothing: the deadline is the grace
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\nMcp-Session-Id: " + sid +
           "\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":");
    const auto start = std::chrono::steady_clock::now();
    const auto r = c.read_response();
    const auto waited = std::chrono::steady_clock::now() - start;
    REQUIRE(r);
    CHECK(r->status == 408);
    CHECK(c.closed_by_peer());
    CHECK(waited > std::chrono::milliseconds(250));
    CHECK(waited < std::chrono::milliseconds(2000));
    // The session is untouched: another connection is served.
    raw_connection d(f.port());
    d.send(mcp_post(R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(d.read_response()->status == 200);
  }

  // The slow-body attack (slowhttptest -B): a large declared length must not buy a long
  // deadline; only the bytes that arrive do. Each 10 ms at 1,000 B/s buys 10 bytes, and
  // this client sends far fewer, so it is cut off shortly after the grace rather than at
  // grace + 1,000,000 / 1,000 s.
  TEST_CASE("a body trickling below min_body_rate gets 408 after the grace, whatever its Content-Length (B7)") {
    droid::http::options o;
    o.body_grace = std::chrono::milliseconds(300);
    o.min_body_rate = 1'000;
    server_fixture f(o);
    for (const std::string framing : {"Content-Length: 1000000", "Transfer-Encoding: chunked"}) {
      CAPTURE(framing);
      raw_connection c(f.port());
      c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\n" + framing + "\r\n\r\n");
      const bool chunked = framing.starts_with("Transfer");
      const auto start = std::chrono::steady_clock::now();
      // 20 bytes every 100 ms is 200 B/s, a fifth of the minimum; the answer is awaited
      // between the pieces, so nothing is sent after it (a send to the closed socket would
      // be answered with a reset).
      bool cut = false;
      while (!cut && std::chrono::steady_clock::now() - start < std::chrono::milliseconds(3000)) {
        c.send(chunked ? "14\r\n[[[[[[[[[[[[[[[[[[[[\r\n" : "[[[[[[[[[[[[[[[[[[[[");
        pollfd p{c.fd(), POLLIN, 0};
        cut = ::poll(&p, 1, 100) == 1;
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      REQUIRE(cut);
      const auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 408);
      CHECK(waited > std::chrono::milliseconds(250));
      CHECK(waited < std::chrono::milliseconds(2000));
    }
  }

  // The other side of the same rule: a body arriving faster than the minimum keeps
  // extending its deadline, so a large upload is not cut at the grace.
  TEST_CASE("a body arriving above min_body_rate is read to its end long after the grace (B7)") {
    droid::http::options o;
    o.body_grace = std::chrono::milliseconds(200);
    o.min_body_rate = 1'000;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    // 2,400 bytes at 300 bytes every 50 ms (6,000 B/s) take 400 ms, twice the grace.
    const std::string body = R"({"jsonrpc":"2.0","id":2,"method":"ping","pad":")" + std::string(2400 - 48, 'x') + "\"}";
    const std::string request = mcp_post(body, "Mcp-Session-Id: " + sid + "\r\n");
    const std::size_t head = request.size() - body.size();
    c.send(std::string_view(request).substr(0, head));
    for (std::size_t at = 0; at < body.size(); at += 300) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      c.send(std::string_view(body).substr(at, 300));
    }
    const auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  // A body sent at full speed but for its last byte earns, under the rate rule alone,
  // grace + 999 / 240 s; the hard cap ends it at body_timeout whatever it earned.
  TEST_CASE("a body is cut off at body_timeout however fast its start came (B7)") {
    droid::http::options o;
    o.body_grace = std::chrono::milliseconds(5'000);
    o.min_body_rate = 240;
    o.body_timeout = std::chrono::milliseconds(500);
    server_fixture f(o);
    raw_connection c(f.port());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n" + std::string(999, ' '));
    const auto start = std::chrono::steady_clock::now();
    const auto r = c.read_response();
    const auto waited = std::chrono::steady_clock::now() - start;
    REQUIRE(r);
    CHECK(r->status == 408);
    CHECK(waited > std::chrono::milliseconds(400));
    CHECK(waited < std::chrono::milliseconds(3'000));
  }

  TEST_CASE("the standalone GET stream carries list_changed; a second GET is 409") {
    droid::http::options o;
    o.keep_alive_interval = std::chrono::milliseconds(200);
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid + "\r\n\r\n");
    CHECK(get.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
    CHECK(get.read_until(": keep-alive").find(": keep-alive") != std::string::npos);
    raw_connection second(f.port());
    second.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
                "\r\n\r\n");
    CHECK(second.read_response()->status == 409);
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    CHECK(get.read_until("list_changed").find("notifications/tools/list_changed") != std::string::npos);
  }

  TEST_CASE("max_connections: one past the limit is closed at once, the others are served, a freed slot is reused") {
    droid::http::options o;
    o.max_connections = 3;
    server_fixture f(o);
    // Any request the server answers shows the connection was accepted and is served.
    const auto ping = [](raw_connection& c) {
      c.send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      const auto r = c.read_response();
      return r ? r->status : 0;
    };
    std::vector<std::unique_ptr<raw_connection>> held;
    for (int i = 0; i < 3; ++i) {
      held.push_back(std::make_unique<raw_connection>(f.port()));
      CHECK(ping(*held.back()) == 204);
    }
    CHECK(f.listener->connections() == 3);
    raw_connection over(f.port());
    CHECK(over.closed_by_peer());  // closed at once, without a response
    for (auto& c : held) CHECK(ping(*c) == 204);  // the three are untouched
    // The server closes the third after answering, so the slot's release is something the
    // client sees (hung_up says why: a client's own close would not be).
    held.back()->send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    CHECK(held.back()->read_response()->status == 204);
    REQUIRE(held.back()->hung_up());
    CHECK(f.listener->connections() == 2);
    held.pop_back();
    raw_connection again(f.port());
    CHECK(ping(again) == 204);
  }

  TEST_CASE("write_timeout: a client that stops reading its event stream loses the connection") {
    droid::http::options o;
    o.write_timeout = std::chrono::milliseconds(300);
    o.max_queued_bytes = 64u << 20;  // so that the queue bound cannot be what closes it
    server_fixture f(o);
    // Reads wait up to 30 s: the head goes out once the tool's first step has queued all
    // 20 MB, which takes seconds under ThreadSanitizer on a busy machine.
    raw_connection c(f.port(), 30'000);
    const std::string sid = f.initialize(c);
    CHECK(f.listener->connections() == 1);
    // 20 MB of notifications, of which the client reads the head and nothing more.
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood"}})", "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
    // A byte the server leaves unread while it answers, so that its close is a reset, the
    // one close that reaches a client whose window is full (see hung_up).
    c.send("P");
    REQUIRE(c.hung_up());
    CHECK(f.listener->connections() == 0);
    // The session lives on: another connection uses it.
    raw_connection again(f.port());
    again.send(mcp_post(R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "Mcp-Session-Id: " + sid + "\r\n"));
    const auto r = again.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  TEST_CASE("idle sessions are reaped; a session with an open stream is not (E8)") {
    droid::http::options o;
    o.session_idle_timeout = std::chrono::milliseconds(300);
    o.keep_alive_interval = std::chrono::milliseconds(100);
    droid::test::counted_stores stores;
    o.event_store = stores.factory();
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string streaming = f.initialize(c);
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + streaming +
             "\r\n\r\n");
    (void)get.read_until("\r\n\r\n");
    // Made after the stream opened, so the pass of the reaper that takes it finds the
    // streaming session idle for longer: only its stream can keep it.
    const std::string idle = f.initialize(c);
    REQUIRE(stores.released->wait_for(1));  // the idle session's store: it is out of the table
    CHECK(f.listener->sessions() == 1);
    c.send(mcp_post(call_body(1, "a"), "Mcp-Session-Id: " + idle + "\r\n"));
    CHECK(c.read_response()->status == 404);
    c.send(mcp_post(call_body(2, "a"), "Mcp-Session-Id: " + streaming + "\r\n"));
    CHECK(c.read_response()->status == 200);
  }

  TEST_CASE("a tool running after its client dropped ends with its session at the idle timeout (E8)") {
    droid::http::options o;
    o.session_idle_timeout = std::chrono::milliseconds(200);
    droid::test::counted_stores stores;
    o.event_store = stores.factory();
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    const std::string headers = "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
    std::string id;
    boost::json::value question;
    {
      // The tool waits on the client's model: it would run until the client answers,
      // however long that takes, were it not for the idle timeout.
      raw_connection post(f.port());
      post.send(mcp_post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask"}})", headers));
      std::string head = post.read_until("sampling/createMessage");
      head += post.read_until("\n\n");
      const auto at = head.rfind("id: ");
      REQUIRE(at != std::string::npos);
      id = head.substr(at + 4, head.find('\n', at) - at - 4);
      question = sse_messages(head).back();
      // Half-closed rather than closed: to the server it is the same end of input, and
      // its close that follows says it has let go of the stream.
      post.shutdown_write();
      REQUIRE(post.hung_up());
    }  // the client is gone and does not come back within the idle timeout
    // Reaped with its tool: work nobody reads is bounded by the idle timeout, whatever
    // the tool waits on (docs/security.md, "Limits per tenant").
    REQUIRE(stores.released->wait_for(1));
    CHECK(f.listener->sessions() == 0);
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n" + headers +
             "Last-Event-ID: " + id + "\r\n\r\n");
    CHECK(get.read_until("\r\n\r\n").rfind("HTTP/1.1 404", 0) == 0);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":)" + boost::json::serialize(question.at("id")) +
                        R"(,"result":{"role":"assistant","content":{"type":"text","text":"late"}}})",
                    headers));
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("stateless mode serves requests with no session and refuses GET and DELETE") {
    droid::http::options o;
    o.stateless = true;
    server_fixture f(o);
    raw_connection c(f.port());
    c.send(mcp_post(initialize_body));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK_FALSE(r->header("mcp-session-id"));
    c.send(mcp_post(call_body(5, "s"), "MCP-Protocol-Version: 2025-11-25\r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(sse_messages(r->body).back().at("result").at("content").at(0).at("text") == "s");
    c.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
    CHECK(c.read_response()->status == 405);
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a framing error is answered and the connection closed (B3)") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
           "0\r\n\r\n" + mcp_post(initialize_body));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(c.closed_by_peer());
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a broken event stream is resumed with Last-Event-ID and delivers the response") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    const std::string headers = "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
    std::string id;
    {
      raw_connection post(f.port());
      post.send(mcp_post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{"ms":300},"_meta":{"progressToken":1}}})",
                         headers));
      // The priming event (an id, empty data, a retry hint), then the progress.
      const std::string head = post.read_until("started");
      CHECK(head.find("retry: ") != std::string::npos);
      const auto at = head.rfind("id: ");
      REQUIRE(at != std::string::npos);
      id = head.substr(at + 4, head.find('\n', at) - at - 4);
      CHECK(id.find('-') != std::string::npos);
    }  // the connection drops while the tool runs
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n" + headers +
             "Last-Event-ID: " + id + "\r\n\r\n");
    // A resumed stream stays open after its request is over (clients resume streams that
    // end), so read up to the response rather than to the end.
    std::string raw = get.read_until("waited");
    raw += get.read_until("\n\n");
    CHECK(raw.rfind("HTTP/1.1 200", 0) == 0);
    const auto messages = sse_messages(raw.substr(raw.find("\r\n\r\n")) + "\n");
    REQUIRE(messages.size() == 1);  // only what came after the progress the client saw
    CHECK(messages[0].at("id") == 3);
    CHECK(messages[0].at("result").at("content").at(0).at("text") == "waited");
  }

  TEST_CASE("one tenant's sessions keep at most its share of answers; another tenant's are kept (max_kept_bytes_per_tenant)") {
    droid::http::options o;
    o.max_kept_bytes_per_tenant = 100'000;
    server_fixture f(o);
    // Each call answers about 40 KB on its session's stream. Tenant 127.0.0.2 opens three
    // sessions: the third answer would take its share past 100 KB, and that session has
    // nothing of its own to evict, so its answer is sent but not kept.
    struct call {
      std::string sid;
      std::string priming_id;
    };
    const auto big_call = [&](const char* from) {
      raw_connection c(f.port(), 5000, from);
      call out;
      out.sid = f.initialize(c);
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":40000}}})",
                      "Mcp-Session-Id: " + out.sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
      auto r = c.read_response();
      REQUIRE(r);
      REQUIRE(r->status == 200);
      REQUIRE(sse_messages(r->body).back().at("result").at("content").at(0).at("text").as_string().size() == 40'000);
      const auto at = r->body.find("id: ");
      REQUIRE(at != std::string::npos);
      out.priming_id = r->body.substr(at + 4, r->body.find('\n', at) - at - 4);
      return out;
    };
    const call a1 = big_call("127.0.0.2");
    const call a2 = big_call("127.0.0.2");
    CHECK(f.listener->kept_squeezed() == 0);
    const call a3 = big_call("127.0.0.2");
    const call b1 = big_call("127.0.0.3");
    CHECK(f.listener->kept_squeezed() >= 1);
    CHECK(f.listener->kept_bytes() <= 100'000 + 41'000);  // a's share, and b's one answer
    CHECK(f.listener->kept_bytes() >= 3 * 40'000);
    const auto resume = [&](const call& c) {
      raw_connection get(f.port());
      get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + c.sid +
               "\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: " + c.priming_id + "\r\n\r\n");
      std::string raw = get.read_until("\r\n\r\n");
      const bool ok = raw.rfind("HTTP/1.1 200", 0) == 0;
      if (ok) raw += get.read_until("\"bbbb");
      return ok && raw.find("\"result\"") != std::string::npos;
    };
    CHECK(resume(a1));
    CHECK(resume(a2));
    CHECK_FALSE(resume(a3));  // refused (400), never replayed with its answer missing
    CHECK(resume(b1));        // a's traffic took nothing of b's
  }

  TEST_CASE("Last-Event-ID of another session or an unknown stream is refused, never replayed (A11)") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string a = f.initialize(c);
    const std::string b = f.initialize(c);
    c.send(mcp_post(call_body(1, "secret"), "Mcp-Session-Id: " + a + "\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    const auto at = r->body.find("id: ");
    REQUIRE(at != std::string::npos);
    const std::string id = r->body.substr(at + 4, r->body.find('\n', at) - at - 4);
    for (const std::string& attempt : {"Mcp-Session-Id: " + b + "\r\nLast-Event-ID: " + id + "\r\n",
                                       "Mcp-Session-Id: " + a + "\r\nLast-Event-ID: 999-0\r\n",
                                       "Mcp-Session-Id: " + a + "\r\nLast-Event-ID: garbage\r\n"}) {
      raw_connection get(f.port());
      get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n" + attempt + "\r\n");
      auto g = get.read_response();
      REQUIRE(g);
      CHECK(g->status == 400);
      CHECK(g->body.find("secret") == std::string::npos);
    }
    // The owner can replay a finished stream while its events are kept.
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + a +
             "\r\nLast-Event-ID: " + id + "\r\n\r\n");
    CHECK(get.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
  }

  TEST_CASE("stop ends streams and sessions and lets run() return (B12)") {
    auto f = std::make_unique<server_fixture>();
    raw_connection c(f->port());
    const std::string sid = f->initialize(c);
    raw_connection get(f->port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
             "\r\n\r\n");
    (void)get.read_until("\r\n\r\n");
    raw_connection idle(f->port());
    const auto start = std::chrono::steady_clock::now();
    f.reset();  // stop() and join
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    CHECK(idle.closed_by_peer());
  }

  TEST_CASE("stop lets calls being answered finish within the drain deadline (B12)") {
    auto f = std::make_unique<server_fixture>();
    raw_connection c(f->port());
    const std::string sid = f->initialize(c);
    c.send(mcp_post(
        R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait","arguments":{"ms":300},"_meta":{"progressToken":1}}})",
        "Mcp-Session-Id: " + sid + "\r\n"));
    (void)c.read_until("started");
    std::thread stopper([&] { f.reset(); });
    const std::string rest = c.read_until("waited");
    CAPTURE(rest);
    CHECK(rest.find("\"id\":4") != std::string::npos);
    stopper.join();
  }

  TEST_CASE("session churn stays under the cap and idle sessions are all reaped (E10)") {
    droid::http::options o;
    o.max_sessions = 200;
    o.session_idle_timeout = std::chrono::milliseconds(200);
    droid::test::counted_stores stores;
    o.event_store = stores.factory();
    server_fixture f(o);
    raw_connection c(f.port());
    int created = 0, refused = 0;
    for (int i = 0; i < 1000; ++i) {
      c.send(mcp_post(initialize_body));
      auto r = c.read_response();
      REQUIRE(r);
      REQUIRE((r->status == 200 || r->status == 503));
      (r->status == 200 ? created : refused) += 1;
      REQUIRE(f.listener->sessions() <= 200);
    }
    CHECK(created >= 200);
    // Every store made is let go: the refused sessions' at once, the others' as they are
    // reaped.
    REQUIRE(stores.released->wait_for(stores.made->value()));
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a tool can close its stream and the client gets the answer by resuming (SSE polling)") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);  // negotiated 2025-11-25: priming events
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"reconnect"}})",
                    "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-03-26\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    // Only the priming event: an id and a retry hint, no data, and no result.
    CHECK(r->body.find("retry: ") != std::string::npos);
    CHECK(r->body.find("\"result\"") == std::string::npos);
    const auto at = r->body.find("id: ");
    REQUIRE(at != std::string::npos);
    const std::string id = r->body.substr(at + 4, r->body.find('\n', at) - at - 4);
    c.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
           "\r\nLast-Event-ID: " + id + "\r\n\r\n");
    std::string raw = c.read_until("resumed\"");
    raw += c.read_until("\n\n");
    CHECK(raw.rfind("HTTP/1.1 200", 0) == 0);
    const auto messages = sse_messages(raw.substr(raw.find("\r\n\r\n")) + "\n");
    REQUIRE(messages.size() == 1);
    CHECK(messages[0].at("id") == 8);
    CHECK(messages[0].at("result").at("content").at(0).at("text") == "resumed");
  }

  TEST_CASE("a resumed stream idles after its request and ends with the session") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send(mcp_post(call_body(1, "x"), "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    const auto at = r->body.find("id: ");
    const std::string id = r->body.substr(at + 4, r->body.find('\n', at) - at - 4);
    raw_connection get(f.port(), 1000);
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
             "\r\nLast-Event-ID: " + id + "\r\n\r\n");
    const std::string head = get.read_until("\r\n\r\n");
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(get.read_until("0\r\n\r\n").find("0\r\n\r\n") == std::string::npos);  // still open
    c.send("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: " + sid + "\r\n\r\n");
    CHECK(c.read_response()->status == 200);
    raw_connection wait_longer(f.port());
    CHECK(get.read_until("0\r\n\r\n").find("0\r\n\r\n") != std::string::npos);  // ended by DELETE
  }

  TEST_CASE("a client that stops reading is cut off at the byte cap; the session goes on (B11)") {
    droid::http::options o;
    o.max_queued_bytes = 64 * 1024;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    raw_connection flood(f.port());
    flood.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood"}})",
                        "Mcp-Session-Id: " + sid + "\r\n"));
    // Whatever fit in the socket buffers arrives, then the server closes the connection
    // instead of queueing 20 MB for a reader that is not reading.
    std::string got;
    for (std::string piece; !(piece = flood.read_until("\n\n")).empty();) got += piece;
    CHECK(got.size() < 16u * 1024 * 1024);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  TEST_CASE("an answer larger than the byte cap reaches a client that reads it, as a stream or one document (B11)") {
    for (const bool json : {false, true}) {
      CAPTURE(json);
      droid::http::options o;
      o.max_queued_bytes = 64 * 1024;
      if (json) o.reply = droid::http::streaming::json;
      server_fixture f(o);
      raw_connection c(f.port());
      const std::string sid = f.initialize(c);
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":3000000}}})",
                      "Mcp-Session-Id: " + sid + "\r\n"));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      const auto messages = json ? std::vector<boost::json::value>{boost::json::parse(r->body)} : sse_messages(r->body);
      REQUIRE_FALSE(messages.empty());
      CHECK(messages.back().at("result").at("content").at(0).at("text").as_string().size() == 3'000'000);
    }
  }

  TEST_CASE("a resume replays more than the byte cap: what the store kept is what the client gets (B11)") {
    droid::http::options o;
    o.max_queued_bytes = 64 * 1024;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"chatty"}})",
                    "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();  // read as it comes, until the tool closes the stream
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(sse_messages(r->body).size() == 4);
    const auto at = r->body.find("id: ");
    REQUIRE(at != std::string::npos);
    const std::string priming = r->body.substr(at + 4, r->body.find('\n', at) - at - 4);
    // From the priming event: all four messages (200 KB) again, then the answer.
    raw_connection get(f.port());
    get.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
             "\r\nLast-Event-ID: " + priming + "\r\n\r\n");
    std::string raw = get.read_until("resumed\"");
    raw += get.read_until("\n\n");
    REQUIRE(raw.rfind("HTTP/1.1 200", 0) == 0);
    const auto messages = sse_messages(raw.substr(raw.find("\r\n\r\n")) + "\n");
    REQUIRE(messages.size() == 5);
    CHECK(messages.back().at("result").at("content").at(0).at("text") == "resumed");
  }

  TEST_CASE("a tool asks the client over the POST's stream and the answer comes on a later POST") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    raw_connection call(f.port());
    call.send(mcp_post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask"}})",
                       "Mcp-Session-Id: " + sid + "\r\n"));
    std::string question = call.read_until("sampling/createMessage");
    question += call.read_until("\n\n");
    CHECK(question.find("\"id\":1099511627776") != std::string::npos);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant","content":{"type":"text","text":"42"}}})",
                    "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 202);
    std::string answer = call.read_until("model said");
    answer += call.read_until("\n\n");
    CHECK(answer.find("\"id\":5") != std::string::npos);
    CHECK(answer.find(R"(\"text\":\"42\")") != std::string::npos);
  }

  TEST_CASE("in JSON mode a tool's question is refused at once, naming the setting") {
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask"}})",
                    "Mcp-Session-Id: " + sid + "\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    const auto v = boost::json::parse(r->body);
    CHECK(v.at("result").at("isError") == true);
    CHECK(std::string(v.at("result").at("content").at(0).at("text").as_string()).find("streaming::event_stream") !=
          std::string::npos);
  }

  TEST_CASE("a disconnect while a question is pending is not an end: the client resumes, answers, the tool completes") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    std::string priming;
    {
      raw_connection call(f.port());
      call.send(mcp_post(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask"}})",
                         "Mcp-Session-Id: " + sid + "\r\n"));
      const std::string head = call.read_until("sampling/createMessage");
      const auto at = head.find("id: ");
      REQUIRE(at != std::string::npos);
      priming = head.substr(at + 4, head.find('\n', at) - at - 4);
    }  // gone before answering
    raw_connection resumed(f.port());
    resumed.send("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
                 "\r\nLast-Event-ID: " + priming + "\r\n\r\n");
    std::string again = resumed.read_until("sampling/createMessage");  // the question, replayed
    again += resumed.read_until("\n\n");
    CHECK(again.find("\"id\":1099511627776") != std::string::npos);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant","content":{"type":"text","text":"late"}}})",
                    "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 202);
    std::string answer = resumed.read_until("model said");
    answer += resumed.read_until("\n\n");
    CHECK(answer.find("\"id\":6") != std::string::npos);
    CHECK(answer.find("late") != std::string::npos);
  }

  TEST_CASE("deleting the session releases a pending question") {
    server_fixture f;
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    raw_connection call(f.port());
    call.send(mcp_post(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask"}})",
                       "Mcp-Session-Id: " + sid + "\r\n"));
    (void)call.read_until("sampling/createMessage");
    c.send("DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: " + sid + "\r\n\r\n");
    CHECK(c.read_response()->status == 200);
    // The call's stream ends (no response: the session is gone) instead of hanging.
    CHECK(call.read_until("0\r\n\r\n").find("0\r\n\r\n") != std::string::npos);
  }

  TEST_CASE("legacy HTTP+SSE: the stream names the endpoint, POSTs get 202 and answers travel on the stream") {
    droid::http::options o;
    o.legacy_sse = true;
    server_fixture f(o);
    raw_connection stream(f.port());
    stream.send("GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
    std::string head = stream.read_until("event: endpoint\ndata: ");
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    const std::string endpoint = stream.read_until("\n");
    REQUIRE(endpoint.rfind("/messages?sessionId=", 0) == 0);
    const std::string path = endpoint.substr(0, endpoint.size() - 1);
    raw_connection c(f.port());
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"sampling":{}},"clientInfo":{"name":"old","version":"1"}}})",
                    {}, path));
    CHECK(c.read_response()->status == 202);
    std::string answer = stream.read_until("2024-11-05");
    answer += stream.read_until("\n\n");
    CHECK(answer.find("\"id\":0") != std::string::npos);
    // The exchange works over it through the same table.
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}})", {}, path));
    CHECK(c.read_response()->status == 202);
    (void)stream.read_until("sampling/createMessage");
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant","content":{"type":"text","text":"old"}}})",
                    {}, path));
    CHECK(c.read_response()->status == 202);
    std::string result = stream.read_until("model said");
    result += stream.read_until("\n\n");
    CHECK(result.find("\"id\":1") != std::string::npos);
    // A legacy session is not a Streamable HTTP session.
    const std::string sid = path.substr(path.find('=') + 1);
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("legacy HTTP+SSE: unknown, missing and malformed sessions; the session ends with its stream (A12)") {
    // The session holds a question when its stream goes, which shows it ended: the
    // question is released with session_ended only once the session is out of the table.
    droid::http::options o;
    o.legacy_sse = true;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
    c.send(mcp_post(ping, {}, "/messages?sessionId=unknown"));
    CHECK(c.read_response()->status == 404);
    c.send(mcp_post(ping, {}, "/messages"));
    CHECK(c.read_response()->status == 400);
    c.send(mcp_post(ping, {}, "/messages?sessionId=has%20space%7F"));
    CHECK(c.read_response()->status == 404);
    std::string path;
    {
      raw_connection stream(f.port());
      stream.send("GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
      (void)stream.read_until("data: ");
      path = stream.read_until("\n");
      path.pop_back();
      CHECK(f.listener->sessions() == 1);
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"sampling":{}},"clientInfo":{"name":"old","version":"1"}}})",
                      {}, path));
      CHECK(c.read_response()->status == 202);
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}})", {}, path));
      CHECK(c.read_response()->status == 202);
      (void)stream.read_until("sampling/createMessage");
    }  // the client hangs up
    REQUIRE(f.asks_ended.wait_for(1));
    CHECK(f.listener->sessions() == 0);
    c.send(mcp_post(ping, {}, path));
    CHECK(c.read_response()->status == 404);
  }

  TEST_CASE("legacy HTTP+SSE paths are off unless enabled, and checked for Host like the rest") {
    server_fixture f;
    raw_connection c(f.port());
    c.send("GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n");
    CHECK(c.read_response()->status == 404);
    droid::http::options o;
    o.legacy_sse = true;
    server_fixture g(o);
    raw_connection d(g.port());
    d.send("GET /sse HTTP/1.1\r\nHost: evil.com\r\nAccept: text/event-stream\r\n\r\n");
    CHECK(d.read_response()->status == 403);
  }

  TEST_CASE("without resumability a lost connection cancels its request and withdraws the question (E6a)") {
    droid::http::options o;
    o.event_ring_capacity = 0;
    server_fixture f(o);
    raw_connection c(f.port());
    const std::string sid = f.initialize(c, R"({"sampling":{}})");
    {
      raw_connection call(f.port());
      call.send(mcp_post(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask"}})",
                         "Mcp-Session-Id: " + sid + "\r\n"));
      (void)call.read_until("sampling/createMessage");
    }
    // The server watches the stream's connection, so the hang-up is seen at once, not at
    // the next write (docs/reliability.md, E6a: released within 1 s).
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.asks_cancelled.wait_for(1));
    CHECK(f.asks_cancelled.value() == 1);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":7,"method":"ping"})", "Mcp-Session-Id: " + sid + "\r\n"));
    CHECK(c.read_response()->status == 200);  // the session goes on
  }

  TEST_CASE("stopping the server releases a pending question with session_ended") {
    auto f = std::make_unique<server_fixture>();
    raw_connection c(f->port());
    const std::string sid = f->initialize(c, R"({"sampling":{}})");
    raw_connection call(f->port());
    call.send(mcp_post(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask"}})",
                       "Mcp-Session-Id: " + sid + "\r\n"));
    (void)call.read_until("sampling/createMessage");
    droid::http::listener& l = *f->listener;
    droid::test::event_count& ended = f->asks_ended;
    l.stop();
    f->runner.join();
    CHECK(ended.value() == 1);
    f->runner = std::thread([] {});
  }
}
