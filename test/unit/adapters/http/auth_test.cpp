// SPDX-License-Identifier: BSL-1.0
/// @file
/// The HTTP listener as an OAuth 2.1 resource server (docs/security.md): Protected
/// Resource Metadata, the 401/400/503 answers and their challenges, per-tool scopes
/// (403 `insufficient_scope`), sessions, request state and tasks bound to the
/// principal, what a tool sees of its caller, the token cache and the request limit.
///
/// The verifier here is a table of tokens: what is under test is what the transport
/// does with a verdict. The JWT verifier itself is tested in test/unit/adapters/auth/.
#include <droid/adapters/primary/transport/http/http.hpp>

#include <atomic>
#include <chrono>
#include <memory>
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

using droid::test::mcp_post;
using droid::test::raw_connection;

namespace {

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

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

struct auth_fixture {
  droid::server srv;
  std::shared_ptr<table_verifier> verifier = std::make_shared<table_verifier>();
  /// Raised by `wait` as it begins: its call was admitted and holds its request slot.
  droid::test::event_count waits_started;
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  explicit auth_fixture(droid::http::options opts = {}, droid::server_options so = {})
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
      co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      co_return "waited";
    });
    srv.tool("ask_name", "Asks the user's name", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      co_return "Hello " + answer->content->name;
    });
    droid::tool_info confirm{.name = "confirm", .description = "Works a while", .tasks = droid::task_support::optional};
    srv.tool(confirm, [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.sleep(std::chrono::milliseconds(50));
      co_return "done";
    });
    opts.threads = 2;
    opts.reply = droid::http::streaming::json;
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

std::string bearer(std::string_view token) { return "Authorization: Bearer " + std::string(token) + "\r\n"; }

const std::string initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

std::string call_body(int id, std::string_view tool, std::string_view args = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" +
         std::string(tool) + R"(","arguments":)" + std::string(args) + "}}";
}

/// A 2026-07-28 request's body and headers.
std::string modern_post(int id, std::string_view tool, std::string_view token) {
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
std::string modern_request(int id, std::string_view method, std::string_view name, std::string_view members,
                           std::string_view caps, std::string_view token) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
                     R"(","params":{)" + std::string(members) +
                     R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                     R"("io.modelcontextprotocol/clientCapabilities":)" + std::string(caps) + "}}}";
  std::string extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " + std::string(method) + "\r\nMcp-Name: ";
  extra.append(name).append("\r\n").append(bearer(token));
  return mcp_post(body, extra);
}

std::string result_text(const std::string& body) {
  const auto v = boost::json::parse(body);
  return std::string(v.at("result").at("content").at(0).at("text").as_string());
}

