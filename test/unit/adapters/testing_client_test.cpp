// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::testing::client`, the in-process client, in both eras: typed calls, lists,
/// reads and prompts; errors as `rpc_error` and tool failures as `isError`; the same
/// `co_await ctx.elicit<T>(...)` answered by one handler as a 2025 server request and as
/// a 2026 `input_required` round; notifications kept; and a question with no handler.
#include <droid/adapters/primary/testing/client.hpp>

#include <string>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>

#include <doctest/doctest.h>

#include <droid/droid.hpp>

namespace {

struct greet_args {
  std::string greeting;
};
BOOST_DESCRIBE_STRUCT(greet_args, (), (greeting))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

droid::server_options quiet() {
  droid::server_options o;
  o.log = [](std::string_view) {};
  o.multi_round.state_secrets = {std::string(32, 's')};
  return o;
}

void furnish(droid::server& srv) {
  srv.tool("greet", "Asks the user's name, then greets",
           [](droid::tool_context& ctx, greet_args a) -> droid::task<droid::tool_result> {
             auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
             if (!answer) co_return droid::tool_result::error("no answer: " + answer.error().message);
             if (!answer->content) co_return droid::tool_result::text("declined");
             co_return droid::tool_result::text(a.greeting + ", " + answer->content->name);
           });
  srv.tool("fails", "Always fails", [](droid::tool_context&) -> droid::task<std::string> {
    throw std::runtime_error("it broke");
    co_return "";
  });
  srv.resource(droid::resource_info{.uri = "test://doc", .name = "doc"},
               [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                 co_return droid::resource_contents::text_of("test://doc", "the doc");
               });
  srv.prompt(droid::prompt_info{.name = "hello", .description = "Says hello",
                                .arguments = {{.name = "who", .required = true}}},
             [](droid::tool_context&, droid::prompt_arguments a) -> droid::task<droid::prompt_result> {
               droid::prompt_result r;
               r.messages.push_back(droid::prompt_message::user(droid::content::text("Hello " + a.at("who"))));
               co_return r;
             });
}

const boost::json::object elicitation_capability = {{"elicitation", boost::json::object{}}};

std::string text_of(const boost::json::object& result) {
  return std::string(result.at("content").at(0).at("text").as_string());
}

}  // namespace

TEST_SUITE("adapters/testing") {
  TEST_CASE("one tool's question answered by one handler, as a 2025 request and as a 2026 round") {
    for (const auto protocol : {droid::testing::era::v2025, droid::testing::era::v2026}) {
      CAPTURE(static_cast<int>(protocol));
      asio::io_context io;
      droid::server srv({.name = "t", .version = "1"}, quiet());
      furnish(srv);
      droid::testing::client c(srv, io.get_executor(), {.protocol = protocol, .capabilities = elicitation_capability});
      std::string asked;
      c.on("elicitation/create", [&asked](boost::json::object params) -> droid::task<boost::json::object> {
        asked = std::string(params.at("message").as_string());
        co_return boost::json::object{{"action", "accept"}, {"content", {{"name", "Ada"}}}};
      });
      const auto hello = droid::testing::run(io, c.connect());
      CHECK(hello.contains(protocol == droid::testing::era::v2025 ? "protocolVersion" : "supportedVersions"));
      const auto result = droid::testing::run(io, c.call_tool("greet", greet_args{"Hi"}));
      CHECK(text_of(result) == "Hi, Ada");
      CHECK(asked == "Your name?");
      CHECK(c.questions_answered() == 1);
      if (protocol == droid::testing::era::v2026) CHECK(result.at("resultType") == "complete");
      c.close();
      io.restart();
      io.poll();
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("lists, reads and prompts; a protocol error is rpc_error, a tool's failure isError") {
    for (const auto protocol : {droid::testing::era::v2025, droid::testing::era::v2026}) {
      CAPTURE(static_cast<int>(protocol));
      asio::io_context io;
      droid::server srv({.name = "t", .version = "1"}, quiet());
      furnish(srv);
      droid::testing::client c(srv, io.get_executor(), {.protocol = protocol});
      (void)droid::testing::run(io, c.connect());
      const auto tools = droid::testing::run(io, c.list_tools());
      CHECK(tools.size() == 2);
      CHECK(droid::testing::run(io, c.read_resource("test://doc")).at("contents").at(0).at("text") == "the doc");
      const auto prompt = droid::testing::run(io, c.get_prompt("hello", {{"who", "Bo"}}));
      CHECK(prompt.at("messages").at(0).at("content").at("text") == "Hello Bo");
      const auto failed = droid::testing::run(io, c.call_tool("fails"));
      CHECK(failed.at("isError") == true);
      CHECK(text_of(failed) == "it broke");
      try {
        (void)droid::testing::run(io, c.call_tool("no_such_tool"));
        FAIL("an unknown tool was answered");
      } catch (const droid::testing::rpc_error& e) {
        CHECK(e.code() == -32602);
        CHECK(std::string(e.what()).find("no_such_tool") != std::string::npos);
      }
      c.close();
    }
  }

  TEST_CASE("notifications are kept; a question with no handler is -32601 (2025) or fails the request (2026)") {
    asio::io_context io;
    droid::server srv({.name = "t", .version = "1"}, quiet());
    furnish(srv);
    droid::testing::client c(srv, io.get_executor(), {.capabilities = elicitation_capability});
    (void)droid::testing::run(io, c.connect());
    srv.tool("late", "Registered after connect", [](droid::tool_context&) -> droid::task<std::string> { co_return ""; });
    io.restart();
    io.poll();
    REQUIRE_FALSE(c.notifications().empty());
    CHECK(c.notifications().back().method == "notifications/tools/list_changed");
    // No elicitation handler: the session's question is refused, and the tool says so.
    const auto unanswered = droid::testing::run(io, c.call_tool("greet", greet_args{"Hi"}));
    CHECK(text_of(unanswered).find("no answer") != std::string::npos);
    c.close();

    droid::testing::client modern(srv, io.get_executor(),
                                  {.protocol = droid::testing::era::v2026, .capabilities = elicitation_capability});
    CHECK_THROWS_AS((void)droid::testing::run(io, modern.call_tool("greet", greet_args{"Hi"})), droid::testing::rpc_error);
    modern.close();
    io.restart();
    io.poll();
  }
}
