// SPDX-License-Identifier: BSL-1.0
/// @file
/// `co_await ctx.exchange(...)`: a tool asks the client a question. Every waiter has
/// exactly three exits (answered, cancelled, session ended) and each test ends with
/// nothing left in the table and no frame alive (docs/architecture.md#the-exchange).
#include <droid/application/server/tool_context.hpp>

#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/deadline.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/when_all.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "support.hpp"

namespace {

enum class shade { light, dark };
BOOST_DESCRIBE_ENUM(shade, light, dark)

struct profile {
  std::string name;
  int age = 0;
  shade theme = shade::light;
};
BOOST_DESCRIBE_STRUCT(profile, (), (name, age, theme))

}  // namespace

template <>
struct droid::elicit_hints<profile> {
  static constexpr droid::elicit_field fields[] = {{.name = "name", .title = "Your name"},
                                                   {.name = "age", .minimum = 0, .maximum = 150},
                                                   {.name = "theme", .defaulted = true}};
};

namespace {

constexpr std::int64_t first_id = std::int64_t{1} << 40;

droid::server_options logging_to(std::vector<std::string>& lines) {
  droid::server_options o;
  o.log = [&lines](std::string_view line) { lines.emplace_back(line); };
  return o;
}

struct fixture {
  asio::io_context io;
  std::vector<std::string> logged;  // the server's log lines
  droid::server srv{droid::server_info{.name = "exchange-test", .version = "1"}, logging_to(logged)};
  std::shared_ptr<droid::test::capture> out = std::make_shared<droid::test::capture>();
  std::shared_ptr<droid::session> s;
  std::stop_source own_stop;  // the tool's own token, for the "tool gives up" exit
  std::string outcome;        // what the tool saw
  std::error_code condition;
  bool with_tools = false;
  std::stop_token deadline_token;
  std::chrono::milliseconds deadline{3'600'000};
  std::string roots_changed_by;

  explicit fixture(const std::string& capabilities = R"({"sampling":{},"roots":{},"elicitation":{"form":{}}})") {
    srv.tool("ask", "Asks the client to sample", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":5})",
                                          own_stop.get_token());
      if (!answer) {
        condition = answer.error().condition;
        outcome = answer.error().message;
        co_return droid::tool_result::error(answer.error().message);
      }
      outcome = droid::ir::to_json_text(answer.value());
      co_return droid::tool_result::text(outcome);
    });
    srv.tool("summarize", "Samples with a system prompt", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      droid::sampling_request request;
      request.messages.push_back(droid::sampling_message::user_text("hello"));
      request.system_prompt = "be brief";
      request.max_tokens = 10;
      request.preferences = droid::model_preferences{{"claude"}, 0.2, {}, 0.9};
      if (with_tools) request.tools.push_back(boost::json::object{{"name", "t"}});
      auto answer = co_await ctx.sample(std::move(request));
      if (!answer) {
        condition = answer.error().condition;
        co_return "error: " + answer.error().message;
      }
      co_return answer->text() + " by " + answer->model;
    });
    srv.tool("roots", "Lists roots", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto roots = co_await ctx.list_roots();
      if (!roots) co_return "error: " + roots.error().message;
      std::string out;
      for (const droid::root& r : roots.value()) out += r.uri + "(" + r.name + ") ";
      co_return out;
    });
    srv.tool("patient", "Asks with a 1 h deadline", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      droid::deadline limit(ctx.executor(), deadline);
      deadline_token = limit.token();
      auto answer = co_await ctx.exchange("roots/list", std::string("{}"), limit.token());
      co_return answer ? "answered" : "gave up: " + answer.error().message;
    });
    srv.tool("form", "Elicits a profile", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit<profile>("Tell me about you");
      if (!answer) co_return "error: " + answer.error().message;
      switch (answer->action) {
        case droid::elicit_action::accept:
          co_return answer->content->name + "/" + std::to_string(answer->content->age) + "/" +
              (answer->content->theme == shade::dark ? "dark" : "light");
        case droid::elicit_action::decline: co_return "declined";
        case droid::elicit_action::cancel: co_return "cancelled";
      }
      co_return "?";
    });
    srv.tool("login", "Sends the user to a URL", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit_url("Please sign in", "https://example.com/login", "e-1");
      if (!answer) co_return "error: " + answer.error().message;
      co_await ctx.elicitation_complete("e-1");
      co_return answer.value() == droid::elicit_action::accept ? "signed in" : "not signed in";
    });
    srv.tool("both", "Asks two questions at once", [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto [first, second] = co_await droid::when_all(ctx.list_roots(), ctx.list_roots());
      if (!first || !second) co_return "error";
      co_return std::to_string(first.value().size()) + "+" + std::to_string(second.value().size());
    });
    // Params as text, as a tool that formats its own JSON might write them.
    srv.tool("pretty", "Asks with pretty-printed params", [this](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.exchange("roots/list", std::string("{\n  \"note\": \"a b\",\r\n  \"n\": [1, 2]\n}"));
      outcome = answer ? "answered" : answer.error().message;
      co_return outcome;
    });
    srv.tool("broken", "Asks with params that are not an object",
             [this](droid::tool_context& ctx) -> droid::task<std::string> {
      static constexpr const char* texts[] = {"{\"a\":", "[1,2]", "{\"a\":1} {}"};
      for (const char* params : texts) {
        auto answer = co_await ctx.exchange("roots/list", std::string(params));
        if (answer) co_return "answered";
        condition = answer.error().condition;
        outcome += answer.error().message + "|";
      }
      co_return outcome;
    });
    srv.tool("notices", "Notifies with pretty and broken params",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_await ctx.notify("notifications/message", "{\n  \"level\": \"info\",\n  \"data\": \"x y\"\n}");
      co_await ctx.notify("notifications/message", "{\"level\": \"info\"\n");
      co_await ctx.notify("notifications/message", "\"info\"");
      co_return "sent";
    });
    srv.on_roots_list_changed([this](const droid::peer_info& p) { roots_changed_by = p.client_info.at("name").as_string().c_str(); });
    s = droid::session::create(srv, io.get_executor(), out);
    feed(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":)" +
         capabilities + R"(,"clientInfo":{"name":"t","version":"1"}}})");
    out->sent.clear();
  }
  ~fixture() {
    s->close();
    droid::test::poll(io);
  }

  void feed(const std::string& text) {
    auto d = droid::ir::decode(text);
    if (auto* m = std::get_if<droid::ir::message>(&d)) s->receive(std::move(*m));
    droid::test::poll(io);
  }
  /// Starts the `ask` tool as request `id` and returns the question it published.
  boost::json::value ask(int id = 7) {
    feed(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":"ask"}})");
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
};

}  // namespace