std::string session_of(raw_connection& c, std::string_view token) {
  c.send(mcp_post(initialize_body, bearer(token)));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(r->header("mcp-session-id"));
  return *r->header("mcp-session-id");
}

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("auth: Protected Resource Metadata at the path-aware and the root well-known URIs, public") {
    auth_fixture f;
    for (const std::string path : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
      raw_connection c(f.port());
      c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://elsewhere.example\r\n\r\n");
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      REQUIRE(r->header("access-control-allow-origin"));
      CHECK(*r->header("access-control-allow-origin") == "*");
      const auto meta = boost::json::parse(r->body).as_object();
      CHECK(meta.at("resource").as_string() == f.base() + "/mcp");
      CHECK(boost::json::serialize(meta.at("authorization_servers")) == R"(["https://as.example"])");
      CHECK(boost::json::serialize(meta.at("scopes_supported")) == R"(["read","admin"])");
      CHECK(boost::json::serialize(meta.at("bearer_methods_supported")) == R"(["header"])");
      CHECK(meta.at("resource_name").as_string() == "Auth test");
    }
    raw_connection c(f.port());
    c.send("POST /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 405);
  }

  TEST_CASE("auth: no token, a bad token, a token in the URL, an unavailable verifier: each answer and challenge") {
    auth_fixture f;
    const std::string metadata = "resource_metadata=\"" + f.base() + "/.well-known/oauth-protected-resource/mcp\"";
    raw_connection c(f.port());

    c.send(mcp_post(initialize_body));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    REQUIRE(r->header("www-authenticate"));
    CHECK(*r->header("www-authenticate") == "Bearer " + metadata + ", scope=\"read\"");
    CHECK(r->body.find("-32600") != std::string::npos);

    c.send(mcp_post(initialize_body, bearer("forged")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    REQUIRE(r->header("www-authenticate"));
    CHECK(*r->header("www-authenticate") ==
          "Bearer error=\"invalid_token\", error_description=\"the signature does not verify\", " + metadata);

    c.send(mcp_post(initialize_body, "Authorization: Basic YWxpY2U6c2VjcmV0\r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    CHECK(r->header("www-authenticate")->find("error=") == std::string::npos);

    c.send(mcp_post(initialize_body, "Authorization: Bearer   \r\n"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(r->header("www-authenticate")->find("error=\"invalid_request\"") != std::string::npos);

    // Never from the query string, even a valid token, even beside a header.
    c.send(mcp_post(initialize_body, bearer("alice"), "/mcp?access_token=alice"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(r->header("www-authenticate")->find("invalid_request") != std::string::npos);

    c.send(mcp_post(initialize_body, bearer("alice") + bearer("bob")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 400);

    // A valid token without the scope every request needs: 403, asking for it.
    c.send(mcp_post(initialize_body, bearer("carol")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(r->header("www-authenticate")->starts_with("Bearer error=\"insufficient_scope\""));
    CHECK(r->header("www-authenticate")->find("scope=\"read\"") != std::string::npos);

    c.send(mcp_post(initialize_body, bearer("down")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    REQUIRE(r->header("retry-after"));
    CHECK(*r->header("retry-after") == "5");

    // GET and DELETE are behind the same gate.
    c.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: x\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    c.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: x\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);

    // A CORS preflight carries no credentials and is answered before the gate.
    c.send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://localhost:3000\r\n"
           "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 204);
  }

  TEST_CASE("auth: the tool sees its caller; a session belongs to the principal that opened it") {
    auth_fixture f;
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    const std::string in_session = "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";

    c.send(mcp_post(call_body(1, "whoami"), in_session + bearer("alice") + "User-Agent: auth-test/1\r\n"));
    auto r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(result_text(r->body) == "alice +read tenant=blue from=127.0.0.1 ua=auth-test/1");

    // A refreshed token of the same principal, with more scopes: the same session, and
    // the tool sees this request's scopes.
    c.send(mcp_post(call_body(2, "whoami"), in_session + bearer("alice-admin")));
    r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(result_text(r->body) == "alice +read +admin tenant=blue from=127.0.0.1");

    // Bob's token on Alice's session: refused, whatever the method.
    c.send(mcp_post(call_body(3, "whoami"), in_session + bearer("bob")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(r->body.find("another principal") != std::string::npos);
    c.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + in_session + bearer("bob") + "\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    c.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + in_session + bearer("bob") + "\r\n");
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    // ... and the session lives on for Alice.
    c.send(mcp_post(call_body(4, "whoami"), in_session + bearer("alice")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  TEST_CASE("auth: a tool's required scopes: 403 insufficient_scope naming them, in both eras") {
    auth_fixture f;
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    const std::string in_session = "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";

    c.send(mcp_post(call_body(1, "admin_reset"), in_session + bearer("alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    REQUIRE(r->header("www-authenticate"));
    const std::string& challenge = *r->header("www-authenticate");
    CHECK(challenge.starts_with("Bearer error=\"insufficient_scope\""));
    // What the token has plus what the tool needs: a step-up keeps the other scopes.
    CHECK(challenge.find("scope=\"read admin\"") != std::string::npos);
    CHECK(challenge.find("resource_metadata=") != std::string::npos);
    CHECK(boost::json::parse(r->body).at("id").as_int64() == 1);

    c.send(mcp_post(call_body(2, "admin_reset"), in_session + bearer("alice-admin")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(result_text(r->body) == "reset");

    // 2026-07-28: no session, the same rule.
    c.send(modern_post(3, "admin_reset", "alice"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(r->header("www-authenticate")->find("insufficient_scope") != std::string::npos);
    c.send(modern_post(4, "admin_reset", "alice-admin"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    c.send(modern_post(5, "whoami", ""));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    c.send(modern_post(6, "whoami", "bob"));
    r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(result_text(r->body).starts_with("bob +read"));
  }

  TEST_CASE("auth: a 2026 requestState and a task are bound to the principal that started them") {
    auth_fixture f;
    raw_connection c(f.port());
    const std::string caps = R"({"elicitation":{}})";
    c.send(modern_request(1, "tools/call", "ask_name", R"("name":"ask_name","arguments":{})", caps, "alice"));
    auto r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    const auto first = boost::json::parse(r->body);
    REQUIRE(first.at("result").at("resultType") == "input_required");
    const std::string state(first.at("result").at("requestState").as_string());
    const std::string retry = R"("name":"ask_name","arguments":{},"inputResponses":{"user_name":{"action":"accept",)"
                              R"("content":{"name":"Ada"}}},"requestState":")" + state + '"';
    // Bob presents Alice's state (a leaked URL, a shared log): refused, and Alice's
    // round is untouched.
    c.send(modern_request(2, "tools/call", "ask_name", retry, caps, "bob"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->body.find("issued to another principal") != std::string::npos);
    c.send(modern_request(3, "tools/call", "ask_name", retry, caps, "alice"));
    r = c.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(result_text(r->body) == "Hello Ada");

    const std::string task_caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";
    c.send(modern_request(4, "tools/call", "confirm", R"("name":"confirm","arguments":{})", task_caps, "alice"));
    r = c.read_response();
    REQUIRE(r);
    const auto created = boost::json::parse(r->body);
    REQUIRE(created.at("result").at("resultType") == "task");
    const std::string task(created.at("result").at("taskId").as_string());
    const std::string get = R"("taskId":")" + task + '"';
    c.send(modern_request(5, "tasks/get", task, get, task_caps, "bob"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(boost::json::parse(r->body).as_object().contains("error"));  // as if there were no such task
    c.send(modern_request(6, "tasks/get", task, get, task_caps, "alice"));
    r = c.read_response();
    REQUIRE(r);
    CHECK(boost::json::parse(r->body).at("result").at("taskId").as_string() == task.c_str());
  }

  TEST_CASE("auth: the legacy HTTP+SSE transport is behind the same gate, its session bound the same way") {
    droid::http::options opts;
    opts.legacy_sse = true;
    auth_fixture f(opts);
    raw_connection anonymous(f.port());
    anonymous.send("GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
    auto r = anonymous.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);

    raw_connection stream(f.port());
    stream.send("GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + bearer("alice") + "\r\n");
    const std::string head = stream.read_until("\n\n");
    const auto at = head.find("/messages?sessionId=");
    REQUIRE(at != std::string::npos);
    const std::string path = head.substr(at, head.find('\n', at) - at);
    raw_connection post(f.port());
    post.send(mcp_post(initialize_body, bearer("bob"), path));
    r = post.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    post.send(mcp_post(initialize_body, "", path));
    r = post.read_response();
    REQUIRE(r);
    CHECK(r->status == 401);
    post.send(mcp_post(initialize_body, bearer("alice"), path));
    r = post.read_response();
    REQUIRE(r);
    CHECK(r->status == 202);
    std::string events;
    for (int i = 0; i < 3 && events.find("\"protocolVersion\"") == std::string::npos; ++i) events += stream.read_until("\n\n");
    CHECK(events.find("\"protocolVersion\"") != std::string::npos);
    post.send(mcp_post(call_body(1, "admin_reset"), bearer("alice"), path));
    r = post.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(r->header("www-authenticate")->find("insufficient_scope") != std::string::npos);
  }

  TEST_CASE("auth: tools/list hides what the caller may not call when the server says so") {
    const auto names = [](const std::string& body) {
      std::string out;
      const boost::json::value doc = boost::json::parse(body);
      for (const auto& t : doc.at("result").at("tools").as_array())
        out.append(t.at("name").as_string().c_str()).append(" ");
      return out;
    };
    const std::string list = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";
    {
      auth_fixture f;
      raw_connection c(f.port());
      const std::string sid = session_of(c, "alice");
      c.send(mcp_post(list, "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice")));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(names(r->body) == "admin_reset ask_name confirm wait whoami ");
    }
    droid::server_options so;
    so.hide_unauthorized_tools = true;
    auth_fixture f({}, so);
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(list, "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(names(r->body) == "ask_name confirm wait whoami ");
    c.send(mcp_post(list, "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice-admin")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(names(r->body) == "admin_reset ask_name confirm wait whoami ");
  }

  TEST_CASE("auth: a verified token is remembered per shard, not verified on every request") {
    auth_fixture f;
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    for (int i = 1; i <= 5; ++i) {
      c.send(mcp_post(call_body(i, "whoami"), "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice")));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
    }
    // One connection stays on one shard: the initialize and five calls cost one check.
    CHECK(f.verifier->calls.load() == 1);
    // A refused token is not remembered: each try is checked again.
    for (int i = 0; i < 2; ++i) {
      c.send(mcp_post(initialize_body, bearer("forged")));
      auto r = c.read_response();
      REQUIRE(r);
      CHECK(r->status == 401);
    }
    CHECK(f.verifier->calls.load() == 3);
  }

  TEST_CASE("auth: one principal's requests in progress are capped (429 with Retry-After); others go on") {
    droid::http::options opts;
    opts.max_requests_per_principal = 2;
    auth_fixture f(opts);
    raw_connection c0(f.port());
    const std::string sid = session_of(c0, "alice");
    const std::string in_session = "Mcp-Session-Id: " + sid + "\r\n";
    raw_connection c1(f.port()), c2(f.port()), c3(f.port()), c4(f.port());
    c1.send(mcp_post(call_body(1, "wait", R"({"ms":600})"), in_session + bearer("alice")));
    c2.send(mcp_post(call_body(2, "wait", R"({"ms":600})"), in_session + bearer("alice")));
    // Both calls admitted: each holds its slot from its admission to its answer.
    REQUIRE(f.waits_started.wait_for(2));
    c3.send(mcp_post(call_body(3, "whoami"), in_session + bearer("alice")));
    auto r = c3.read_response();
    REQUIRE(r);
    CHECK(r->status == 429);
    REQUIRE(r->header("retry-after"));
    // Bob is not Alice: his requests go through meanwhile.
    const std::string bob_sid = session_of(c4, "bob");
    c4.send(mcp_post(call_body(1, "whoami"), "Mcp-Session-Id: " + bob_sid + "\r\n" + bearer("bob")));
    r = c4.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    for (raw_connection* c : {&c1, &c2}) {
      r = c->read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
      // Answered before the gate (it takes no slot), and read only once the call before
      // it on this connection has let its slot go, which its answer arriving does not say.
      c->send("OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      r = c->read_response();
      REQUIRE(r);
      CHECK(r->status == 204);
    }
    // The slots came back with the answers.
    c3.send(mcp_post(call_body(4, "whoami"), in_session + bearer("alice")));
    r = c3.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  TEST_CASE("auth: settings that cannot protect anything are refused at construction") {
    droid::server srv(droid::server_info{.name = "t", .version = "1"});
    droid::http::options opts;
    opts.auth.verifier = std::make_shared<table_verifier>();
    CHECK_THROWS_AS(droid::http::listener(srv, opts), std::invalid_argument);  // no authorization server
    opts.auth.authorization_servers = {"https://as.example"};
    opts.auth.resource = "mcp.example.com/mcp";
    CHECK_THROWS_AS(droid::http::listener(srv, opts), std::invalid_argument);  // no URL
    opts.auth.resource = "https://mcp.example.com/mcp#x";
    CHECK_THROWS_AS(droid::http::listener(srv, opts), std::invalid_argument);  // a fragment
    opts.auth.resource = "https://mcp.example.com/mcp";
    droid::http::listener ok(srv, opts);
    CHECK(ok.port() != 0);
  }
}
