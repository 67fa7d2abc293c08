// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one list of what is served (docs/README.md, "Methods served") held against the
/// engine: every row, in both eras, on a server that registers everything and on one
/// that registers only a plain tool. Why a test reads the page: prose about what is
/// served went stale page after page as features landed; a table that the build checks
/// cannot.
#include <droid/application/server/server.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/extensions/skills.hpp>

#include "application/engine/dispatcher.hpp"
#include "support.hpp"

namespace {

struct row {
  bool in_2025 = false;
  bool in_2026 = false;
  std::string only_when;  ///< empty: always
};

/// The table under `section` of docs/README.md ("Methods served", or "Extension methods"),
/// by method. The source tree is found through DROID_SOURCE_ROOT, which the suite's meson
/// test definition sets.
std::map<std::string, row> documented(const std::string& section = "### Methods served") {
  const char* root = std::getenv("DROID_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "DROID_SOURCE_ROOT is not set (run the suite with meson test)");
  std::ifstream in(std::string(root) + "/docs/README.md");
  REQUIRE_MESSAGE(in.good(), "cannot read docs/README.md under DROID_SOURCE_ROOT");
  std::map<std::string, row> out;
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0 || line.rfind("## ", 0) == 0) in_section = line == section;
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) {
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      cells.push_back(cell);
    }
    REQUIRE_MESSAGE(cells.size() >= 3, "a row of the table has too few cells: " << line);
    const auto yes_no = [&](const std::string& cell) {
      if (cell != "yes" && cell != "no") FAIL("a cell is neither yes nor no: " << line);
      return cell == "yes";
    };
    const std::string method = cells[0].substr(1, cells[0].size() - 2);  // without the backticks
    out[method] = row{yes_no(cells[1]), yes_no(cells[2]), cells.size() > 3 ? cells[3] : std::string()};
  }
  return out;
}

/// A server with one plain tool, and when `everything`, a task tool, a resource, a
/// template, a prompt and a completer too.
void furnish(droid::server& srv, bool everything) {
  srv.tool("plain", "Answers", [](droid::tool_context&) -> droid::task<std::string> { co_return "ok"; });
  if (!everything) return;
  srv.tool(droid::tool_info{.name = "long", .description = "May run as a task", .tasks = droid::task_support::optional},
           [](droid::tool_context&) -> droid::task<std::string> { co_return "done"; });
  srv.resource(droid::resource_info{.uri = "test://r", .name = "r"},
               [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                 co_return droid::resource_contents::text_of("test://r", "r");
               });
  srv.resource_template(droid::resource_template_info{.uri_template = "test://t/{id}", .name = "t"},
                        [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                          co_return droid::resource_contents::text_of(r.uri, "t");
                        });
  srv.prompt(droid::prompt_info{.name = "p", .description = "A prompt"},
             [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
               co_return droid::prompt_result{};
             });
  srv.complete_prompt_argument("p", "x", [](droid::tool_context&, droid::completion_request)
                                             -> droid::task<std::vector<std::string>> { co_return {}; });
}

/// Whether an initialized 2025-11-25 session serves `method`: anything but -32601 (an
/// error about the params, or a second `initialize` refused, still means it is served).
bool served_in_session(droid::server& srv, const std::string& method) {
  droid::test::session_driver d;
  d.start(srv);
  (void)d.out->pop();  // the initialize answer
  d.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  const boost::json::value answer = d.request(method, "{}");
  d.stop();
  const auto* error = answer.as_object().if_contains("error");
  if (!error) return true;
  // A method only 2026-07-28 has is taken, on the same pipe, as a 2026 request, which
  // this one (no `_meta`) is not: served in that era, not as a method of the session.
  const std::string message(error->at("message").as_string());
  if (message.find("_meta is required in MCP 2026-07-28") != std::string::npos) return false;
  return error->at("code") != -32601;
}

/// Every request a client may send a server in either era (the schemas of 2025-11-25 and
/// 2026-07-28): each must have its row, so none can go unlisted.
const std::vector<std::string> client_requests = {
    "initialize",         "ping",          "tools/list",   "tools/call",  "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "prompts/list",       "prompts/get",   "completion/complete", "logging/setLevel", "tasks/get",
    "tasks/cancel",       "tasks/result",  "tasks/list",   "tasks/update", "server/discover",
    "subscriptions/listen"};

}  // namespace

TEST_SUITE("application/served_methods") {
  TEST_CASE("docs/README.md's table of methods served is what the engine serves, in both eras") {
    const std::map<std::string, row> table = documented();
    for (const std::string& m : client_requests) {
      CAPTURE(m);
      CHECK(table.contains(m));
    }
    CHECK(table.size() == client_requests.size());  // and nothing the protocols do not have

    droid::server full{droid::server_info{.name = "full", .version = "1"},
                       droid::server_options{.log = [](std::string_view) {}}};
    furnish(full, true);
    droid::server bare{droid::server_info{.name = "bare", .version = "1"},
                       droid::server_options{.log = [](std::string_view) {}}};
    furnish(bare, false);
    for (const auto& entry : table) {
      // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
      const std::string& method = entry.first;
      const row& claim = entry.second;
      CAPTURE(method);
      // With everything registered, each era serves what its column says.
      CHECK(served_in_session(full, method) == claim.in_2025);
      CHECK(droid::detail::dispatcher::serves(full, method, droid::protocol_revision::v2026_07_28) == claim.in_2026);
      // With only a plain tool, a method served "only when" something is registered is not.
      const bool conditional = !claim.only_when.empty();
      CHECK(served_in_session(bare, method) == (claim.in_2025 && !conditional));
      CHECK(droid::detail::dispatcher::serves(bare, method, droid::protocol_revision::v2026_07_28) ==
            (claim.in_2026 && !conditional));
    }
    // "a resource or a template": a template alone is enough.
    droid::server templated{droid::server_info{.name = "templated", .version = "1"},
                            droid::server_options{.log = [](std::string_view) {}}};
    templated.resource_template(droid::resource_template_info{.uri_template = "test://t/{id}", .name = "t"},
                                [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                                  co_return droid::resource_contents::text_of(r.uri, "t");
                                });
    CHECK(served_in_session(templated, "resources/read"));
  }

  TEST_CASE("docs/README.md's table of extension methods is what serving the extension adds, in both eras") {
    const std::map<std::string, row> table = documented("### Extension methods");
    CHECK(table.size() == 3);
    droid::server skilled{droid::server_info{.name = "skilled", .version = "1"},
                          droid::server_options{.log = [](std::string_view) {}}};
    droid::skills::serve(skilled, {droid::skills::skill{.path = "s", .skill_md = "---\nname: s\ndescription: d\n---\n"}});
    droid::server bare{droid::server_info{.name = "bare", .version = "1"},
                       droid::server_options{.log = [](std::string_view) {}}};
    furnish(bare, true);
    for (const auto& entry : table) {
      const std::string& method = entry.first;
      const row& claim = entry.second;
      CAPTURE(method);
      CHECK_FALSE(claim.only_when.empty());
      CHECK(served_in_session(skilled, method) == claim.in_2025);
      CHECK(droid::detail::dispatcher::serves(skilled, method, droid::protocol_revision::v2026_07_28) == claim.in_2026);
      CHECK_FALSE(served_in_session(bare, method));
      CHECK_FALSE(droid::detail::dispatcher::serves(bare, method, droid::protocol_revision::v2026_07_28));
    }
  }
}
