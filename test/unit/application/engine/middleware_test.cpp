// SPDX-License-Identifier: BSL-1.0
/// @file
/// Middleware (server::use, server::use_on_notifications) through the in-process client,
/// in both eras: order, refusals, rewritten params and results, a chain that suspends, a
/// middleware that throws or passes twice, the exchange and multi-round requests through
/// the chain, a task's result, notifications; and the three that ship: the rate limiter,
/// the access log (with metrics) and error mapping.
#include <droid/application/middleware/access_log.hpp>
#include <droid/application/middleware/map_errors.hpp>
#include <droid/application/middleware/rate_limit.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include <boost/describe.hpp>
#include <boost/json/serialize.hpp>

#include <doctest/doctest.h>

#include <droid/adapters/primary/testing/client.hpp>
#include <droid/application/use_task.hpp>
#include <droid/droid.hpp>

namespace {

namespace mw = droid::middleware;
using droid::testing::era;

struct echo_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

constexpr era both[] = {era::v2025, era::v2026};

droid::server_options quiet(std::vector<std::string>* diagnostics = nullptr) {
  droid::server_options o;
  o.diagnostics = [diagnostics](const droid::diagnostic& d) {
    if (!diagnostics) return;
    std::string line(d.message);
    for (const auto& f : d.fields) line += " " + std::string(f.key) + "=" + std::string(f.value);
    diagnostics->push_back(std::move(line));
  };
  o.multi_round.state_secrets = {std::string(32, 's')};
  return o;
}

/// A server with `echo`, a tool that asks the user's name, and a counter of tool runs.
struct fixture {
  explicit fixture(era e, droid::testing::client_options o = {}) : protocol(e) {
    o.protocol = e;
    o.capabilities = {{"elicitation", boost::json::object{}}};
    srv.tool("echo", "Says the text back", [this](droid::tool_context&, echo_args a) -> droid::task<std::string> {
      ++runs;
      co_return a.text;
    });
    srv.tool("greet", "Asks a name", [this](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      ++runs;
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return droid::tool_result::error("no name");
      co_return droid::tool_result::text("Hello, " + answer->content->name);
    });
    client = std::make_unique<droid::testing::client>(srv, io.get_executor(), std::move(o));
    client->on("elicitation/create", [](boost::json::object) -> droid::task<boost::json::object> {
      co_return boost::json::object{{"action", "accept"}, {"content", {{"name", "Ada"}}}};
    });
  }
  ~fixture() {
    client->close();
    io.restart();
    io.poll();
  }
  template <class T>
  T run(droid::task<T> t) {
    return droid::testing::run(io, std::move(t));
  }
  boost::json::object call(std::string tool, boost::json::object args = {}) {
    return run(client->call_tool(std::move(tool), std::move(args)));
  }
  /// The error a call is answered with (fails the test when it succeeds).
  droid::testing::rpc_error refused(std::string tool, boost::json::object args = {}) {
    try {
      (void)call(std::move(tool), std::move(args));
    } catch (const droid::testing::rpc_error& e) {
      return e;
    }
    FAIL("the call was answered");
    return droid::testing::rpc_error(0, "", nullptr);
  }

