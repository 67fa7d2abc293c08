// SPDX-License-Identifier: BSL-1.0
/// @file
/// Prompts and completion through the session.
#include <droid/application/server/server.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "support.hpp"

namespace {

struct review_args {
  std::string code;
  std::optional<std::string> focus;
};
BOOST_DESCRIBE_STRUCT(review_args, (), (code, focus))

}  // namespace

template <>
struct droid::field_hints<review_args> {
  static constexpr droid::field_hint fields[] = {{"code", "The code to review"}};
};

namespace {
/// A prompt argument with a constraint, which a prompt listing cannot carry.
struct bounded_review_args {
  std::string code;
};
BOOST_DESCRIBE_STRUCT(bounded_review_args, (), (code))
}  // namespace

template <>
struct droid::field_hints<bounded_review_args> {
  static constexpr droid::field_hint fields[] = {{.name = "code", .max_length = 10}};
};

namespace {

struct fixture : droid::test::session_driver {
  droid::server srv{droid::server_info{.name = "prompts-test", .version = "1"}};
  std::string seen_context;

  fixture() {
    srv.prompt(droid::prompt_info{.name = "test_simple_prompt", .description = "A simple prompt"},
               [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                 droid::prompt_result r;
                 r.messages.push_back(droid::prompt_message::user(droid::content::text("This is a simple prompt")));
                 co_return r;
               });
    srv.prompt(droid::prompt_info{.name = "test_prompt_with_arguments",
                                  .description = "Takes two arguments",
                                  .arguments = {{.name = "arg1", .description = "First", .required = true},
                                                {.name = "arg2", .required = true},
                                                {.name = "extra"}}},
               [](droid::tool_context&, droid::prompt_arguments a) -> droid::task<droid::prompt_result> {
                 droid::prompt_result r;
                 r.description = "with arguments";
                 r.messages.push_back(droid::prompt_message::user(
                     droid::content::text("Prompt with arguments: arg1='" + a.at("arg1") + "', arg2='" + a.at("arg2") + "'")));
                 r.messages.push_back(droid::prompt_message::assistant(droid::content::image("aGk=", "image/png")));
                 r.messages.push_back(
                     droid::prompt_message::user(droid::content::embedded_text("test://r", "embedded")));
                 co_return r;
               });
    srv.prompt("review", "Reviews code", [](droid::tool_context&, review_args a) -> droid::task<droid::prompt_result> {
      droid::prompt_result r;
      r.messages.push_back(droid::prompt_message::user(
          droid::content::text("review " + a.code + " for " + a.focus.value_or("anything"))));
      co_return r;
    });
    srv.complete_prompt_argument("test_prompt_with_arguments", "arg2",
                                 [this](droid::tool_context&, droid::completion_request req)
                                     -> droid::task<std::vector<std::string>> {
                                   seen_context = req.context.contains("arg1") ? req.context.at("arg1") : "";
                                   std::vector<std::string> values;
                                   for (int i = 0; i < 150; ++i) values.push_back(req.value + std::to_string(i));
                                   co_return values;
                                 });
    start(srv);
  }
  // The session must end before the server (a member of this class) does.
  ~fixture() { stop(); }
};

}  // namespace

