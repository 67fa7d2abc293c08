// SPDX-License-Identifier: BSL-1.0
/// @file
/// The conformance suite's multi round-trip fixtures (2026-07-28 `input-required-result-*`
/// scenarios): tools and a prompt that ask the client things.
///
/// Nothing here is written for 2026-07-28. Each fixture asks with `ctx.elicit`,
/// `ctx.sample`, `ctx.list_roots` or `droid::when_all` of them, as any tool would; in a
/// 2025 session the questions are server requests on the call's stream, and in a
/// 2026-07-28 request the same awaits become an `input_required` result whose retry
/// resumes the suspended frame. Only the keys are named (the last argument, an
/// `ask_options`), because the scenarios look the questions up by the names they expect.
#include <string>
#include <utility>

#include <boost/describe.hpp>

#include <droid/droid.hpp>

#include "conformance_tools.hpp"

namespace {

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

struct color_form {
  std::string color;
};
BOOST_DESCRIBE_STRUCT(color_form, (), (color))

struct confirm_form {
  bool ok = false;
};
BOOST_DESCRIBE_STRUCT(confirm_form, (), (ok))

struct context_form {
  std::string context;
};
BOOST_DESCRIBE_STRUCT(context_form, (), (context))

std::string said(const droid::exchange_outcome<droid::elicitation<name_form>>& answer) {
  if (!answer) return "no answer (" + answer.error().message + ")";
  if (!answer->content) return "no name (the user chose not to answer)";
  return answer->content->name;
}

droid::sampling_request question(std::string text) {
  droid::sampling_request request;
  request.messages.push_back(droid::sampling_message::user_text(std::move(text)));
  request.max_tokens = 100;
  return request;
}

}  // namespace

void register_input_required_fixtures(droid::server& server) {
  server.tool("test_input_required_result_elicitation", "Asks the user's name (key user_name), then greets them",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<name_form>("What is your name?", "user_name");
                co_return droid::tool_result::text("Hello, " + said(answer) + "!");
              });

  server.tool("test_input_required_result_sampling", "Asks the client's model a question (key capital_question)",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.sample(question("What is the capital of France?"), "capital_question");
                if (!answer) co_return droid::tool_result::error("Sampling failed: " + answer.error().message);
                co_return droid::tool_result::text("The model said: " + answer->text());
              });

  server.tool("test_input_required_result_list_roots", "Lists the client's roots (key client_roots)",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto roots = co_await ctx.list_roots("client_roots");
                if (!roots) co_return droid::tool_result::error("roots/list failed: " + roots.error().message);
                std::string text = "The client has " + std::to_string(roots->size()) + " root(s):";
                for (const droid::root& r : roots.value()) text += " " + r.uri;
                co_return droid::tool_result::text(text);
              });

  // The state the suite echoes back is opened and checked (sealed, bound to this call,
  // unexpired) before this tool resumes: reaching the end means it was valid.
  server.tool("test_input_required_result_request_state", "Asks for a confirmation; the retry's requestState is checked",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<confirm_form>("Confirm to continue", "confirmation");
                if (!answer) co_return droid::tool_result::error("Elicitation failed: " + answer.error().message);
                co_return droid::tool_result::text(std::string("state-ok: the request state was verified; confirmed=") +
                                                   (answer->content && answer->content->ok ? "true" : "false"));
              });

  // Three questions at once: one round, three keys.
  server.tool("test_input_required_result_multiple_inputs", "Asks the user, the model and the roots at once",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto name = ctx.elicit<name_form>("What is your name?", "user_name");
                auto greeting = ctx.sample(question("Say hello"), "greeting");
                auto roots = ctx.list_roots("client_roots");
                auto [who, hello, where] =
                    co_await droid::when_all(std::move(name), std::move(greeting), std::move(roots));
                co_return droid::tool_result::text("name: " + said(who) +
                                                   "; model: " + (hello ? hello->text() : hello.error().message) +
                                                   "; roots: " + (where ? std::to_string(where->size()) : where.error().message));
              });

  // Two rounds, one frame: the second question is asked after the first is answered.
  server.tool("test_input_required_result_multi_round", "Asks for a name (step1), then a colour (step2)",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto name = co_await ctx.elicit<name_form>("What is your name?", "step1");
                auto color = co_await ctx.elicit<color_form>("Hello " + said(name) + ", what is your favourite colour?",
                                                             "step2");
                const std::string chosen = color && color->content ? color->content->color : std::string("none");
                co_return droid::tool_result::text(said(name) + " likes " + chosen);
              });

  server.tool("test_input_required_result_tampered_state", "Asks for a confirmation; a tampered requestState is refused",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<confirm_form>("Confirm to continue", "confirmation");
                if (!answer) co_return droid::tool_result::error("Elicitation failed: " + answer.error().message);
                co_return droid::tool_result::text("confirmed");
              });

  // Asks both; the elicitation is refused at once when the request did not declare
  // `elicitation`, so only the questions the client can answer reach it.
  server.tool("test_input_required_result_capabilities", "Asks the user and the model; only what the client declared is asked",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto name = ctx.elicit<name_form>("What is your name?", "user_name");
                auto hello = ctx.sample(question("Say hello"), "greeting");
                auto [who, model] = co_await droid::when_all(std::move(name), std::move(hello));
                co_return droid::tool_result::text("name: " + said(who) +
                                                   "; model: " + (model ? model->text() : model.error().message));
              });

  server.prompt(droid::prompt_info{.name = "test_input_required_result_prompt",
                                   .description = "Asks the user what context the prompt should use (key user_context)"},
                [](droid::tool_context& ctx, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                  auto answer = co_await ctx.elicit<context_form>("What context should the prompt use?",
                                                                  "user_context");
                  const std::string context =
                      answer && answer->content ? answer->content->context : std::string("(none given)");
                  droid::prompt_result result;
                  result.messages.push_back(
                      droid::prompt_message::user(droid::content::text("Use this context: " + context)));
                  co_return result;
                });
}