  era protocol;
  std::vector<std::string> diagnostics;
  asio::io_context io;
  droid::server srv{droid::server_info{.name = "mw", .version = "1"}, quiet(&diagnostics)};
  int runs = 0;
  std::unique_ptr<droid::testing::client> client;
};

std::string text_at(const boost::json::object& result, std::size_t i) {
  return std::string(result.at("content").at(i).at("text").as_string());
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::shared_ptr<const droid::request_origin> as(std::string subject, std::string address = "192.0.2.1") {
  auto who = std::make_shared<droid::principal>();
  who->issuer = "https://issuer.example";
  who->subject = std::move(subject);
  auto o = std::make_shared<droid::request_origin>();
  o->principal = std::move(who);
  o->remote_address = std::move(address);
  return o;
}

}  // namespace

TEST_SUITE("application/middleware") {
  TEST_CASE("middleware runs in order, the first added outermost, and may rewrite params and results") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e);
      std::vector<std::string> trace;
      f.srv.use([&trace](mw::request& req, mw::next next) -> droid::task<mw::response> {
        trace.push_back("A>" + std::string(req.method()));
        mw::response r = co_await next(req);
        trace.push_back("<A");
        co_return r;
      });
      f.srv.use([&trace](mw::request& req, mw::next next) -> droid::task<mw::response> {
        trace.push_back("B>");
        if (req.method() == "tools/call" && req.name() == "echo") {
          CHECK(req.modern() == (req.peer().revision == droid::protocol_revision::v2026_07_28));
          boost::json::object params = req.params();
          params["arguments"].as_object()["text"] = std::string(params["arguments"].at("text").as_string()) + "!";
          req.set_params(std::move(params));
        }
        mw::response r = co_await next(req);
        trace.push_back("<B");
        if (req.method() == "tools/call" && !r.is_error()) {
          boost::json::object result = r.result();
          CHECK_FALSE(result.contains("resultType"));  // the era's members are not the middleware's
          result["content"].as_array().push_back({{"type", "text"}, {"text", "via B"}});
          r.set_result(std::move(result));
        }
        co_return r;
      });
      (void)f.run(f.client->connect());
      trace.clear();
      const auto result = f.call("echo", {{"text", "hi"}});
      CHECK(text_at(result, 0) == "hi!");
      CHECK(text_at(result, 1) == "via B");
      CHECK(trace == std::vector<std::string>{"A>tools/call", "B>", "<B", "<A"});
      if (e == era::v2026) {
        // Framed again for the era, once: one resultType, one _meta with the identity.
        const std::string wire = boost::json::serialize(result);
        CHECK(count_of(wire, "\"resultType\"") == 1);
        CHECK(count_of(wire, "\"_meta\"") == 1);
        CHECK(result.at("_meta").as_object().contains("io.modelcontextprotocol/serverInfo"));
      }
      trace.clear();
      CHECK(f.run(f.client->list_tools()).size() == 2);
      CHECK(trace == std::vector<std::string>{"A>tools/list", "B>", "<B", "<A"});
    }
  }

  TEST_CASE("a refusal answers the request and the method never runs") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e, {.origin = as("mallory")});
      f.srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
        if (req.method() == "tools/call" && req.principal().find("alice") == std::string_view::npos)
          co_return mw::response::error(-32001, "only alice may call tools", boost::json::object{{"who", req.tenant()}});
        co_return co_await next(req);
      });
      (void)f.run(f.client->connect());
      const auto e1 = f.refused("echo", {{"text", "x"}});
      CHECK(e1.code() == -32001);
      CHECK(std::string(e1.what()) == "only alice may call tools");
      CHECK(e1.data().at("who") == "https://issuer.example\nmallory");
      CHECK(f.runs == 0);
      CHECK(f.run(f.client->list_tools()).size() == 2);  // other methods pass
    }
  }

  TEST_CASE("a chain that suspends before the method still serves the request's params") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e);
      f.srv.use([&f](mw::request& req, mw::next next) -> droid::task<mw::response> {
        asio::steady_timer later(f.io, std::chrono::milliseconds(1));
        (void)co_await later.async_wait(droid::use_task);
        co_return co_await next(req);
      });
      (void)f.run(f.client->connect());
      for (int i = 0; i < 3; ++i) CHECK(text_at(f.call("echo", {{"text", "t" + std::to_string(i)}}), 0) == "t" + std::to_string(i));
    }
  }

  TEST_CASE("a middleware that throws fails its request with -32603, logged; the next request is served") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e);
      f.srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
        if (req.method() == "tools/call" && req.params().at("arguments").at("text") == "boom")
          throw std::runtime_error("the middleware broke");
        co_return co_await next(req);
      });
      (void)f.run(f.client->connect());
      const auto failed = f.refused("echo", {{"text", "boom"}});
      CHECK(failed.code() == -32603);
      CHECK(std::string(failed.what()) == "Internal error");
      CHECK(f.runs == 0);
      bool logged = false;
      for (const auto& d : f.diagnostics) logged = logged || d.find("the middleware broke") != std::string::npos;
      CHECK(logged);
      CHECK(text_at(f.call("echo", {{"text", "fine"}}), 0) == "fine");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("guards refuse or let on, alone (served as without middleware) or in order within a chain") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      for (const bool mixed : {false, true}) {
        CAPTURE(mixed);
        fixture f(e);
        std::vector<std::string> trace;
        if (mixed)
          f.srv.use([&trace](mw::request& req, mw::next next) -> droid::task<mw::response> {
            trace.push_back("around>");
            mw::response r = co_await next(req);
            trace.push_back("<around");
            co_return r;
          });
        f.srv.use([&trace](mw::request& req) -> std::optional<mw::response> {
          trace.push_back("guard " + std::string(req.name()));
          if (req.name() == "greet") return mw::response::error(-32002, "no greetings today");
          if (req.method() == "tools/call" && req.params().at("arguments").at("text") == "throw")
            throw std::runtime_error("the guard broke");
          return std::nullopt;
        });
        (void)f.run(f.client->connect());
        trace.clear();
        CHECK(text_at(f.call("echo", {{"text", "hi"}}), 0) == "hi");
        CHECK(trace == (mixed ? std::vector<std::string>{"around>", "guard echo", "<around"}
                              : std::vector<std::string>{"guard echo"}));
        const auto refused = f.refused("greet");
        CHECK(refused.code() == -32002);
        const auto broke = f.refused("echo", {{"text", "throw"}});
        CHECK(broke.code() == -32603);
        CHECK(f.runs == 1);
      }
    }
  }

  TEST_CASE("passing a request on twice runs the method once") {
    fixture f(era::v2025);
    f.srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
      mw::response first = co_await next(req);
      mw::response second = co_await next(req);
      CHECK(second.is_error());
      CHECK(second.error_code() == -32603);
      co_return first;
    });
    (void)f.run(f.client->connect());
    CHECK(text_at(f.call("echo", {{"text", "once"}}), 0) == "once");
    CHECK(f.runs == 1);
  }

  TEST_CASE("a tool that asks the client passes the chain once: a 2025 request and a 2026 round trip alike") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e);
      int seen = 0;
      f.srv.use([&seen](mw::request& req, mw::next next) -> droid::task<mw::response> {
        if (req.method() == "tools/call") ++seen;
        mw::response r = co_await next(req);
        if (req.method() == "tools/call" && !r.is_error()) {
          boost::json::object result = r.result();
          result["content"].as_array().push_back({{"type", "text"}, {"text", "checked"}});
          r.set_result(std::move(result));
        }
        co_return r;
      });
      (void)f.run(f.client->connect());
      const auto result = f.call("greet");
      CHECK(text_at(result, 0) == "Hello, Ada");
      CHECK(text_at(result, 1) == "checked");
      CHECK(f.client->questions_answered() == 1);
      // The 2026 retry resumes the frame the chain is waiting on; it is not a new request
      // to the chain.
      CHECK(seen == 1);
      CHECK(f.runs == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a call that becomes a task: its result passes back through the chain into the task's record") {
    asio::io_context io;
    droid::server srv({.name = "mw", .version = "1"}, quiet());
    droid::tool_info slow{.name = "slow", .description = "Runs as a task"};
    slow.tasks = droid::task_support::optional;
    srv.tool(slow, [](droid::tool_context&) -> droid::task<std::string> { co_return "done"; });
    srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
      mw::response r = co_await next(req);
      if (req.method() == "tools/call" && !r.is_error()) {
        boost::json::object result = r.result();
        result["content"].as_array().push_back({{"type", "text"}, {"text", "stamped"}});
        r.set_result(std::move(result));
      }
      co_return r;
    });
    droid::testing::client c(srv, io.get_executor(), {.capabilities = {{"tasks", boost::json::object{}}}});
    (void)droid::testing::run(io, c.connect());
    const auto created =
        droid::testing::run(io, c.request("tools/call", {{"name", "slow"}, {"task", boost::json::object{}}}));
    const std::string id(created.at("task").at("taskId").as_string());
    const auto result = droid::testing::run(io, c.request("tasks/result", {{"taskId", id}}));
    CHECK(text_at(result, 0) == "done");
    CHECK(text_at(result, 1) == "stamped");
    c.close();
  }

  TEST_CASE("notification middleware sees every notification and may drop one") {
    fixture f(era::v2025);
    std::vector<std::string> seen;
    int delivered = 0;
    f.srv.on_notification("com.example/poke", [&delivered](const droid::peer_info&) { ++delivered; });
    f.srv.use_on_notifications([&seen](const mw::notification& n, const std::function<void()>& pass) {
      seen.emplace_back(n.method);
      if (n.params_text.find("\"drop\":true") == std::string_view::npos) pass();
    });
    (void)f.run(f.client->connect());
    f.client->notify("com.example/poke", {{"drop", false}});
    f.client->notify("com.example/poke", {{"drop", true}});
    f.io.restart();
    f.io.poll();
    CHECK(delivered == 1);
    CHECK(seen == std::vector<std::string>{"notifications/initialized", "com.example/poke", "com.example/poke"});
  }

  TEST_CASE("the rate limiter: a bucket per tenant, -32600 with retryAfterMs past it, refilled with time") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      auto now = std::chrono::steady_clock::time_point(std::chrono::hours(1));
      mw::rate_limit_options o;
      o.per_second = 1;
      o.burst = 2;
      o.clock = [&now] { return now; };
      // Only calls count (connecting does not, in either era).
      o.key = [](const mw::request& req) -> std::optional<std::string> {
        if (req.method() != "tools/call") return std::nullopt;
        return std::string(req.tenant());
      };
      fixture alice(e, {.origin = as("alice")});
      // One server, two clients: the limiter is the server's.
      droid::testing::client bob(alice.srv, alice.io.get_executor(), {.protocol = e, .origin = as("bob")});
      alice.srv.use(mw::rate_limit(o));
      (void)alice.run(alice.client->connect());
      (void)alice.run(bob.connect());
      CHECK(text_at(alice.call("echo", {{"text", "1"}}), 0) == "1");
      CHECK(text_at(alice.call("echo", {{"text", "2"}}), 0) == "2");
      const auto over = alice.refused("echo", {{"text", "x"}});
      CHECK(over.code() == -32600);
      CHECK(std::string(over.what()).find("Too many requests") != std::string::npos);
      CHECK(over.data().at("retryAfterMs") == 1000);
      // Bob's bucket is his own.
      CHECK(text_at(alice.run(bob.call_tool("echo", {{"text", "b"}})), 0) == "b");
      now += std::chrono::seconds(1);
      CHECK(text_at(alice.call("echo", {{"text", "3"}}), 0) == "3");
      bob.close();
    }
  }

  TEST_CASE("the rate limiter keeps at most max_tenants buckets, forgetting the tenant seen longest ago") {
    auto now = std::chrono::steady_clock::time_point(std::chrono::hours(1));
    mw::rate_limit_options o;
    o.per_second = 1;
    o.burst = 1;
    o.max_tenants = 16 * 2;  // two a shard
    mw::rate_limiter limiter(o);
    for (int i = 0; i < 1000; ++i) CHECK(limiter.take("t" + std::to_string(i), now).count() == 0);
    CHECK(limiter.tenants() <= 32);
    CHECK(limiter.take("t999", now).count() > 0);  // still remembered: empty
    CHECK(limiter.take("t0", now).count() == 0);  // forgotten: full again
    CHECK_THROWS_AS(mw::rate_limiter(mw::rate_limit_options{.per_second = 0}), std::invalid_argument);
  }

  TEST_CASE("the access log writes a line per request and feeds droid::metrics") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e, {.origin = as("alice")});
      auto m = std::make_shared<droid::metrics>();
      std::vector<std::string> lines;
      f.srv.use(mw::access_log({.write = [&lines](std::string_view l) { lines.emplace_back(l); }, .metrics = m}));
      (void)f.run(f.client->connect());
      lines.clear();
      (void)f.call("echo", {{"text", "x"}});
      REQUIRE(lines.size() == 1);
      CHECK(lines[0].starts_with("method=tools/call name=echo tenant=\"https://issuer.example\\nalice\" era=" +
                                 std::string(e == era::v2025 ? "2025-11-25" : "2026-07-28") + " outcome=ok code=0 us="));
      const std::string text = m->render();
      CHECK(text.find("droid_middleware_duration_seconds_count{stage=\"access_log\"} " +
                      std::string(e == era::v2025 ? "1" : "2")) != std::string::npos);
    }
  }

  TEST_CASE("an access-log line cannot be forged by a client's name") {
    mw::access_entry e;
    e.method = "tools/call";
    e.name = "x\nmethod=forged \"q\"";
    e.outcome = "ok";
    const std::string line = mw::to_line(e);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.find(R"(name="x\nmethod=forged \"q\"")") != std::string::npos);
  }

  TEST_CASE("map_errors: every error and exception after it through one mapper") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      fixture f(e);
      f.srv.method("com.example/leak", [](droid::tool_context&) -> droid::task<boost::json::object> {
        throw std::runtime_error("/etc/secret.conf is unreadable");
        co_return boost::json::object{};
      });
      f.srv.use(mw::map_errors(mw::hide_internal_details));
      f.srv.use(mw::map_errors([](const mw::request&, mw::error_info& err) {
        if (err.code == -32602) err.message = "Check the arguments: " + err.message;
      }));
      f.srv.use([](mw::request& req, mw::next next) -> droid::task<mw::response> {
        if (req.name() == "throws") throw droid::protocol_error(-32010, "refused by policy", R"({"policy":7})");
        co_return co_await next(req);
      });
      (void)f.run(f.client->connect());
      try {
        (void)f.run(f.client->request("com.example/leak"));
        FAIL("answered");
      } catch (const droid::testing::rpc_error& x) {
        CHECK(x.code() == -32603);
        CHECK(std::string(x.what()) == "Internal error");
        CHECK(x.data().is_null());
      }
      const auto unknown = f.refused("nope");
      CHECK(std::string(unknown.what()) == "Check the arguments: Unknown tool: nope");
      const auto policy = f.refused("throws");
      CHECK(policy.code() == -32010);
      CHECK(policy.data().at("policy") == 7);
    }
  }
}
