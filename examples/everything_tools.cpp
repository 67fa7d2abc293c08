// SPDX-License-Identifier: BSL-1.0
/// @file
/// The example server's own tools (everything_tools.hpp).
#include "everything_tools.hpp"

#include <chrono>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/describe.hpp>

namespace {

struct echo_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

struct update_args {
  std::string uri;
};
BOOST_DESCRIBE_STRUCT(update_args, (), (uri))

struct add_args {
  double a = 0;
  double b = 0;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))

struct sum {
  double result = 0;
};
BOOST_DESCRIBE_STRUCT(sum, (), (result))

enum class units { metric, imperial };
BOOST_DESCRIBE_ENUM(units, metric, imperial)

struct forecast_args {
  std::string city;
  int days = 3;
  units unit = units::metric;
  std::optional<std::vector<std::string>> fields;
};
BOOST_DESCRIBE_STRUCT(forecast_args, (), (city, days, unit, fields))

struct forecast {
  std::string city;
  std::vector<double> highs;
  units unit = units::metric;
};
BOOST_DESCRIBE_STRUCT(forecast, (), (city, highs, unit))

struct count_args {
  int steps = 5;
  int interval_ms = 100;
};
BOOST_DESCRIBE_STRUCT(count_args, (), (steps, interval_ms))

struct sleep_args {
  double seconds = 10;
};
BOOST_DESCRIBE_STRUCT(sleep_args, (), (seconds))

struct fail_args {
  std::string message;
};
BOOST_DESCRIBE_STRUCT(fail_args, (), (message))

enum class seating { indoor, terrace };
BOOST_DESCRIBE_ENUM(seating, indoor, terrace)

/// The form `book_table` shows the user (elicitation): flat, primitive members only.
struct booking {
  std::string name;
  int guests = 2;
  seating place = seating::indoor;
  std::optional<std::string> notes;
};
BOOST_DESCRIBE_STRUCT(booking, (), (name, guests, place, notes))

struct summarize_args {
  std::string text;
  int max_tokens = 200;
};
BOOST_DESCRIBE_STRUCT(summarize_args, (), (text, max_tokens))

}  // namespace

template <>
struct droid::field_hints<echo_args> {
  static constexpr droid::field_hint fields[] = {{"text", "The text to send back"}};
};
template <>
struct droid::field_hints<add_args> {
  static constexpr droid::field_hint fields[] = {{"a", "First addend"}, {"b", "Second addend"}};
};
template <>
struct droid::field_hints<forecast_args> {
  static constexpr droid::field_hint fields[] = {{"city", "City to forecast"},
                                                 {"days", "Days ahead, 1 to 10", true},
                                                 {"unit", "Temperature unit", true},
                                                 {"fields", "Extra fields to include"}};
};
template <>
struct droid::field_hints<count_args> {
  static constexpr droid::field_hint fields[] = {{"steps", "How many progress steps", true},
                                                 {"interval_ms", "Milliseconds between steps", true}};
};
template <>
struct droid::elicit_hints<booking> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "name", .title = "Name for the booking", .min_length = 1},
      {.name = "guests", .title = "Guests", .defaulted = true, .minimum = 1, .maximum = 12},
      {.name = "place", .title = "Seating", .defaulted = true},
      {.name = "notes", .title = "Notes", .description = "Allergies, occasions, ..."}};
};
template <>
struct droid::enum_titles<seating> {
  static constexpr std::pair<seating, std::string_view> titles[] = {{seating::indoor, "Indoors"},
                                                                    {seating::terrace, "On the terrace"}};
};
template <>
struct droid::field_hints<summarize_args> {
  static constexpr droid::field_hint fields[] = {{"text", "The text to summarize"},
                                                 {"max_tokens", "Longest summary, in tokens", true}};
};
template <>
struct droid::field_hints<sleep_args> {
  static constexpr droid::field_hint fields[] = {{"seconds", "How long to run before answering", true}};
};

