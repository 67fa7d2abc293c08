// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP 2026-07-28 requests over Streamable HTTP, end to end over loopback sockets: the
/// refusals made before anything is served (`_meta`, versions, methods, capabilities,
/// the SEP-2243 routing headers), sessionless answers beside 2025 sessions on the same
/// endpoint, cancellation by closing the stream, and `subscriptions/listen` streams.
#include <droid/adapters/primary/transport/http/http.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/application/server/task_store.hpp>

#include "events.hpp"
#include "http_client.hpp"

using droid::test::eventually;
using droid::test::http_response;
using droid::test::mcp_post;
using droid::test::raw_connection;
using namespace std::chrono_literals;

namespace {

struct text_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(text_args, (), (text))

/// A tool argument mirrored into `Mcp-Param-Tenant`.
struct routed_args {
  std::string tenant;
  std::string text;
};
BOOST_DESCRIBE_STRUCT(routed_args, (), (tenant, text))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

}  // namespace

template <>
struct droid::field_hints<routed_args> {
  static constexpr droid::field_hint fields[] = {{.name = "tenant", .description = "Who pays", .mcp_header = "Tenant"}};
};

namespace {

constexpr std::string_view modern = "2026-07-28";

/// The `_meta` member every 2026 request carries.
std::string meta(std::string_view capabilities = "{}", std::string_view version = modern) {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":")" + std::string(version) +
         R"(","io.modelcontextprotocol/clientCapabilities":)" + std::string(capabilities) + "}";
}

/// A JSON-RPC request whose params are `members` (without braces) followed by `meta_member`.
std::string request(int id, std::string_view method, std::string_view members = {},
                    const std::string& meta_member = meta()) {
  std::string params = "{";
  params += members;
  if (!members.empty() && !meta_member.empty()) params += ',';
  params += meta_member;
  params += '}';
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
         R"(","params":)" + params + "}";
}

/// The headers a well-behaved 2026 client sends with `method` (and `name`, for the
/// methods that route on one).
std::string headers(std::string_view method, std::optional<std::string_view> name = std::nullopt,
                    std::string_view version = modern) {
  std::string h = "MCP-Protocol-Version: " + std::string(version) + "\r\nMcp-Method: " + std::string(method) + "\r\n";
  if (name) h += "Mcp-Name: " + std::string(*name) + "\r\n";
  return h;
}

std::string call(int id, std::string_view tool, std::string_view arguments = "{}",
                 std::string_view capabilities = "{}") {
  return request(id, "tools/call",
                 R"("name":")" + std::string(tool) + R"(","arguments":)" + std::string(arguments),
                 meta(capabilities));
}

/// The JSON-RPC messages carried by an SSE body (or raw stream bytes), parsed.
std::vector<boost::json::value> sse_messages(const std::string& body) {
  std::vector<boost::json::value> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    if (end > at + 6) out.push_back(boost::json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

/// The memory task store, telling a waiting test when a task's tool has asked a question
/// and when the task has ended.
///
/// Why: a task's status changes on the shard that runs its tool, after the request that
/// created it was answered; without this a test could only ask `tasks/get` again and again.
/// Affinity: any thread (the store is called from every shard).
class observed_task_store final : public droid::task_store {
 public:
  std::optional<droid::task_refusal> create(droid::task_record record) override {
    return inner_.create(std::move(record));
  }
  std::optional<droid::task_record> get(std::string_view id, std::string_view owner) override {
    return inner_.get(id, owner);
  }
  std::optional<droid::task_page> list(std::string_view owner, std::string_view after, std::size_t limit) override {
    return inner_.list(owner, after, limit);
  }
  bool ask(std::string_view id, std::string key, std::string request_json) override {
    const bool asked = inner_.ask(id, std::move(key), std::move(request_json));
    note(asked_, id);
    return asked;
  }
  std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) override {
    return inner_.answered(id, keys);
  }
  void set_message(std::string_view id, std::string message) override { inner_.set_message(id, std::move(message)); }
  bool finish(std::string_view id, droid::task_status status, std::string result, std::string error,
              std::string message) override {
    const bool first = inner_.finish(id, status, std::move(result), std::move(error), std::move(message));
    note(ended_, id);
    return first;
  }
  void remove(std::string_view id) override { inner_.remove(id); }

  /// Waits until task `id` has been asked a question; false after the guard.
  bool wait_asked(const std::string& id) { return wait(asked_, id); }
  /// Waits until task `id` has been ended (completed, failed or cancelled).
  bool wait_ended(const std::string& id) { return wait(ended_, id); }

 private:
  void note(std::set<std::string, std::less<>>& seen, std::string_view id) {
    {
      std::lock_guard lock(mutex_);
      seen.emplace(id);
    }
    changed_.notify_all();
  }
  bool wait(const std::set<std::string, std::less<>>& seen, const std::string& id) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, droid::test::event_guard, [&] { return seen.contains(id); });
  }

  droid::memory_task_store inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::string, std::less<>> asked_;
  std::set<std::string, std::less<>> ended_;
};

/// A listener on an ephemeral loopback port with tools, a prompt and a resource, run on
/// a thread of its own.
struct server_fixture {
  droid::server srv{droid::server_info{.name = "modern-http-test", .version = "1"}};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;
  /// Raised as `slow` (and `nap`, `ask_name`) start and see their cancellation.
  droid::test::event_count slow_started;
  droid::test::event_count slow_cancelled;
  droid::test::event_count asker_started;

