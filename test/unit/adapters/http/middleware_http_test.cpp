// SPDX-License-Identifier: BSL-1.0
/// @file
/// Middleware over Streamable HTTP, with authentication: a 2025 session and 2026 requests
/// go through the same chain; a middleware sees the principal the transport verified,
/// its refusal is the JSON-RPC answer, and the rate limiter's is 429 with Retry-After per
/// principal.
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>
#include <optional>
#include <string>

#include <boost/json/parse.hpp>

#include <droid/application/middleware/rate_limit.hpp>

#include "auth_fixture.hpp"

using namespace droid::test::auth;
namespace mw = droid::middleware;

namespace {

std::string in_session(const std::string& sid, std::string_view token) {
  return "Mcp-Session-Id: " + sid + "\r\n" + bearer(token);
}

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("middleware over HTTP: both eras through one chain, with the verified principal; refuse and rewrite") {
    auth_fixture f;
    int admin_seen = 0;
    f.srv.use([&admin_seen](mw::request& req, mw::next next) -> droid::task<mw::response> {
      if (req.method() != "tools/call") co_return co_await next(req);
      if (req.name() == "admin_reset") ++admin_seen;
      if (req.name() == "ask_name") co_return mw::response::error(-32001, "not here", boost::json::value(req.tenant()));
      mw::response r = co_await next(req);
      boost::json::object result = r.result();
      result["content"].as_array().push_back(
          {{"type", "text"}, {"text", std::string(req.modern() ? "2026 " : "2025 ") + std::string(req.address())}});
      r.set_result(std::move(result));
      co_return r;
    });
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(call_body(1, "whoami"), in_session(sid, "alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    auto v = boost::json::parse(r->body);
    CHECK(v.at("result").at("content").at(0).at("text").as_string().starts_with("alice"));
    CHECK(v.at("result").at("content").at(1).at("text") == "2025 127.0.0.1");

    r = ask(f.port(), modern_post(2, "whoami", "bob"));
    REQUIRE(r);
    CHECK(r->status == 200);
    const auto at = r->body.rfind("data: ");
    v = boost::json::parse(at == std::string::npos ? r->body : r->body.substr(at + 6));
    CHECK(v.at("result").at("content").at(1).at("text") == "2026 127.0.0.1");
    CHECK(v.at("result").at("resultType") == "complete");

    // The transport's checks come first: a scope the token lacks is refused (403) before
    // the chain sees the request.
    c.send(mcp_post(call_body(3, "admin_reset"), in_session(sid, "alice")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK(admin_seen == 0);

    c.send(mcp_post(call_body(3, "ask_name"), in_session(sid, "alice")));
    r = c.read_response();
    REQUIRE(r);
    v = boost::json::parse(r->body);
    CHECK(v.at("id") == 3);
    CHECK(v.at("error").at("code") == -32001);
    CHECK(v.at("error").at("data").as_string().ends_with("alice"));
  }

  TEST_CASE("the rate limiter over HTTP: 429 with Retry-After and the JSON-RPC error, per principal, in both eras") {
    auth_fixture f;
    mw::rate_limit_options o;
    o.per_second = 0.5;  // a token every two seconds
    o.burst = 1;
    o.key = [](const mw::request& req) -> std::optional<std::string> {
      if (req.method() != "tools/call") return std::nullopt;
      return std::string(req.tenant());
    };
    f.srv.use(mw::rate_limit(o));
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(call_body(1, "whoami"), in_session(sid, "alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    c.send(mcp_post(call_body(2, "whoami"), in_session(sid, "alice")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 429);
    REQUIRE(r->header("retry-after"));
    CHECK(*r->header("retry-after") == "2");
    auto v = boost::json::parse(r->body);
    CHECK(v.at("id") == 2);
    CHECK(v.at("error").at("code") == -32600);
    CHECK(v.at("error").at("data").at("retryAfterMs").to_number<int>() > 1000);
    // The connection and the session go on: a ping is not counted.
    c.send(mcp_post(R"({"jsonrpc":"2.0","id":3,"method":"ping"})", in_session(sid, "alice")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);

    // Bob's share is his own; his second 2026 call is refused the same way.
    r = ask(f.port(), modern_post(4, "whoami", "bob"));
    REQUIRE(r);
    CHECK(r->status == 200);
    r = ask(f.port(), modern_post(5, "whoami", "bob"));
    REQUIRE(r);
    CHECK(r->status == 429);
    CHECK(r->header("retry-after"));
    v = boost::json::parse(r->body);
    CHECK(v.at("id") == 5);
    CHECK(v.at("error").at("code") == -32600);
  }

  TEST_CASE("a refusal for a limit on an event-stream response: 429 before the stream starts") {
    auth_fixture f({}, {}, /*json=*/false);
    f.srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
      if (req.method() == "tools/call") co_return mw::response::refuse(429, -32600, "slow down", std::chrono::seconds(7));
      co_return co_await next(req);
    });
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(call_body(1, "whoami"), in_session(sid, "alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 429);
    REQUIRE(r->header("retry-after"));
    CHECK(*r->header("retry-after") == "7");
    CHECK(r->body.find("slow down") != std::string::npos);
  }

  TEST_CASE("middleware over HTTP: order, timing and a middleware that throws, in a session and on the legacy transport") {
    droid::http::options opts;
    opts.legacy_sse = true;
    auth_fixture f(opts);
    std::vector<std::string> trace;
    std::mutex mutex;  // the chain runs on the shards
    const auto note = [&](std::string s) {
      std::lock_guard lock(mutex);
      trace.push_back(std::move(s));
    };
    f.srv.use([&note](mw::request& req, mw::next next) -> droid::task<mw::response> {
      if (req.method() != "tools/call") co_return co_await next(req);
      const auto start = std::chrono::steady_clock::now();
      note("outer>");
      mw::response r = co_await next(req);
      note(std::chrono::steady_clock::now() >= start ? "<outer timed" : "<outer");
      co_return r;
    });
    f.srv.use([&note](mw::request& req, mw::next next) -> droid::task<mw::response> {
      if (req.method() != "tools/call") co_return co_await next(req);
      note("inner>");
      if (req.params().at("arguments").as_object().contains("boom")) throw std::runtime_error("inner broke");
      mw::response r = co_await next(req);
      note("<inner");
      co_return r;
    });
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(call_body(1, "whoami"), in_session(sid, "alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    {
      std::lock_guard lock(mutex);
      CHECK(trace == std::vector<std::string>{"outer>", "inner>", "<inner", "<outer timed"});
    }
    c.send(mcp_post(call_body(2, "whoami", R"({"boom":true})"), in_session(sid, "alice")));
    r = c.read_response();
    REQUIRE(r);
    auto v = boost::json::parse(r->body);
    CHECK(v.at("id") == 2);
    CHECK(v.at("error").at("code") == -32603);
    CHECK(v.at("error").at("message") == "Internal error");

    // The legacy HTTP+SSE transport: the same chain, the answer on the event stream.
    raw_connection stream(f.port());
    const std::string path = legacy_endpoint_of(stream, "bob");
    raw_connection post(f.port());
    post.send(mcp_post(initialize_body, bearer("bob"), path));
    REQUIRE(post.read_response());
    (void)stream.read_until("protocolVersion");
    post.send(mcp_post(call_body(3, "whoami", R"({"boom":true})"), bearer("bob"), path));
    REQUIRE(post.read_response());
    const std::string answered = stream.read_until("Internal error");
    CHECK(answered.find(R"("id":3)") != std::string::npos);
    CHECK(answered.find("-32603") != std::string::npos);
  }
}