TEST_SUITE("application/prompts") {
  TEST_CASE("initialize declares prompts and completions") {
    fixture f;
    const auto caps = f.out->pop().at("result").at("capabilities");
    CHECK(caps.at("prompts") == boost::json::object{{"listChanged", true}});
    CHECK(caps.at("completions") == boost::json::object{});
  }

  TEST_CASE("a typed prompt whose hints declare a constraint is refused, since it would be neither listed nor checked") {
    droid::server srv{droid::server_info{.name = "prompts-test", .version = "1"}};
    CHECK_THROWS_WITH_AS(srv.prompt("bounded", "Refused",
                                    [](droid::tool_context&, bounded_review_args) -> droid::task<droid::prompt_result> {
                                      droid::prompt_result r;
                                      co_return r;
                                    }),
                         R"(droid: field_hints gives the prompt argument "code" a constraint, which prompt arguments do not carry)",
                         std::invalid_argument);
  }

  TEST_CASE("prompts/list lists names, descriptions and arguments") {
    fixture f;
    f.out->sent.clear();
    const auto r = f.request("prompts/list", "{}");
    const auto& prompts = r.at("result").at("prompts").as_array();
    REQUIRE(prompts.size() == 3);  // review, test_prompt_with_arguments, test_simple_prompt
    const auto& typed = prompts[0].at("arguments").as_array();
    CHECK(typed.at(0) == boost::json::object{{"name", "code"}, {"description", "The code to review"}, {"required", true}});
    CHECK(typed.at(1) == boost::json::object{{"name", "focus"}, {"required", false}});
    const auto& args = prompts[1].at("arguments").as_array();
    CHECK(args.at(0).at("name") == "arg1");
    CHECK(args.at(0).at("required") == true);
    CHECK(args.at(2).at("required") == false);
    CHECK_FALSE(prompts[2].as_object().contains("arguments"));
  }

  TEST_CASE("prompts/get returns messages with text, image and embedded resource content") {
    fixture f;
    f.out->sent.clear();
    auto r = f.request("prompts/get", R"({"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}})");
    const auto& messages = r.at("result").at("messages").as_array();
    REQUIRE(messages.size() == 3);
    CHECK(messages[0].at("content").at("text") == "Prompt with arguments: arg1='a', arg2='b'");
    CHECK(messages[1].at("role") == "assistant");
    CHECK(messages[1].at("content").at("type") == "image");
    CHECK(messages[2].at("content").at("resource").at("uri") == "test://r");
    r = f.request("prompts/get", R"({"name":"test_simple_prompt"})");
    CHECK(r.at("result").at("messages").at(0).at("content").at("text") == "This is a simple prompt");
  }

  TEST_CASE("unknown prompts, missing required arguments and non-string arguments are -32602") {
    fixture f;
    f.out->sent.clear();
    CHECK(f.request("prompts/get", R"({"name":"nope"})").at("error").at("code") == -32602);
    const auto missing = f.request("prompts/get", R"({"name":"test_prompt_with_arguments","arguments":{"arg1":"a"}})");
    CHECK(missing.at("error").at("code") == -32602);
    CHECK(std::string(missing.at("error").at("message").as_string()).find("`arg2`") != std::string::npos);
    CHECK(f.request("prompts/get", R"({"name":"test_simple_prompt","arguments":{"x":1}})").at("error").at("code") ==
          -32602);
  }

  TEST_CASE("completion returns at most 100 values with total and hasMore, and sees the context") {
    fixture f;
    f.out->sent.clear();
    const auto r = f.request("completion/complete",
                             R"({"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},)"
                             R"("argument":{"name":"arg2","value":"v"},"context":{"arguments":{"arg1":"chosen"}}})");
    const auto& c = r.at("result").at("completion");
    CHECK(c.at("values").as_array().size() == 100);
    CHECK(c.at("values").at(0) == "v0");
    CHECK(c.at("total") == 150);
    CHECK(c.at("hasMore") == true);
    CHECK(f.seen_context == "chosen");
  }

  TEST_CASE("completion without a completer is empty; an unknown reference is -32602") {
    fixture f;
    f.out->sent.clear();
    auto r = f.request("completion/complete",
                       R"({"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":""}})");
    CHECK(r.at("result").at("completion").at("values").as_array().empty());
    r = f.request("completion/complete", R"({"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"a","value":""}})");
    CHECK(r.at("error").at("code") == -32602);
    CHECK(f.request("completion/complete", R"({"argument":{}})").at("error").at("code") == -32602);
  }

  TEST_CASE("adding and removing prompts notifies list_changed; bad registrations are refused") {
    fixture f;
    f.out->sent.clear();
    auto handler = [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
      co_return droid::prompt_result{};
    };
    f.srv.prompt(droid::prompt_info{.name = "late", .description = "Late"}, handler);
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/prompts/list_changed");
    CHECK(f.srv.remove_prompt("late"));
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/prompts/list_changed");
    CHECK_THROWS_AS(f.srv.prompt(droid::prompt_info{.name = "x"}, handler), std::invalid_argument);
    CHECK_THROWS_AS(f.srv.prompt(droid::prompt_info{.name = "test_simple_prompt", .description = "d"}, handler),
                    std::invalid_argument);
  }

  TEST_CASE("typed prompt arguments are decoded from the strings the client sent") {
    fixture f;
    f.out->sent.clear();
    auto r = f.request("prompts/get", R"({"name":"review","arguments":{"code":"x++"}})");
    CHECK(r.at("result").at("messages").at(0).at("content").at("text") == "review x++ for anything");
    r = f.request("prompts/get", R"({"name":"review","arguments":{"code":"x++","focus":"style"}})");
    CHECK(r.at("result").at("messages").at(0).at("content").at("text") == "review x++ for style");
    CHECK(f.request("prompts/get", R"({"name":"review"})").at("error").at("code") == -32602);
  }
}
