// SPDX-License-Identifier: BSL-1.0
/// @file
/// The conformance suite's task fixtures (`tasks-*` scenarios): tools that run as tasks.
///
/// Each is an ordinary coroutine tool; what makes it a task is one line of its
/// registration (`info.tasks`). The same tool serves a 2025-11-25 client that asks for a
/// task (`params.task`), a 2026-07-28 client that declared the tasks extension (the
/// server decides, and returns the task at once), and a client that knows no tasks (an
/// `optional` tool then answers in its request).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include <boost/describe.hpp>

#include <droid/droid.hpp>

#include "conformance_tools.hpp"

namespace {

struct greet_args {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(greet_args, (), (name))

struct compute_args {
  double seconds = 0;
  std::optional<std::string> label;
};
BOOST_DESCRIBE_STRUCT(compute_args, (), (seconds, label))

struct delete_args {
  std::string filename;
};
BOOST_DESCRIBE_STRUCT(delete_args, (), (filename))

struct confirm_form {
  bool confirm = false;
};
BOOST_DESCRIBE_STRUCT(confirm_form, (), (confirm))

struct named_confirm_form {
  std::string name;
  bool confirm = false;
};
BOOST_DESCRIBE_STRUCT(named_confirm_form, (), (name, confirm))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

droid::tool_info task_tool(std::string name, std::string description, droid::task_support support) {
  droid::tool_info info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.tasks = support;
  return info;
}

}  // namespace

void register_task_fixtures(droid::server& server) {
  server.tool("greet", "Greets someone (never a task)",
              [](droid::tool_context&, greet_args args) -> droid::task<std::string> {
                co_return "Hello, " + args.name + "!";
              });

  server.tool(task_tool("slow_compute", "Works for `seconds` seconds, then answers (a task when the client accepts one)",
                        droid::task_support::optional),
              [](droid::tool_context& ctx, compute_args args) -> droid::task<droid::tool_result> {
                const std::string label = args.label.value_or("unnamed");
                if (args.seconds > 0) {
                  const auto span = std::chrono::duration<double>(std::min(args.seconds, 3600.0));
                  if (co_await ctx.sleep(std::chrono::duration_cast<std::chrono::steady_clock::duration>(span)))
                    co_return droid::tool_result::error("cancelled while computing " + label);
                }
                co_return droid::tool_result::text("computed " + label + " in " + std::to_string(args.seconds) + " s");
              });

  server.tool(task_tool("failing_job", "Runs for about a second, then fails with a tool error (only as a task)",
                        droid::task_support::required),
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                (void)co_await ctx.sleep(std::chrono::seconds(1));
                co_return droid::tool_result::error("the job failed: its input was rejected");
              });

  server.tool(task_tool("protocol_error_job", "Ends with a JSON-RPC error rather than a result",
                        droid::task_support::optional),
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                (void)co_await ctx.sleep(std::chrono::milliseconds(200));
                throw droid::protocol_error(-32603, "Internal error: the job's worker crashed");
              });

  server.tool(task_tool("confirm_delete", "Asks the user to confirm, then deletes (pretends to)",
                        droid::task_support::optional),
              [](droid::tool_context& ctx, delete_args args) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<confirm_form>("Delete " + args.filename + "?");
                if (!answer) co_return droid::tool_result::error("no answer: " + answer.error().message);
                if (answer->action == droid::elicit_action::accept && answer->content && answer->content->confirm)
                  co_return droid::tool_result::text("Deleted " + args.filename);
                co_return droid::tool_result::text("Kept " + args.filename);
              });

  server.tool(task_tool("multi_input", "Asks two questions at once, then reports both answers",
                        droid::task_support::optional),
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto [first, second] = co_await droid::when_all(ctx.elicit<named_confirm_form>("First name?"),
                                                                ctx.elicit<named_confirm_form>("Second name?"));
                const auto said = [](const auto& a) -> std::string {
                  if (!a || !a->content) return "(no answer)";
                  return a->content->name;
                };
                co_return droid::tool_result::text("Got " + said(first) + " and " + said(second));
              });

  droid::tool_info composed = task_tool(
      "test_tool_with_task", "Asks the user's name within the request (key user_name), then goes on as a task",
      droid::task_support::required);
  composed.start = droid::task_start::when_asked;
  server.tool(std::move(composed), [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
    auto answer = co_await ctx.elicit<name_form>("What is your name?", "user_name");
    const std::string name = answer && answer->content ? answer->content->name : "stranger";
    (void)co_await ctx.continue_as_task();
    (void)co_await ctx.sleep(std::chrono::milliseconds(300));
    co_return droid::tool_result::text("Hello, " + name + ", from a task");
  });
}
