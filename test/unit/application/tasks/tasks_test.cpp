// SPDX-License-Identifier: BSL-1.0
/// @file
/// Tasks, with no I/O: the store's bounds and expiry (on a manual clock), a call that
/// becomes a task in each era, questions a task asks, cancellation, failure, and the
/// end of a session or of the server; no frame outlives any of them.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/server/task_store.hpp>
#include <droid/application/when_all.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;

struct confirm_form {
  bool confirm = false;
};
BOOST_DESCRIBE_STRUCT(confirm_form, (), (confirm))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

constexpr std::string_view with_tasks =
    R"({"elicitation":{},"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";
constexpr std::string_view without_tasks = R"({"elicitation":{},"sampling":{}})";

std::string meta(std::string_view capabilities) {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":)" +
         std::string(capabilities) + R"(,"io.modelcontextprotocol/clientInfo":{"name":"tasks","version":"1"}})";
}

/// A 2026 request of `method` with `members` in its params.
std::string modern(int id, std::string_view method, std::string_view members,
                   std::string_view capabilities = with_tasks) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
         R"(","params":{)" + meta(capabilities) + (members.empty() ? "" : ",") + std::string(members) + "}}";
}

std::string call(int id, std::string_view tool, std::string_view capabilities = with_tasks) {
  return modern(id, "tools/call", R"("name":")" + std::string(tool) + R"(","arguments":{})", capabilities);
}

std::string on_task(int id, std::string_view method, std::string_view task, std::string_view more = "") {
  return modern(id, method, R"("taskId":")" + std::string(task) + '"' + std::string(more));
}

/// A 2025 request (for a session that was initialized).
std::string legacy(int id, std::string_view method, std::string_view params) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
         R"(","params":)" + std::string(params) + "}";
}

/// What the tools did, and a way to hold one until the test lets it go.
struct counters {
  int finished = 0;
};

void register_tools(droid::server& srv, counters& n) {
  droid::tool_info quick{.name = "quick", .description = "Answers at once", .tasks = droid::task_support::optional};
  srv.tool(quick, [&n](droid::tool_context&) -> droid::task<std::string> {
    ++n.finished;
    co_return "done";
  });
  droid::tool_info waits{.name = "waits", .description = "Works until cancelled", .tasks = droid::task_support::required};
  srv.tool(waits, [&n](droid::tool_context& ctx) -> droid::task<std::string> {
    const std::error_code ec = co_await ctx.sleep(1h);
    ++n.finished;
    co_return ec ? "stopped" : "slept";
  });
  droid::tool_info asks{.name = "asks", .description = "Asks for confirmation", .tasks = droid::task_support::optional};
  srv.tool(asks, [&n](droid::tool_context& ctx) -> droid::task<std::string> {
    auto answer = co_await ctx.elicit<confirm_form>("Sure?");
    ++n.finished;
    if (!answer) co_return "no answer: " + answer.error().message;
    co_return answer->content && answer->content->confirm ? "confirmed" : "declined";
  });
  droid::tool_info two{.name = "two", .description = "Asks two names at once", .tasks = droid::task_support::optional};
  srv.tool(two, [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto [a, b] = co_await droid::when_all(ctx.elicit<name_form>("First?", "first"), ctx.elicit<name_form>("Second?", "second"));
    co_return (a && a->content ? a->content->name : "?") + "+" + (b && b->content ? b->content->name : "?");
  });
  droid::tool_info throws{.name = "throws", .description = "Throws", .tasks = droid::task_support::optional};
  srv.tool(throws, [](droid::tool_context&) -> droid::task<std::string> {
    throw std::runtime_error("the tool broke");
    co_return "";
  });
  droid::tool_info crashes{.name = "crashes", .description = "Protocol error", .tasks = droid::task_support::optional};
  srv.tool(crashes, [](droid::tool_context&) -> droid::task<std::string> {
    throw droid::protocol_error(-32603, "the worker crashed", R"({"worker":7})");
    co_return "";
  });
  droid::tool_info later{.name = "later", .description = "Asks first, then becomes a task",
                         .tasks = droid::task_support::optional, .start = droid::task_start::when_asked};
  srv.tool(later, [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto answer = co_await ctx.elicit<name_form>("Name?", "user_name");
    const bool detached = co_await ctx.continue_as_task();
    co_return (detached ? "task for " : "plain for ") + (answer && answer->content ? answer->content->name : "?");
  });
  srv.tool("plain", "Never a task", [](droid::tool_context&) -> droid::task<std::string> { co_return "plain"; });
}

