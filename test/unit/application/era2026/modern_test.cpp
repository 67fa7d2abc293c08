// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP 2026-07-28 requests through a session, with no I/O: each request carries its
/// version, capabilities and log level in `_meta`, needs no `initialize`, and is answered
/// in its own shape beside a 2025 session on the same connection (as on stdio). Also the
/// front checks (`is_modern_request`, `admit_modern`) on their own.
#include <droid/application/server/modern_request.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "support.hpp"

namespace {

struct city_args {
  std::string city;
};
BOOST_DESCRIBE_STRUCT(city_args, (), (city))

struct forecast {
  std::string city;
  int degrees = 0;
};
BOOST_DESCRIBE_STRUCT(forecast, (), (city, degrees))

constexpr std::string_view server_info_key = "io.modelcontextprotocol/serverInfo";
constexpr std::string_view subscription_key = "io.modelcontextprotocol/subscriptionId";

/// The members of a 2026-07-28 request's `_meta` naming `version`, declaring
/// `capabilities`, and ending with `more` (a logLevel, a progressToken).
std::string meta(const std::string& capabilities = "{}", const std::string& more = "",
                 const std::string& version = "2026-07-28") {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":")" + version +
         R"(","io.modelcontextprotocol/clientCapabilities":)" + capabilities +
         R"(,"io.modelcontextprotocol/clientInfo":{"name":"modern-client","version":"1"})" + more + "}";
}

/// A 2026-07-28 request: `id` is JSON text, `members` follow `_meta` in params.
std::string modern(const std::string& id, const std::string& method, const std::string& members = "",
                   const std::string& meta_member = meta()) {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"(","params":{)" + meta_member +
         (members.empty() ? "" : "," + members) + "}}";
}

/// A 2025 request with `params` as given.
std::string legacy(const std::string& id, const std::string& method, const std::string& params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"(","params":)" + params + "}";
}

std::string cancel(const std::string& id) {
  return R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + id + "}}";
}

droid::ir::message message_of(const std::string& text) {
  auto decoded = droid::ir::decode(text);
  REQUIRE(std::holds_alternative<droid::ir::message>(decoded));
  return std::move(std::get<droid::ir::message>(decoded));
}

droid::server_options quiet() {
  droid::server_options o;
  o.log = [](std::string_view) {};
  return o;
}

droid::server_options hinted() {
  droid::server_options o = quiet();
  o.cache.discover = {std::chrono::hours(1), droid::cache_scope::public_};
  o.cache.tools = {std::chrono::minutes(1), droid::cache_scope::public_};
  o.cache.prompts = {std::chrono::seconds(1), droid::cache_scope::private_};
  o.cache.resources = {std::chrono::seconds(2), droid::cache_scope::public_};
  o.cache.resource_templates = {std::chrono::seconds(3), droid::cache_scope::public_};
  return o;
}

droid::icon an_icon() {
  return droid::icon{.src = "https://example.com/i.png", .mime_type = "image/png", .sizes = {"48x48"}};
}

/// A server offering a bit of everything, and a session on it that is not initialized
/// (a 2026 client never initializes; `initialize` makes it a 2025 session as well).
struct fixture : droid::test::session_driver {
  droid::server srv{droid::server_info{.name = "modern-test",
                                       .version = "2.0",
                                       .title = "Modern Test",
                                       .instructions = "Ask away.",
                                       .website_url = "https://example.com",
                                       .icons = {an_icon()}},
                    hinted()};
  int slow_finished = 0;
  bool slow_saw_cancel = false;
  std::error_code asked_condition;
  std::string asked_message;

  fixture() {
    srv.tool(droid::tool_info{.name = "forecast",
                              .title = "Forecast",
                              .description = "Weather for a city",
                              .annotations = {.read_only_hint = true},
                              .icons = {an_icon()}},
             [](droid::tool_context&, city_args a) -> droid::task<forecast> {
               co_return forecast{a.city, 21};
             });
    srv.tool(
        droid::tool_info{.name = "needs_sampling", .description = "Samples", .required_capabilities = {"sampling"}},
        [](droid::tool_context&) -> droid::task<std::string> { co_return "sampled"; });
    srv.tool("slow", "Waits until cancelled", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      co_await ctx.progress(0.5, 1.0, "half");
      const std::error_code ec = co_await ctx.sleep(std::chrono::hours(1));
      slow_saw_cancel = ec == droid::errc::cancelled;
      ++slow_finished;
      co_await ctx.progress(1.0);  // after cancellation: must not reach the peer
      co_return droid::tool_result::text("done");
    });
    srv.tool("logs", "Logs at three levels", [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.log(droid::log_level::debug, "detail");
      co_await ctx.log(droid::log_level::warning, "careful");
      co_await ctx.log(droid::log_level::error, "bad");
      co_return "logged";
    });
    srv.tool("progress", "Reports half way", [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.progress(0.5, 1.0, "half");
      co_return "done";
    });
    srv.tool("ask", "Asks for roots", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("roots/list");
      if (answer) co_return droid::tool_result::text("answered");
      asked_condition = answer.error().condition;
      asked_message = answer.error().message;
      co_return droid::tool_result::error(answer.error().message);
    });
    srv.tool("sample", "Samples the client's model",
             [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
               droid::sampling_request request;
               request.messages.push_back(droid::sampling_message::user_text("hello"));
               request.max_tokens = 10;
               auto answer = co_await ctx.sample(std::move(request));
               if (answer) co_return droid::tool_result::text("answered");
               asked_condition = answer.error().condition;
               asked_message = answer.error().message;
               co_return droid::tool_result::error(answer.error().message);
             });
    srv.resource(droid::resource_info{.uri = "test://doc", .name = "doc"},
                 [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::text_of("test://doc", "the doc");
                 });
    srv.resource(droid::resource_info{.uri = "test://cached",
                                      .name = "cached",
                                      .cache = droid::cache_hint{std::chrono::seconds(5), droid::cache_scope::public_}},
                 [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::text_of("test://cached", "kept");
                 });
    srv.resource_template(droid::resource_template_info{.uri_template = "test://item/{id}",
                                                        .name = "item",
                                                        .cache = droid::cache_hint{std::chrono::seconds(7),
                                                                                   droid::cache_scope::private_}},
                          [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                            co_return droid::resource_contents::text_of(r.uri, "item " + r.variables.at("id"));
                          });
    srv.prompt(
        droid::prompt_info{.name = "greet", .description = "Greets", .arguments = {{.name = "name", .required = true}}},
        [](droid::tool_context&, droid::prompt_arguments a) -> droid::task<droid::prompt_result> {
          droid::prompt_result r;
          r.messages.push_back(droid::prompt_message::user(droid::content::text("Hello " + a.at("name"))));
          co_return r;
        });
    srv.complete_prompt_argument(
        "greet", "name", [](droid::tool_context&, droid::completion_request) -> droid::task<std::vector<std::string>> {
          co_return std::vector<std::string>{"alice", "bob"};
        });
    s = droid::session::create(srv, io.get_executor(), out);
  }
  ~fixture() { stop(); }

  /// Makes the connection a 2025 session of `version` too; returns the initialize answer.
  boost::json::value initialize(const std::string& version = "2025-11-25") {
    feed(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" + version +
         R"(","capabilities":{"sampling":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}})");
    const auto answer = only();
    feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    return answer;
  }
  /// The one message sent since the last look.
  boost::json::value only() {
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
  /// Feeds `text` and returns the one message it produced.
  boost::json::value send(const std::string& text) {
    feed(text);
    return only();
  }
};