  explicit server_fixture(droid::http::options opts = {}) {
    srv.tool("echo", "Echoes", [](droid::tool_context&, text_args a) -> droid::task<droid::tool_result> {
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("slow", "Sleeps until cancelled", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      slow_started.raise();
      const std::error_code ec = co_await ctx.sleep(30s);
      if (ec == droid::errc::cancelled) slow_cancelled.raise();
      co_return "slept";
    });
    srv.tool("nap", "Sleeps a fifth of a second", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      slow_started.raise();
      if (co_await ctx.sleep(200ms) == droid::errc::cancelled) slow_cancelled.raise();
      co_return "napped";
    });
    srv.tool(droid::tool_info{
                 .name = "sampler", .description = "Needs sampling", .required_capabilities = {"sampling"}},
             [](droid::tool_context&) -> droid::task<std::string> { co_return "sampled"; });
    srv.tool("route", "Routed by tenant", [](droid::tool_context&, routed_args a) -> droid::task<std::string> {
      co_return a.tenant + ":" + a.text;
    });
    srv.tool("ask", "Asks the client's model", [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":1})");
      if (!answer) co_return droid::tool_result::error(answer.error().message);
      co_return droid::tool_result::text("answered");
    });
    // Asks a name; "wait" makes it sleep afterwards, until cancelled.
    srv.tool("ask_name", "Asks the user's name", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      asker_started.raise();
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      if (answer->content->name == "wait" && co_await ctx.sleep(30s) == droid::errc::cancelled) slow_cancelled.raise();
      co_return "Hello " + answer->content->name;
    });
    srv.prompt(droid::prompt_info{.name = "greet", .description = "Greets"},
               [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                 co_return droid::prompt_result{};
               });
    srv.resource(droid::resource_info{.uri = "test://doc", .name = "doc"},
                 [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::text_of("test://doc", "the doc");
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
};

/// Sends one POST and reads its whole response.
http_response post(raw_connection& c, const std::string& body, const std::string& extra) {
  c.send(mcp_post(body, extra));
  auto r = c.read_response();
  REQUIRE(r);
  return *r;
}

/// The one JSON-RPC message of a response: a JSON document, or an event stream's last.
boost::json::value answer_of(const http_response& r) {
  const std::string* type = r.header("content-type");
  REQUIRE(type);
  if (*type == "application/json") return boost::json::parse(r.body);
  const auto messages = sse_messages(r.body);
  REQUIRE_FALSE(messages.empty());
  return messages.back();
}

/// Checks that `r` is a refusal: `status`, one JSON document, error `code`, id `id`.
boost::json::value check_refusal(const http_response& r, int status, int code, int id) {
  CHECK(r.status == status);
  REQUIRE(r.header("content-type"));
  CHECK(*r.header("content-type") == "application/json");
  const boost::json::value v = boost::json::parse(r.body);
  CHECK(v.at("id") == id);
  CHECK(v.at("error").at("code") == code);
  return v;
}

/// Opens a listen stream on `c` for `filter` and returns the raw bytes up to the end of
/// its acknowledgement event.
std::string open_listen(raw_connection& c, int id, std::string_view filter) {
  c.send(mcp_post(request(id, "subscriptions/listen", R"("notifications":)" + std::string(filter)),
                  headers("subscriptions/listen")));
  std::string raw = c.read_until("notifications/subscriptions/acknowledged");
  raw += c.read_until("\n\n");
  return raw;
}

}  // namespace

