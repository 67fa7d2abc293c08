// SPDX-License-Identifier: BSL-1.0
/// @file
/// The HTTP listener as an OAuth 2.1 resource server (docs/security.md): Protected
/// Resource Metadata, the 401/400/503 answers and their challenges, per-tool scopes
/// (403 `insufficient_scope`), sessions, request state and tasks bound to the
/// principal, what a tool sees of its caller, the token cache and the request limit.
///
/// The verifier here is a table of tokens: what is under test is what the transport
/// does with a verdict. The JWT verifier itself is tested in test/unit/adapters/auth/.
#include "auth_fixture.hpp"

using namespace droid::test::auth;

TEST_SUITE("adapters/http") {
  TEST_CASE("auth: Protected Resource Metadata at the resource's well-known URI, public; the root only for a resource without a path") {
    auth_fixture f;
    {
      raw_connection c(f.port());
      c.send("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://elsewhere.example\r\n\r\n");
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
      // HEAD: the same head, no body (RFC 9110 §9.3.2), and the connection goes on.
      c.send("HEAD /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      auto h = c.read_response(true);
      REQUIRE(h);
      CHECK(h->status == 200);
      REQUIRE(h->header("content-length"));
      CHECK(*h->header("content-length") == std::to_string(r->body.size()));
      c.send("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      auto again = c.read_response();
      REQUIRE(again);
      CHECK(again->status == 200);
      CHECK(again->body == r->body);
    }
    {
      // RFC 9728 §3.3: the root document would have to name `http://127.0.0.1:PORT`,
      // which is not this resource.
      auto r = ask(f.port(), "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      REQUIRE(r);
      CHECK(r->status == 404);
    }
    {
      droid::http::options o;
      o.auth.resource = "https://mcp.example";
      auth_fixture root(o);
      auto r = ask(root.port(), "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(boost::json::parse(r->body).at("resource").as_string() == "https://mcp.example");
    }
    raw_connection c(f.port());
    c.send("POST /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
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
    auto r = ask(f.port(), "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
    REQUIRE(r);
    CHECK(r->status == 401);

    raw_connection stream(f.port());
    const std::string path = legacy_endpoint_of(stream, "alice");
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
      CHECK(names(r->body) == "admin_reset ask_name big confirm wait whoami ");
    }
    droid::server_options so;
    so.hide_unauthorized_tools = true;
    auth_fixture f({}, so);
    raw_connection c(f.port());
    const std::string sid = session_of(c, "alice");
    c.send(mcp_post(list, "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice")));
    auto r = c.read_response();
    REQUIRE(r);
    CHECK(names(r->body) == "ask_name big confirm wait whoami ");
    c.send(mcp_post(list, "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice-admin")));
    r = c.read_response();
    REQUIRE(r);
    CHECK(names(r->body) == "admin_reset ask_name big confirm wait whoami ");
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
