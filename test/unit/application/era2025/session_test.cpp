// SPDX-License-Identifier: BSL-1.0
/// @file
/// The session engine with no I/O: lifecycle, dispatch, duplicate ids, cancellation,
/// tool errors, pagination and list_changed (docs/reliability.md#json-rpc-input and E3).
#include <droid/application/server/session.hpp>
#include <droid/application/server/outbound.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>

#include "application/catalog/server_core.hpp"
#include "support.hpp"

namespace {

struct echo_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

struct point {
  int x = 0;
  int y = 0;
};
BOOST_DESCRIBE_STRUCT(point, (), (x, y))

/// A tool's arguments with declared constraints and a defaulted member.
struct stay_args {
  std::string city;
  int days = 3;
};
BOOST_DESCRIBE_STRUCT(stay_args, (), (city, days))

/// An initialiser without `defaulted`: refused when the tool is registered.
struct unhinted_args {
  int days = 3;
};
BOOST_DESCRIBE_STRUCT(unhinted_args, (), (days))

}  // namespace

template <>
struct droid::field_hints<stay_args> {
  static constexpr droid::field_hint fields[] = {{.name = "city", .min_length = 2},
                                                 {.name = "days", .defaulted = true, .minimum = 1, .maximum = 10}};
};

namespace {

/// A server with the tools these tests need, a session on a capture, and helpers.
struct fixture {
  asio::io_context io;
  droid::server srv{droid::server_info{"test-server", "1.2.3", "Test", "Use the tools.", {}, {}},
                    droid::server_options{2, [this](std::string_view l) { logged.emplace_back(l); }}};
  std::shared_ptr<droid::test::capture> out = std::make_shared<droid::test::capture>();
  std::shared_ptr<droid::session> s;
  std::vector<std::string> logged;
  int slow_finished = 0;
  bool slow_saw_cancel = false;

  fixture() {
    srv.tool("echo", "Echoes", [](droid::tool_context&, echo_args a) -> droid::task<droid::tool_result> {
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("mirror", "Returns its point", [](droid::tool_context&, point p) -> droid::task<point> { co_return p; });
    srv.tool("raw", "Raw arguments", [](droid::tool_context&, boost::json::object o) -> droid::task<std::string> {
      co_return std::to_string(o.size());
    });
    srv.tool("throws", "Throws", [](droid::tool_context&) -> droid::task<droid::tool_result> {
      throw std::runtime_error("it broke");
      co_return droid::tool_result::text("never");
    });
    srv.tool("logs", "Logs at three levels", [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.log(droid::log_level::debug, "fine detail");
      // Built before the co_await: g++ 12 rejects an initializer list with string
      // literals inside a co_await expression ("array used as initializer").
      boost::json::object details{{"step", 1}};
      co_await ctx.log(droid::log_level::info, std::move(details), "worker");
      co_await ctx.log(droid::log_level::error, "it hurts");
      co_return "logged";
    });
    srv.tool("trace", "Reports the trace context it was called with",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               co_return ctx.trace().traceparent + "|" + ctx.trace().tracestate + "|" + ctx.trace().baggage;
             });
    srv.tool("throws_early", "Throws before returning its task",
             [](droid::tool_context&) -> droid::task<droid::tool_result> { throw std::logic_error("too early"); });
    srv.tool("slow", "Waits until cancelled", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      co_await ctx.progress(0.5, 1.0, "half");
      const std::error_code ec = co_await ctx.sleep(std::chrono::hours(1));
      slow_saw_cancel = ec == droid::errc::cancelled;
      ++slow_finished;
      co_await ctx.progress(1.0);  // after cancellation: must not reach the peer
      co_return droid::tool_result::text("done");
    });
    s = droid::session::create(srv, io.get_executor(), out);
  }

  ~fixture() {
    s->close();
    droid::test::poll(io);
  }