void register_tools(droid::server& server) {
  server.tool("echo", "Returns its text argument unchanged",
              [](droid::tool_context&, echo_args args) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text(args.text);
              });

  // What a server does when one of its resources changes: every session subscribed to it
  // is told (with --redis, on every instance; docs/scale-out.md).
  server.tool("update_resource", "Tells the clients subscribed to resource `uri` that it changed",
              [&server](droid::tool_context&, update_args args) -> droid::task<droid::tool_result> {
                server.resource_updated(args.uri);
                co_return droid::tool_result::text("told the subscribers of " + args.uri);
              });

  droid::tool_info add;
  add.name = "add";
  add.title = "Add two numbers";
  add.description = "Adds a and b and returns the sum as structured content";
  add.annotations.read_only_hint = true;
  add.annotations.idempotent_hint = true;
  server.tool(std::move(add), [](droid::tool_context&, add_args args) -> droid::task<sum> {
    co_return sum{args.a + args.b};
  });

  server.tool("forecast", "A made-up weather forecast for a city (typed arguments with defaults and enums)",
              [](droid::tool_context&, forecast_args args) -> droid::task<forecast> {
                if (args.days < 1 || args.days > 10) throw std::invalid_argument("days must be between 1 and 10");
                forecast f{args.city, {}, args.unit};
                for (int d = 0; d < args.days; ++d)
                  f.highs.push_back(args.unit == units::metric ? 20.0 + d : 68.0 + 2 * d);
                co_return f;
              });

  server.tool("count", "Counts to `steps`, reporting progress after each step",
              [](droid::tool_context& ctx, count_args args) -> droid::task<droid::tool_result> {
                for (int i = 1; i <= args.steps; ++i) {
                  if (co_await ctx.sleep(std::chrono::milliseconds(args.interval_ms)))
                    co_return droid::tool_result::error("cancelled");
                  co_await ctx.progress(i, args.steps, "step " + std::to_string(i));
                }
                co_return droid::tool_result::text("counted to " + std::to_string(args.steps));
              });

  server.tool("sleep", "Runs for `seconds` and honours cancellation",
              [](droid::tool_context& ctx, sleep_args args) -> droid::task<droid::tool_result> {
                const auto duration = std::chrono::duration<double>(args.seconds);
                if (co_await ctx.sleep(std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration)))
                  co_return droid::tool_result::error("cancelled before finishing");
                co_return droid::tool_result::text("slept");
              });

  server.tool("summarize", "Asks the client's model (sampling) to summarize a text, within 60 seconds",
              [](droid::tool_context& ctx, summarize_args args) -> droid::task<droid::tool_result> {
                droid::sampling_request request;
                request.messages.push_back(droid::sampling_message::user_text("Summarize briefly:\n" + args.text));
                request.max_tokens = args.max_tokens;
                request.system_prompt = "You write one-sentence summaries.";
                // Nothing bounds an exchange by itself (a person may be approving it);
                // this tool chooses to give up after a minute.
                droid::deadline limit(ctx.executor(), std::chrono::seconds(60));
                auto answer = co_await ctx.sample(std::move(request), limit.token());
                if (!answer) {
                  co_return droid::tool_result::error(limit.expired() ? "the client's model did not answer in time"
                                                                      : answer.error().message);
                }
                co_return droid::tool_result::text("summary from " + answer->model + ": " + answer->text());
              });

  server.tool("book_table", "Asks the user for booking details (form elicitation) and confirms them",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<booking>("Who is the table for?");
                if (!answer) co_return droid::tool_result::error(answer.error().message);
                switch (answer->action) {
                  case droid::elicit_action::decline: co_return droid::tool_result::text("booking declined");
                  case droid::elicit_action::cancel: co_return droid::tool_result::text("booking cancelled");
                  case droid::elicit_action::accept: break;
                }
                const booking& b = *answer->content;
                co_return droid::tool_result::text("booked a table " +
                                                   std::string(b.place == seating::terrace ? "on the terrace" : "indoors") +
                                                   " for " + std::to_string(b.guests) + ", name " + b.name +
                                                   (b.notes ? " (" + *b.notes + ")" : ""));
              });

  server.tool("roots", "Lists the roots the client exposes (roots/list)",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto roots = co_await ctx.list_roots();
                if (!roots) co_return droid::tool_result::error(roots.error().message);
                std::string text = std::to_string(roots.value().size()) + " root(s)";
                for (const droid::root& r : roots.value()) text += "\n" + r.uri + (r.name.empty() ? "" : " (" + r.name + ")");
                co_return droid::tool_result::text(text);
              });

  server.on_roots_list_changed([](const droid::peer_info& peer) {
    std::cerr << "everything-server: the roots of client "
              << (peer.client_info.contains("name") ? peer.client_info.at("name").as_string().c_str() : "?")
              << " changed\n";
  });

  server.tool("reconnect", "Closes its event stream, then answers: the client resumes the stream to get the result",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                ctx.close_stream();
                co_await ctx.sleep(std::chrono::milliseconds(100));
                co_return droid::tool_result::text("answered after the stream was resumed");
              });

  server.tool("fail", "Always fails by throwing; shows how a tool's exception reaches the model",
              [](droid::tool_context&, fail_args args) -> droid::task<droid::tool_result> {
                throw std::runtime_error(args.message.empty() ? "the tool failed" : args.message);
                co_return droid::tool_result::text("unreachable");
              });

  server.tool("client_info", "Reports what the client declared in initialize",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                boost::json::object o{{"protocolVersion", ctx.peer().protocol_version},
                                      {"clientInfo", ctx.peer().client_info},
                                      {"capabilities", ctx.peer().capabilities}};
                co_return droid::tool_result::text(droid::ir::to_json_text(o));
              });
}
