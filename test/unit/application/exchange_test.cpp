// SPDX-License-Identifier: BSL-1.0
/// @file
/// `co_await ctx.exchange(...)`: a tool asks the client a question. Every waiter has
/// exactly three exits (answered, cancelled, session ended) and each test ends with
/// nothing left in the table and no frame alive (STYLE.md 3.5).
#include <droid/application/server/tool_context.hpp>

#include <memory>
#include <stop_token>
#include <string>

#include <asio/io_context.hpp>

#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "support.hpp"

namespace {

constexpr std::int64_t first_id = std::int64_t{1} << 40;

struct fixture {
  asio::io_context io;
  droid::server srv{droid::server_info{.name = "exchange-test", .version = "1"}};
  std::shared_ptr<droid::test::capture> out = std::make_shared<droid::test::capture>();
  std::shared_ptr<droid::session> s;
  std::stop_source own_stop;  // the tool's own token, for the "tool gives up" exit
  std::string outcome;        // what the tool saw
  std::error_code condition;

  explicit fixture(const std::string& capabilities = R"({"sampling":{},"roots":{}})") {
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
}