  void feed(const std::string& text) {
    auto d = droid::ir::decode(text);
    if (auto* m = std::get_if<droid::ir::message>(&d)) {
      s->receive(std::move(*m));
    } else {
      s->reject(std::get<droid::ir::rejection>(d));
    }
    droid::test::poll(io);
  }

  void initialize(const std::string& version = "2025-11-25") {
    feed(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" + version +
         R"(","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE(out->sent.size() == 1);
    (void)out->pop();
    feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }

  boost::json::value call(int id, const std::string& name, const std::string& args) {
    feed(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + name +
         R"(","arguments":)" + args + "}}");
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
};

}  // namespace

/// A request's own outbound that nothing but the session holds (as a legacy HTTP+SSE
/// request's): what it was sent, and whether it was finished, go to `log`.
struct lone_outbound final : droid::outbound {
  explicit lone_outbound(std::shared_ptr<std::vector<std::string>> l) : log(std::move(l)) {}
  void send(std::string message) override { log->push_back(std::move(message)); }
  void finish() override { log->push_back("finished"); }
  std::shared_ptr<std::vector<std::string>> log;
};

TEST_SUITE("application/session") {
  TEST_CASE("initialize echoes a supported version and answers the latest otherwise") {
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    for (const auto& versions : std::vector<std::pair<std::string, std::string>>{
             {"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"},
             {"2024-11-05", "2024-11-05"}, {"1999-01-01", "2025-11-25"}}) {
      const std::string& asked = versions.first;
      const std::string& answered = versions.second;
      CAPTURE(asked);
      fixture f;
      f.feed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")" + asked +
             R"(","capabilities":{},"clientInfo":{"name":"c","version":"0"}}})");
      const auto r = f.out->pop();
      CHECK(r.at("result").at("protocolVersion") == boost::json::value(answered));
      CHECK(r.at("result").at("serverInfo").at("name") == "test-server");
      // Implementation.title came with 2025-06-18: an older client is not sent it.
      if (answered >= "2025-06-18") CHECK(r.at("result").at("serverInfo").at("title") == "Test");
      else CHECK_FALSE(r.at("result").at("serverInfo").as_object().contains("title"));
      CHECK(r.at("result").at("instructions") == "Use the tools.");
      CHECK(r.at("result").at("capabilities").at("tools").at("listChanged") == true);
      CHECK(f.s->peer().protocol_version == answered);
    }
  }

  TEST_CASE("a request's stream held by nothing else is finished once, after its answer, and then let go") {
    // The runner kept such a stream for the request but let it go before finishing it:
    // finish() ran on freed memory when the answer came at once (ASan saw it).
    fixture f;
    auto log = std::make_shared<std::vector<std::string>>();
    const auto feed_on_own = [&](const std::string& text) {
      auto d = droid::ir::decode(text);
      REQUIRE(std::holds_alternative<droid::ir::message>(d));
      f.s->receive(std::get<droid::ir::message>(std::move(d)), std::make_shared<lone_outbound>(log));
      droid::test::poll(f.io);
    };
    feed_on_own(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE(log->size() == 2);
    CHECK(log->at(0).find(R"("protocolVersion")") != std::string::npos);
    CHECK(log->at(1) == "finished");
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    log->clear();
    feed_on_own(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
    REQUIRE(log->size() == 2);
    CHECK(log->at(0).find(R"("text":"hi")") != std::string::npos);
    CHECK(log->at(1) == "finished");
    log->clear();
    feed_on_own(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");  // answered without a task
    REQUIRE(log->size() == 2);
    CHECK(log->at(0).find(R"("tools")") != std::string::npos);
    CHECK(log->at(1) == "finished");
    CHECK(log.use_count() == 1);  // every stream let go
  }

  TEST_CASE("initialize without a protocol version is invalid params") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}})");
    CHECK(f.out->pop().at("error").at("code") == -32602);
    CHECK_FALSE(f.s->is_initialized());
  }

  TEST_CASE("a second initialize is refused") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
    const auto r = f.out->pop();
    CHECK(r.at("error").at("code") == -32600);
    CHECK(r.at("id") == 9);
  }

  TEST_CASE("requests before initialize are refused, except ping") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    CHECK(f.out->pop().at("error").at("code") == -32600);
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
    const auto r = f.out->pop();
    CHECK(r.at("id") == 2);
    CHECK(r.at("result").as_object().empty());
  }

  TEST_CASE("the client's declared capabilities are recorded") {
    fixture f;
    f.initialize();
    CHECK(f.s->peer().has_capability("sampling"));
    CHECK_FALSE(f.s->peer().has_capability("roots"));
    CHECK(f.s->peer().client_info.at("name") == "t");
  }

  TEST_CASE("an unknown method is -32601 with the id, and an unknown notification gets nothing (2.10, 2.11)") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":"u","method":"no/such"})");
    const auto r = f.out->pop();
    CHECK(r.at("error").at("code") == -32601);
    CHECK(r.at("id") == "u");
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/no_such"})");
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("params that are an array or a string on a known method are -32602 (2.12)") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]})");
    CHECK(f.out->pop().at("error").at("code") == -32602);
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":"echo"})");
    CHECK(f.out->pop().at("error").at("code") == -32602);
  }

  TEST_CASE("an unknown tool is a protocol error -32602 (2.13)") {
    fixture f;
    f.initialize();
    const auto r = f.call(3, "nope", "{}");
    CHECK(r.at("error").at("code") == -32602);
    CHECK(r.at("id") == 3);
  }

  TEST_CASE("arguments that fail the schema are a tool execution error naming the field (2.14)") {
    fixture f;
    f.initialize();
    auto r = f.call(1, "echo", R"({"text":5})");
    CHECK(r.at("result").at("isError") == true);
    CHECK(r.at("result").at("content").at(0).at("text") == "Invalid arguments: `text`: expected a string, got an integer");
    r = f.call(2, "echo", "{}");
    CHECK(r.at("result").at("content").at(0).at("text") == "Invalid arguments: `text` is required");
    // No arguments at all decodes as {}.
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}})");
    CHECK(f.out->pop().at("result").at("isError") == true);
  }

  TEST_CASE("declared constraints are listed and enforced, and a defaulted member keeps its initialiser") {
    fixture f;
    f.initialize();
    f.srv.tool("stay", "Books a stay", [](droid::tool_context&, stay_args a) -> droid::task<std::string> {
      co_return a.city + ":" + std::to_string(a.days);
    });
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/tools/list_changed");
    // The initialiser would never be used: the registration says so instead.
    CHECK_THROWS_WITH_AS(
        f.srv.tool("unhinted", "Refused",
                   [](droid::tool_context&, unhinted_args) -> droid::task<std::string> { co_return ""; }),
        R"(droid: the member "days" starts as 3 (its default member initialiser) but is required, so that value is )"
        R"(never used: hint it .defaulted = true to make it optional with "default": 3, or remove the initialiser)",
        std::invalid_argument);
    // Refused before it was added: no tool, so no list_changed either.
    droid::test::poll(f.io);
    CHECK(f.out->sent.empty());
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    const auto listed = f.out->pop();
    for (const auto& t : listed.at("result").at("tools").as_array()) {
      if (t.at("name") != "stay") continue;
      const auto& schema = t.at("inputSchema");
      CHECK(schema.at("properties").at("days") ==
            boost::json::parse(R"({"type":"integer","minimum":1,"maximum":10,"default":3})"));
      CHECK(schema.at("properties").at("city") == boost::json::parse(R"({"type":"string","minLength":2})"));
      CHECK(schema.at("required") == boost::json::array{"city"});
    }
    CHECK(f.call(2, "stay", R"({"city":"Oslo"})").at("result").at("content").at(0).at("text") == "Oslo:3");
    CHECK(f.call(3, "stay", R"({"city":"Oslo","days":10})").at("result").at("content").at(0).at("text") == "Oslo:10");
    // A broken constraint is an invalid argument like any other: a tool error the model reads.
    auto r = f.call(4, "stay", R"({"city":"Oslo","days":11})");
    CHECK(r.at("result").at("isError") == true);
    CHECK(r.at("result").at("content").at(0).at("text") == "Invalid arguments: `days`: 11 is above the maximum 10");
    r = f.call(5, "stay", R"({"city":"O"})");
    CHECK(r.at("result").at("content").at(0).at("text") ==
          "Invalid arguments: `city`: 1 character, at least 2 required");
  }

  TEST_CASE("a typed tool answers text, structured content and raw arguments") {
    fixture f;
    f.initialize();
    CHECK(f.call(1, "echo", R"({"text":"hi"})").at("result").at("content").at(0).at("text") == "hi");
    const auto m = f.call(2, "mirror", R"({"x":1,"y":-2})");
    CHECK(m.at("result").at("structuredContent").at("y") == -2);
    CHECK(m.at("result").at("content").at(0).at("text") == R"({"x":1,"y":-2})");
    CHECK(f.call(3, "raw", R"({"a":1,"b":[2]})").at("result").at("content").at(0).at("text") == "2");
  }

  TEST_CASE("a tool that throws becomes isError with its message and the session goes on") {
    fixture f;
    f.initialize();
    const auto r = f.call(1, "throws", "{}");
    CHECK(r.at("result").at("isError") == true);
    CHECK(r.at("result").at("content").at(0).at("text") == "it broke");
    CHECK(f.call(2, "echo", R"({"text":"still here"})").at("result").at("content").at(0).at("text") == "still here");
    const auto early = f.call(3, "throws_early", "{}");
    CHECK(early.at("result").at("isError") == true);
    CHECK(early.at("result").at("content").at(0).at("text") == "too early");
  }

  TEST_CASE("a duplicate id while the first is in flight is refused with a null id (2.15, decision 5)") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    f.out->sent.clear();  // progress
    f.feed(R"({"jsonrpc":"2.0","id":5,"method":"ping"})");
    const auto r = f.out->pop();
    CHECK(r.at("id").is_null());
    CHECK(r.at("error").at("code") == -32600);
    CHECK(f.s->in_flight() == 1);
    // The same number as a string is a different id and is served.
    f.feed(R"({"jsonrpc":"2.0","id":"5","method":"ping"})");
    CHECK(f.out->pop().at("id") == "5");
  }

  TEST_CASE("a long string id is answered, refused as a duplicate and cancelled exactly") {
    // Longer than any std::string keeps inline: the in-flight table's node owns the one
    // copy that the answer and the cancellation are matched against.
    fixture f;
    f.initialize();
    const std::string id = R"("a request id longer than sixteen bytes, with \"escapes\"")";
    f.feed(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})");
    auto r = f.out->pop();
    CHECK(r.at("id") == boost::json::parse(id));
    CHECK(r.at("result").at("content").at(0).at("text") == "hi");
    CHECK(f.s->in_flight() == 0);

    f.feed(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    f.out->sent.clear();  // progress
    f.feed(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
    CHECK(f.out->pop().at("id").is_null());
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + id + "}}");
    CHECK(f.slow_finished == 1);
    CHECK(f.s->in_flight() == 0);
    CHECK(f.out->sent.empty());
    f.feed(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
    CHECK(f.out->pop().at("id") == boost::json::parse(id));
  }

  TEST_CASE("notifications/cancelled stops the tool and no response is sent for it") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}})");
    REQUIRE(f.out->sent.size() == 1);
    const auto progress = f.out->pop();
    CHECK(progress.at("method") == "notifications/progress");
    CHECK(progress.at("params").at("progressToken") == "p");
    CHECK(progress.at("params").at("progress") == 0.5);
    CHECK(progress.at("params").at("message") == "half");
    CHECK(f.s->in_flight() == 1);

    f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}})");
    CHECK(f.slow_finished == 1);
    CHECK(f.slow_saw_cancel);
    CHECK(f.s->in_flight() == 0);
    CHECK(f.out->sent.empty());  // neither the late progress nor a response
    // The session still serves.
    f.feed(R"({"jsonrpc":"2.0","id":8,"method":"ping"})");
    CHECK(f.out->pop().at("id") == 8);
  }

  TEST_CASE("cancellations for unknown, completed, string-for-integer or malformed ids do nothing (2.28, E3)") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    f.out->sent.clear();
    for (const char* params : {R"({"requestId":99})", R"({"requestId":"7"})", R"({"requestId":null})", R"([7])",
                               R"({"reason":"x"})"}) {
      f.feed(std::string(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":)") + params + "}");
    }
    CHECK(f.out->sent.empty());
    CHECK(f.s->in_flight() == 1);
    CHECK(f.slow_finished == 0);
    // Cancelling initialize (id 0, completed) is equally silent.
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}})");
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("responses to unknown ids are dropped silently and counted (2.16)") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{}})");
    f.feed(R"({"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}})");
    f.feed(R"({"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}})");
    CHECK(f.out->sent.empty());
    CHECK(f.s->dropped_responses() == 2);
  }

  TEST_CASE("closing the session cancels every tool and sends nothing more") {
    fixture f;
    f.initialize();
    for (int id = 1; id <= 3; ++id)
      f.feed(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
             R"(,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    CHECK(f.s->in_flight() == 3);
    f.out->sent.clear();
    f.s->close();
    droid::test::poll(f.io);
    CHECK(f.slow_finished == 3);
    CHECK(f.s->in_flight() == 0);
    CHECK(f.out->sent.empty());
    f.feed(R"({"jsonrpc":"2.0","id":9,"method":"ping"})");
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("tools/list pages with opaque cursors and rejects unknown ones") {
    fixture f;  // page size 2, seven tools
    f.initialize();
    std::vector<std::string> names;
    std::string cursor;
    for (int page = 0; page < 10; ++page) {
      f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{)" +
             (cursor.empty() ? std::string() : R"("cursor":")" + cursor + "\"") + "}}");
      const auto r = f.out->pop();
      for (const auto& t : r.at("result").at("tools").as_array()) {
        names.emplace_back(t.at("name").as_string());
        CHECK(t.at("inputSchema").at("type") == "object");
        CHECK_FALSE(t.at("description").as_string().empty());
      }
      if (!r.at("result").as_object().contains("nextCursor")) break;
      cursor = r.at("result").at("nextCursor").as_string();
    }
    CHECK(names == std::vector<std::string>{"echo", "logs", "mirror", "raw", "slow", "throws", "throws_early", "trace"});
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"garbage"}})");
    CHECK(f.out->pop().at("error").at("code") == -32602);
  }

  TEST_CASE("a typed result advertises its output schema") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":")" +
           droid::ir::to_json_text(boost::json::value("x")).substr(0, 0) + R"("}})");
    (void)f.out->pop();  // an empty cursor is unknown; covered above
    auto entry = droid::detail::core(f.srv).find_tool("mirror");
    REQUIRE(entry);
    REQUIRE(entry->info.output_schema);
    CHECK(entry->info.output_schema->at("required") == boost::json::array{"x", "y"});
  }

  TEST_CASE("adding or removing a tool at run time notifies initialized sessions") {
    fixture f;
    f.initialize();
    f.srv.tool("late", "Added later", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    droid::test::poll(f.io);
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.out->pop().at("method") == "notifications/tools/list_changed");
    CHECK(f.call(4, "late", "{}").at("result").at("content").at(0).at("text") == "late");
    CHECK(f.srv.remove_tool("late"));
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/tools/list_changed");
    CHECK(f.call(5, "late", "{}").at("error").at("code") == -32602);
    CHECK_FALSE(f.srv.remove_tool("late"));
  }

  TEST_CASE("a tool removed while its call runs finishes the call") {
    fixture f;
    f.initialize();
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    CHECK(f.srv.remove_tool("slow"));
    droid::test::poll(f.io);
    f.out->sent.clear();
    f.s->close();
    droid::test::poll(f.io);
    CHECK(f.slow_finished == 1);
  }

  TEST_CASE("registration refuses bad names, empty descriptions and duplicates") {
    fixture f;
    auto tool = [](droid::tool_context&) -> droid::task<std::string> { co_return ""; };
    CHECK_THROWS_AS(f.srv.tool("has space", "d", tool), std::invalid_argument);
    CHECK_THROWS_AS(f.srv.tool(std::string(129, 'a'), "d", tool), std::invalid_argument);
    CHECK_THROWS_AS(f.srv.tool("", "d", tool), std::invalid_argument);
    CHECK_THROWS_AS(f.srv.tool("ok", "", tool), std::invalid_argument);
    CHECK_THROWS_AS(f.srv.tool("echo", "again", tool), std::invalid_argument);
    CHECK_NOTHROW(f.srv.tool(std::string(128, 'a'), "d", tool));
    CHECK(droid::is_valid_tool_name("a.b-c_D9"));
  }

  TEST_CASE("decode rejections are answered, and malformed responses are not") {
    fixture f;
    f.feed("{bad json");
    CHECK(f.out->pop().at("error").at("code") == -32700);
    f.feed(R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}})");
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("no frame outlives the session's work") {
    {
      fixture f;
      f.initialize();
      f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
      (void)f.call(2, "echo", R"({"text":"x"})");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("logging/setLevel answers exactly {} and filters the tools' log messages") {
    fixture f;
    f.initialize();
    // Before any setLevel, a tool's logs go nowhere.
    CHECK(f.call(1, "logs", "{}").at("result").at("content").at(0).at("text") == "logged");
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}})");
    const auto ack = f.out->pop();
    CHECK(ack.at("result") == boost::json::object{});
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"logs","arguments":{}}})");
    REQUIRE(f.out->sent.size() == 3);  // info, error, then the response
    const auto info = f.out->pop();
    CHECK(info.at("method") == "notifications/message");
    CHECK(info.at("params").at("level") == "info");
    CHECK(info.at("params").at("logger") == "worker");
    CHECK(info.at("params").at("data").at("step") == 1);
    CHECK(f.out->pop().at("params").at("level") == "error");
    CHECK(f.out->pop().at("id") == 3);
    f.feed(R"({"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"loud"}})");
    CHECK(f.out->pop().at("error").at("code") == -32602);
  }

  TEST_CASE("initialize declares logging") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    CHECK(f.out->pop().at("result").at("capabilities").as_object().contains("logging"));
  }

  TEST_CASE("a tool reads the trace context the request carried in _meta, in both eras") {
    // MCP reserves traceparent, tracestate and baggage in _meta for OpenTelemetry: a tool
    // that calls other services continues the client's trace with them.
    fixture f;
    f.initialize();
    const std::string meta =
        R"("_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01","tracestate":"k=v","baggage":"a=b")";
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trace","arguments":{},)" + meta + "}}}");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") ==
          "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01|k=v|a=b");
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace","arguments":{},)"
           R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},)"
           R"("traceparent":"00-1-2-01"}}})");
    const auto r = f.out->pop();
    CHECK(r.at("result").at("resultType") == "complete");
    CHECK(r.at("result").at("content").at(0).at("text") == "00-1-2-01||");
    CHECK(f.call(3, "trace", "{}").at("result").at("content").at(0).at("text") == "||");
  }
}
