// SPDX-License-Identifier: BSL-1.0
/// @file
/// The generic extension mechanism through a session, with no I/O, in both protocol eras:
/// declared extensions in the capabilities, what a client declared read through
/// `peer_info::extension`, custom requests and notifications (typed params and results,
/// their errors, the extension gate, cache hints) and `_meta` set by the author on every
/// entity a server lists or returns, with the reserved keys refused.
#include <droid/application/server/server.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include "support.hpp"

namespace {

struct search_params {
  std::string query;
  std::optional<int> limit;
};
BOOST_DESCRIBE_STRUCT(search_params, (), (query, limit))

struct search_result {
  std::vector<std::string> hits;
};
BOOST_DESCRIBE_STRUCT(search_result, (), (hits))

struct ping_params {
  std::string note;
};
BOOST_DESCRIBE_STRUCT(ping_params, (), (note))

constexpr std::string_view search_ext = "com.example/search";
constexpr std::string_view server_info_key = "io.modelcontextprotocol/serverInfo";

/// A 2026-07-28 request's `_meta` declaring `capabilities`.
std::string meta(const std::string& capabilities = "{}") {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":)" +
         capabilities + R"(,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}})";
}

/// A 2026-07-28 request of `method` with `members` after `_meta`.
std::string modern(const std::string& method, const std::string& members = "", const std::string& capabilities = "{}") {
  return R"({"jsonrpc":"2.0","id":7,"method":")" + method + R"(","params":{)" + meta(capabilities) +
         (members.empty() ? "" : "," + members) + "}}";
}

const std::string with_search = R"({"extensions":{"com.example/search":{"maxHits":3}}})";

droid::server_options quiet(std::vector<std::string>* diagnostics = nullptr) {
  droid::server_options o;
  o.diagnostics = [diagnostics](const droid::diagnostic& d) {
    if (!diagnostics) return;
    std::string line(d.message);
    for (const auto& f : d.fields) line += std::string(" ") + std::string(f.key) + "=" + std::string(f.value);
    diagnostics->push_back(std::move(line));
  };
  return o;
}

/// A server with a custom method of an extension, one outside any, a notification
/// handler, and `_meta` on everything it lists or returns.
struct fixture : droid::test::session_driver {
  std::vector<std::string> diagnostics;
  droid::server srv{droid::server_info{.name = "ext-test", .version = "1"}, quiet(&diagnostics)};
  std::vector<std::string> pings;
  /// What the last search's handler read of the client's declared settings.
  std::string seen_settings;

  fixture() {
    srv.extension("com.example/ui", boost::json::object{{"mimeTypes", boost::json::array{"text/html"}}});
    srv.method(
        "search/run",
        [this](droid::tool_context& ctx, search_params p) -> droid::task<search_result> {
          if (const boost::json::object* s = ctx.peer().extension(search_ext)) seen_settings = boost::json::serialize(*s);
          if (p.query == "fail") throw droid::protocol_error(-32002, "no index", R"({"index":"main"})");
          if (p.query == "boom") throw std::runtime_error("disk on fire");
          search_result r;
          for (int i = 0; i < p.limit.value_or(2); ++i) r.hits.push_back(p.query + std::to_string(i));
          co_return r;
        },
        droid::method_options{.extension = std::string(search_ext),
                              .cache = droid::cache_hint{std::chrono::seconds(30), droid::cache_scope::private_}});
    srv.method("com.example/stamp", [](droid::tool_context&) -> droid::task<boost::json::object> {
      co_return boost::json::object{{"stamp", 42}, {"_meta", {{"com.example/origin", "clock"}}}};
    });
    srv.method("com.example/touch", [](droid::tool_context&, boost::json::object) -> droid::task<void> { co_return; });
    srv.method("com.example/legacy-only", [](droid::tool_context&) -> droid::task<void> { co_return; },
               droid::method_options{.in_2026 = false});
    srv.method("com.example/cached-empty", [](droid::tool_context&) -> droid::task<void> { co_return; },
               droid::method_options{.cache = droid::cache_hint{std::chrono::seconds(2), droid::cache_scope::public_}});
    srv.on_notification("com.example/ping", [this](const droid::peer_info& peer, ping_params p) {
      pings.push_back(p.note + "@" + peer.protocol_version);
    });
    srv.on_notification("notifications/search/hint", [this](const droid::peer_info&) { pings.push_back("hint"); },
                        droid::method_options{.extension = std::string(search_ext)});
    srv.tool(droid::tool_info{.name = "show", .description = "Shows a page", .meta = {{"ui", {{"resourceUri", "ui://page"}}}}},
             [](droid::tool_context&) -> droid::task<droid::tool_result> {
               auto r = droid::tool_result::text("shown");
               r.meta(boost::json::object{{"com.example/trace", "t-1"}});
               co_return r;
             });
    srv.tool("bad_meta", "Sets a reserved key", [](droid::tool_context&) -> droid::task<droid::tool_result> {
      auto r = droid::tool_result::text("never");
      r.meta(boost::json::object{{"io.modelcontextprotocol/related-task", "x"}});
      co_return r;
    });
    srv.resource(droid::resource_info{.uri = "ui://page", .name = "page", .mime_type = "text/html", .meta = {{"ui", {{"prefersBorder", true}}}}},
                 [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   auto c = droid::resource_contents::text_of("ui://page", "<p>hi</p>", "text/html");
                   c.meta = {{"ui", {{"domain", "example.com"}}}};
                   co_return c;
                 });
    srv.resource_template(droid::resource_template_info{.uri_template = "ui://page/{n}", .name = "pages", .meta = {{"k", 1}}},
                          [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                            co_return droid::resource_contents::text_of(r.uri, "n");
                          });
    srv.prompt(droid::prompt_info{.name = "greet", .description = "Greets", .meta = {{"com.example/tone", "warm"}}},
               [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                 droid::prompt_result r;
                 r.meta = {{"com.example/tone", "warm"}};
                 r.messages.push_back(droid::prompt_message::user(droid::content::text("hi")));
                 co_return r;
               });
  }
  ~fixture() { stop(); }

