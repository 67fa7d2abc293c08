// SPDX-License-Identifier: BSL-1.0
/// @file
/// A listener protected by bearer tokens whose verifier is a table: what the auth and
/// tenant-limit suites (auth_test.cpp, tenants_test.cpp) build their cases from. What is
/// under test is what the transport does with a verdict; the JWT verifier itself is
/// tested in test/unit/adapters/auth/.
#pragma once

#include <droid/adapters/primary/transport/http/http.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <doctest/doctest.h>

#include <droid/adapters/secondary/auth/token_verifier.hpp>
#include <droid/application/server/server.hpp>

#include "events.hpp"
#include "http_client.hpp"

namespace droid::test::auth {

using droid::test::mcp_post;
using droid::test::raw_connection;

/// Tokens by name: "alice" (scope read), "alice-admin" (read admin), "bob" (read),
/// "carol" (no scope), "down" (the verifier cannot decide); anything else has a bad
/// signature.
struct table_verifier final : droid::auth::token_verifier {
  std::atomic<int> calls{0};

  droid::task<droid::auth::verification> verify(std::string token, asio::any_io_executor) override {
    ++calls;
    droid::auth::verification v;
    const auto make = [](std::string subject, std::vector<std::string> scopes) {
      auto p = std::make_shared<droid::principal>();
      p->issuer = "https://as.example";
      p->subject = std::move(subject);
      p->scopes = std::move(scopes);
      p->claims["tenant"] = "blue";
      p->expires_at = std::chrono::system_clock::now() + std::chrono::hours(1);
      return p;
    };
    if (token == "alice") v.who = make("alice", {"read"});
    else if (token == "alice-admin") v.who = make("alice", {"read", "admin"});
    else if (token == "bob") v.who = make("bob", {"read"});
    else if (token == "carol") v.who = make("carol", {});
    else if (token == "down") {
      v.error = droid::auth::token_error::unavailable;
      v.description = "the key set could not be fetched";
    } else {
      v.error = droid::auth::token_error::bad_signature;
      v.description = "the signature does not verify";
    }
    co_return v;
  }
};

struct wait_args {
  int ms = 0;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))

struct size_args {
  int bytes = 0;
};
BOOST_DESCRIBE_STRUCT(size_args, (), (bytes))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

struct auth_fixture {
  droid::server srv;
  std::shared_ptr<table_verifier> verifier = std::make_shared<table_verifier>();
  /// Raised by `wait` as it begins: its call was admitted and holds its request slot.
  droid::test::event_count waits_started;
  /// Raised by `wait` when its sleep is over (run out, or cancelled).
  droid::test::event_count waits_ended;
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  /// `json`: every answer one JSON document (no stream to resume, so a client that hangs
  /// up cancels its call); false keeps `opts.reply`.
  explicit auth_fixture(droid::http::options opts = {}, droid::server_options so = {}, bool json = true)
      : srv(droid::server_info{.name = "auth-test", .version = "1"}, std::move(so)) {
    srv.tool("whoami", "Says who calls", [](droid::tool_context& ctx) -> droid::task<std::string> {
      const droid::principal* p = ctx.principal();
      const droid::request_origin* o = ctx.origin();
      std::string out = p ? p->subject : std::string("nobody");
      if (p) {
        for (const std::string& s : p->scopes) out.append(" +").append(s);
        if (const auto* t = p->claims.if_contains("tenant")) out.append(" tenant=").append(t->as_string().c_str());
      }
      if (o) {
        out.append(" from=").append(o->remote_address);
        if (const std::string* ua = o->header("user-agent")) out.append(" ua=").append(*ua);
      }
      co_return out;
    });
    droid::tool_info admin;
    admin.name = "admin_reset";
    admin.description = "Resets everything";
    admin.required_scopes = {"admin"};
    srv.tool(std::move(admin), [](droid::tool_context&) -> droid::task<std::string> { co_return "reset"; });
    srv.tool("wait", "Waits", [this](droid::tool_context& ctx, wait_args a) -> droid::task<std::string> {
      waits_started.raise();
      (void)co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      waits_ended.raise();
      co_return "waited";
    });
    srv.tool("ask_name", "Asks the user's name", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      co_return "Hello " + answer->content->name;
    });
    srv.tool("big", "Answers with `bytes` bytes of text", [](droid::tool_context&, size_args a) -> droid::task<std::string> {
      co_return std::string(static_cast<std::size_t>(a.bytes), 'b');
    });
    droid::tool_info confirm{.name = "confirm", .description = "Works a while", .tasks = droid::task_support::optional};
    srv.tool(confirm, [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.sleep(std::chrono::milliseconds(50));
      co_return "done";
    });
    opts.threads = 2;
    if (json) opts.reply = droid::http::streaming::json;
    opts.auth.verifier = verifier;
    opts.auth.authorization_servers = {"https://as.example"};
    opts.auth.scopes_supported = {"read", "admin"};
    opts.auth.required_scopes = {"read"};
    opts.auth.resource_name = "Auth test";
    opts.forwarded_headers = {"user-agent"};
    listener = std::make_unique<droid::http::listener>(srv, opts);
    runner = std::thread([this] { listener->run(); });
  }
  ~auth_fixture() {
    listener->stop();
    runner.join();
  }
  [[nodiscard]] std::uint16_t port() const { return listener->port(); }
  [[nodiscard]] std::string base() const { return "http://127.0.0.1:" + std::to_string(port()); }
};