TEST_SUITE("adapters/http/modern") {
  TEST_CASE("a 2026 request without _meta, its protocolVersion or its clientCapabilities is 400 with -32602") {
    // These replace initialize: without them the server does not know whom it serves,
    // so nothing may run, and the client must learn which request was wrong (its id).
    server_fixture f;
    raw_connection c(f.port());
    const std::string no_version =
        R"("_meta":{"io.modelcontextprotocol/clientCapabilities":{}})";
    const std::string no_capabilities = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"})";
    check_refusal(post(c, request(1, "tools/list", {}, ""), headers("tools/list")), 400, -32602, 1);
    check_refusal(post(c, request(2, "tools/list", {}, no_version), headers("tools/list")), 400, -32602, 2);
    check_refusal(post(c, request(3, "tools/list", {}, no_capabilities), headers("tools/list")), 400, -32602, 3);
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a header version other than _meta's is 400 with -32020, even when _meta's is unknown") {
    // Which of the two to believe is the question; an intermediary may have routed on
    // the header, so the mismatch is reported before the version is judged.
    server_fixture f;
    raw_connection c(f.port());
    check_refusal(post(c, request(1, "tools/list"), headers("tools/list", {}, "2025-11-25")), 400, -32020, 1);
    check_refusal(post(c, request(2, "tools/list", {}, meta("{}", "v999.0.0")), headers("tools/list")), 400, -32020,
                  2);
  }

  TEST_CASE("a version the server does not speak is 400 with -32022 listing the supported versions") {
    // data.supported lets the client retry with a version both speak instead of
    // falling back to initialize.
    server_fixture f;
    raw_connection c(f.port());
    const http_response r =
        post(c, request(4, "tools/list", {}, meta("{}", "v999")), headers("tools/list", {}, "v999"));
    const auto v = check_refusal(r, 400, -32022, 4);
    const auto& data = v.at("error").at("data");
    CHECK(data.at("requested") == "v999");
    bool lists_modern = false;
    for (const auto& s : data.at("supported").as_array()) lists_modern = lists_modern || s == "2026-07-28";
    CHECK(lists_modern);
  }

  TEST_CASE("a 2026 request without MCP-Protocol-Version is 400 with -32020") {
    // The header is what an intermediary routes on; a body claiming 2026 without it is
    // a mismatch, not a guess to be made.
    server_fixture f;
    raw_connection c(f.port());
    check_refusal(post(c, request(5, "tools/list"), "Mcp-Method: tools/list\r\n"), 400, -32020, 5);
  }

  TEST_CASE("methods that 2026-07-28 does not have are 404 with -32601") {
    // ping, initialize, logging/setLevel and resources/subscribe belong to sessions; a
    // 404 tells a client that it reached a server which speaks 2026 and lacks them.
    server_fixture f;
    raw_connection c(f.port());
    int id = 10;
    for (const char* method : {"ping", "initialize", "logging/setLevel", "resources/subscribe", "no/such"}) {
      CAPTURE(method);
      check_refusal(post(c, request(id, method), headers(method)), 404, -32601, id);
      ++id;
    }
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a tool needing a capability the request lacks is 400 with -32021 naming it, and served when declared") {
    // The tool would fail half-way (it cannot ask for sampling); refusing up front says
    // exactly what the client must declare.
    server_fixture f;
    raw_connection c(f.port());
    const auto v = check_refusal(post(c, call(6, "sampler"), headers("tools/call", "sampler")), 400, -32021, 6);
    CHECK(v.at("error").at("data").at("requiredCapabilities") == boost::json::parse(R"({"sampling":{}})"));
    const http_response ok = post(c, call(7, "sampler", "{}", R"({"sampling":{}})"), headers("tools/call", "sampler"));
    CHECK(ok.status == 200);
    CHECK(answer_of(ok).at("result").at("content").at(0).at("text") == "sampled");
  }

  TEST_CASE("a custom method over HTTP: routed by Mcp-Method, gated on its extension with 400 and -32021") {
    // An extension's method goes through the checks a built-in one does: the routing
    // header a gateway read must be the body's method, and the extension the request
    // did not declare is named so the client can declare it.
    server_fixture f;
    f.srv.method(
        "com.example/search", [](droid::tool_context&, text_args a) -> droid::task<boost::json::object> {
          co_return boost::json::object{{"found", a.text}};
        },
        droid::method_options{.extension = "com.example/search",
                              .cache = droid::cache_hint{std::chrono::seconds(5), droid::cache_scope::public_}});
    raw_connection c(f.port());
    const std::string declared = R"({"extensions":{"com.example/search":{}}})";
    const http_response ok =
        post(c, request(1, "com.example/search", R"("text":"x")", meta(declared)), headers("com.example/search"));
    CHECK(ok.status == 200);
    const auto result = answer_of(ok).at("result");
    CHECK(result.at("found") == "x");
    CHECK(result.at("ttlMs") == 5000);
    CHECK(result.at("resultType") == "complete");
    const auto v = check_refusal(post(c, request(2, "com.example/search", R"("text":"x")"), headers("com.example/search")),
                                 400, -32021, 2);
    CHECK(v.at("error").at("data") ==
          boost::json::parse(R"({"requiredCapabilities":{"extensions":{"com.example/search":{}}}})"));
    check_refusal(post(c, request(3, "com.example/search", R"("text":"x")", meta(declared)), headers("tools/list")), 400,
                  -32020, 3);
    // Params are the handler's to decode, as a tool's arguments are: answered in the
    // response, after the front checks admitted the request.
    const auto bad = answer_of(post(c, request(4, "com.example/search", R"("text":5)", meta(declared)),
                                    headers("com.example/search")));
    CHECK(bad.at("error").at("code") == -32602);
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a custom notification to a stateless server reaches its handler and is answered 202") {
    droid::http::options o;
    o.stateless = true;
    server_fixture f(o);
    droid::test::event_count heard;
    std::string note;
    f.srv.on_notification("com.example/ping", [&](const droid::peer_info& peer, text_args a) {
      note = a.text + "@" + peer.protocol_version;
      heard.raise();
    });
    raw_connection c(f.port());
    const http_response r =
        post(c, R"({"jsonrpc":"2.0","method":"com.example/ping","params":{"text":"hi"}})", "MCP-Protocol-Version: 2025-11-25\r\n");
    CHECK(r.status == 202);
    REQUIRE(heard.wait_for(1));
    CHECK(note == "hi@2025-11-25");
  }

  TEST_CASE("an Mcp-Method that is missing, different or in another letter case is 400 with -32020") {
    // A gateway that admitted one method must not see another run; JSON-RPC method
    // names are case-sensitive, so TOOLS/LIST is another method.
    server_fixture f;
    raw_connection c(f.port());
    const std::string version = "MCP-Protocol-Version: 2026-07-28\r\n";
    check_refusal(post(c, request(1, "tools/list"), version), 400, -32020, 1);
    check_refusal(post(c, request(2, "tools/list"), version + "Mcp-Method: prompts/list\r\n"), 400, -32020, 2);
    check_refusal(post(c, request(3, "tools/list"), version + "Mcp-Method: TOOLS/LIST\r\n"), 400, -32020, 3);
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("an Mcp-Name that is missing or names something else is 400 with -32020") {
    // `Mcp-Name: echo` admitted by a filter must not run `slow`; the same holds for
    // prompts (params.name) and resources (params.uri).
    server_fixture f;
    raw_connection c(f.port());
    check_refusal(post(c, call(1, "slow"), headers("tools/call", "echo")), 400, -32020, 1);
    check_refusal(post(c, call(2, "slow"), headers("tools/call")), 400, -32020, 2);
    check_refusal(post(c, request(3, "prompts/get", R"("name":"greet")"), headers("prompts/get", "other")), 400,
                  -32020, 3);
    check_refusal(post(c, request(4, "prompts/get", R"("name":"greet")"), headers("prompts/get")), 400, -32020, 4);
    check_refusal(post(c, request(5, "resources/read", R"("uri":"test://doc")"), headers("resources/read", "test://x")),
                  400, -32020, 5);
    check_refusal(post(c, request(6, "resources/read", R"("uri":"test://doc")"), headers("resources/read")), 400,
                  -32020, 6);
    CHECK(f.slow_started.value() == 0);
    const http_response read =
        post(c, request(7, "resources/read", R"("uri":"test://doc")"), headers("resources/read", "test://doc"));
    CHECK(read.status == 200);
    CHECK(answer_of(read).at("result").at("contents").at(0).at("text") == "the doc");
  }

  TEST_CASE("routing header names match in any letter case, and whitespace around Mcp-Name is not part of it") {
    // HTTP field names are case-insensitive and field values carry optional whitespace;
    // proxies rewrite both, so neither may turn a valid request into a mismatch.
    server_fixture f;
    raw_connection c(f.port());
    for (const char* h : {"mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/list\r\n",
                          "MCP-PROTOCOL-VERSION: 2026-07-28\r\nMCP-METHOD: tools/list\r\n"}) {
      CAPTURE(h);
      const http_response r = post(c, request(1, "tools/list"), h);
      CHECK(r.status == 200);
      CHECK(answer_of(r).at("result").at("tools").as_array().size() == 7);
    }
    const http_response r = post(c, call(2, "echo", R"({"text":"hi"})"),
                                 "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                                 "Mcp-Name:   \techo \t\r\n");
    CHECK(r.status == 200);
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "hi");
  }

  TEST_CASE("an x-mcp-header argument must be mirrored in its Mcp-Param header, plainly or as strict base64") {
    // A gateway filtering on Mcp-Param-Tenant must see the tenant the tool will see:
    // a missing header while the body has the value, or one that cannot be decoded, is
    // refused; the =?base64?...?= form is how non-ASCII values travel.
    server_fixture f;
    raw_connection c(f.port());
    const std::string args = R"({"tenant":"Hello","text":"x"})";
    const std::string base = headers("tools/call", "route");
    check_refusal(post(c, call(1, "route", args), base), 400, -32020, 1);
    check_refusal(post(c, call(2, "route", args), base + "Mcp-Param-Tenant: Other\r\n"), 400, -32020, 2);
    http_response r = post(c, call(3, "route", args), base + "Mcp-Param-Tenant: Hello\r\n");
    CHECK(r.status == 200);
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "Hello:x");
    r = post(c, call(4, "route", args), base + "Mcp-Param-Tenant: =?base64?SGVsbG8=?=\r\n");
    CHECK(r.status == 200);
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "Hello:x");
    // Unpadded, and outside the alphabet.
    check_refusal(post(c, call(5, "route", args), base + "Mcp-Param-Tenant: =?base64?SGVsbG8?=\r\n"), 400, -32020, 5);
    check_refusal(post(c, call(6, "route", args), base + "Mcp-Param-Tenant: =?base64?SGV*bG8=?=\r\n"), 400, -32020, 6);
  }

  TEST_CASE("server/discover is answered with resultType and the server's identity, and mints no session") {
    // Discovery is how a 2026 client learns what it talks to before anything else;
    // the identity rides in _meta because there is no initialize result any more.
    server_fixture f;
    raw_connection c(f.port());
    const http_response r = post(c, request(1, "server/discover"), headers("server/discover"));
    CHECK(r.status == 200);
    CHECK_FALSE(r.header("mcp-session-id"));
    const auto v = answer_of(r);
    CHECK(v.at("id") == 1);
    CHECK(v.at("result").at("resultType") == "complete");
    CHECK(v.at("result").at("_meta").at("io.modelcontextprotocol/serverInfo").at("name") == "modern-http-test");
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a 2026 tools/call is an event stream with no event ids, no priming event and no session id") {
    // 2026 streams are not resumable, so ids and a priming event would promise what the
    // server cannot keep; X-Accel-Buffering keeps nginx from holding events back.
    server_fixture f;
    raw_connection c(f.port());
    const http_response r = post(c, call(1, "echo", R"({"text":"now"})"), headers("tools/call", "echo"));
    CHECK(r.status == 200);
    REQUIRE(r.header("content-type"));
    CHECK(*r.header("content-type") == "text/event-stream");
    REQUIRE(r.header("x-accel-buffering"));
    CHECK(*r.header("x-accel-buffering") == "no");
    CHECK_FALSE(r.header("mcp-session-id"));
    CHECK(r.body.find("id: ") == std::string::npos);
    CHECK(r.body.find("retry:") == std::string::npos);
    const auto messages = sse_messages(r.body);
    REQUIRE(messages.size() == 1);
    CHECK(messages[0].at("result").at("resultType") == "complete");
    CHECK(messages[0].at("result").at("content").at(0).at("text") == "now");
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a 2026 request carrying an Mcp-Session-Id is served, and no session is minted or echoed") {
    // A client migrating from 2025 may keep sending the header; the spec says ignore it,
    // so a stale or invented id must neither fail the request nor create state.
    server_fixture f;
    raw_connection c(f.port());
    const http_response r = post(c, call(1, "echo", R"({"text":"s"})"),
                                 headers("tools/call", "echo") + "Mcp-Session-Id: Zm9vYmFyYmF6cXV1eGNvcmdl\r\n");
    CHECK(r.status == 200);
    CHECK_FALSE(r.header("mcp-session-id"));
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "s");
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("closing the connection of a running 2026 tools/call cancels it promptly") {
    // On HTTP the closed stream is the only cancellation a 2026 client sends; a tool
    // left running would hold its resources for nobody.
    server_fixture f;
    {
      raw_connection c(f.port());
      c.send(mcp_post(call(1, "slow"), headers("tools/call", "slow")));
      CHECK(c.read_until("\r\n\r\n").rfind("HTTP/1.1 200", 0) == 0);
      REQUIRE(f.slow_started.wait_for(1));
    }
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.slow_cancelled.wait_for(1));
    CHECK(std::chrono::steady_clock::now() - start < 2s);
  }

  TEST_CASE("a request pipelined behind a running 2026 tools/call is no hang-up: the call ends, then the next is answered") {
    // A running call's connection is watched for its client hanging up by a peek at the
    // socket; the bytes of a next request, sent while the call runs, must not read as a
    // close (which would cancel the call), nor be consumed by the peek.
    for (const auto reply : {droid::http::streaming::event_stream, droid::http::streaming::json}) {
      CAPTURE(reply == droid::http::streaming::json);
      droid::http::options o;
      o.reply = reply;
      server_fixture f(o);
      raw_connection c(f.port());
      c.send(mcp_post(call(1, "nap"), headers("tools/call", "nap")));
      // Sent once the call runs (and its connection watches), so that these bytes reach
      // the socket the watch peeks at rather than the buffer the first read filled.
      REQUIRE(f.slow_started.wait_for(1));
      c.send(mcp_post(call(2, "echo", R"({"text":"after"})"), headers("tools/call", "echo")));
      auto first = c.read_response();
      REQUIRE(first);
      CHECK(first->status == 200);
      CHECK(first->body.find("napped") != std::string::npos);
      auto second = c.read_response();
      REQUIRE(second);
      CHECK(second->status == 200);
      CHECK(second->body.find("after") != std::string::npos);
      CHECK(f.slow_cancelled.value() == 0);
    }
  }

  TEST_CASE("in JSON mode too, closing the connection of a running 2026 tools/call cancels it promptly") {
    // A JSON answer has no stream to close, but the connection is the request's all the
    // same: a client that gave up must not leave the tool running for nobody.
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    {
      raw_connection c(f.port());
      c.send(mcp_post(call(1, "slow"), headers("tools/call", "slow")));
      REQUIRE(f.slow_started.wait_for(1));
    }
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.slow_cancelled.wait_for(1));
    CHECK(std::chrono::steady_clock::now() - start < 2s);
  }

  TEST_CASE("a listen stream opens with the tagged acknowledgement and carries tagged list changes") {
    // The subscription id in _meta is how a client tells one listen's notifications from
    // another's; the acknowledgement comes first so the client knows what it will get.
    server_fixture f;
    raw_connection listen(f.port());
    const std::string head = open_listen(listen, 41, R"({"toolsListChanged":true})");
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(head.find("X-Accel-Buffering: no") != std::string::npos);
    const auto ack = sse_messages(head);
    REQUIRE(ack.size() == 1);
    CHECK(ack[0].at("method") == "notifications/subscriptions/acknowledged");
    CHECK(ack[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == 41);
    CHECK(ack[0].at("params").at("notifications").at("toolsListChanged") == true);

    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    std::string raw = listen.read_until("tools/list_changed");
    raw += listen.read_until("\n\n");
    const auto changed = sse_messages(raw);
    REQUIRE(changed.size() == 1);
    CHECK(changed[0].at("method") == "notifications/tools/list_changed");
    CHECK(changed[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == 41);
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("an idle listen stream carries keep-alive comments") {
    // A listen may stay quiet for hours; without traffic, proxies and client idle timers
    // close it, and the client silently stops hearing about changes.
    droid::http::options o;
    o.keep_alive_interval = 100ms;
    server_fixture f(o);
    raw_connection listen(f.port());
    (void)open_listen(listen, 1, R"({"toolsListChanged":true})");
    CHECK(listen.read_until(": keep-alive").find(": keep-alive") != std::string::npos);
    // Still a working stream after it.
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    CHECK(listen.read_until("tools/list_changed").find("tools/list_changed") != std::string::npos);
  }

  TEST_CASE("a listen for prompts only gets prompt changes and no tool changes") {
    // The filter is the client's promise of what it can handle; sending more wastes its
    // bandwidth and breaks clients that treat unknown notifications as errors.
    server_fixture f;
    raw_connection listen(f.port());
    const auto ack = sse_messages(open_listen(listen, 42, R"({"promptsListChanged":true})"));
    REQUIRE(ack.size() == 1);
    CHECK_FALSE(ack[0].at("params").at("notifications").as_object().contains("toolsListChanged"));
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    // Forwarded in the order they happen: the prompt change comes after the tool change
    // would have, so its arrival shows the tool change was not sent.
    f.srv.prompt(droid::prompt_info{.name = "later", .description = "Added later"},
                 [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                   co_return droid::prompt_result{};
                 });
    std::string raw = listen.read_until("prompts/list_changed");
    raw += listen.read_until("\n\n");
    CHECK(raw.find("tools/list_changed") == std::string::npos);
    const auto changed = sse_messages(raw);
    REQUIRE(changed.size() == 1);
    CHECK(changed[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == 42);
  }

  TEST_CASE("two concurrent listen streams both receive a change, each tagged with its own id") {
    // Listeners are independent requests: one must not steal or suppress the other's
    // notifications.
    server_fixture f;
    raw_connection a(f.port()), b(f.port());
    (void)open_listen(a, 1, R"({"toolsListChanged":true})");
    (void)open_listen(b, 2, R"({"toolsListChanged":true})");
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    int expected = 1;
    for (raw_connection* c : {&a, &b}) {
      std::string raw = c->read_until("tools/list_changed");
      raw += c->read_until("\n\n");
      const auto changed = sse_messages(raw);
      REQUIRE(changed.size() == 1);
      CHECK(changed[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId") == expected++);
    }
  }

  TEST_CASE("closing a listen connection ends the listen, and the listener goes on serving") {
    // A listen is open until the client leaves; its leaving must free the connection
    // and leave nothing that later changes would trip over.
    server_fixture f;
    {
      raw_connection listen(f.port());
      (void)open_listen(listen, 1, R"({"toolsListChanged":true})");
      CHECK(f.listener->connections() == 1);
      // Half-closed rather than closed: to the server it is the same end of input, and
      // its close that follows says it has let the connection go.
      listen.shutdown_write();
      REQUIRE(listen.hung_up());
    }
    CHECK(f.listener->connections() == 0);
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    raw_connection c(f.port());
    const http_response r = post(c, call(2, "late"), headers("tools/call", "late"));
    CHECK(r.status == 200);
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "late");
  }

  TEST_CASE("a listen client that stops reading is disconnected at the byte cap, and one that reads keeps its stream") {
    // Change notifications are produced by the server, not asked for one by one: a
    // client that never reads would otherwise make the server buffer without bound. The
    // cap is on what waits for a slow reader, so a client that keeps up is not cut off.
    droid::http::options o;
    o.max_queued_bytes = 64 * 1024;
    server_fixture f(o);
    raw_connection stalled(f.port());
    (void)open_listen(stalled, 1, R"({"toolsListChanged":true})");  // then never read again
    // A byte the server leaves unread, so that cutting the client off is a reset, which
    // reaches it through its full window (see hung_up).
    stalled.send("P");
    raw_connection reader(f.port());
    (void)open_listen(reader, 2, R"({"toolsListChanged":true})");
    REQUIRE(f.listener->connections() == 2);
    // Rounds of 200 changes (about 30 KB of events, under the cap) until the server gives
    // up on the stalled client. Loopback socket buffers hold megabytes, so how many
    // rounds that takes depends on the kernel: bounded by count, not fixed.
    int rounds = 0;
    bool reader_kept_up = true;
    bool cut_off = false;
    while (!cut_off && reader_kept_up && ++rounds <= 2000) {
      for (int i = 0; i < 100; ++i) {
        f.srv.tool("churn", "Comes and goes", [](droid::tool_context&) -> droid::task<std::string> { co_return ""; });
        f.srv.remove_tool("churn");
      }
      for (int i = 0; i < 200 && reader_kept_up; ++i)
        reader_kept_up = reader.read_until("tools/list_changed").find("tools/list_changed") != std::string::npos;
      cut_off = stalled.hung_up(0);
    }
    CAPTURE(rounds);
    CHECK(cut_off);
    CHECK(reader_kept_up);
    // Polled: the cut closes the socket first and frees the connection a few steps later
    // on its shard, and nothing says when.
    CHECK(eventually([&] { return f.listener->connections() == 1; }));
    // The reader's stream is still open and still carries changes; requests are served.
    f.srv.tool("after", "Added after", [](droid::tool_context&) -> droid::task<std::string> { co_return "after"; });
    CHECK(reader.read_until("tools/list_changed").find("tools/list_changed") != std::string::npos);
    raw_connection c(f.port());
    const http_response r = post(c, call(3, "echo", R"({"text":"still here"})"), headers("tools/call", "echo"));
    CHECK(r.status == 200);
    CHECK(answer_of(r).at("result").at("content").at(0).at("text") == "still here");
  }

  TEST_CASE("stop ends open listen streams and run returns") {
    // A listen never ends by itself; a graceful stop that waited for it would never
    // finish.
    auto f = std::make_unique<server_fixture>();
    raw_connection listen(f->port());
    (void)open_listen(listen, 1, R"({"toolsListChanged":true})");
    const auto start = std::chrono::steady_clock::now();
    f.reset();  // stop() and join
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    // The stream ended: its last chunk, or the connection's close.
    const std::string rest = listen.read_until("0\r\n\r\n");
    CHECK((rest.find("0\r\n\r\n") != std::string::npos || listen.closed_by_peer()));
  }

  TEST_CASE("in JSON mode a listen is still answered as an event stream") {
    // A listen's answer is a stream by nature: one JSON document could only come when
    // the listen ends, so the acknowledgement and every change would never arrive.
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    raw_connection listen(f.port());
    const std::string head = open_listen(listen, 5, R"({"toolsListChanged":true})");
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(head.find("Content-Type: text/event-stream") != std::string::npos);
    f.srv.tool("late", "Added late", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    CHECK(listen.read_until("tools/list_changed").find("tools/list_changed") != std::string::npos);
  }

  TEST_CASE("one listener serves a 2025 session and 2026 requests interleaved, each in its own era's shape") {
    // Both eras share the endpoint and the connections: a client library upgrading one
    // request at a time, or a proxy pooling connections, sends them mixed.
    server_fixture f;
    raw_connection c(f.port());
    const http_response init = post(
        c,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
        {});
    REQUIRE(init.status == 200);
    REQUIRE(init.header("mcp-session-id"));
    const std::string session =
        "Mcp-Session-Id: " + *init.header("mcp-session-id") + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
    const auto old_call = [](int id, const std::string& text) {
      return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
             R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" + text + R"("}}})";
    };
    std::atomic<int> wrong{0};
    const auto client = [&](int base) {
      raw_connection conn(f.port());
      for (int i = 0; i < 20; ++i) {
        const std::string text = std::to_string(base + i);
        // The same keep-alive connection carries both eras, alternately.
        conn.send(mcp_post(old_call(base + i, text), session));
        auto r = conn.read_response();
        if (!r || r->status != 200 || r->header("mcp-session-id")) {
          ++wrong;
          continue;
        }
        const auto old_answer = sse_messages(r->body).back();
        if (old_answer.at("id") != base + i || old_answer.at("result").as_object().contains("resultType") ||
            old_answer.at("result").at("content").at(0).at("text") != boost::json::value(text))
          ++wrong;
        conn.send(mcp_post(call(base + i, "echo", R"({"text":")" + text + R"("})"), headers("tools/call", "echo")));
        r = conn.read_response();
        if (!r || r->status != 200 || r->header("mcp-session-id")) {
          ++wrong;
          continue;
        }
        const auto new_answer = sse_messages(r->body).back();
        if (new_answer.at("id") != base + i || new_answer.at("result").at("resultType") != "complete" ||
            new_answer.at("result").at("content").at(0).at("text") != boost::json::value(text))
          ++wrong;
      }
    };
    std::thread first(client, 100), second(client, 200);
    client(300);
    first.join();
    second.join();
    CHECK(wrong == 0);
    CHECK(f.listener->sessions() == 1);
    // The session still answers in its own era on its first connection.
    const auto last = answer_of(post(c, old_call(9, "end"), session));
    CHECK_FALSE(last.at("result").as_object().contains("resultType"));
  }

  TEST_CASE("stateless 2025 mode answers initialize with JSON and no session, and serves the header's version") {
    // A stateless deployment behind a load balancer keeps nothing between requests, so
    // nothing may be minted; an exchange cannot find its way back and is refused by name.
    droid::http::options o;
    o.stateless = true;
    server_fixture f(o);
    raw_connection c(f.port());
    const http_response init = post(
        c,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}})",
        {});
    CHECK(init.status == 200);
    REQUIRE(init.header("content-type"));
    CHECK(*init.header("content-type") == "application/json");
    CHECK_FALSE(init.header("mcp-session-id"));
    CHECK(boost::json::parse(init.body).at("result").at("protocolVersion") == "2025-11-25");
    CHECK(f.listener->sessions() == 0);

    const std::string v = "MCP-Protocol-Version: 2025-06-18\r\n";
    const auto echoed = answer_of(post(
        c, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"st"}}})", v));
    CHECK(echoed.at("result").at("content").at(0).at("text") == "st");
    CHECK_FALSE(echoed.at("result").as_object().contains("resultType"));
    const auto asked =
        answer_of(post(c, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}})", v));
    CHECK(asked.at("result").at("isError") == true);
    CHECK(std::string(asked.at("result").at("content").at(0).at("text").as_string()).find("stateless") !=
          std::string::npos);
    // A 2026 request is served beside them, in its own shape.
    const auto discovered = answer_of(post(c, request(3, "server/discover"), headers("server/discover")));
    CHECK(discovered.at("result").at("resultType") == "complete");
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("stateless 2025 mode: closing the connection cancels; a cancel notification or an answer is refused by name") {
    // Stateless, a client's request id names nothing the server can find (unrelated
    // clients all send id 1), so notifications/cancelled cannot work and 202 would claim
    // it did. The connection is the request's: closing it is the cancellation that works.
    droid::http::options o;
    o.stateless = true;
    server_fixture f(o);
    const std::string v = "MCP-Protocol-Version: 2025-11-25\r\n";
    {
      raw_connection c(f.port());
      c.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}})", v));
      REQUIRE(f.slow_started.wait_for(1));
      raw_connection other(f.port());
      const http_response cancel = post(
          other, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"t"}})", v);
      CHECK(cancel.status == 400);
      const auto why = boost::json::parse(cancel.body);
      CHECK(why.at("id").is_null());
      CHECK(std::string(why.at("error").at("message").as_string()).find("close the request's connection") !=
            std::string::npos);
      CHECK(f.slow_cancelled.value() == 0);  // the refused cancel touched nothing
      const http_response answer = post(other, R"({"jsonrpc":"2.0","id":7,"result":{}})", v);
      CHECK(answer.status == 400);
      CHECK(answer.body.find("no question waits") != std::string::npos);
      // Notifications that need to reach nothing are still accepted.
      CHECK(post(other, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", v).status == 202);
    }
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.slow_cancelled.wait_for(1));
    CHECK(std::chrono::steady_clock::now() - start < 2s);
  }

  TEST_CASE("in JSON mode a 2026 request is answered with one application/json document") {
    // Clients and gateways that cannot read event streams get the result as one
    // document, in the same 2026 shape.
    droid::http::options o;
    o.reply = droid::http::streaming::json;
    server_fixture f(o);
    raw_connection c(f.port());
    const http_response r = post(c, call(1, "echo", R"({"text":"doc"})"), headers("tools/call", "echo"));
    CHECK(r.status == 200);
    REQUIRE(r.header("content-type"));
    CHECK(*r.header("content-type") == "application/json");
    CHECK_FALSE(r.header("mcp-session-id"));
    const auto v = boost::json::parse(r.body);
    CHECK(v.at("id") == 1);
    CHECK(v.at("result").at("resultType") == "complete");
    CHECK(v.at("result").at("content").at(0).at("text") == "doc");
    CHECK(f.listener->sessions() == 0);
  }

  TEST_CASE("a 2026 round trip over HTTP resumes its frame whichever shard the retry reaches, and closing cancels it") {
    server_fixture f;  // two shards; each new connection goes to the next
    const std::string caps = R"({"elicitation":{}})";
    const std::string h = headers("tools/call", "ask_name");
    for (const char* name : {"Ada", "Bo", "Cy", "Di"}) {
      CAPTURE(name);
      raw_connection first(f.port());
      const auto r1 = answer_of(post(first, call(1, "ask_name", "{}", caps), h));
      REQUIRE(r1.at("result").at("resultType") == "input_required");
      const std::string state(r1.at("result").at("requestState").as_string());
      raw_connection second(f.port());  // a new connection: the other shard, every other time
      const std::string retry = request(2, "tools/call",
                                        R"("name":"ask_name","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":")" +
                                            std::string(name) + R"("}}},"requestState":")" + state + '"',
                                        meta(caps));
      const auto r2 = answer_of(post(second, retry, h));
      CHECK(std::string(r2.at("result").at("content").at(0).at("text").as_string()) == "Hello " + std::string(name));
    }
    CHECK(f.asker_started.value() == 4);  // every retry resumed its frame: none was replayed
    // Polled: a frame is let go a step after its answer is written, and nothing says so.
    CHECK(eventually([&] { return f.srv.kept_frames() == 0; }));

    // A retry whose connection closes while its resumed tool runs is cancelled where the
    // frame runs.
    for (int i = 0; i < 2; ++i) {
      raw_connection first(f.port());
      const auto r1 = answer_of(post(first, call(1, "ask_name", "{}", caps), h));
      const std::string state(r1.at("result").at("requestState").as_string());
      const int cancelled = f.slow_cancelled.value();
      {
        raw_connection second(f.port());
        second.send(mcp_post(request(2, "tools/call",
                                     R"("name":"ask_name","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"wait"}}},"requestState":")" +
                                         state + '"',
                                     meta(caps)),
                             h));
        (void)second.read_until("\r\n\r\n");  // the response has begun
      }
      CHECK(f.slow_cancelled.wait_for(cancelled + 1));
    }
    CHECK(f.asker_started.value() == 6);
  }

  TEST_CASE("a 2026 task created on one shard is read, answered and cancelled from the other, and stops with the server") {
    auto store = std::make_shared<observed_task_store>();
    droid::server_options server_opts;
    server_opts.tasks.store = store;
    droid::server srv{droid::server_info{.name = "tasks-http-test", .version = "1"}, server_opts};
    droid::test::event_count asked, stopped;
    droid::tool_info confirm{.name = "confirm", .description = "Asks, then works", .tasks = droid::task_support::optional};
    srv.tool(confirm, [&](droid::tool_context& ctx) -> droid::task<std::string> {
      asked.raise();
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      if (answer->content->name == "wait" && co_await ctx.sleep(30s) == droid::errc::cancelled) stopped.raise();
      co_return "Hello " + answer->content->name;
    });
    droid::http::options opts;
    opts.threads = 2;
    auto listener = std::make_unique<droid::http::listener>(srv, opts);
    std::thread runner([&] { listener->run(); });
    const std::string caps = R"({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";
    const auto on_task = [&](int id, std::string_view method, const std::string& task, std::string_view more = {}) {
      raw_connection c(listener->port());  // a new connection: the other shard, every other time
      const std::string members = R"("taskId":")" + task + '"' + std::string(more);
      return answer_of(post(c, request(id, method, members, meta(caps)), headers(method, task)));
    };
    const auto status = [&](const std::string& task) {
      return std::string(on_task(9, "tasks/get", task).at("result").at("status").as_string());
    };
    {
      // A poll is one JSON document, even on a server that answers with event streams.
      raw_connection c(listener->port());
      const auto created = answer_of(post(c, call(1, "confirm", "{}", caps), headers("tools/call", "confirm")));
      const std::string task(created.at("result").at("taskId").as_string());
      raw_connection poll(listener->port());
      const auto r = post(poll, request(2, "tasks/get", R"("taskId":")" + task + '"', meta(caps)), headers("tasks/get", task));
      REQUIRE(r.header("content-type"));
      CHECK(*r.header("content-type") == "application/json");
      (void)on_task(3, "tasks/cancel", task);
      // Polled: the engine lets a task go as its tool's frame unwinds, after the record
      // ended, and nothing says when.
      CHECK(eventually([&] { return srv.running_tasks() == 0; }));
    }
    for (const char* name : {"Ada", "Bo", "wait", "wait"}) {
      CAPTURE(name);
      raw_connection first(listener->port());
      const auto created = answer_of(post(first, call(1, "confirm", "{}", caps), headers("tools/call", "confirm")));
      REQUIRE(created.at("result").at("resultType") == "task");
      const std::string task(created.at("result").at("taskId").as_string());
      REQUIRE(store->wait_asked(task));
      CHECK(status(task) == "input_required");
      const auto ack = on_task(2, "tasks/update", task,
                               R"(,"inputResponses":{"user_name":{"action":"accept","content":{"name":")" +
                                   std::string(name) + R"("}}})");
      CHECK(ack.at("result").at("resultType") == "complete");
      if (std::string_view(name) == "wait") {
        // The update took the answer before it was acknowledged: no question is left.
        CHECK(status(task) == "working");
        CHECK(on_task(3, "tasks/cancel", task).at("result").at("resultType") == "complete");
        CHECK(status(task) == "cancelled");
      } else {
        REQUIRE(store->wait_ended(task));
        CHECK(status(task) == "completed");
        CHECK(std::string(on_task(4, "tasks/get", task).at("result").at("result").at("content").at(0).at("text").as_string()) ==
              "Hello " + std::string(name));
      }
    }
    CHECK(stopped.wait_for(2));
    CHECK(eventually([&] { return srv.running_tasks() == 0; }));  // polled, as above
    // A task still running when the server stops is ended, not left behind.
    raw_connection last(listener->port());
    const auto created = answer_of(post(last, call(1, "confirm", "{}", caps), headers("tools/call", "confirm")));
    const std::string task(created.at("result").at("taskId").as_string());
    // Tracked before it was answered as a task; its tool has begun once it has asked.
    REQUIRE(store->wait_asked(task));
    CHECK(asked.value() == 6);
    CHECK(srv.running_tasks() == 1);
    listener->stop();
    runner.join();
    CHECK(srv.running_tasks() == 0);
    const auto record = store->get(task, "");
    REQUIRE(record);
    CHECK(record->status == droid::task_status::failed);
  }
}