TEST_SUITE("application/exchange") {
  TEST_CASE("the question goes out with an id from 2^40 and the answer resumes the tool") {
    {
      fixture f;
      const auto question = f.ask();
      CHECK(question.at("method") == "sampling/createMessage");
      CHECK(question.at("id") == first_id);
      CHECK(question.at("params").at("maxTokens") == 5);
      CHECK(f.s->outstanding_exchanges() == 1);
      CHECK(f.s->in_flight() == 1);
      f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant","content":{"type":"text","text":"hi"}}})");
      CHECK(f.s->outstanding_exchanges() == 0);
      CHECK(f.s->in_flight() == 0);
      const auto response = f.out->pop();
      CHECK(response.at("id") == 7);
      CHECK(response.at("result").at("content").at(0).at("text").as_string().find("\"hi\"") != std::string::npos);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("an answer whose id spells ours as a string is accepted (decision 6)") {
    fixture f;
    (void)f.ask();
    f.feed(R"({"jsonrpc":"2.0","id":"1099511627776","result":{"ok":true}})");
    CHECK(f.outcome == R"({"ok":true})");
    CHECK(f.s->outstanding_exchanges() == 0);
  }

  TEST_CASE("the peer's error comes back as a value with its code and message") {
    fixture f;
    (void)f.ask();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"error":{"code":-1,"message":"User rejected sampling request"}})");
    CHECK(f.condition == droid::errc::peer_error);
    CHECK(f.outcome == "User rejected sampling request");
    CHECK(f.out->pop().at("result").at("isError") == true);
  }

  TEST_CASE("an answer to an unknown id is dropped, not dispatched and not answered (2.16)") {
    fixture f;
    (void)f.ask();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627999,"result":{}})");
    f.feed(R"({"jsonrpc":"2.0","id":"not-ours","result":{}})");
    CHECK(f.out->sent.empty());
    CHECK(f.s->dropped_responses() == 2);
    CHECK(f.s->outstanding_exchanges() == 1);
  }

  TEST_CASE("the peer's own ids never clash with ours") {
    fixture f;
    (void)f.ask();
    // The peer happens to use our number for a request of its own: it is served.
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"method":"ping"})");
    const auto pong = f.out->pop();
    CHECK(pong.at("id") == first_id);
    CHECK(pong.at("result").as_object().empty());
    CHECK(f.s->outstanding_exchanges() == 1);
  }

  TEST_CASE("a client without the capability is refused at once, and nothing is published") {
    fixture f(R"({})");
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}})");
    REQUIRE(f.out->sent.size() == 1);  // only the response
    const auto response = f.out->pop();
    CHECK(response.at("result").at("isError") == true);
    CHECK(f.condition == droid::errc::exchange_refused);
    CHECK(f.outcome.find("`sampling` capability") != std::string::npos);
    CHECK(f.s->outstanding_exchanges() == 0);
  }

  TEST_CASE("a stream that cannot carry questions refuses, naming the setting") {
    fixture f;
    f.out->refusal = "this server answers with single JSON documents: set http::options::reply to event_stream";
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.condition == droid::errc::exchange_refused);
    CHECK(f.outcome.find("event_stream") != std::string::npos);
    CHECK(f.s->outstanding_exchanges() == 0);
  }

  TEST_CASE("params text is compacted before it is framed, so no raw newline reaches the stream") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pretty"}})");
    REQUIRE(f.out->sent.size() == 1);
    const std::string question = f.out->sent.front();
    CHECK(question.find_first_of("\r\n") == std::string::npos);
    CHECK(question.find(R"("params":{"note":"a b","n":[1,2]})") != std::string::npos);
    f.out->sent.pop_front();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"roots":[]}})");
    CHECK(f.outcome == "answered");
  }

  TEST_CASE("params text that is not one JSON object is refused at once, and nothing is published") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"broken"}})");
    REQUIRE(f.out->sent.size() == 1);  // only the response
    CHECK(f.out->pop().at("result").is_object());
    CHECK(f.condition == droid::errc::exchange_refused);
    CHECK(f.outcome ==
          "the params of roots/list are not a JSON object: they do not parse|"
          "the params of roots/list are not a JSON object: they are an array|"
          "the params of roots/list are not a JSON object: they do not parse|");
    CHECK(f.s->outstanding_exchanges() == 0);
  }

  TEST_CASE("a notification whose params are not a JSON object is dropped with a log line; pretty ones are compacted") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"notices"}})");
    REQUIRE(f.out->sent.size() == 2);  // the compacted notification, then the response
    CHECK(f.out->sent.front() ==
          R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x y"}})");
    REQUIRE(f.logged.size() == 2);
    const std::string dropped = "a tool's notifications/message was dropped: its params are not a JSON object: ";
    CHECK(f.logged[0] == dropped + "they do not parse");
    CHECK(f.logged[1] == dropped + "they are a string");
  }

  TEST_CASE("the peer cancelling the tool's request cancels the question and tells the peer") {
    {
      fixture f;
      (void)f.ask();
      f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})");
      CHECK(f.condition == droid::errc::cancelled);
      CHECK(f.s->outstanding_exchanges() == 0);
      CHECK(f.s->in_flight() == 0);
      REQUIRE(f.out->sent.size() == 1);  // no response for 7, only our own cancellation
      const auto note = f.out->pop();
      CHECK(note.at("method") == "notifications/cancelled");
      CHECK(note.at("params").at("requestId") == first_id);
      // The late answer finds nothing.
      f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{}})");
      CHECK(f.s->dropped_responses() == 1);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("the tool's own stop token cancels the question and the tool answers") {
    fixture f;
    (void)f.ask();
    f.own_stop.request_stop();
    droid::test::poll(f.io);
    CHECK(f.condition == droid::errc::cancelled);
    CHECK(f.s->outstanding_exchanges() == 0);
    REQUIRE(f.out->sent.size() == 2);
    CHECK(f.out->pop().at("method") == "notifications/cancelled");
    CHECK(f.out->pop().at("result").at("isError") == true);  // the tool's own answer
  }

  TEST_CASE("a stop requested from another thread withdraws the question on the session's shard, not there") {
    // The stop callback runs on the thread that requests the stop; the withdrawal (the
    // table, the notification, resuming the tool) must wait for the shard. Nothing moves
    // until the shard runs, and ThreadSanitizer (transport and application suites) sees
    // no race.
    fixture f;
    (void)f.ask();
    std::thread elsewhere([&] { f.own_stop.request_stop(); });
    elsewhere.join();
    CHECK(f.s->outstanding_exchanges() == 1);  // not withdrawn off the shard
    CHECK(f.out->sent.empty());
    droid::test::poll(f.io);
    CHECK(f.condition == droid::errc::cancelled);
    CHECK(f.s->outstanding_exchanges() == 0);
    REQUIRE(f.out->sent.size() == 2);
    CHECK(f.out->pop().at("method") == "notifications/cancelled");
    CHECK(f.out->pop().at("result").at("isError") == true);
  }

  TEST_CASE("a stop requested before asking refuses without publishing") {
    fixture f;
    f.own_stop.request_stop();
    f.feed(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.condition == droid::errc::cancelled);
  }

  TEST_CASE("the session ending resumes every waiter with its own message") {
    {
      fixture f;
      (void)f.ask(7);
      f.feed(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask"}})");
      CHECK(f.s->outstanding_exchanges() == 2);
      f.out->sent.clear();
      f.s->close();
      droid::test::poll(f.io);
      CHECK(f.condition == droid::errc::session_ended);
      CHECK(f.outcome == "the session ended before the peer answered");
      CHECK(f.s->outstanding_exchanges() == 0);
      CHECK(f.s->in_flight() == 0);
      CHECK(f.out->sent.empty());
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("sample sends MCP's sampling shape and reads the model's answer") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"summarize"}})");
    const auto question = f.out->pop();
    const auto& p = question.at("params");
    CHECK(p.at("maxTokens") == 10);
    CHECK(p.at("systemPrompt") == "be brief");
    CHECK(p.at("messages").at(0).at("content").at("text") == "hello");
    CHECK(p.at("modelPreferences").at("hints").at(0).at("name") == "claude");
    CHECK(p.at("modelPreferences").at("costPriority") == 0.2);
    CHECK(p.at("modelPreferences").at("intelligencePriority") == 0.9);
    CHECK_FALSE(p.as_object().contains("tools"));
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m1","stopReason":"endTurn"}})");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "hi by m1");
  }

  TEST_CASE("sampling with tools needs the client's sampling.tools") {
    fixture f;  // declares sampling without tools
    f.with_tools = true;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"summarize"}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.condition == droid::errc::exchange_refused);
    CHECK(std::string(f.out->pop().at("result").at("content").at(0).at("text").as_string()).find("sampling.tools") !=
          std::string::npos);
  }

  TEST_CASE("a malformed sampling answer is a peer error, not a crash") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"summarize"}})");
    (void)f.out->pop();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"role":"assistant"}})");
    CHECK(f.condition == droid::errc::peer_error);
  }

  TEST_CASE("list_roots reads the client's roots") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"roots"}})");
    CHECK(f.out->pop().at("method") == "roots/list");
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"roots":[{"uri":"file:///a","name":"A"},{"uri":"file:///b"}]}})");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "file:///a(A) file:///b() ");
  }

  TEST_CASE("a deadline's token cancels the question when it expires, and tells the peer") {
    fixture f;
    f.deadline = std::chrono::milliseconds(20);
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"patient"}})");
    (void)f.out->pop();
    CHECK(f.s->outstanding_exchanges() == 1);
    // The one wall-clock wait in these tests: a 20 ms steady_timer inside droid::deadline.
    for (int i = 0; i < 200 && f.s->in_flight() > 0; ++i) f.io.run_one_for(std::chrono::milliseconds(10));
    CHECK(f.s->outstanding_exchanges() == 0);
    REQUIRE(f.out->sent.size() == 2);
    CHECK(f.out->pop().at("method") == "notifications/cancelled");
    CHECK(std::string(f.out->pop().at("result").at("content").at(0).at("text").as_string()).rfind("gave up", 0) == 0);
  }

  TEST_CASE("an unexpired deadline leaves the question alone") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"patient"}})");
    (void)f.out->pop();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"roots":[]}})");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "answered");
    CHECK_FALSE(f.deadline_token.stop_requested());
  }

  TEST_CASE("notifications/roots/list_changed reaches the server's subscribers") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
    CHECK(f.roots_changed_by == "t");
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("elicit<T> sends the struct's form and decodes an accepted answer") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"form"}})");
    const auto question = f.out->pop();
    CHECK(question.at("method") == "elicitation/create");
    CHECK(question.at("params").at("message") == "Tell me about you");
    const auto& schema = question.at("params").at("requestedSchema");
    CHECK(schema.at("properties").at("name").at("title") == "Your name");
    CHECK(schema.at("properties").at("age").at("maximum") == 150);
    CHECK(schema.at("properties").at("theme").at("default") == "light");
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"action":"accept","content":{"name":"Ada","age":36,"theme":"dark"}}})");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "Ada/36/dark");
  }

  TEST_CASE("elicit<T> reports decline and cancel as actions, and misfitting content as a peer error") {
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    for (const auto& round : std::vector<std::pair<std::string, std::string>>{
             {R"({"action":"decline"})", "declined"},
             {R"({"action":"cancel"})", "cancelled"},
             {R"({"action":"accept","content":{"name":"Ada","age":200}})", "error: the client's answer was malformed"},
             {R"({"action":"maybe"})", "error: the client's answer was malformed"}}) {
      const std::string& answer = round.first;
      const std::string& expected = round.second;
      CAPTURE(answer);
      fixture f;
      f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"form"}})");
      (void)f.out->pop();
      f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":)" + answer + "}");
      const std::string text(f.out->pop().at("result").at("content").at(0).at("text").as_string());
      CHECK(text.rfind(expected, 0) == 0);
    }
  }

  TEST_CASE("URL-mode elicitation needs elicitation.url, then reports the action and completes") {
    {
      fixture f;  // form only
      f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login"}})");
      REQUIRE(f.out->sent.size() == 1);
      CHECK(std::string(f.out->pop().at("result").at("content").at(0).at("text").as_string()).find("elicitation.url") !=
            std::string::npos);
    }
    fixture f(R"({"elicitation":{"form":{},"url":{}}})");
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login"}})");
    const auto question = f.out->pop();
    CHECK(question.at("params").at("mode") == "url");
    CHECK(question.at("params").at("url") == "https://example.com/login");
    CHECK(question.at("params").at("elicitationId") == "e-1");
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"action":"accept"}})");
    const auto complete = f.out->pop();
    CHECK(complete.at("method") == "notifications/elicitation/complete");
    CHECK(complete.at("params").at("elicitationId") == "e-1");
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "signed in");
  }

  TEST_CASE("a client that declared only URL-mode elicitation is not sent a form") {
    fixture f(R"({"elicitation":{"url":{}}})");
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"form"}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(std::string(f.out->pop().at("result").at("content").at(0).at("text").as_string()).find("elicitation.form") !=
          std::string::npos);
  }

  TEST_CASE("an outbound that does not say it carries questions refuses them") {
    // Refusing by default is the safe direction for a new transport: a question nobody
    // can answer would hang the tool.
    struct plain final : droid::outbound {
      void send(std::string) override {}
    } p;
    CHECK_FALSE(p.exchange_refusal().empty());
    droid::test::capture c;
    CHECK(c.exchange_refusal().empty());
  }

  TEST_CASE("a duplicate answer is dropped after the first resumed the tool") {
    fixture f;
    (void)f.ask();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"n":1}})");
    (void)f.out->pop();
    f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"n":2}})");
    CHECK(f.out->sent.empty());
    CHECK(f.s->dropped_responses() == 1);
    CHECK(f.outcome == R"({"n":1})");
  }

  TEST_CASE("ids next to the 2^40 origin are told apart exactly") {
    fixture f;
    (void)f.ask(7);
    f.feed(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask"}})");
    const auto second = f.out->pop();
    CHECK(second.at("id") == first_id + 1);
    f.feed(R"({"jsonrpc":"2.0","id":1099511627775,"result":{}})");  // 2^40 - 1: never ours
    f.feed(R"({"jsonrpc":"2.0","id":1099511627778,"result":{}})");  // 2^40 + 2: not issued
    CHECK(f.s->dropped_responses() == 2);
    CHECK(f.s->outstanding_exchanges() == 2);
    f.feed(R"({"jsonrpc":"2.0","id":1099511627777,"result":{"which":"second"}})");
    CHECK(f.out->pop().at("id") == 8);
    CHECK(f.s->outstanding_exchanges() == 1);
  }

  TEST_CASE("one tool asks two questions concurrently and gets both answers in any order") {
    {
      fixture f;
      f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"both"}})");
      REQUIRE(f.out->sent.size() == 2);  // both questions out before any answer
      CHECK(f.out->pop().at("id") == first_id);
      CHECK(f.out->pop().at("id") == first_id + 1);
      CHECK(f.s->outstanding_exchanges() == 2);
      f.feed(R"({"jsonrpc":"2.0","id":1099511627777,"result":{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}})");
      CHECK(f.out->sent.empty());
      f.feed(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"roots":[]}})");
      CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "0+2");
      CHECK(f.s->outstanding_exchanges() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("cancelling a tool that waits on two questions withdraws both") {
    fixture f;
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"both"}})");
    f.out->sent.clear();
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})");
    CHECK(f.s->outstanding_exchanges() == 0);
    CHECK(f.s->in_flight() == 0);
    REQUIRE(f.out->sent.size() == 2);  // one notifications/cancelled per question, no response
    CHECK(f.out->pop().at("method") == "notifications/cancelled");
    CHECK(f.out->pop().at("method") == "notifications/cancelled");
  }
}