droid::server_options options(std::size_t max_tasks = 16) {
  droid::server_options o;
  o.log = [](std::string_view) {};
  o.multi_round.state_secrets = {std::string(32, 'k')};
  o.tasks.max_tasks = max_tasks;
  o.tasks.poll_interval = 250ms;
  return o;
}

struct fixture : droid::test::session_driver {
  counters n;
  droid::server srv;
  explicit fixture(droid::server_options o = options()) : srv(droid::server_info{"tasks-test", "1"}, std::move(o)) {
    register_tools(srv, n);
    s = droid::session::create(srv, io.get_executor(), out);
  }
  ~fixture() { stop(); }
  /// Feeds `text` and returns the answer carrying id `id` (notifications are dropped).
  boost::json::value send(const std::string& text) {
    feed(text);
    const auto id = boost::json::parse(text).at("id");
    while (!out->sent.empty()) {
      auto m = out->pop();
      if (m.as_object().contains("id") && m.at("id") == id) return m;
    }
    FAIL("no answer to " << text);
    return {};
  }
};

const boost::json::object& result_of(const boost::json::value& r) {
  INFO(boost::json::serialize(r));
  REQUIRE(r.as_object().contains("result"));
  return r.at("result").as_object();
}

int code_of(const boost::json::value& r) {
  INFO(boost::json::serialize(r));
  REQUIRE(r.as_object().contains("error"));
  return static_cast<int>(r.at("error").at("code").as_int64());
}

std::string task_of(const boost::json::value& r) {
  const auto& result = result_of(r);
  REQUIRE(result.at("resultType") == "task");
  return std::string(result.at("taskId").as_string());
}

std::string status_of(fixture& f, int id, const std::string& task) {
  return std::string(result_of(f.send(on_task(id, "tasks/get", task))).at("status").as_string());
}

}  // namespace