inline std::string bearer(std::string_view token) { return "Authorization: Bearer " + std::string(token) + "\r\n"; }

inline const std::string initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

inline std::string call_body(int id, std::string_view tool, std::string_view args = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" +
         std::string(tool) + R"(","arguments":)" + std::string(args) + "}}";
}

/// A 2026-07-28 request's body and headers.
inline std::string modern_post(int id, std::string_view tool, std::string_view token) {
  const std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                           R"(,"method":"tools/call","params":{"name":")" + std::string(tool) +
                           R"(","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
  std::string extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: ";
  extra.append(tool).append("\r\n");
  if (!token.empty()) extra += bearer(token);
  return mcp_post(body, extra);
}

/// A 2026-07-28 request of `method` with params `members` (no braces) and client
/// capabilities `caps`; `name` goes in Mcp-Name.
inline std::string modern_request(int id, std::string_view method, std::string_view name, std::string_view members,
                           std::string_view caps, std::string_view token) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
                     R"(","params":{)" + std::string(members) +
                     R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                     R"("io.modelcontextprotocol/clientCapabilities":)" + std::string(caps) + "}}}";
  std::string extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " + std::string(method) + "\r\nMcp-Name: ";
  extra.append(name).append("\r\n").append(bearer(token));
  return mcp_post(body, extra);
}

inline std::string result_text(const std::string& body) {
  const auto v = boost::json::parse(body);
  return std::string(v.at("result").at("content").at(0).at("text").as_string());
}

/// A request's answer through a connection of its own.
inline std::optional<droid::test::http_response> ask(std::uint16_t port, const std::string& request) {
  raw_connection c(port);
  c.send(request);
  return c.read_response();
}

/// Opens a legacy HTTP+SSE stream on `stream` as `token`; returns the path its endpoint
/// event names (where the session's messages are POSTed).
inline std::string legacy_endpoint_of(raw_connection& stream, std::string_view token) {
  stream.send("GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + bearer(token) + "\r\n");
  const std::string head = stream.read_until("\n\n");
  const auto at = head.find("/messages?sessionId=");
  REQUIRE(at != std::string::npos);
  return head.substr(at, head.find('\n', at) - at);
}

inline std::string session_of(raw_connection& c, std::string_view token) {
  c.send(mcp_post(initialize_body, bearer(token)));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(r->header("mcp-session-id"));
  return *r->header("mcp-session-id");
}

}  // namespace droid::test::auth
