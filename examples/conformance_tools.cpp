// SPDX-License-Identifier: BSL-1.0
/// @file
/// The conformance suite's fixtures, registered with the public API. See
/// conformance_tools.hpp; docs/conformance.md lists the scenarios and what each needs. Texts follow the TypeScript SDK's reference server where the suite
/// reads them, so a failure here can be compared with the reference side by side.
#include "conformance_tools.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/droid.hpp>

namespace {

using namespace std::chrono_literals;

/// A 1x1 PNG, already base64 (image content and blob resources carry base64 text).
constexpr std::string_view png_base64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A 44-byte WAV header (8 kHz, mono, 16 bits, no samples), base64.
constexpr std::string_view wav_base64 = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

// ---- typed arguments ------------------------------------------------------------------

struct sampling_args {
  std::string prompt;
};
BOOST_DESCRIBE_STRUCT(sampling_args, (), (prompt))

struct elicitation_args {
  std::string message;
};
BOOST_DESCRIBE_STRUCT(elicitation_args, (), (message))

// ---- elicitation forms ----------------------------------------------------------------

/// `test_elicitation`'s form: one free-text field. The tool builds the schema from this
/// struct but reads the answer raw (see the tool for why).
struct free_text_answer {
  std::string response;
};
BOOST_DESCRIBE_STRUCT(free_text_answer, (), (response))

/// SEP-1034: every field states a `default` (its value in a value-initialised struct),
/// so a client can prefill the form.
enum class account_status { active, inactive, pending };
BOOST_DESCRIBE_ENUM(account_status, active, inactive, pending)

struct profile_form {
  std::string name = "John Doe";
  int age = 30;
  double score = 95.5;
  account_status status = account_status::active;
  bool verified = true;
};
BOOST_DESCRIBE_STRUCT(profile_form, (), (name, age, score, status, verified))

/// SEP-1330: the five shapes of a choice. An enum without `enum_titles` is a plain
/// `enum`; with titles it is `oneOf` (one choice) or `items.anyOf` (several); with
/// `legacy_enum_names` it is the deprecated `enum` + `enumNames`.
/// The member names are the form's property names, hence camelCase here.
enum class plain_option { option1, option2, option3 };
BOOST_DESCRIBE_ENUM(plain_option, option1, option2, option3)
enum class titled_option { value1, value2, value3 };
BOOST_DESCRIBE_ENUM(titled_option, value1, value2, value3)
enum class legacy_option { opt1, opt2, opt3 };
BOOST_DESCRIBE_ENUM(legacy_option, opt1, opt2, opt3)

struct enum_form {
  plain_option untitledSingle = plain_option::option1;
  titled_option titledSingle = titled_option::value1;
  legacy_option legacyEnum = legacy_option::opt1;
  std::vector<plain_option> untitledMulti;
  std::vector<titled_option> titledMulti;
};
BOOST_DESCRIBE_STRUCT(enum_form, (), (untitledSingle, titledSingle, legacyEnum, untitledMulti, titledMulti))

/// Arguments mirrored into HTTP headers (SEP-2243): a 2026-07-28 client sends each one
/// again as `Mcp-Param-<name>`, and the server refuses a request whose headers and body
/// disagree, so a proxy can route on the headers and trust them.
struct routed_query {
  std::string region;
  std::optional<std::int64_t> priority;
  std::optional<bool> verbose;
  std::string query;
};
BOOST_DESCRIBE_STRUCT(routed_query, (), (region, priority, verbose, query))

}  // namespace

template <>
struct droid::field_hints<routed_query> {
  static constexpr droid::field_hint fields[] = {
      {.name = "region", .description = "Where to run the query", .mcp_header = "Region"},
      {.name = "priority", .description = "Scheduling priority", .mcp_header = "Priority"},
      {.name = "verbose", .description = "Explain the plan too", .mcp_header = "Verbose"},
      {.name = "query", .description = "The query (not mirrored: it may be long)"}};
};

