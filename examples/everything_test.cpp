// SPDX-License-Identifier: BSL-1.0
/// @file
/// The example server's tools, tested in-process with `droid::testing::client`
/// (docs/testing.md) in both protocol eras: plain and structured results, a tool's
/// failure, progress, the exchange (sampling and a form), cancellation, and tasks (a
/// result, a cancellation, and a task that asks the user). The same tools the binary
/// serves (everything_tools.cpp and the conformance fixtures), without a port or a
/// subprocess; the peer suites drive the binary itself with the official clients.
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include <asio/io_context.hpp>

#include <doctest/doctest.h>

#include <droid/adapters/primary/testing/client.hpp>
#include <droid/droid.hpp>

#include "conformance_tools.hpp"
#include "everything_tools.hpp"
#include "weather_app.hpp"

namespace {

using droid::testing::era;
constexpr era both[] = {era::v2025, era::v2026};

/// The example server as its `main` builds it, and a client of it that answers the
/// server's questions (sampling with a fixed model, forms with `form`).
struct example {
  explicit example(era e, boost::json::object form = {{"name", "Ada"}, {"guests", 4}}) {
    droid::server_options o;
    o.log = [](std::string_view) {};
    o.multi_round.state_secrets = {std::string(32, 'e')};
    server.emplace(droid::server_info{.name = "everything-server", .version = "test"}, std::move(o));
    register_tools(*server);
    register_conformance(*server);
    register_weather_app(*server, true);
    client.emplace(*server, io.get_executor(),
                   droid::testing::client_options{
                       .protocol = e,
                       .capabilities = {{"sampling", boost::json::object{}}, {"elicitation", boost::json::object{}}}});
    client->on("sampling/createMessage", [](boost::json::object) -> droid::task<boost::json::object> {
      co_return boost::json::object{{"role", "assistant"},
                                    {"content", {{"type", "text"}, {"text", "It is short."}}},
                                    {"model", "test-model"}};
    });
    client->on("elicitation/create", [form](boost::json::object) -> droid::task<boost::json::object> {
      co_return boost::json::object{{"action", "accept"}, {"content", form}};
    });
    (void)run(client->connect());
  }
  ~example() {
    client->close();
    io.restart();
    io.poll();
  }
  template <class T>
  T run(droid::task<T> t) {
    return droid::testing::run(io, std::move(t));
  }
  std::string text(const std::string& tool, boost::json::object args = {}) {
    const auto r = run(client->call_tool(tool, std::move(args)));
    return std::string(r.at("content").at(0).at("text").as_string());
  }

  asio::io_context io;
  std::optional<droid::server> server;
  std::optional<droid::testing::client> client;
};

}  // namespace

TEST_SUITE("examples/everything") {
  TEST_CASE("plain and structured results, and a tool's failure as isError") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e);
      CHECK(x.text("echo", {{"text", "hi"}}) == "hi");
      const auto sum = x.run(x.client->call_tool("add", {{"a", 2}, {"b", 3.5}}));
      CHECK(sum.at("structuredContent").at("result") == 5.5);
      const auto failed = x.run(x.client->call_tool("fail", {{"message", "no luck"}}));
      CHECK(failed.at("isError") == true);
      CHECK(failed.at("content").at(0).at("text") == "no luck");
      const auto bad = x.run(x.client->call_tool("forecast", {{"city", "Oslo"}, {"days", 40}}));
      CHECK(bad.at("isError") == true);
    }
  }

  TEST_CASE("count reports progress under the call's token") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e);
      const auto r = x.run(x.client->call_tool("count", {{"steps", 3}, {"interval_ms", 1}}, {.progress_token = "c1"}));
      CHECK(r.at("content").at(0).at("text") == "counted to 3");
      const auto steps = x.client->progress("c1");
      REQUIRE(steps.size() == 3);
      CHECK(steps.back().at("progress") == 3);
      CHECK(steps.back().at("total") == 3);
    }
  }

  TEST_CASE("summarize and book_table ask the client: a 2025 request and a 2026 round trip alike") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e);
      CHECK(x.text("summarize", {{"text", "A long text."}}) == "summary from test-model: It is short.");
      CHECK(x.text("book_table") == "booked a table indoors for 4, name Ada");
      CHECK(x.client->questions_answered() == 2);
    }
  }

  TEST_CASE("sleep is cancelled by its client and unwinds") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e);
      std::exception_ptr ended;
      bool done = false;
      droid::spawn(x.io.get_executor(), x.client->call_tool("sleep", {{"seconds", 30}}),
                   [&](std::exception_ptr failure, boost::json::object) {
                     ended = failure;
                     done = true;
                   });
      x.io.restart();
      for (int i = 0; i < 100 && x.client->pending().empty(); ++i) x.io.run_one_for(std::chrono::milliseconds(10));
      REQUIRE(x.client->pending().size() == 1);
      x.client->cancel(x.client->pending().front());
      for (int i = 0; i < 100 && !done; ++i) x.io.run_one_for(std::chrono::milliseconds(10));
      REQUIRE(done);
      CHECK_THROWS_AS(std::rethrow_exception(ended), droid::testing::request_cancelled);
      x.io.restart();
      x.io.poll();
      CHECK(x.server->running_tasks() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("slow_compute as a task: its result, and a cancelled one") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e);
      const auto started = x.run(x.client->start_task("slow_compute", {{"seconds", 0}, {"label", "quick"}}));
      const std::string id(started.at("taskId").as_string());
      const auto result = x.run(x.client->task_result(id));
      CHECK(result.at("content").at(0).at("text").as_string().starts_with("computed quick"));
      CHECK(x.run(x.client->get_task(id)).at("status") == "completed");

      const auto long_one = x.run(x.client->start_task("slow_compute", {{"seconds", 60}}));
      const std::string long_id(long_one.at("taskId").as_string());
      (void)x.run(x.client->cancel_task(long_id));
      CHECK(x.run(x.client->get_task(long_id)).at("status") == "cancelled");
    }
  }

  TEST_CASE("confirm_delete as a task asks the user: through tasks/result (2025) or tasks/update (2026)") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      example x(e, {{"confirm", true}});
      const auto started = x.run(x.client->start_task("confirm_delete", {{"filename", "notes.txt"}}));
      const auto result = x.run(x.client->task_result(std::string(started.at("taskId").as_string())));
      CHECK(result.at("content").at(0).at("text") == "Deleted notes.txt");
      CHECK(x.client->questions_answered() == 1);
    }
  }
}
