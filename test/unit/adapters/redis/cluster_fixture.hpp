// SPDX-License-Identifier: BSL-1.0
/// @file
/// Instances of one server sharing their sessions through a real redis-server, in one
/// test process: what the cluster suites (cluster_test.cpp, cluster_invariants_test.cpp)
/// build their cases from. Each instance has its own server and listener, as another
/// process would.
#pragma once

#include <droid/adapters/primary/transport/http/http.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>

#include "http_client.hpp"
#include "redis_server.hpp"

namespace droid::test::cluster {

using droid::test::mcp_post;
using droid::test::raw_connection;


/// How long a read may wait for what the server must send: a guard against a hang, never
/// a wait (ThreadSanitizer and a loaded machine make forwarded answers slow, and 5 s, the
/// client's default, was seen to be too short under them).
constexpr int guard_ms = 30'000;

struct text_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(text_args, (), (text))

struct wait_args {
  int ms = 0;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

/// One instance: its own server and listener, as another process would have.
struct instance {
  droid::server srv{droid::server_info{.name = "cluster-test", .version = "1"}};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  /// `tweak` changes the listener's options before it starts (authentication, say).
  instance(const std::string& redis_url, const std::string& name,
           std::chrono::milliseconds idle = std::chrono::minutes(5),
           const std::function<void(droid::http::options&)>& tweak = {}) {
    srv.tool("echo", "Echoes", [](droid::tool_context& ctx, text_args a) -> droid::task<droid::tool_result> {
      co_await ctx.progress(1, 1, "echoing");
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("whoami", "Says what the session knows of its client",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               const droid::peer_info& p = ctx.peer();
               std::string level = p.min_log_level ? std::string(droid::to_string(*p.min_log_level)) : "none";
               co_return boost::json::serialize(p.client_info.at("name")) + " " + p.protocol_version + " " +
                   (p.has_capability("sampling") ? "sampling" : "-") + " " + level;
             });
    srv.tool("principal", "Says who the caller is, as the tool sees it",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               const droid::principal* p = ctx.principal();
               if (!p) co_return "nobody";
               std::string out = p->subject;
               for (const std::string& scope : p->scopes) out.append(" +").append(scope);
               if (const auto* t = p->claims.if_contains("tenant")) out.append(" tenant=").append(t->as_string().c_str());
               if (const droid::request_origin* o = ctx.origin(); o && !o->remote_address.empty()) out.append(" from=ip");
               co_return out;
             });
    srv.tool("wait", "Waits, then answers", [](droid::tool_context& ctx, wait_args a) -> droid::task<std::string> {
      co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      co_return "waited";
    });
    srv.tool("ask", "Asks the client's model", [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":1})");
      if (!answer) co_return droid::tool_result::error(answer.error().message);
      co_return droid::tool_result::text("model said " + droid::ir::to_json_text(answer.value().at("content")));
    });
    // A task (2026-07-28 extension): asks a name, then greets, or with "wait" runs on.
    droid::tool_info confirm{.name = "confirm", .description = "Asks, then works", .tasks = droid::task_support::optional};
    srv.tool(confirm, [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      if (answer->content->name == "wait") (void)co_await ctx.sleep(std::chrono::seconds(30));
      co_return "Hello " + answer->content->name;
    });
    droid::http::options o;
    o.threads = 2;
    o.session_idle_timeout = idle;
    o.cluster.redis_url = redis_url;
    o.cluster.instance_id = name;
    o.cluster.heartbeat = std::chrono::milliseconds(100);
    o.cluster.instance_ttl = std::chrono::milliseconds(400);
    o.cluster.redis_timeout = std::chrono::milliseconds(300);
    if (tweak) tweak(o);
    listener = std::make_unique<droid::http::listener>(srv, o);
    runner = std::thread([this] { listener->run(); });
  }
  ~instance() { stop(); }
  void stop() {
    if (!listener) return;
    listener->stop();
    runner.join();
    listener.reset();
  }
  [[nodiscard]] std::uint16_t port() const { return listener->port(); }
};

inline std::string initialize(raw_connection& c, const std::string& capabilities = "{}") {
  c.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":)" +
                  capabilities + R"(,"clientInfo":{"name":"cluster-client","version":"1"}}})"));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const std::string* sid = r->header("mcp-session-id");
  REQUIRE(sid);
  return *sid;
}

/// The output of `redis-cli` against `redis` (trimmed), one argument per element.
inline std::string redis_cli(const droid::test::redis_server& redis, const std::vector<std::string>& args) {
  std::string command = "redis-cli -p " + std::to_string(redis.port()) + " --raw";
  for (const std::string& a : args) {
    command += " '";
    for (char ch : a) command += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    command += '\'';
  }
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

/// Reads `c`'s response up to its first event (the priming event) and returns that
/// event's id: what a client resumes the stream from.
inline std::string first_event_id(raw_connection& c) {
  const std::string head = c.read_until("\n\n");
  const auto at = head.find("id: ");
  REQUIRE(at != std::string::npos);
  return head.substr(at + 4, head.find('\n', at) - at - 4);
}

/// Resumes session `sid`'s stream after `event` through the instance on `port`, and
/// returns what came until `until` (or the guard).
inline std::string resume(std::uint16_t port, const std::string& sid, const std::string& event,
                          std::string_view until) {
  raw_connection resumed(port, guard_ms);
  resumed.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid +
               "\r\nLast-Event-ID: " + event + "\r\n\r\n");
  return resumed.read_until(until);
}

inline std::string session_header(const std::string& sid) { return "Mcp-Session-Id: " + sid + "\r\n"; }

inline std::string call(int id, const std::string& tool, const std::string& arguments = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":)" + arguments + R"(,"_meta":{"progressToken":1}}})";
}

/// The JSON-RPC messages of an SSE body, parsed (priming events skipped).
inline std::vector<boost::json::value> sse_messages(const std::string& body) {
  std::vector<boost::json::value> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    if (end > at + 6) out.push_back(boost::json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

/// A 2026-07-28 request about task `task` (or creating one), as the client sends it.
constexpr std::string_view task_caps = R"({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";
inline std::string modern_request(int id, std::string_view method, std::string_view members) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) + R"(","params":{)" +
         std::string(members) + R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)" +
         R"("io.modelcontextprotocol/clientCapabilities":)" + std::string(task_caps) + "}}}";
}
inline std::string modern_headers(std::string_view method, std::string_view name) {
  return "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " + std::string(method) + "\r\nMcp-Name: " +
         std::string(name) + "\r\n";
}
/// Sends a 2026 request to `port` and returns its one JSON-RPC answer.
inline boost::json::value modern(std::uint16_t port, int id, std::string_view method, std::string_view name,
                          std::string_view members) {
  raw_connection c(port, guard_ms);
  c.send(mcp_post(modern_request(id, method, members), modern_headers(method, name)));
  auto r = c.read_response();
  REQUIRE(r);
  const std::string* type = r->header("content-type");
  REQUIRE(type);
  if (*type == "application/json") return boost::json::parse(r->body);
  const auto messages = sse_messages(r->body);
  REQUIRE_FALSE(messages.empty());
  return messages.back();
}

/// The text of the tool result in `messages`' last message.
inline std::string result_text(const std::vector<boost::json::value>& messages) {
  REQUIRE_FALSE(messages.empty());
  const auto& last = messages.back().as_object();
  REQUIRE(last.contains("result"));
  return std::string(last.at("result").at("content").at(0).at("text").as_string());
}


}  // namespace droid::test::cluster