template <>
struct droid::field_hints<sampling_args> {
  static constexpr droid::field_hint fields[] = {{"prompt", "The prompt to send to the client's model"}};
};
template <>
struct droid::field_hints<elicitation_args> {
  static constexpr droid::field_hint fields[] = {{"message", "The message to show the user"}};
};
template <>
struct droid::elicit_hints<free_text_answer> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "response", .title = "Response", .description = "User's response"}};
};
template <>
struct droid::elicit_hints<profile_form> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "name", .title = "Name", .defaulted = true},
      {.name = "age", .title = "Age", .defaulted = true, .minimum = 0, .maximum = 150},
      {.name = "score", .title = "Score", .defaulted = true, .minimum = 0, .maximum = 100},
      {.name = "status", .title = "Status", .defaulted = true},
      {.name = "verified", .title = "Verified", .defaulted = true}};
};
template <>
struct droid::enum_titles<titled_option> {
  static constexpr std::pair<titled_option, std::string_view> titles[] = {
      {titled_option::value1, "First Option"}, {titled_option::value2, "Second Option"},
      {titled_option::value3, "Third Option"}};
};
template <>
struct droid::enum_titles<legacy_option> {
  static constexpr bool legacy_enum_names = true;
  static constexpr std::pair<legacy_option, std::string_view> titles[] = {
      {legacy_option::opt1, "Option One"}, {legacy_option::opt2, "Option Two"}, {legacy_option::opt3, "Option Three"}};
};
template <>
struct droid::elicit_hints<enum_form> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "untitledSingle", .title = "Untitled single select"},
      {.name = "titledSingle", .title = "Titled single select"},
      {.name = "legacyEnum", .title = "Legacy titled enum"},
      {.name = "untitledMulti", .title = "Untitled multi select", .min_items = 1, .max_items = 3},
      {.name = "titledMulti", .title = "Titled multi select", .min_items = 1, .max_items = 3}};
};

namespace {

/// What an elicitation answer says, for a tool's result text.
std::string describe(droid::elicit_action action) {
  switch (action) {
    case droid::elicit_action::accept: return "accept";
    case droid::elicit_action::decline: return "decline";
    case droid::elicit_action::cancel: return "cancel";
  }
  return "?";
}

// ---- tools: content blocks ------------------------------------------------------------

void register_content_tools(droid::server& server) {
  server.tool("test_simple_text", "Returns a single text block",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text("This is a simple text response for testing.");
              });

  server.tool("test_image_content", "Returns an image (a 1x1 PNG)",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                droid::tool_result r;
                r.add(droid::content::image(png_base64, "image/png"));
                co_return r;
              });

  server.tool("test_audio_content", "Returns an audio clip (an empty WAV)",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                droid::tool_result r;
                r.add(droid::content::audio(wav_base64, "audio/wav"));
                co_return r;
              });

  server.tool("test_embedded_resource", "Returns an embedded text resource",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                droid::tool_result r;
                r.add(droid::content::embedded_text("test://embedded-resource", "This is an embedded resource content.",
                                                    "text/plain"));
                co_return r;
              });

  server.tool("test_multiple_content_types", "Returns text, an image and an embedded resource in one result",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                droid::tool_result r;
                r.add(droid::content::text("Multiple content types test:"));
                r.add(droid::content::image(png_base64, "image/png"));
                r.add(droid::content::embedded_text("test://mixed-content-resource", R"({"test":"data","value":123})",
                                                    "application/json"));
                co_return r;
              });

  // A thrown exception becomes an `isError: true` result carrying its message, which
  // the model reads (not a JSON-RPC error, which only the client would see).
  server.tool("test_error_handling", "Always fails, to show how a tool error reaches the model",
              [](droid::tool_context&) -> droid::task<droid::tool_result> {
                throw std::runtime_error("This tool intentionally returns an error for testing");
                co_return droid::tool_result::text("unreachable");
              });
}

// ---- tools: notifications during a call -----------------------------------------------

void register_notifying_tools(droid::server& server) {
  // Log messages travel on the call's own stream, before its result; the client's
  // `logging/setLevel` decides which levels are sent at all.
  server.tool("test_tool_with_logging", "Logs three messages while it runs",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                co_await ctx.log(droid::log_level::info, "Tool execution started");
                co_await ctx.sleep(50ms);
                co_await ctx.log(droid::log_level::info, "Tool processing data");
                co_await ctx.sleep(50ms);
                co_await ctx.log(droid::log_level::info, "Tool execution completed");
                co_return droid::tool_result::text("Tool with logging executed successfully");
              });

  // Progress is sent only when the client asked for it (a `progressToken` in `_meta`);
  // the token is echoed with its JSON type, which clients match on.
  server.tool("test_tool_with_progress", "Reports progress 0, 50 and 100 out of 100",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                for (int step : {0, 50, 100}) {
                  co_await ctx.progress(step, 100, "Completed step " + std::to_string(step) + " of 100");
                  if (step != 100 && co_await ctx.sleep(50ms)) co_return droid::tool_result::error("cancelled");
                }
                co_return droid::tool_result::text("Progress reported: 0, 50 and 100 of 100");
              });

  // Stream resumption (SEP-1699): the tool ends the connection carrying its event
  // stream; the client reconnects with `Last-Event-ID` and receives the result there.
  server.tool("test_reconnection", "Closes its event stream, then answers on the resumed stream",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                ctx.close_stream();
                co_await ctx.sleep(100ms);
                co_return droid::tool_result::text("Reconnection test completed: the result arrived after resumption");
              });
}