  /// Initializes a 2025 session of `version` declaring `capabilities`.
  boost::json::value initialize(const std::string& capabilities = "{}", const std::string& version = "2025-11-25") {
    s = droid::session::create(srv, io.get_executor(), out);
    feed(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" + version +
         R"(","capabilities":)" + capabilities + R"(,"clientInfo":{"name":"t","version":"1"}}})");
    auto answer = out->pop();
    feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    return answer;
  }
  /// A session for 2026 requests only (never initialized).
  void open() { s = droid::session::create(srv, io.get_executor(), out); }
  boost::json::value send(const std::string& text) {
    feed(text);
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
};

int code_of(const boost::json::value& r) { return static_cast<int>(r.at("error").at("code").as_int64()); }

const boost::json::value& named(const boost::json::value& list, std::string_view member, std::string_view key,
                                std::string_view value) {
  for (const auto& e : list.at("result").at(member).as_array())
    if (e.at(key).as_string() == value) return e;
  FAIL("no entry " << value);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_SUITE("application/extensions") {
  TEST_CASE("declared extensions appear in initialize's and server/discover's capabilities, beside tasks") {
    fixture f;
    const auto init = f.initialize();
    const auto& caps = init.at("result").at("capabilities");
    CHECK(caps.at("extensions") == boost::json::parse(R"({"com.example/ui":{"mimeTypes":["text/html"]},"com.example/search":{}})"));

    fixture g;
    g.srv.tool(droid::tool_info{.name = "long", .description = "Runs long", .tasks = droid::task_support::optional},
               [](droid::tool_context&) -> droid::task<std::string> { co_return "done"; });
    g.open();
    const auto discovered = g.send(modern("server/discover"));
    CHECK(discovered.at("result").at("capabilities").at("extensions") ==
          boost::json::parse(R"({"io.modelcontextprotocol/tasks":{},"com.example/ui":{"mimeTypes":["text/html"]},)"
                             R"("com.example/search":{}})"));
  }

  TEST_CASE("extension names and custom method names are checked at registration") {
    droid::server srv{droid::server_info{.name = "t", .version = "1"}, quiet()};
    CHECK_THROWS_AS(srv.extension("no-slash"), std::invalid_argument);
    CHECK_THROWS_AS(srv.extension("com.example/"), std::invalid_argument);
    CHECK_THROWS_AS(srv.extension("1com.example/x"), std::invalid_argument);
    CHECK_THROWS_AS(srv.extension("io.modelcontextprotocol/tasks"), std::invalid_argument);
    CHECK_NOTHROW(srv.extension("io.modelcontextprotocol/ui", {}));
    const auto handler = [](droid::tool_context&) -> droid::task<void> { co_return; };
    CHECK_THROWS_AS(srv.method("tools/call", handler), std::invalid_argument);
    CHECK_THROWS_AS(srv.method("notifications/progress", handler), std::invalid_argument);
    CHECK_THROWS_AS(srv.method("x/y", handler, droid::method_options{.extension = "bad"}), std::invalid_argument);
    CHECK_THROWS_AS(srv.method("x/y", handler, droid::method_options{.in_2025 = false, .in_2026 = false}),
                    std::invalid_argument);
    CHECK_NOTHROW(srv.method("x/y", handler));
    CHECK_THROWS_AS(srv.method("x/y", handler), std::invalid_argument);
    CHECK(srv.remove_method("x/y"));
    CHECK_FALSE(srv.remove_method("x/y"));
    // MCP's reserved _meta prefixes are the framework's to write.
    const auto tool = [](droid::tool_context&) -> droid::task<std::string> { co_return ""; };
    CHECK_THROWS_AS(srv.tool(droid::tool_info{.name = "t", .description = "d", .meta = {{"io.modelcontextprotocol/x", 1}}}, tool),
                    std::invalid_argument);
    CHECK_THROWS_AS(srv.tool(droid::tool_info{.name = "t", .description = "d", .meta = {{"dev.mcp.tools/x", 1}}}, tool),
                    std::invalid_argument);
    CHECK_NOTHROW(srv.tool(droid::tool_info{.name = "t", .description = "d", .meta = {{"ui", 1}, {"com.example/x", 2}}}, tool));
    CHECK(droid::is_reserved_meta_key("modelcontextprotocol.io/x"));
    CHECK_FALSE(droid::is_reserved_meta_key("progressToken"));
    CHECK_FALSE(droid::is_reserved_meta_key("com.mcpish/x"));
  }

  TEST_CASE("a custom method in a 2025 session: typed params and result, errors, the extension gate") {
    fixture f;
    f.initialize(with_search);
    auto r = f.request("search/run", R"({"query":"cat","limit":3,"_meta":{"progressToken":1}})");
    CHECK(r.at("result") == boost::json::parse(R"({"hits":["cat0","cat1","cat2"]})"));
    CHECK(f.seen_settings == R"({"maxHits":3})");
    // Params that do not decode, and the handler's own errors.
    CHECK(code_of(f.request("search/run", R"({"query":5})")) == -32602);
    CHECK(code_of(f.request("search/run", "[1]")) == -32602);
    r = f.request("search/run", R"({"query":"fail"})");
    CHECK(code_of(r) == -32002);
    CHECK(r.at("error").at("data") == boost::json::parse(R"({"index":"main"})"));
    r = f.request("search/run", R"({"query":"boom"})");
    CHECK(code_of(r) == -32603);
    CHECK(r.at("error").at("message").as_string().find("disk on fire") != std::string::npos);
    // No cache hint in 2025; a result's _meta stays as the author wrote it.
    r = f.request("com.example/stamp", "{}");
    CHECK(r.at("result") == boost::json::parse(R"({"_meta":{"com.example/origin":"clock"},"stamp":42})"));
    CHECK(f.request("com.example/touch", R"({"a":1})").at("result") == boost::json::object{});
    CHECK(f.request("com.example/legacy-only", "{}").at("result") == boost::json::object{});

    fixture g;
    g.initialize();
    r = g.request("search/run", R"({"query":"cat"})");
    CHECK(code_of(r) == -32601);
    CHECK(r.at("error").at("message").as_string().find("com.example/search") != std::string::npos);
    CHECK(code_of(g.request("com.example/nothing", "{}")) == -32601);
  }

  TEST_CASE("a custom method in a 2026 request: the result's shape, the cache hint, the -32021 gate") {
    fixture f;
    f.open();
    auto r = f.send(modern("search/run", R"("query":"dog")", with_search));
    const auto& result = r.at("result").as_object();
    CHECK(result.at("resultType") == "complete");
    CHECK(result.at("_meta").as_object().contains(server_info_key));
    CHECK(result.at("hits") == boost::json::array{"dog0", "dog1"});
    CHECK(result.at("ttlMs") == 30000);
    CHECK(result.at("cacheScope") == "private");
    CHECK(f.seen_settings == R"({"maxHits":3})");

    r = f.send(modern("search/run", R"("query":"dog")"));
    CHECK(code_of(r) == -32021);
    CHECK(r.at("error").at("data") == boost::json::parse(R"({"requiredCapabilities":{"extensions":{"com.example/search":{}}}})"));

    // The author's _meta and the server's identity share one object.
    r = f.send(modern("com.example/stamp"));
    const auto& stamped = r.at("result").as_object();
    CHECK(stamped.at("stamp") == 42);
    CHECK(stamped.at("_meta").at("com.example/origin") == "clock");
    CHECK(stamped.at("_meta").as_object().contains(server_info_key));
    // An empty result with a cache hint is still one object.
    r = f.send(modern("com.example/cached-empty"));
    CHECK(r.at("result").at("ttlMs") == 2000);
    CHECK(r.at("result").at("resultType") == "complete");
    // A method offered to 2025 sessions only does not exist for a 2026 request.
    CHECK(code_of(f.send(modern("com.example/legacy-only"))) == -32601);
  }

  TEST_CASE("custom notifications reach their handler with typed params; the gated one only with its extension") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","method":"com.example/ping","params":{"note":"one"}})");
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/search/hint","params":{}})");
    f.feed(R"({"jsonrpc":"2.0","method":"com.example/ping","params":{"note":7}})");
    CHECK(f.out->sent.empty());  // a notification is never answered
    CHECK(f.pings == std::vector<std::string>{"one@2025-11-25"});
    REQUIRE(f.diagnostics.size() == 2);
    CHECK(f.diagnostics[0].find("com.example/search") != std::string::npos);
    CHECK(f.diagnostics[1].find("method=com.example/ping") != std::string::npos);

    fixture g;
    g.initialize(with_search, "2025-06-18");
    g.feed(R"({"jsonrpc":"2.0","method":"notifications/search/hint"})");
    g.feed(R"({"jsonrpc":"2.0","method":"com.example/ping","params":{"note":"two"}})");
    CHECK(g.pings == std::vector<std::string>{"hint", "two@2025-06-18"});
  }

  TEST_CASE("_meta on tools, resources, templates and prompts is listed from 2025-06-18 on") {
    fixture f;
    f.initialize();
    CHECK(named(f.request("tools/list", "{}"), "tools", "name", "show").at("_meta") ==
          boost::json::parse(R"({"ui":{"resourceUri":"ui://page"}})"));
    CHECK(named(f.request("resources/list", "{}"), "resources", "uri", "ui://page").at("_meta") ==
          boost::json::parse(R"({"ui":{"prefersBorder":true}})"));
    CHECK(named(f.request("resources/templates/list", "{}"), "resourceTemplates", "name", "pages").at("_meta") ==
          boost::json::parse(R"({"k":1})"));
    CHECK(named(f.request("prompts/list", "{}"), "prompts", "name", "greet").at("_meta") ==
          boost::json::parse(R"({"com.example/tone":"warm"})"));

    fixture old;
    old.initialize("{}", "2025-03-26");
    CHECK_FALSE(named(old.request("tools/list", "{}"), "tools", "name", "show").as_object().contains("_meta"));
    CHECK_FALSE(named(old.request("resources/list", "{}"), "resources", "uri", "ui://page").as_object().contains("_meta"));
    const auto read = old.request("resources/read", R"({"uri":"ui://page"})");
    CHECK_FALSE(read.at("result").at("contents").at(0).as_object().contains("_meta"));
  }

  TEST_CASE("_meta on a tool's result, a resource's contents and a prompt's result, in both eras") {
    fixture f;
    f.initialize();
    auto r = f.request("tools/call", R"({"name":"show"})");
    CHECK(r.at("result").at("_meta") == boost::json::parse(R"({"com.example/trace":"t-1"})"));
    CHECK(r.at("result").at("content").at(0).at("text") == "shown");
    r = f.request("resources/read", R"({"uri":"ui://page"})");
    CHECK(r.at("result").at("contents").at(0).at("_meta") == boost::json::parse(R"({"ui":{"domain":"example.com"}})"));
    r = f.request("prompts/get", R"({"name":"greet"})");
    CHECK(r.at("result").at("_meta") == boost::json::parse(R"({"com.example/tone":"warm"})"));
    // A reserved key set at run time fails the call, as the model is told.
    r = f.request("tools/call", R"({"name":"bad_meta"})");
    CHECK(r.at("result").at("isError") == true);
    CHECK(r.at("result").at("content").at(0).at("text").as_string().find("reserves") != std::string::npos);

    fixture g;
    g.open();
    r = g.send(modern("tools/call", R"("name":"show")"));
    const auto& meta = r.at("result").at("_meta").as_object();
    CHECK(meta.at("com.example/trace") == "t-1");
    CHECK(meta.contains(server_info_key));
    r = g.send(modern("prompts/get", R"("name":"greet")"));
    CHECK(r.at("result").at("_meta").at("com.example/tone") == "warm");
    CHECK(r.at("result").at("_meta").as_object().contains(server_info_key));
  }
}