TEST_SUITE("application/tasks") {
  TEST_CASE("the memory store: bounded by count and by result bytes, expiring on its clock, owners apart") {
    auto now = std::chrono::system_clock::time_point(std::chrono::hours(1000));
    droid::memory_task_store store(2, 10, [&] { return now; });
    const auto task = [&](std::string id, std::string owner) {
      droid::task_record r;
      r.id = std::move(id);
      r.owner = std::move(owner);
      r.created_at = now;
      r.ttl = 60s;
      return r;
    };
    CHECK_FALSE(store.create(task("a", "alice")));
    CHECK_FALSE(store.create(task("b", "bob")));
    const auto full = store.create(task("c", "alice"));
    REQUIRE(full);
    CHECK(full->message.find("maximum of 2 tasks") != std::string::npos);
    CHECK(full->which == droid::task_refusal::limit::server);
    CHECK(store.get("a", "alice"));
    CHECK_FALSE(store.get("a", "bob"));  // another owner's is unknown

    // Questions: answered keys leave; unknown ones are ignored; none left is working.
    CHECK(store.ask("a", "k1", R"({"method":"elicitation/create","params":{}})"));
    CHECK(store.ask("a", "k2", R"({"method":"elicitation/create","params":{}})"));
    CHECK(store.get("a", "alice")->status == droid::task_status::input_required);
    CHECK(store.answered("a", {"k1", "nope"}) == std::vector<std::string>{"k1"});
    CHECK(store.get("a", "alice")->status == droid::task_status::input_required);
    CHECK(store.answered("a", {"k1", "k2"}) == std::vector<std::string>{"k2"});
    CHECK(store.get("a", "alice")->status == droid::task_status::working);

    // The first end wins; results count against the byte bound.
    CHECK(store.finish("a", droid::task_status::completed, R"({"content":[]})", "", ""));
    CHECK_FALSE(store.finish("a", droid::task_status::cancelled, "", "", ""));
    CHECK(store.get("a", "alice")->status == droid::task_status::completed);
    CHECK(store.result_bytes() == 14);

    // Expiry: at its time to live a task is gone, and its room with it.
    now += 61s;
    CHECK_FALSE(store.get("a", "alice"));
    CHECK_FALSE(store.create(task("d", "alice")));
    CHECK(store.size() == 1);
    CHECK(store.result_bytes() == 0);
    CHECK_FALSE(store.create(task("e", "alice")));
    const auto page = store.list("alice", "", 1);
    REQUIRE(page);
    REQUIRE(page->tasks.size() == 1);
    CHECK(page->tasks[0].id == "d");
    REQUIRE_FALSE(page->next.empty());
    const auto rest = store.list("alice", page->next, 1);
    REQUIRE(rest);
    REQUIRE(rest->tasks.size() == 1);
    CHECK(rest->tasks[0].id == "e");
    CHECK(rest->next.empty());
    CHECK_FALSE(store.list("alice", "x", 1));
  }

  TEST_CASE("2026: a task-supporting call becomes a task for a client with the extension, and only then") {
    {
      fixture f;
      const auto created = f.send(call(1, "quick"));
      const auto& r = result_of(created);
      CHECK(r.at("resultType") == "task");
      CHECK(r.at("status") == "working");
      CHECK(r.at("lastUpdatedAt") == r.at("createdAt"));
      CHECK(r.at("ttlMs").as_int64() == 3600000);
      CHECK(r.at("pollIntervalMs").as_int64() == 250);
      CHECK(r.at("_meta").as_object().contains("io.modelcontextprotocol/serverInfo"));
      CHECK_FALSE(r.contains("task"));
      CHECK_FALSE(r.contains("requestState"));
      const std::string id = task_of(created);
      CHECK(id.size() == 22);  // 128 bits, base64url
      droid::test::poll(f.io);
      const auto got = result_of(f.send(on_task(2, "tasks/get", id)));
      CHECK(got.at("resultType") == "complete");
      CHECK(got.at("status") == "completed");
      CHECK(got.at("result").at("content").at(0).at("text") == "done");
      CHECK_FALSE(got.at("result").at("_meta").as_object().contains("io.modelcontextprotocol/related-task"));

      // Without the extension: an optional tool answers in its request, a required one
      // is refused naming the extension, and the task methods are refused alike.
      CHECK(result_of(f.send(call(3, "quick", without_tasks))).at("resultType") == "complete");
      const auto refused = f.send(call(4, "waits", without_tasks));
      CHECK(code_of(refused) == -32021);
      CHECK(refused.at("error").at("data").at("requiredCapabilities").at("extensions").as_object().contains(
          "io.modelcontextprotocol/tasks"));
      CHECK(code_of(f.send(modern(5, "tasks/get", R"("taskId":")" + id + '"', without_tasks))) == -32021);
      // A tool that forbids tasks never becomes one; the old `task` hint changes nothing.
      CHECK(result_of(f.send(modern(6, "tools/call", R"("name":"plain","task":{"ttl":5})"))).at("resultType") ==
            "complete");
      // The 2025 methods are gone, and an unknown id is invalid params.
      CHECK(code_of(f.send(on_task(7, "tasks/result", id))) == -32601);
      CHECK(code_of(f.send(modern(8, "tasks/list", ""))) == -32601);
      CHECK(code_of(f.send(on_task(9, "tasks/get", "no-such-task"))) == -32602);
      CHECK(f.srv.running_tasks() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026: a task's question is in tasks/get until tasks/update answers it, key by key") {
    {
      fixture f;
      const std::string id = task_of(f.send(call(1, "two")));
      droid::test::poll(f.io);
      auto got = result_of(f.send(on_task(2, "tasks/get", id)));
      CHECK(got.at("status") == "input_required");
      REQUIRE(got.at("inputRequests").as_object().size() == 2);
      CHECK(got.at("inputRequests").at("first").at("method") == "elicitation/create");

      // A malformed structure and an answer that does not fit the form are refused,
      // and nothing is taken.
      CHECK(code_of(f.send(on_task(3, "tasks/update", id, R"(,"inputResponses":5)"))) == -32602);
      CHECK(code_of(f.send(on_task(4, "tasks/update", id,
                                   R"(,"inputResponses":{"first":{"action":"accept","content":{"name":7}}})"))) ==
            -32602);
      // One answer (and one for a key never asked, ignored): the other stays pending.
      const auto ack = result_of(f.send(on_task(
          5, "tasks/update", id,
          R"(,"inputResponses":{"first":{"action":"accept","content":{"name":"Ann"}},"bogus":{"x":1}})")));
      CHECK(ack.at("resultType") == "complete");
      CHECK_FALSE(ack.contains("taskId"));
      got = result_of(f.send(on_task(6, "tasks/get", id)));
      CHECK(got.at("status") == "input_required");
      CHECK(got.at("inputRequests").as_object().size() == 1);
      CHECK(got.at("inputRequests").as_object().contains("second"));
      droid::test::poll(f.io);
      (void)f.send(on_task(7, "tasks/update", id, R"(,"inputResponses":{"second":{"action":"accept","content":{"name":"Bo"}}})"));
      droid::test::poll(f.io);
      got = result_of(f.send(on_task(8, "tasks/get", id)));
      CHECK(got.at("status") == "completed");
      CHECK(got.at("result").at("content").at(0).at("text") == "Ann+Bo");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026: subscriptions/listen with taskIds pushes each change of the caller's tasks as tasks/get has it") {
    {
      fixture f;
      const std::string id = task_of(f.send(call(1, "two")));
      droid::test::poll(f.io);
      // Without the extension, asking for task notifications is refused naming it.
      const auto refused = f.send(modern(2, "subscriptions/listen", R"("notifications":{"taskIds":["x"]})", without_tasks));
      CHECK(code_of(refused) == -32021);
      CHECK(refused.at("error").at("data").at("requiredCapabilities").at("extensions").as_object().contains(
          "io.modelcontextprotocol/tasks"));
      CHECK(code_of(f.send(modern(3, "subscriptions/listen", R"("notifications":{"taskIds":"x"})"))) == -32602);

      // The task that exists is acknowledged (an unknown one is not), and its state now
      // comes at once: it is waiting for two answers.
      f.feed(modern(20, "subscriptions/listen", R"("notifications":{"taskIds":[")" + id + R"(","no-such-task"]})"));
      std::vector<boost::json::value> seen;
      const auto drain = [&] {
        droid::test::poll(f.io);
        while (!f.out->sent.empty()) seen.push_back(f.out->pop());
      };
      drain();
      REQUIRE(seen.size() == 2);
      CHECK(seen[0].at("method") == "notifications/subscriptions/acknowledged");
      CHECK(seen[0].at("params").at("notifications").at("taskIds") == boost::json::array{boost::json::string(id)});
      const auto& first = seen[1].at("params");
      CHECK(seen[1].at("method") == "notifications/tasks");
      CHECK(first.at("taskId").as_string() == id);
      CHECK(first.at("status") == "input_required");
      CHECK(first.at("inputRequests").as_object().size() == 2);
      CHECK(first.at("_meta").at("io.modelcontextprotocol/subscriptionId") == 20);
      seen.clear();

      // Each answer changes the task; the last one ends it with its result inlined.
      // (Fed, not sent: `send` drops the notifications that come before its answer.)
      f.feed(on_task(4, "tasks/update", id, R"(,"inputResponses":{"first":{"action":"accept","content":{"name":"Ann"}}})"));
      drain();
      f.feed(on_task(5, "tasks/update", id, R"(,"inputResponses":{"second":{"action":"accept","content":{"name":"Bo"}}})"));
      drain();
      std::vector<std::string> statuses;
      for (const auto& m : seen) {
        if (!m.as_object().contains("method") || m.at("method") != "notifications/tasks") continue;
        statuses.emplace_back(m.at("params").at("status").as_string());
      }
      REQUIRE_FALSE(statuses.empty());
      CHECK(statuses.front() == "input_required");  // one question left
      CHECK(statuses.back() == "completed");
      for (const auto& m : seen)
        if (m.as_object().contains("method") && m.at("params").at("status") == "completed")
          CHECK(m.at("params").at("result").at("content").at(0).at("text") == "Ann+Bo");
      // The same state is not sent twice.
      for (std::size_t i = 1; i < statuses.size(); ++i)
        CHECK((statuses[i] != statuses[i - 1] || statuses[i] == "input_required"));
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026: cancelling a running task stops its tool; cancelling a finished one is acknowledged too") {
    {
      fixture f;
      const std::string id = task_of(f.send(call(1, "waits")));
      droid::test::poll(f.io);
      CHECK(status_of(f, 2, id) == "working");
      CHECK(f.srv.running_tasks() == 1);
      CHECK(result_of(f.send(on_task(3, "tasks/cancel", id))).at("resultType") == "complete");
      droid::test::poll(f.io);
      CHECK(status_of(f, 4, id) == "cancelled");
      CHECK(f.n.finished == 1);  // it unwound
      CHECK(f.srv.running_tasks() == 0);
      CHECK(result_of(f.send(on_task(5, "tasks/cancel", id))).at("resultType") == "complete");
      CHECK(status_of(f, 6, id) == "cancelled");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2026: a tool that throws completes with isError; a protocol error fails the task with the error") {
    fixture f;
    const std::string thrown = task_of(f.send(call(1, "throws")));
    const std::string crashed = task_of(f.send(call(2, "crashes")));
    droid::test::poll(f.io);
    const auto t = result_of(f.send(on_task(3, "tasks/get", thrown)));
    CHECK(t.at("status") == "completed");
    CHECK(t.at("result").at("isError") == true);
    const auto c = result_of(f.send(on_task(4, "tasks/get", crashed)));
    CHECK(c.at("status") == "failed");
    CHECK(c.at("error").at("code") == -32603);
    CHECK(c.at("error").at("message") == "the worker crashed");
    CHECK(c.at("error").at("data").at("worker") == 7);
    CHECK_FALSE(c.contains("result"));
  }

  TEST_CASE("2026: a tool asks within its request first, then goes on as a task") {
    fixture f;
    const auto first = result_of(f.send(call(1, "later")));
    REQUIRE(first.at("resultType") == "input_required");
    const std::string state(first.at("requestState").as_string());
    const auto second = f.send(modern(2, "tools/call",
                                      R"("name":"later","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":")" +
                                          state + '"'));
    const std::string id = task_of(second);
    CHECK_FALSE(result_of(second).contains("requestState"));
    droid::test::poll(f.io);
    const auto got = result_of(f.send(on_task(3, "tasks/get", id)));
    CHECK(got.at("status") == "completed");
    CHECK(got.at("result").at("content").at(0).at("text") == "task for Alice");
    // Without the extension the same tool answers in its request.
    const auto plain = result_of(f.send(call(4, "later", without_tasks)));
    REQUIRE(plain.at("resultType") == "input_required");
  }

  TEST_CASE("the store's bound refuses a new task with a clear error, and keeps the finished ones") {
    fixture f(options(1));
    const std::string id = task_of(f.send(call(1, "quick")));
    droid::test::poll(f.io);
    const auto refused = f.send(call(2, "quick"));
    CHECK(code_of(refused) == -32603);
    CHECK(std::string(refused.at("error").at("message").as_string()).find("maximum of 1 tasks") != std::string::npos);
    CHECK(status_of(f, 3, id) == "completed");
  }

  TEST_CASE("a task that outlives its time to live is stopped and marked failed") {
    auto o = options();
    o.tasks.ttl = 30ms;
    {
      fixture f(std::move(o));
      const std::string id = task_of(f.send(call(1, "waits")));
      for (int i = 0; i < 200 && f.srv.running_tasks() > 0; ++i) f.io.run_one_for(10ms);
      CHECK(f.srv.running_tasks() == 0);
      CHECK(f.n.finished == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("the server ending (its runner closing) ends running 2026 tasks as failed, with no frame left") {
    auto store = std::make_shared<droid::memory_task_store>();
    auto o = options();
    o.tasks.store = store;
    std::string id;
    {
      fixture f(std::move(o));
      id = task_of(f.send(call(1, "waits")));
      droid::test::poll(f.io);
      f.stop();
      CHECK(f.srv.running_tasks() == 0);
    }
    CHECK(droid::live_frames() == 0);
    const auto record = store->get(id, "");
    REQUIRE(record);
    CHECK(record->status == droid::task_status::failed);
    CHECK(record->status_message == "the server stopped before the task finished");
  }

  TEST_CASE("2025-11-25: params.task makes a task; tasks/result waits for the end; tasks/list is the session's") {
    {
      fixture f;
      f.feed(legacy(0, "initialize",
                    R"({"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}})"));
      const auto init = f.out->pop();
      const auto& caps = result_of(init).at("capabilities");
      CHECK(caps.at("tasks").at("requests").at("tools").as_object().contains("call"));
      f.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
      // Listed with execution.taskSupport, for this revision only.
      const auto listed = result_of(f.send(legacy(1, "tools/list", "{}")));
      bool saw = false;
      for (const auto& t : listed.at("tools").as_array())
        if (t.at("name") == "waits") saw = t.at("execution").at("taskSupport") == "required";
      CHECK(saw);

      // The task rules of the revision: forbidden with task, required without, -32601.
      CHECK(code_of(f.send(legacy(2, "tools/call", R"({"name":"plain","task":{}})"))) == -32601);
      CHECK(code_of(f.send(legacy(3, "tools/call", R"({"name":"waits"})"))) == -32601);

      const auto created = result_of(f.send(legacy(4, "tools/call", R"({"name":"asks","task":{"ttl":60000}})")));
      const std::string id(created.at("task").at("taskId").as_string());
      CHECK(created.at("task").at("ttl") == 60000);
      CHECK(created.at("task").at("status") == "working");
      droid::test::poll(f.io);
      f.out->sent.clear();
      CHECK(std::string(result_of(f.send(legacy(5, "tasks/get", R"({"taskId":")" + id + R"("})"))).at("status").as_string()) ==
            "input_required");
      // tasks/result carries the question, with the task's id in _meta, and waits.
      f.feed(legacy(6, "tasks/result", R"({"taskId":")" + id + R"("})"));
      droid::test::poll(f.io);
      REQUIRE(f.out->sent.size() == 1);
      const auto question = f.out->pop();
      CHECK(question.at("method") == "elicitation/create");
      CHECK(question.at("params").at("_meta").at("io.modelcontextprotocol/related-task").at("taskId") == id.c_str());
      f.feed(R"({"jsonrpc":"2.0","id":)" + boost::json::serialize(question.at("id")) +
             R"(,"result":{"action":"accept","content":{"confirm":true}}})");
      droid::test::poll(f.io);
      boost::json::value result;
      while (!f.out->sent.empty()) {
        auto m = f.out->pop();
        if (m.as_object().contains("id") && m.at("id") == 6) result = m;
      }
      REQUIRE(result.is_object());
      CHECK(result_of(result).at("content").at(0).at("text") == "confirmed");
      CHECK(result_of(result).at("_meta").at("io.modelcontextprotocol/related-task").at("taskId") == id.c_str());

      // Listed for this session; cancelling an ended task is refused in this revision.
      const auto list = result_of(f.send(legacy(7, "tasks/list", "{}")));
      REQUIRE(list.at("tasks").as_array().size() == 1);
      CHECK(list.at("tasks").at(0).at("taskId") == id.c_str());
      CHECK(code_of(f.send(legacy(8, "tasks/cancel", R"({"taskId":")" + id + R"("})"))) == -32602);

      // A running task: cancel answers the cancelled task; the tool unwinds.
      const auto running = result_of(f.send(legacy(9, "tools/call", R"({"name":"waits","task":{}})")));
      const std::string rid(running.at("task").at("taskId").as_string());
      droid::test::poll(f.io);
      const auto cancelled = result_of(f.send(legacy(10, "tasks/cancel", R"({"taskId":")" + rid + R"("})")));
      CHECK(cancelled.at("status") == "cancelled");
      droid::test::poll(f.io);
      CHECK(f.srv.running_tasks() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2025-11-25: a session destroyed as it ends, its task's tool still to unwind: the frame reads nothing freed") {
    // What a DELETE, a reap or a stop does: the transport ends the session and drops it
    // at once, while the task's tool resumes later (its stop arrives through a post) and
    // its frame then reads the peer it was served for. Under AddressSanitizer this was a
    // use after free until the runner kept the session's peer alive.
    fixture f;
    f.feed(legacy(0, "initialize", R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}})"));
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    f.out->sent.clear();
    const auto created = result_of(f.send(legacy(1, "tools/call", R"({"name":"waits","task":{}})")));
    CHECK(created.at("task").at("status") == "working");
    droid::test::poll(f.io);
    CHECK(f.srv.running_tasks() == 1);
    f.s->close();
    f.s.reset();  // the session is gone before its task's frame has unwound
    droid::test::poll(f.io);
    CHECK(f.srv.running_tasks() == 0);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2025-11-25: a session that ends takes its tasks with it, running or not; another never sees them") {
    auto store = std::make_shared<droid::memory_task_store>();
    auto o = options();
    o.tasks.store = store;
    {
      fixture f(std::move(o));
      f.feed(legacy(0, "initialize", R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}})"));
      f.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
      f.out->sent.clear();
      const auto created = result_of(f.send(legacy(1, "tools/call", R"({"name":"waits","task":{}})")));
      const std::string id(created.at("task").at("taskId").as_string());
      droid::test::poll(f.io);
      CHECK(store->size() == 1);

      // Another session (as another connection would be) cannot see it.
      droid::test::session_driver other;
      other.start(f.srv, "{}");
      other.out->sent.clear();
      other.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
      other.feed(legacy(2, "tasks/get", R"({"taskId":")" + id + R"("})"));
      droid::test::poll(other.io);
      REQUIRE(!other.out->sent.empty());
      CHECK(code_of(other.out->pop()) == -32602);
      other.stop();

      f.s->close();
      droid::test::poll(f.io);
      CHECK(f.srv.running_tasks() == 0);
      CHECK(store->size() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("2025-11-25: a session that cannot carry questions refuses a task's question by name, and the task ends") {
    fixture f;
    f.feed(legacy(0, "initialize", R"({"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}})"));
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    f.out->sent.clear();
    f.out->refusal = "this session answers with single JSON documents";
    const auto created = result_of(f.send(legacy(1, "tools/call", R"({"name":"asks","task":{}})")));
    const std::string id(created.at("task").at("taskId").as_string());
    droid::test::poll(f.io);
    const auto done = result_of(f.send(legacy(2, "tasks/result", R"({"taskId":")" + id + R"("})")));
    CHECK(done.at("content").at(0).at("text") == "no answer: this session answers with single JSON documents");
  }

  TEST_CASE("a server with no task tools declares no tasks and ignores params.task, as 2025-11-25 requires") {
    droid::server srv(droid::server_info{"no-tasks", "1"}, options());
    srv.tool("plain", "Never a task", [](droid::tool_context&) -> droid::task<std::string> { co_return "plain"; });
    droid::test::session_driver d;
    d.start(srv, "{}");
    CHECK_FALSE(d.out->json(0).at("result").at("capabilities").as_object().contains("tasks"));
    d.out->sent.clear();
    d.feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    const auto r = d.request("tools/call", R"({"name":"plain","task":{"ttl":1000}})");
    CHECK(result_of(r).at("content").at(0).at("text") == "plain");
    CHECK(code_of(d.request("tasks/get", R"({"taskId":"x"})")) == -32601);
    d.stop();
  }

  TEST_CASE("the task table is shared out per tenant: one tenant's share full, another's tasks go on") {
    auto clock = std::make_shared<std::chrono::system_clock::time_point>(std::chrono::system_clock::now());
    droid::memory_task_store store(16, 1u << 20, [clock] { return *clock; }, 2);
    const auto task = [&](std::string id, std::string tenant) {
      droid::task_record r;
      r.id = std::move(id);
      r.tenant = std::move(tenant);
      r.ttl = std::chrono::minutes(1);
      r.created_at = *clock;
      return r;
    };
    CHECK_FALSE(store.create(task("a1", "pA")));
    CHECK_FALSE(store.create(task("a2", "pA")));
    const auto refused = store.create(task("a3", "pA"));
    REQUIRE(refused);
    CHECK(refused->message.find("max_tasks_per_tenant") != std::string::npos);
    CHECK(refused->which == droid::task_refusal::limit::tenant);
    CHECK_FALSE(store.create(task("b1", "pB")));
    CHECK_FALSE(store.create(task("n1", "")));  // no tenant known (stdio): no share
    // A removed task gives its place back; so does one that expired.
    store.remove("a1");
    CHECK_FALSE(store.create(task("a4", "pA")));
    CHECK(store.create(task("a5", "pA")));
    *clock += std::chrono::minutes(2);
    CHECK_FALSE(store.create(task("a6", "pA")));
  }
}