/// A 2026 result: `resultType` and the server's identity in `_meta`.
void check_modern_result(const boost::json::value& r) {
  REQUIRE(r.as_object().contains("result"));
  const auto& result = r.at("result").as_object();
  CHECK(result.at("resultType") == "complete");
  REQUIRE(result.contains("_meta"));
  const auto& info = result.at("_meta").at(server_info_key);
  CHECK(info.at("name") == "modern-test");
  CHECK(info.at("version") == "2.0");
}

/// A 2025 result: none of what 2026-07-28 added.
void check_legacy_result(const boost::json::value& r) {
  REQUIRE(r.as_object().contains("result"));
  const auto& result = r.at("result").as_object();
  CHECK_FALSE(result.contains("resultType"));
  CHECK_FALSE(result.contains("ttlMs"));
  CHECK_FALSE(result.contains("cacheScope"));
  if (const auto* m = result.if_contains("_meta")) CHECK_FALSE(m->as_object().contains(server_info_key));
}

int code_of(const boost::json::value& r) { return static_cast<int>(r.at("error").at("code").as_int64()); }

const boost::json::value* find_named(const boost::json::value& list, std::string_view member, std::string_view name) {
  for (const auto& e : list.at("result").at(member).as_array())
    if (e.at("name").as_string() == name) return &e;
  return nullptr;
}

}  // namespace