// ---- tools: questions to the client ---------------------------------------------------

void register_exchange_tools(droid::server& server) {
  server.tool("test_sampling", "Asks the client's model to answer a prompt (sampling)",
              [](droid::tool_context& ctx, sampling_args args) -> droid::task<droid::tool_result> {
                droid::sampling_request request;
                request.messages.push_back(droid::sampling_message::user_text(args.prompt));
                request.max_tokens = 100;
                auto answer = co_await ctx.sample(std::move(request));
                if (!answer) co_return droid::tool_result::error("Sampling failed: " + answer.error().message);
                co_return droid::tool_result::text("LLM response: " + answer->text() + " (model " + answer->model + ")");
              });

  // The form comes from `free_text_answer`, but the answer is read raw: what a client
  // submits is its business, and this tool reports it whatever its shape.
  // (`ctx.elicit<free_text_answer>` would decode it, refusing an answer without
  // `response`.)
  server.tool("test_elicitation", "Asks the user for information (form elicitation) and reports the answer",
              [](droid::tool_context& ctx, elicitation_args args) -> droid::task<droid::tool_result> {
                boost::json::object params{{"message", args.message},
                                           {"requestedSchema", droid::elicitation_schema<free_text_answer>()}};
                droid::exchange_result answer = co_await ctx.exchange("elicitation/create", params);
                if (!answer) co_return droid::tool_result::error("Elicitation failed: " + answer.error().message);
                const boost::json::object* result = answer.value().if_object();
                const boost::json::value* action = result ? result->if_contains("action") : nullptr;
                const boost::json::value* content = result ? result->if_contains("content") : nullptr;
                co_return droid::tool_result::text(
                    "User response: action=" + (action ? droid::ir::to_json_text(*action) : std::string("?")) +
                    ", content=" + (content ? droid::ir::to_json_text(*content) : std::string("{}")));
              });

  server.tool("test_elicitation_sep1034_defaults", "Asks for a profile whose every field has a default (SEP-1034)",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<profile_form>("Please review your profile (defaults are prefilled)");
                if (!answer) co_return droid::tool_result::error("Elicitation failed: " + answer.error().message);
                std::string text = "Elicitation completed: action=" + describe(answer->action);
                if (answer->content)
                  text += ", content=" + droid::ir::to_json_text(droid::to_json_value(*answer->content));
                co_return droid::tool_result::text(text);
              });

  server.tool("test_elicitation_sep1330_enums", "Asks the user to choose, in each enum shape of SEP-1330",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                auto answer = co_await ctx.elicit<enum_form>("Please choose an option in each field");
                if (!answer) co_return droid::tool_result::error("Elicitation failed: " + answer.error().message);
                std::string text = "Elicitation completed: action=" + describe(answer->action);
                if (answer->content)
                  text += ", content=" + droid::ir::to_json_text(droid::to_json_value(*answer->content));
                co_return droid::tool_result::text(text);
              });
}

// ---- tools: a raw JSON Schema ---------------------------------------------------------

/// What a C++ struct cannot say (`$defs`/`$ref`, `allOf`/`anyOf`, `if`/`then`/`else`):
/// give the schema as JSON and take the arguments as a `boost::json::object`. The
/// schema is emitted verbatim in `tools/list`.
constexpr std::string_view contact_schema = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"},
    "address": {"$ref": "#/$defs/address"}
  },
  "required": ["name", "contactMethod"],
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
})";

void register_schema_tool(droid::server& server) {
  droid::tool_info info;
  info.name = "json_schema_2020_12_tool";
  info.description = "Takes contact details described by a JSON Schema 2020-12 ($defs, allOf, if/then/else)";
  info.input_schema = boost::json::parse(contact_schema).as_object();
  server.tool(std::move(info), [](droid::tool_context&, boost::json::object args) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::text("Received contact details: " + droid::ir::to_json_text(args));
  });
}