TEST_SUITE("application/modern") {
  TEST_CASE("server/discover answers identity, versions newest first, what is registered and the cache hint") {
    // The stdio backward-compatibility probe: a client reads from this one answer which
    // versions to speak and what to call, so each member must be exactly what is served.
    {
      fixture f;
      const auto r = f.send(modern(R"("discover-1")", "server/discover"));
      CHECK(r.at("id") == "discover-1");
      check_modern_result(r);
      const auto& result = r.at("result");
      CHECK(result.at("supportedVersions") ==
            boost::json::array{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"});
      CHECK(result.at("capabilities") ==
            boost::json::parse(R"({"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},)"
                               R"("prompts":{"listChanged":true},"completions":{},"logging":{}})"));
      CHECK(result.at("instructions") == "Ask away.");
      CHECK(result.at("ttlMs") == 3600000);
      CHECK(result.at("cacheScope") == "public");
      const auto& info = result.at("_meta").at(server_info_key);
      CHECK(info.at("title") == "Modern Test");
      CHECK(info.at("websiteUrl") == "https://example.com");
      CHECK(info.at("icons").at(0).at("src") == "https://example.com/i.png");
      CHECK_FALSE(f.s->is_initialized());
      CHECK(f.s->in_flight() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("server/discover of a server with tools only declares tools and logging, with default hints") {
    // Capabilities are promises: declaring completions or resources a server lacks would
    // send the client to methods that answer -32601.
    droid::server bare{droid::server_info{.name = "bare", .version = "1"}, quiet()};
    bare.tool("only", "The only tool", [](droid::tool_context&) -> droid::task<std::string> { co_return "x"; });
    droid::test::session_driver d;
    d.s = droid::session::create(bare, d.io.get_executor(), d.out);
    d.feed(modern("1", "server/discover"));
    REQUIRE(d.out->sent.size() == 1);
    const auto r = d.out->pop();
    CHECK(r.at("result").at("capabilities") == boost::json::parse(R"({"tools":{"listChanged":true},"logging":{}})"));
    CHECK_FALSE(r.at("result").as_object().contains("instructions"));
    CHECK(r.at("result").at("ttlMs") == 0);
    CHECK(r.at("result").at("cacheScope") == "public");
  }

  TEST_CASE("every 2026 result carries resultType and serverInfo, and no 2025 result does") {
    // One framing rule for every method: a handler whose result lacked resultType would
    // be rejected by a 2026 client's schema, and a 2025 client must never see it.
    {
      fixture f;
      const std::vector<std::pair<std::string, std::string>> calls{
          {"tools/list", ""},
          {"tools/call", R"("name":"forecast","arguments":{"city":"Oslo"})"},
          {"resources/list", ""},
          {"resources/templates/list", ""},
          {"resources/read", R"("uri":"test://doc")"},
          {"prompts/list", ""},
          {"prompts/get", R"("name":"greet","arguments":{"name":"Ada"})"},
          {"completion/complete",
           R"("ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"})"},
      };
      for (const auto& c : calls) {
        CAPTURE(c.first);
        const auto r = f.send(modern("1", c.first, c.second));
        CHECK(r.at("id") == 1);
        check_modern_result(r);
      }
      (void)f.initialize();
      for (const auto& c : calls) {
        CAPTURE(c.first);
        const auto r = f.send(legacy("2", c.first, "{" + c.second + "}"));
        CHECK(r.at("id") == 2);
        check_legacy_result(r);
      }
      CHECK(f.s->in_flight() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a 2026 request without _meta, a protocol version or capabilities is -32602 with its own id") {
    // Nothing to judge: the version cannot be checked before the request says one, and
    // capabilities are required because a server must not infer them from earlier requests.
    fixture f;
    // `{"jsonrpc":"2.0","id":"a","method":..., "params":{"_meta":{<members>}}}`
    auto with_meta = [](const std::string& method, const std::string& members) {
      return R"({"jsonrpc":"2.0","id":"a","method":")" + method + R"(","params":{"_meta":{)" + members + "}}}";
    };
    const std::string version = R"("io.modelcontextprotocol/protocolVersion":)";
    const std::string capabilities = R"("io.modelcontextprotocol/clientCapabilities":)";
    const std::vector<std::pair<const char*, std::string>> requests{
        {"discover without params", R"({"jsonrpc":"2.0","id":"a","method":"server/discover"})"},
        {"discover without _meta", R"({"jsonrpc":"2.0","id":"a","method":"server/discover","params":{}})"},
        {"_meta not an object", R"({"jsonrpc":"2.0","id":"a","method":"server/discover","params":{"_meta":1}})"},
        {"_meta without protocolVersion", with_meta("server/discover", capabilities + "{}")},
        {"protocolVersion not a string", with_meta("tools/list", version + "2026," + capabilities + "{}")},
        {"no clientCapabilities", with_meta("tools/list", version + R"("2026-07-28")")},
        {"clientCapabilities not an object",
         with_meta("tools/list", version + R"("2026-07-28",)" + capabilities + "[]")},
    };
    for (const auto& [what, text] : requests) {
      const char* const label = what;
      CAPTURE(label);
      const auto r = f.send(text);
      CHECK(r.at("id") == "a");
      CHECK(code_of(r) == -32602);
    }
    CHECK(f.s->in_flight() == 0);
    CHECK_FALSE(f.s->is_initialized());
  }

  TEST_CASE("a 2026 request without clientInfo is served") {
    // clientInfo is a SHOULD; refusing a request for lacking it would break conforming clients.
    fixture f;
    const auto r = f.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{)"
                          R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                          R"("io.modelcontextprotocol/clientCapabilities":{}}}})");
    CHECK(r.at("id") == 3);
    check_modern_result(r);
    CHECK(find_named(r, "tools", "forecast") != nullptr);
  }

  TEST_CASE("an unknown logLevel in _meta is -32602 and the request is not served") {
    // A level the server cannot order would either flood or silence the client; the
    // specification makes it invalid params rather than a guess.
    fixture f;
    for (const char* level : {R"("loud")", "3", "null"}) {
      CAPTURE(level);
      const auto r = f.send(modern("4", "tools/call", R"("name":"logs","arguments":{})",
                                   meta("{}", std::string(R"(,"io.modelcontextprotocol/logLevel":)") + level)));
      CHECK(r.at("id") == 4);
      CHECK(code_of(r) == -32602);
    }
    CHECK(f.s->in_flight() == 0);
  }

  TEST_CASE("a version this server does not speak in _meta is -32022 listing the supported ones") {
    // The client picks a version from data.supported and retries; a 2025 version in _meta
    // is also unsupported, because 2025 is spoken only after initialize.
    fixture f;
    for (const char* version : {"v999", "2025-11-25", ""}) {
      CAPTURE(version);
      const auto r = f.send(modern(R"("v")", "tools/list", "", meta("{}", "", version)));
      CHECK(r.at("id") == "v");
      CHECK(code_of(r) == -32022);
      const auto& data = r.at("error").at("data");
      REQUIRE(data.at("supported").is_array());
      CHECK(data.at("supported").at(0) == "2026-07-28");
      CHECK(data.at("requested") == version);
    }
    CHECK_FALSE(f.s->is_initialized());
  }

  TEST_CASE("methods 2026-07-28 does not have are -32601, initialize among them") {
    // ping, the handshake and session state (log level, subscriptions) do not exist in the
    // stateless era; serving them would let a 2026 request change a 2025 session's state.
    fixture f;
    const std::vector<std::pair<std::string, std::string>> methods{
        {"ping", ""},
        {"initialize", R"("protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"})"},
        {"logging/setLevel", R"("level":"debug")"},
        {"resources/subscribe", R"("uri":"test://doc")"},
        {"resources/unsubscribe", R"("uri":"test://doc")"},
        {"no/such", ""},
    };
    for (const auto& m : methods) {
      CAPTURE(m.first);
      const auto r = f.send(modern("5", m.first, m.second));
      CHECK(r.at("id") == 5);
      CHECK(code_of(r) == -32601);
    }
    CHECK_FALSE(f.s->is_initialized());
    CHECK_FALSE(f.s->is_subscribed("test://doc"));
  }

  TEST_CASE("a tool needing a capability the request lacks is -32021 naming it, and served when declared") {
    // Capabilities come per request: the tool must not start (and then fail half way)
    // for a request that cannot give it what it needs.
    {
      fixture f;
      auto r = f.send(modern("6", "tools/call", R"("name":"needs_sampling","arguments":{})", meta(R"({"roots":{}})")));
      CHECK(r.at("id") == 6);
      CHECK(code_of(r) == -32021);
      CHECK(r.at("error").at("data").at("requiredCapabilities") == boost::json::parse(R"({"sampling":{}})"));
      r = f.send(modern("7", "tools/call", R"("name":"needs_sampling","arguments":{})", meta(R"({"sampling":{}})")));
      check_modern_result(r);
      CHECK(r.at("result").at("content").at(0).at("text") == "sampled");
      // The requirement is the server's business, not part of the listing.
      r = f.send(modern("8", "tools/list"));
      const auto* entry = find_named(r, "tools", "needs_sampling");
      REQUIRE(entry);
      CHECK(entry->as_object().size() == 3);  // name, description, inputSchema
      CHECK(f.s->in_flight() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026 lists and reads carry the configured cache hints, per resource where set, and 2025 ones never") {
    // A client caches by these; a 2025 client validating strictly would reject the members.
    fixture f;
    struct row {
      const char* method;
      std::string members;
      std::int64_t ttl;
      const char* scope;
    };
    const std::vector<row> rows{
        {"tools/list", "", 60000, "public"},
        {"prompts/list", "", 1000, "private"},
        {"resources/list", "", 2000, "public"},
        {"resources/templates/list", "", 3000, "public"},
        {"resources/read", R"("uri":"test://doc")", 0, "private"},        // the server's default for reads
        {"resources/read", R"("uri":"test://cached")", 5000, "public"},   // the resource's own
        {"resources/read", R"("uri":"test://item/7")", 7000, "private"},  // the template's own
    };
    for (const row& r : rows) {
      CAPTURE(r.method);
      CAPTURE(r.members);
      const auto answer = f.send(modern("1", r.method, r.members));
      check_modern_result(answer);
      CHECK(answer.at("result").at("ttlMs") == r.ttl);
      CHECK(answer.at("result").at("cacheScope") == r.scope);
    }
    (void)f.initialize();
    for (const row& r : rows) {
      CAPTURE(r.method);
      CAPTURE(r.members);
      check_legacy_result(f.send(legacy("2", r.method, "{" + r.members + "}")));
    }
  }

  TEST_CASE("an unknown resource is -32602 for a 2026 request and still -32002 in a 2025 session") {
    // SEP-2164 changed the code in 2026-07-28; a 2025 client keeps the code it knows.
    fixture f;
    auto r = f.send(modern("1", "resources/read", R"("uri":"test://missing")"));
    CHECK(r.at("id") == 1);
    CHECK(code_of(r) == -32602);
    CHECK(r.at("error").at("data").at("uri") == "test://missing");
    (void)f.initialize();
    r = f.send(legacy("2", "resources/read", R"({"uri":"test://missing"})"));
    CHECK(code_of(r) == -32002);
    CHECK(r.at("error").at("data").at("uri") == "test://missing");
    r = f.send(modern("3", "resources/read", R"("uri":"test://missing")"));
    CHECK(code_of(r) == -32602);
  }

  TEST_CASE("a 2026 request's log messages follow the logLevel of its own _meta only") {
    // The level is per request: a request that did not ask must not receive messages
    // because an earlier one did.
    {
      fixture f;
      const std::string call = R"("name":"logs","arguments":{})";
      auto r = f.send(modern("1", "tools/call", call));  // no logLevel: nothing but the answer
      CHECK(r.at("id") == 1);
      f.feed(modern("2", "tools/call", call, meta("{}", R"(,"io.modelcontextprotocol/logLevel":"warning")")));
      REQUIRE(f.out->sent.size() == 3);
      auto m = f.out->pop();
      CHECK(m.at("method") == "notifications/message");
      CHECK(m.at("params").at("level") == "warning");
      CHECK(m.at("params").at("data") == "careful");
      CHECK(f.out->pop().at("params").at("level") == "error");
      check_modern_result(f.out->pop());
      r = f.send(modern("3", "tools/call", call));
      CHECK(r.at("id") == 3);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a 2025 session's log level and a 2026 request's do not leak into each other on one connection") {
    // stdio carries both eras; the session's setLevel is session state, a 2026 level is
    // one request's, and neither may change what the other receives.
    fixture f;
    (void)f.initialize();
    CHECK(f.send(legacy("1", "logging/setLevel", R"({"level":"debug"})")).at("result") == boost::json::object{});
    const std::string call = R"("name":"logs","arguments":{})";
    auto r = f.send(modern("2", "tools/call", call));
    check_modern_result(r);
    f.feed(modern("3", "tools/call", call, meta("{}", R"(,"io.modelcontextprotocol/logLevel":"error")")));
    REQUIRE(f.out->sent.size() == 2);
    CHECK(f.out->pop().at("params").at("level") == "error");
    check_modern_result(f.out->pop());
    REQUIRE(f.s->peer().min_log_level);
    CHECK(*f.s->peer().min_log_level == droid::log_level::debug);
    f.feed(legacy("4", "tools/call", "{" + call + "}"));
    REQUIRE(f.out->sent.size() == 4);  // debug, warning, error, then the answer
    CHECK(f.out->pop().at("params").at("level") == "debug");
  }

  TEST_CASE("a progress token in a 2026 request's _meta gets progress notifications as in 2025") {
    // Progress is request-scoped and travels on that request's stream in both eras.
    fixture f;
    f.feed(modern("1", "tools/call", R"("name":"progress","arguments":{})", meta("{}", R"(,"progressToken":"tok")")));
    REQUIRE(f.out->sent.size() == 2);
    const auto p = f.out->pop();
    CHECK(p.at("method") == "notifications/progress");
    CHECK(p.at("params").at("progressToken") == "tok");
    CHECK(p.at("params").at("progress") == 0.5);
    CHECK(p.at("params").at("message") == "half");
    check_modern_result(f.out->pop());
    // Without a token, no progress: MCP forbids inventing one.
    check_modern_result(f.send(modern("2", "tools/call", R"("name":"progress","arguments":{})")));
  }

  TEST_CASE("subscriptions/listen acknowledges first, tagged with the listen id in its own JSON type") {
    // On stdio every subscription shares one channel: the client demultiplexes by this
    // tag, so 4 and "4" must stay what they were.
    for (const char* id : {"4", R"("listen-1")"}) {
      CAPTURE(id);
      {
        fixture f;
        f.feed(
            modern(id, "subscriptions/listen",
                   R"("notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,)"
                   R"("resourceSubscriptions":["test://doc"]})"));
        const auto ack = f.only();
        CHECK(ack.at("method") == "notifications/subscriptions/acknowledged");
        CHECK_FALSE(ack.as_object().contains("id"));
        CHECK(ack.at("params").at("_meta").at(subscription_key) == boost::json::parse(id));
        CHECK(ack.at("params").at("notifications") ==
              boost::json::parse(R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,)"
                                 R"("resourceSubscriptions":["test://doc"]})"));
        CHECK(f.s->in_flight() == 1);
      }
      CHECK(droid::live_frames() == 0);
    }
  }

  TEST_CASE("subscriptions/listen acknowledges only what the server can send") {
    // The acknowledgement is the honoured subset; promising prompt changes from a server
    // with no prompts would leave the client waiting for nothing.
    {
      droid::server bare{droid::server_info{.name = "bare", .version = "1"}, quiet()};
      bare.tool("only", "The only tool", [](droid::tool_context&) -> droid::task<std::string> { co_return "x"; });
      droid::test::session_driver d;
      d.s = droid::session::create(bare, d.io.get_executor(), d.out);
      d.feed(modern("1", "subscriptions/listen",
                    R"("notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,)"
                    R"("resourceSubscriptions":["test://doc"]})"));
      REQUIRE(d.out->sent.size() == 1);
      CHECK(d.out->pop().at("params").at("notifications") == boost::json::parse(R"({"toolsListChanged":true})"));
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a listen stream forwards the changes it asked for, each tagged, and nothing else") {
    // The specification says MUST NOT send types the client did not request; two
    // concurrent listens each get only their own.
    {
      fixture f;
      f.feed(modern("4", "subscriptions/listen",
                    R"("notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://doc"]})"));
      f.feed(modern(R"("p")", "subscriptions/listen", R"("notifications":{"promptsListChanged":true})"));
      REQUIRE(f.out->sent.size() == 2);
      CHECK(f.out->pop().at("method") == "notifications/subscriptions/acknowledged");
      CHECK(f.out->pop().at("params").at("_meta").at(subscription_key) == "p");

      f.srv.tool("late", "Added later", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
      droid::test::poll(f.io);
      auto n = f.only();
      CHECK(n.at("method") == "notifications/tools/list_changed");
      CHECK(n.at("params").at("_meta").at(subscription_key) == 4);

      f.srv.prompt(droid::prompt_info{.name = "late_prompt", .description = "Later"},
                   [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                     co_return droid::prompt_result{};
                   });
      droid::test::poll(f.io);
      n = f.only();
      CHECK(n.at("method") == "notifications/prompts/list_changed");
      CHECK(n.at("params").at("_meta").at(subscription_key) == "p");

      // Not asked for by either: a new resource, and an update to a URI nobody named.
      f.srv.resource(droid::resource_info{.uri = "test://new", .name = "new"},
                     [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                       co_return droid::resource_contents::text_of("test://new", "");
                     });
      f.srv.resource_updated("test://other");
      droid::test::poll(f.io);
      CHECK(f.out->sent.empty());

      f.srv.resource_updated("test://doc");
      droid::test::poll(f.io);
      n = f.only();
      CHECK(n.at("method") == "notifications/resources/updated");
      CHECK(n.at("params").at("uri") == "test://doc");
      CHECK(n.at("params").at("_meta").at(subscription_key) == 4);

      CHECK(f.srv.remove_tool("late"));
      droid::test::poll(f.io);
      CHECK(f.only().at("params").at("_meta").at(subscription_key) == 4);
      CHECK(f.s->in_flight() == 2);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("subscriptions/listen without a notifications filter is -32602") {
    // A listen with no filter could only ever send nothing; refusing says so at once.
    fixture f;
    for (const char* members :
         {"", R"("notifications":[])", R"("notifications":{"resourceSubscriptions":"test://doc"})"}) {
      CAPTURE(members);
      const auto r = f.send(modern("4", "subscriptions/listen", members));
      CHECK(r.at("id") == 4);
      CHECK(code_of(r) == -32602);
    }
    CHECK(f.s->in_flight() == 0);
  }

  TEST_CASE("cancelling a listen ends it with no response and nothing more sent") {
    // On stdio, notifications/cancelled is how a client closes a subscription; the
    // canceller expects nothing back, and the registry must stop forwarding.
    {
      fixture f;
      f.feed(modern("4", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"));
      CHECK(f.only().at("method") == "notifications/subscriptions/acknowledged");
      CHECK(f.s->in_flight() == 1);
      f.feed(cancel("4"));
      CHECK(f.out->sent.empty());
      CHECK(f.s->in_flight() == 0);
      f.srv.tool("late", "Added later", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
      droid::test::poll(f.io);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("closing the session ends its listen streams with their final answer, leaving nothing in flight and no frame alive") {
    // The transport closing (stdio EOF) is the other way a subscription ends. The server
    // ends it, so each listen gets its response (tagged with its id): the client can tell
    // a graceful end from a dropped connection.
    {
      fixture f;
      f.feed(modern("4", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"));
      f.feed(modern("5", "subscriptions/listen", R"("notifications":{"resourceSubscriptions":["test://doc"]})"));
      REQUIRE(f.out->sent.size() == 2);
      CHECK(f.out->pop().at("method") == "notifications/subscriptions/acknowledged");
      CHECK(f.out->pop().at("method") == "notifications/subscriptions/acknowledged");
      CHECK(f.s->in_flight() == 2);
      f.s->close();
      droid::test::poll(f.io);
      CHECK(f.s->in_flight() == 0);
      REQUIRE(f.out->sent.size() == 2);
      for (int i = 0; i < 2; ++i) {
        const auto end = f.out->pop();
        CAPTURE(end);
        CHECK(end.at("result").at("resultType") == "complete");
        CHECK(end.at("result").at("_meta").at("io.modelcontextprotocol/subscriptionId") == end.at("id"));
        CHECK(end.at("result").at("_meta").as_object().contains("io.modelcontextprotocol/serverInfo"));
      }
      f.srv.tool("late", "Added later", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
      f.srv.resource_updated("test://doc");
      droid::test::poll(f.io);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("notifications/cancelled naming a 2026 request stops its tool and no response is sent") {
    // 2026 requests share the connection's in-flight table, so the cancellation names
    // them by the id the client gave, as in 2025.
    {
      fixture f;
      f.feed(modern("7", "tools/call", R"("name":"slow","arguments":{})", meta("{}", R"(,"progressToken":1)")));
      CHECK(f.only().at("method") == "notifications/progress");
      CHECK(f.s->in_flight() == 1);
      f.feed(cancel("7"));
      CHECK(f.slow_finished == 1);
      CHECK(f.slow_saw_cancel);
      CHECK(f.s->in_flight() == 0);
      CHECK(f.out->sent.empty());  // neither the late progress nor a response
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a 2026 request's question for a capability its _meta did not declare is refused at once") {
    // The question would go into an input_required result the client cannot answer; the
    // tool learns why at once (rounds_test.cpp covers the questions that are asked).
    for (const char* tool : {"ask", "sample"}) {
      CAPTURE(tool);
      {
        fixture f;
        const auto r = f.send(modern("1", "tools/call", std::string(R"("name":")") + tool + R"(","arguments":{})",
                                     meta(R"({"elicitation":{}})")));
        check_modern_result(r);  // the only message: no question was sent
        CHECK(r.at("result").at("isError") == true);
        CHECK(f.asked_condition == droid::errc::exchange_refused);
        CHECK(f.asked_message.find("in the request's _meta") != std::string::npos);
        CHECK(f.s->outstanding_exchanges() == 0);
        CHECK(f.s->in_flight() == 0);
        CHECK(f.srv.kept_frames() == 0);
      }
      CHECK(droid::live_frames() == 0);
    }
  }

  TEST_CASE("each era gets a tool and the server's identity with exactly the fields it knows") {
    // A client validating strictly rejects fields of a later revision (2024-11-05 and
    // structuredContent), and one that is sent too little loses what it could show.
    struct era {
      const char* version;
      bool annotations;
      bool titles;  // title, outputSchema and structuredContent came together
      bool icons;   // icons and websiteUrl
      bool result_type;
    };
    for (const era& e : {era{"2024-11-05", false, false, false, false}, era{"2025-03-26", true, false, false, false},
                         era{"2025-06-18", true, true, false, false}, era{"2025-11-25", true, true, true, false},
                         era{"2026-07-28", true, true, true, true}}) {
      const std::string version = e.version;
      CAPTURE(version);
      fixture f;
      boost::json::value identity, list, call;
      const std::string args = R"("name":"forecast","arguments":{"city":"Oslo"})";
      if (e.result_type) {
        identity = f.send(modern("1", "server/discover")).at("result").at("_meta").at(server_info_key);
        list = f.send(modern("2", "tools/list"));
        call = f.send(modern("3", "tools/call", args));
      } else {
        const auto init = f.initialize(version);
        CHECK(init.at("result").at("protocolVersion") == boost::json::value(version));
        identity = init.at("result").at("serverInfo");
        list = f.send(legacy("2", "tools/list"));
        call = f.send(legacy("3", "tools/call", "{" + args + "}"));
      }
      CHECK(identity.at("name") == "modern-test");
      CHECK(identity.as_object().contains("title") == e.titles);
      CHECK(identity.as_object().contains("icons") == e.icons);
      CHECK(identity.as_object().contains("websiteUrl") == e.icons);

      const auto* entry = find_named(list, "tools", "forecast");
      REQUIRE(entry);
      const auto& tool = entry->as_object();
      CHECK(tool.at("description") == "Weather for a city");
      CHECK(tool.at("inputSchema").at("type") == "object");
      CHECK(tool.contains("annotations") == e.annotations);
      if (e.annotations) CHECK(tool.at("annotations").at("readOnlyHint") == true);
      CHECK(tool.contains("title") == e.titles);
      CHECK(tool.contains("outputSchema") == e.titles);
      CHECK(tool.contains("icons") == e.icons);

      const auto& result = call.at("result").as_object();
      CHECK(result.contains("structuredContent") == e.titles);
      if (e.titles) CHECK(result.at("structuredContent").at("degrees") == 21);
      // Every era reads the text mirror.
      CHECK(boost::json::parse(result.at("content").at(0).at("text").as_string()).at("city") == "Oslo");
      CHECK(result.contains("resultType") == e.result_type);
      CHECK(list.at("result").as_object().contains("resultType") == e.result_type);
    }
  }

  TEST_CASE("one connection serves a 2025 session and interleaved 2026 requests, each in its own shape") {
    // stdio: one pipe, one session, both eras; the era is the request's, not the connection's.
    {
      fixture f;
      (void)f.initialize();
      const std::string args = R"("name":"forecast","arguments":{"city":"Oslo"})";
      check_legacy_result(f.send(legacy("1", "tools/list")));
      check_modern_result(f.send(modern("2", "tools/list")));
      auto r = f.send(legacy("3", "tools/call", "{" + args + "}"));
      check_legacy_result(r);
      CHECK(r.at("result").at("structuredContent").at("city") == "Oslo");
      check_modern_result(f.send(modern("4", "tools/call", args)));
      // A 2025 session still answers ping; the 2026 request on the same connection does not.
      CHECK(f.send(legacy("5", "ping")).at("result") == boost::json::object{});
      CHECK(code_of(f.send(modern("6", "ping"))) == -32601);
      // An argument that merely mentions the version key leaves the request a 2025 one.
      r = f.send(legacy("7", "tools/call",
                        R"({"name":"forecast","arguments":{"city":"io.modelcontextprotocol/protocolVersion"}})"));
      check_legacy_result(r);
      CHECK(f.s->peer().protocol_version == "2025-11-25");
      CHECK(f.s->in_flight() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a 2026 request reusing the id of an in-flight 2025 request is refused as a duplicate, and back") {
    // Both eras share the connection's in-flight table: two live requests with one id
    // would make a response or a cancellation ambiguous.
    {
      fixture f;
      (void)f.initialize();
      const std::string slow = R"("name":"slow","arguments":{})";
      f.feed(legacy("5", "tools/call", "{" + slow + "}"));
      CHECK(f.out->sent.empty());  // no progress token, no progress
      auto r = f.send(modern("5", "tools/list"));
      CHECK(r.at("id").is_null());
      CHECK(code_of(r) == -32600);
      f.feed(modern("6", "tools/call", slow));
      r = f.send(legacy("6", "ping"));
      CHECK(r.at("id").is_null());
      CHECK(code_of(r) == -32600);
      CHECK(f.s->in_flight() == 2);
      f.feed(cancel("5"));
      f.feed(cancel("6"));
      CHECK(f.slow_finished == 2);
      CHECK(f.s->in_flight() == 0);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a reused in-flight id is refused as a duplicate even when the request would be refused anyway") {
    // Any answer carrying the id (a -32601 for a 2026 ping, a -32602 for bad _meta, a
    // session method answered at once) would be taken by the client for the answer to
    // the request still running under that id.
    {
      fixture f;
      (void)f.initialize();
      f.feed(legacy("5", "tools/call", R"({"name":"slow","arguments":{}})"));
      REQUIRE(f.out->sent.empty());
      for (const std::string& text :
           {modern("5", "ping"), modern("5", "tools/list", "", meta("{}", "", "v999")),
            legacy("5", "logging/setLevel", R"({"level":"debug"})"),
            legacy("5", "resources/subscribe", R"({"uri":"test://doc"})"), legacy("5", "initialize")}) {
        CAPTURE(text);
        const auto r = f.send(text);
        CHECK(r.at("id").is_null());
        CHECK(code_of(r) == -32600);
      }
      CHECK_FALSE(f.s->peer().min_log_level);
      CHECK_FALSE(f.s->is_subscribed("test://doc"));
      CHECK(f.s->in_flight() == 1);
      f.feed(cancel("5"));
      CHECK(f.s->in_flight() == 0);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026 requests leave the 2025 session's identity, log level and subscriptions untouched") {
    // A 2026 request brings its own view of the client; the session's is what initialize
    // and its own requests said.
    fixture f;
    (void)f.initialize();
    (void)f.send(legacy("1", "logging/setLevel", R"({"level":"error"})"));
    (void)f.send(legacy("2", "resources/subscribe", R"({"uri":"test://doc"})"));
    CHECK(code_of(f.send(modern("3", "logging/setLevel", R"("level":"debug")"))) == -32601);
    CHECK(code_of(f.send(modern("4", "resources/unsubscribe", R"("uri":"test://doc")"))) == -32601);
    f.feed(modern("5", "tools/call", R"("name":"logs","arguments":{})",
                  meta(R"({"elicitation":{}})", R"(,"io.modelcontextprotocol/logLevel":"debug")")));
    CHECK(f.out->sent.size() == 4);
    f.out->sent.clear();
    CHECK(f.s->is_subscribed("test://doc"));
    REQUIRE(f.s->peer().min_log_level);
    CHECK(*f.s->peer().min_log_level == droid::log_level::error);
    CHECK(f.s->peer().protocol_version == "2025-11-25");
    CHECK(f.s->peer().client_info.at("name") == "t");
    CHECK_FALSE(f.s->peer().has_capability("elicitation"));
    // The session's own subscription still works: its notification has no subscription tag.
    f.srv.resource_updated("test://doc");
    droid::test::poll(f.io);
    const auto n = f.only();
    CHECK(n.at("method") == "notifications/resources/updated");
    CHECK_FALSE(n.at("params").as_object().contains("_meta"));
  }

  TEST_CASE("a 2026 result with a _meta of its own gets one _meta holding both") {
    // JSON forbids the key twice: a listen's closing result carries its subscriptionId in
    // _meta, and the server's identity must join it, not follow it as a second _meta.
    fixture f;
    auto runner = droid::request_runner::create(f.srv, f.io.get_executor());
    droid::peer_info modern_peer;
    modern_peer.protocol_version = "2026-07-28";
    modern_peer.revision = droid::protocol_revision::v2026_07_28;
    runner->send_result(f.out.get(), droid::ir::request_id(4),
                        R"({"_meta":{"io.modelcontextprotocol/subscriptionId":4},"x":1})", modern_peer);
    runner->send_result(f.out.get(), droid::ir::request_id(5), "{}", modern_peer);
    runner->send_result(f.out.get(), droid::ir::request_id(6), R"({"x":1})", droid::peer_info{});
    REQUIRE(f.out->sent.size() == 3);
    const std::string merged = f.out->sent.front();
    auto r = f.out->pop();
    check_modern_result(r);
    CHECK(r.at("result").at("_meta").at(subscription_key) == 4);
    CHECK(r.at("result").at("x") == 1);
    CHECK(merged.find("_meta") == merged.rfind("_meta"));
    r = f.out->pop();
    check_modern_result(r);
    CHECK(r.at("result").as_object().size() == 2);
    r = f.out->pop();
    check_legacy_result(r);
    CHECK(r.at("result") == boost::json::parse(R"({"x":1})"));
  }

  TEST_CASE("admit_modern refuses a malformed request first, then a header mismatch, then the version") {
    // The order the official suite checks: header 2026-07-28 with _meta v999 is a mismatch
    // (-32020), both v999 is an unsupported version (-32022); HTTP sends the status first.
    fixture f;
    struct row {
      const char* what;
      std::optional<std::string_view> header;
      std::string request;
      int code;
      int status;
    };
    const std::vector<row> rows{
        {"header 2026, _meta v999", "2026-07-28", modern("1", "tools/list", "", meta("{}", "", "v999")), -32020, 400},
        {"header and _meta v999", "v999", modern("1", "tools/list", "", meta("{}", "", "v999")), -32022, 400},
        {"header 2025, _meta 2026", "2025-11-25", modern("1", "tools/list"), -32020, 400},
        {"no _meta, header present", "2026-07-28", legacy("1", "tools/list"), -32602, 400},
        {"no protocolVersion, header present", "2026-07-28",
         legacy("1", "tools/list", R"({"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}})"), -32602, 400},
        {"bad logLevel, header v999", "v999",
         modern("1", "tools/list", "", meta("{}", R"(,"io.modelcontextprotocol/logLevel":"x")", "v999")), -32602, 400},
        {"a method 2026 lacks", "2026-07-28", modern("1", "ping"), -32601, 404},
        {"an unknown method", std::nullopt, modern("1", "no/such"), -32601, 404},
        {"a missing capability", std::nullopt, modern("1", "tools/call", R"("name":"needs_sampling")"), -32021, 400},
        {"v999 with no header", std::nullopt, modern("1", "tools/list", "", meta("{}", "", "v999")), -32022, 400},
    };
    for (const row& r : rows) {
      const char* const label = r.what;
      CAPTURE(label);
      droid::peer_info peer;
      const auto refusal = droid::admit_modern(f.srv, message_of(r.request), r.header, peer);
      REQUIRE(refusal);
      CHECK(static_cast<int>(refusal->code) == r.code);
      CHECK(refusal->http_status == r.status);
      CHECK_FALSE(refusal->message.empty());
      if (r.code == -32022) {
        const auto data = boost::json::parse(refusal->data);
        CHECK(data.at("requested") == "v999");
        CHECK(data.at("supported").at(0) == "2026-07-28");
      }
      if (r.code == -32021)
        CHECK(boost::json::parse(refusal->data).at("requiredCapabilities") == boost::json::parse(R"({"sampling":{}})"));
    }
  }

  TEST_CASE("admit_modern fills the request's own view of the client") {
    // What _meta carries is all a handler will know of this client: version, identity,
    // capabilities and log level, through the same peer_info a 2025 session fills.
    fixture f;
    droid::peer_info peer;
    const auto refusal = droid::admit_modern(
        f.srv,
        message_of(
            modern("1", "tools/list", "", meta(R"({"roots":{}})", R"(,"io.modelcontextprotocol/logLevel":"notice")"))),
        "2026-07-28", peer);
    CHECK_FALSE(refusal);
    CHECK(peer.protocol_version == "2026-07-28");
    CHECK(peer.revision == droid::protocol_revision::v2026_07_28);
    CHECK(peer.is_modern());
    CHECK(peer.has_capability("roots"));
    CHECK_FALSE(peer.has_capability("sampling"));
    CHECK(peer.client_info.at("name") == "modern-client");
    REQUIRE(peer.min_log_level);
    CHECK(*peer.min_log_level == droid::log_level::notice);
  }

  TEST_CASE("is_modern_request looks for the version in _meta and for the 2026-only methods") {
    // Decides the era of every message on a connection that carries both; a false
    // positive would answer a 2025 client in 2026's shape.
    CHECK(droid::is_modern_request(message_of(modern("1", "tools/list"))));
    CHECK(droid::is_modern_request(message_of(R"({"jsonrpc":"2.0","id":1,"method":"server/discover"})")));
    CHECK(droid::is_modern_request(
        message_of(R"({"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}})")));
    CHECK(droid::is_modern_request(message_of(modern("1", "initialize"))));
    CHECK_FALSE(droid::is_modern_request(message_of(
        legacy("1", "initialize",
               R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}})"))));
    CHECK_FALSE(droid::is_modern_request(message_of(legacy(
        "1", "tools/call", R"({"name":"forecast","arguments":{"city":"io.modelcontextprotocol/protocolVersion"}})"))));
    CHECK_FALSE(droid::is_modern_request(message_of(legacy(
        "1", "tools/call",
        R"({"name":"forecast","arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})"))));
    CHECK_FALSE(droid::is_modern_request(
        message_of(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{)" + meta() + "}}")));
    CHECK_FALSE(droid::is_modern_request(message_of(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")));
  }
}