// ---- resources ------------------------------------------------------------------------

void register_resources(droid::server& server) {
  server.resource(droid::resource_info{.uri = "test://static-text",
                                       .name = "static-text",
                                       .title = "Static text",
                                       .description = "A static text resource",
                                       .mime_type = "text/plain"},
                  [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                    co_return droid::resource_contents::text_of("test://static-text",
                                                                "This is the content of the static text resource.");
                  });

  // The PNG is already base64, so the contents are built directly; `blob_of` would
  // encode raw bytes.
  server.resource(droid::resource_info{.uri = "test://static-binary",
                                       .name = "static-binary",
                                       .title = "Static binary",
                                       .description = "A static binary resource (a 1x1 PNG)",
                                       .mime_type = "image/png"},
                  [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                    co_return droid::resource_contents{
                        .uri = "test://static-binary", .mime_type = "image/png", .blob = std::string(png_base64)};
                  });

  server.resource_template(
      droid::resource_template_info{.uri_template = "test://template/{id}/data",
                                    .name = "template-data",
                                    .title = "Data by id",
                                    .description = "A resource template: any id reads its own data",
                                    .mime_type = "application/json"},
      [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
        const std::string& id = r.variables.at("id");
        boost::json::object data{{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
        co_return droid::resource_contents::text_of(r.uri, droid::ir::to_json_text(data), "application/json");
      });

  // Clients may subscribe to any resource; a server that changes it calls
  // `server.resource_updated("test://watched-resource")`, and every subscribed session
  // gets `notifications/resources/updated`.
  server.resource(droid::resource_info{.uri = "test://watched-resource",
                                       .name = "watched-resource",
                                       .title = "Watched resource",
                                       .description = "A resource clients can subscribe to",
                                       .mime_type = "text/plain"},
                  [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                    co_return droid::resource_contents::text_of("test://watched-resource", "Watched resource content");
                  });

  server.complete_resource_variable("test://template/{id}/data", "id",
                                    [](droid::tool_context&, droid::completion_request req)
                                        -> droid::task<std::vector<std::string>> {
                                      std::vector<std::string> out;
                                      for (std::string id : {"123", "456", "789"})
                                        if (id.starts_with(req.value)) out.push_back(id);
                                      co_return out;
                                    });
}

// ---- prompts --------------------------------------------------------------------------

void register_prompts(droid::server& server) {
  server.prompt(droid::prompt_info{.name = "test_simple_prompt", .description = "A prompt without arguments"},
                [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                  droid::prompt_result r;
                  r.messages.push_back(droid::prompt_message::user(droid::content::text("This is a simple prompt for testing.")));
                  co_return r;
                });

  // Required arguments are checked before the handler runs, so `at` cannot throw here.
  server.prompt(droid::prompt_info{.name = "test_prompt_with_arguments",
                                   .description = "A prompt with two required arguments",
                                   .arguments = {{.name = "arg1", .description = "First test argument", .required = true},
                                                 {.name = "arg2", .description = "Second test argument", .required = true}}},
                [](droid::tool_context&, droid::prompt_arguments args) -> droid::task<droid::prompt_result> {
                  droid::prompt_result r;
                  r.messages.push_back(droid::prompt_message::user(droid::content::text(
                      "Prompt with arguments: arg1='" + args.at("arg1") + "', arg2='" + args.at("arg2") + "'")));
                  co_return r;
                });

  server.complete_prompt_argument("test_prompt_with_arguments", "arg1",
                                  [](droid::tool_context&, droid::completion_request req)
                                      -> droid::task<std::vector<std::string>> {
                                    std::vector<std::string> out;
                                    for (std::string v : {"testValue1", "testing", "example"})
                                      if (v.starts_with(req.value)) out.push_back(v);
                                    co_return out;
                                  });

  server.prompt(droid::prompt_info{.name = "test_prompt_with_embedded_resource",
                                   .description = "A prompt that embeds the resource it is given",
                                   .arguments = {{.name = "resourceUri",
                                                  .description = "URI of the resource to embed",
                                                  .required = true}}},
                [](droid::tool_context&, droid::prompt_arguments args) -> droid::task<droid::prompt_result> {
                  droid::prompt_result r;
                  r.messages.push_back(droid::prompt_message::user(droid::content::embedded_text(
                      args.at("resourceUri"), "Embedded resource content for testing.", "text/plain")));
                  r.messages.push_back(
                      droid::prompt_message::user(droid::content::text("Please process the embedded resource above.")));
                  co_return r;
                });

  server.prompt(droid::prompt_info{.name = "test_prompt_with_image", .description = "A prompt with an image"},
                [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                  droid::prompt_result r;
                  r.messages.push_back(droid::prompt_message::user(droid::content::image(png_base64, "image/png")));
                  r.messages.push_back(droid::prompt_message::user(droid::content::text("Please analyze the image above.")));
                  co_return r;
                });
}

}  // namespace

// ---- tools: the 2026-07-28 draft scenarios ---------------------------------------------

/// Adds the tool (or prompt) when it is missing and removes it when it is there: each
/// call changes the list, so open `subscriptions/listen` streams (and 2025 sessions) are
/// told with list_changed.
void register_draft_tools(droid::server& server) {
  droid::tool_info needs_sampling{.name = "test_missing_capability",
                                  .description = "Needs the client's sampling capability (refused with -32021 without it)"};
  needs_sampling.required_capabilities = {"sampling"};
  server.tool(std::move(needs_sampling), [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
    droid::sampling_request request;
    request.messages.push_back(droid::sampling_message::user_text("Say hello"));
    request.max_tokens = 20;
    auto answer = co_await ctx.sample(std::move(request));
    if (!answer) co_return droid::tool_result::error("Sampling failed: " + answer.error().message);
    co_return droid::tool_result::text("LLM response: " + answer->text());
  });

  // Reports progress, then asks the user: in a 2025 session the question is a request on
  // this call's stream; a 2026 request's stream never carries one.
  server.tool("test_streaming_elicitation", "Streams progress, then asks the user a question",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                co_await ctx.progress(0, 1, "asking");
                co_await ctx.log(droid::log_level::info, "asking the user");
                auto answer = co_await ctx.elicit<free_text_answer>("What should the tool do?");
                if (!answer) co_return droid::tool_result::text("No answer: " + answer.error().message);
                co_return droid::tool_result::text("The user chose " + describe(answer->action));
              });

  // Logs only when the request asked for a level (2026: `_meta` logLevel; 2025:
  // `logging/setLevel`), whatever the tool itself does.
  server.tool("test_logging_tool", "Logs at every level, then answers",
              [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                co_await ctx.log(droid::log_level::debug, "debug detail");
                co_await ctx.log(droid::log_level::info, "working");
                co_await ctx.log(droid::log_level::warning, "almost done");
                co_return droid::tool_result::text("Logged three messages (sent only at the level the request asked for)");
              });

  server.tool("test_trigger_tool_change", "Adds or removes the tool test_dynamic_tool",
              [&server](droid::tool_context&) -> droid::task<droid::tool_result> {
                if (server.remove_tool("test_dynamic_tool")) co_return droid::tool_result::text("removed test_dynamic_tool");
                server.tool("test_dynamic_tool", "Exists only between two calls of test_trigger_tool_change",
                            [](droid::tool_context&) -> droid::task<droid::tool_result> {
                              co_return droid::tool_result::text("dynamic");
                            });
                co_return droid::tool_result::text("added test_dynamic_tool");
              });

  server.tool("test_trigger_prompt_change", "Adds or removes the prompt test_dynamic_prompt",
              [&server](droid::tool_context&) -> droid::task<droid::tool_result> {
                if (server.remove_prompt("test_dynamic_prompt"))
                  co_return droid::tool_result::text("removed test_dynamic_prompt");
                server.prompt(droid::prompt_info{.name = "test_dynamic_prompt",
                                                 .description = "Exists only between two calls of test_trigger_prompt_change"},
                              [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                                droid::prompt_result r;
                                r.messages.push_back(droid::prompt_message::user(droid::content::text("dynamic")));
                                co_return r;
                              });
                co_return droid::tool_result::text("added test_dynamic_prompt");
              });

  server.tool("test_header_params", "Runs a query in a region; region, priority and verbose travel as headers too",
              [](droid::tool_context&, routed_query args) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text("ran \"" + args.query + "\" in " + args.region +
                                                   (args.priority ? " at priority " + std::to_string(*args.priority) : ""));
              });
}

void register_conformance(droid::server& server) {
  register_content_tools(server);
  register_draft_tools(server);
  register_input_required_fixtures(server);
  register_task_fixtures(server);
  register_notifying_tools(server);
  register_exchange_tools(server);
  register_schema_tool(server);
  register_resources(server);
  register_prompts(server);
}
