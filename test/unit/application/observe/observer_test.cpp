// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request observer and the Prometheus metrics built on it, with no I/O: which
/// events a tool call, an error, a cancellation and a 2026-07-28 round report, the
/// exposition text for a known sequence, recording from two threads at once (run under
/// ThreadSanitizer by scripts/test), and the trace context a question to the client
/// carries.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/diagnostic.hpp>
#include <droid/application/server/metrics.hpp>
#include <droid/application/server/observer.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

/// What one event said, copied (the views die with the call).
struct seen {
  bool ended = false;
  std::string method, name, principal, version;
  bool modern = false;
  std::size_t bytes_in = 0, bytes_out = 0;
  droid::request_outcome outcome = droid::request_outcome::ok;
  std::int64_t code = 0;
  std::chrono::nanoseconds duration{0};
};

/// Records every event, under a lock (the observer contract: any thread).
struct recorder final : droid::request_observer {
  void request_started(const droid::request_event& e) override { add(e, false); }
  void request_ended(const droid::request_event& e) override { add(e, true); }
  void add(const droid::request_event& e, bool ended) {
    std::lock_guard lock(mutex);
    events.push_back(seen{ended, std::string(e.method), std::string(e.name), std::string(e.principal),
                          std::string(e.protocol_version), e.modern, e.bytes_in, e.bytes_out, e.outcome,
                          e.error_code, e.duration});
  }
  std::mutex mutex;
  std::vector<seen> events;
};

droid::server_options observed(std::shared_ptr<droid::request_observer> o) {
  droid::server_options so;
  so.log = [](std::string_view) {};
  so.observer = std::move(o);
  so.multi_round.state_secrets = {std::string(32, 'k')};
  return so;
}

void register_tools(droid::server& srv) {
  srv.tool("greet", "Says hi", [](droid::tool_context&) -> droid::task<std::string> { co_return "hi"; });
  srv.tool("fails", "Fails as a tool", [](droid::tool_context&) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::error("no luck");
  });
  srv.tool("slow", "Waits until cancelled", [](droid::tool_context& ctx) -> droid::task<std::string> {
    (void)co_await ctx.sleep(std::chrono::hours(1));
    co_return "late";
  });
  srv.tool("ask_name", "Asks the user's name", [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto answer = co_await ctx.elicit<name_form>("What is your name?", "user_name");
    co_return answer && answer->content ? answer->content->name : std::string("nobody");
  });
  srv.tool("roots", "Asks the client's roots", [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto roots = co_await ctx.list_roots();
    co_return roots ? std::to_string(roots->size()) : roots.error().message;
  });
  srv.tool("own_trace", "Asks with a trace context of its own", [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto answer = co_await ctx.exchange("roots/list", std::string(R"({"_meta":{"traceparent":"mine"}})"));
    co_return answer ? "answered" : "not answered";
  });
}

/// A server with an observer (or none) and a 2025 session on it.
struct fixture : droid::test::session_driver {
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  droid::server srv;
  explicit fixture(bool with_observer = true)
      : srv(droid::server_info{"observer-test", "1"}, observed(with_observer ? rec : nullptr)) {
    register_tools(srv);
  }
  ~fixture() { stop(); }
  /// Starts the session and forgets `initialize`'s events.
  void begin(const std::string& capabilities = "{}") {
    start(srv, capabilities);
    out->sent.clear();
    std::lock_guard lock(rec->mutex);
    rec->events.clear();
  }
  /// Every event so far.
  std::vector<seen> events() {
    std::lock_guard lock(rec->mutex);
    return rec->events;
  }
};

constexpr std::string_view modern_meta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}})";

}  // namespace

TEST_SUITE("observer") {
  TEST_CASE("a tool call starts and ends once, with its name, era, bytes and outcome") {
    fixture f;
    f.begin();
    const std::string text = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})";
    f.feed(text);
    REQUIRE(f.out->sent.size() == 1);
    const std::size_t answer = f.out->sent.front().size();
    const auto ev = f.events();
    REQUIRE(ev.size() == 2);
    CHECK_FALSE(ev[0].ended);
    CHECK(ev[0].method == "tools/call");
    CHECK(ev[0].name == "greet");
    CHECK(ev[0].version == "2025-11-25");
    CHECK_FALSE(ev[0].modern);
    CHECK(ev[0].bytes_in == text.size());
    CHECK(ev[1].ended);
    CHECK(ev[1].name == "greet");
    CHECK(ev[1].outcome == droid::request_outcome::ok);
    CHECK(ev[1].bytes_in == text.size());
    CHECK(ev[1].bytes_out == answer);
    CHECK(ev[1].duration.count() >= 0);
  }

  TEST_CASE("what the 2025 session answers itself (initialize, logging/setLevel) is observed too") {
    fixture f;
    f.start(f.srv);
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"nope"}})");
    const auto ev = f.events();
    REQUIRE(ev.size() == 4);
    CHECK(ev[1].method == "initialize");
    CHECK(ev[1].outcome == droid::request_outcome::ok);
    CHECK(ev[1].bytes_out == f.out->sent.front().size());
    CHECK(ev[3].method == "logging/setLevel");
    CHECK(ev[3].code == -32602);
  }

  TEST_CASE("a JSON-RPC error carries its code; a tool's isError is a tool_error") {
    fixture f;
    f.begin();
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"no/such/method"})");
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fails","arguments":{}}})");
    const auto ev = f.events();
    REQUIRE(ev.size() == 4);
    CHECK(ev[1].method == "no/such/method");
    CHECK(ev[1].outcome == droid::request_outcome::error);
    CHECK(ev[1].code == -32601);
    CHECK(ev[3].name == "fails");
    CHECK(ev[3].outcome == droid::request_outcome::tool_error);
    CHECK(ev[3].code == 0);
  }

  TEST_CASE("a duplicate id is refused and observed as an error in one moment") {
    fixture f;
    f.begin();
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    f.feed(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
    const auto ev = f.events();
    REQUIRE(ev.size() == 3);  // slow started; the duplicate started and ended at once
    CHECK_FALSE(ev[1].ended);
    CHECK(ev[2].ended);
    CHECK(ev[2].method == "ping");
    CHECK(ev[2].code == -32600);
  }

  TEST_CASE("a cancelled call ends as cancelled, having sent nothing") {
    fixture f;
    f.begin();
    f.feed(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{}}})");
    CHECK(f.events().size() == 1);
    f.feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})");
    const auto ev = f.events();
    REQUIRE(ev.size() == 2);
    CHECK(ev[1].outcome == droid::request_outcome::cancelled);
    CHECK(ev[1].bytes_out == 0);
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("a 2026-07-28 round ends as input_required; its retry is a request of its own") {
    fixture f;
    f.s = droid::session::create(f.srv, f.io.get_executor(), f.out);
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{)" + std::string(modern_meta) +
           R"(,"name":"ask_name","arguments":{}}})");
    REQUIRE(f.out->sent.size() == 1);
    const auto round = f.out->pop();
    const std::string state(round.at("result").at("requestState").as_string());
    auto ev = f.events();
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].modern);
    CHECK(ev[0].version == "2026-07-28");
    CHECK(ev[1].outcome == droid::request_outcome::input_required);
    CHECK(ev[1].name == "ask_name");

    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{)" + std::string(modern_meta) +
           R"(,"name":"ask_name","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":")" +
           state + R"("}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "Ada");
    ev = f.events();
    REQUIRE(ev.size() == 4);
    CHECK_FALSE(ev[2].ended);
    CHECK(ev[3].outcome == droid::request_outcome::ok);
    CHECK(ev[3].name == "ask_name");
  }

  TEST_CASE("without an observer the same requests are served and nothing is reported") {
    fixture f(false);
    CHECK(f.srv.options().observer == nullptr);
    f.begin();
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})");
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"no/such/method"})");
    CHECK(f.out->sent.size() == 2);
    CHECK(f.events().empty());
  }

  TEST_CASE("an observer that throws is logged and the request is still answered") {
    struct thrower final : droid::request_observer {
      void request_ended(const droid::request_event&) override { throw std::runtime_error("observer broke"); }
    };
    std::vector<std::string> logged;
    droid::server_options so = observed(std::make_shared<thrower>());
    so.log = [&logged](std::string_view l) { logged.emplace_back(l); };
    droid::server srv(droid::server_info{"observer-test", "1"}, so);
    register_tools(srv);
    droid::test::session_driver d;
    d.start(srv);
    d.out->sent.clear();
    d.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})");
    CHECK(d.out->sent.size() == 1);
    REQUIRE_FALSE(logged.empty());
    CHECK(logged.back().find("observer broke") != std::string::npos);
    d.stop();
  }
}

TEST_SUITE("diagnostics") {
  TEST_CASE("a diagnostics sink gets the level and the fields; a string sink one line") {
    struct thrower final : droid::request_observer {
      void request_ended(const droid::request_event&) override { throw std::runtime_error("it \"broke\""); }
    };
    struct record {
      droid::diagnostic_level level;
      std::string message, method, error;
    };
    std::vector<record> records;
    droid::server_options so = observed(std::make_shared<thrower>());
    so.diagnostics = [&records](const droid::diagnostic& d) {
      records.push_back(record{d.level, std::string(d.message), std::string(d.field("method")),
                               std::string(d.field("error"))});
    };
    droid::server srv(droid::server_info{"diagnostics-test", "1"}, so);
    register_tools(srv);
    droid::test::session_driver d;
    d.start(srv);
    d.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})");
    d.stop();
    REQUIRE(records.size() == 2);  // initialize's end, the call's end
    CHECK(records[1].level == droid::diagnostic_level::error);
    CHECK(records[1].message == "request observer failed");
    CHECK(records[1].method == "tools/call");
    CHECK(records[1].error == "it \"broke\"");

    const droid::diagnostic_field fields[] = {{"method", "tools/call"}, {"error", "it \"broke\""}, {"empty", ""}};
    CHECK(droid::to_line(droid::diagnostic{droid::diagnostic_level::warning, "handler failed", fields}) ==
          R"(warning: handler failed method=tools/call error="it \"broke\"" empty="")");
  }

  TEST_CASE("a string-only log gets an unfielded diagnostic as its bare message, the rest as lines") {
    std::vector<std::string> lines;
    droid::server_options so;
    so.log = [&lines](std::string_view l) { lines.emplace_back(l); };
    droid::server srv(droid::server_info{"diagnostics-test", "1"}, so);
    srv.log("plain words");
    srv.diagnose(droid::diagnostic_level::info, "reloaded", {{"transport", "http"}});
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "plain words");
    CHECK(lines[1] == "info: reloaded transport=http");
  }
}

TEST_SUITE("trace context") {
  constexpr std::string_view traced =
      R"("_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01","tracestate":"k=v","baggage":"a=b"})";

  TEST_CASE("a 2025 question to the client carries the request's trace context") {
    fixture f;
    f.begin(R"({"roots":{}})");
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots","arguments":{},)" +
           std::string(traced) + "}}");
    REQUIRE(f.out->sent.size() == 1);
    const auto question = f.out->pop();
    CHECK(question.at("method") == "roots/list");
    const auto& meta = question.at("params").at("_meta");
    CHECK(meta.at("traceparent") == "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
    CHECK(meta.at("tracestate") == "k=v");
    CHECK(meta.at("baggage") == "a=b");
  }

  TEST_CASE("a tool's own trace context in the question's _meta wins; missing keys are added") {
    fixture f;
    f.begin(R"({"roots":{}})");
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"own_trace","arguments":{},)" +
           std::string(traced) + "}}");
    REQUIRE(f.out->sent.size() == 1);
    const auto question = f.out->pop();
    const auto& meta = question.at("params").at("_meta");
    CHECK(meta.at("traceparent") == "mine");
    CHECK(meta.at("tracestate") == "k=v");
  }

  TEST_CASE("a request without trace context asks without _meta") {
    fixture f;
    f.begin(R"({"roots":{}})");
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots","arguments":{}}})");
    REQUIRE(f.out->sent.size() == 1);
    const auto question = f.out->pop();
    CHECK_FALSE(question.at("params").as_object().contains("_meta"));
  }

  TEST_CASE("a 2026-07-28 input request carries the trace context, and the retry still resumes") {
    fixture f;
    f.s = droid::session::create(f.srv, f.io.get_executor(), f.out);
    const std::string meta = std::string(modern_meta).substr(0, modern_meta.size() - 1) +
                             R"(,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"})";
    f.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{)" + meta + R"(,"name":"ask_name","arguments":{}}})");
    REQUIRE(f.out->sent.size() == 1);
    const auto round = f.out->pop();
    INFO(boost::json::serialize(round));
    const auto& ask = round.at("result").at("inputRequests").at("user_name");
    CHECK(ask.at("params").at("_meta").at("traceparent") == "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
    // A retry from another span of the same trace answers the same question.
    const std::string retry_meta = std::string(modern_meta).substr(0, modern_meta.size() - 1) +
                                   R"(,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})";
    f.feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{)" + retry_meta +
           R"(,"name":"ask_name","arguments":{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},"requestState":")" +
           std::string(round.at("result").at("requestState").as_string()) + R"("}})");
    REQUIRE(f.out->sent.size() == 1);
    CHECK(f.out->pop().at("result").at("content").at(0).at("text") == "Ada");
  }
}

namespace {

/// An ended event of `method` with `outcome` that took `us` microseconds.
droid::request_event ended(std::string_view method, droid::request_outcome outcome, std::int64_t us,
                           std::size_t in = 0, std::size_t out = 0) {
  droid::request_event e;
  e.method = method;
  e.outcome = outcome;
  e.duration = std::chrono::microseconds(us);
  e.bytes_in = in;
  e.bytes_out = out;
  return e;
}

bool has_line(const std::string& text, std::string_view line) {
  const std::string whole = "\n" + text;
  std::string needle = "\n";
  needle.append(line).append("\n");
  return whole.find(needle) != std::string::npos;
}

}  // namespace

TEST_SUITE("metrics") {
  TEST_CASE("a known sequence renders these lines exactly") {
    droid::metrics m;
    m.request_started(droid::request_event{});
    m.request_ended(ended("tools/call", droid::request_outcome::ok, 50, 100, 200));
    m.request_ended(ended("tools/call", droid::request_outcome::ok, 3'000, 10, 20));
    m.request_ended(ended("tools/call", droid::request_outcome::tool_error, 20'000'000));
    m.request_ended(ended("made/up", droid::request_outcome::error, 400));
    m.request_started(droid::request_event{});
    m.request_started(droid::request_event{});
    const droid::metrics::gauge gauges[] = {{"droid_http_sessions", "Live sessions.", 3}};
    const std::string text = m.render(gauges);
    INFO(text);
    CHECK(text.starts_with("# HELP droid_mcp_requests_total MCP requests served, by method and outcome.\n"
                           "# TYPE droid_mcp_requests_total counter\n"));
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="ok"} 2)"));
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="tool_error"} 1)"));
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="other",outcome="error"} 1)"));
    CHECK_FALSE(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="error"} 0)"));
    CHECK(has_line(text, "# TYPE droid_mcp_request_duration_seconds histogram"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="tools/call",le="0.0001"} 1)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="tools/call",le="0.0025"} 1)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="tools/call",le="0.005"} 2)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="tools/call",le="10"} 2)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="tools/call",le="+Inf"} 3)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_sum{method="tools/call"} 20.00305)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_count{method="tools/call"} 3)"));
    CHECK(has_line(text, R"(droid_mcp_request_bytes_total{method="tools/call"} 110)"));
    CHECK(has_line(text, R"(droid_mcp_response_bytes_total{method="tools/call"} 220)"));
    CHECK(has_line(text, "droid_mcp_requests_in_flight -1"));
    CHECK(has_line(text, "# TYPE droid_http_sessions gauge"));
    CHECK(has_line(text, "droid_http_sessions 3"));
    CHECK(text.ends_with("droid_http_sessions 3\n"));
  }

  TEST_CASE("a bound is inclusive: a request of exactly 1 ms is in le=\"0.001\"") {
    droid::metrics m;
    m.request_ended(ended("ping", droid::request_outcome::ok, 1'000));
    const std::string text = m.render();
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="ping",le="0.0005"} 0)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_bucket{method="ping",le="0.001"} 1)"));
  }

  TEST_CASE("label values and help text are escaped; bad gauge names are refused") {
    std::string out;
    droid::metrics::append_label_value(out, "a\\b\"c\nd");
    CHECK(out == R"(a\\b\"c\nd)");
    droid::metrics m;
    const droid::metrics::gauge help[] = {{"g", "line\none \\ \"q\"", 1}};
    CHECK(has_line(m.render(help), R"(# HELP g line\none \\ "q")"));
    const droid::metrics::gauge bad[] = {{"9lives", "", 1}};
    CHECK_THROWS_AS((void)m.render(bad), std::invalid_argument);
    const droid::metrics::gauge dash[] = {{"a-b", "", 1}};
    CHECK_THROWS_AS((void)m.render(dash), std::invalid_argument);
  }

  TEST_CASE("two threads record at once and every request is counted") {
    droid::metrics m;
    constexpr int per_thread = 20'000;
    std::atomic<bool> go{false};
    const auto work = [&](droid::request_outcome o) {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_thread; ++i) {
        m.request_started(droid::request_event{});
        m.request_ended(ended("tools/call", o, i % 5'000, 1, 2));
        if (i % 4'096 == 0) (void)m.render();
      }
    };
    std::thread a(work, droid::request_outcome::ok);
    std::thread b(work, droid::request_outcome::error);
    go = true;
    a.join();
    b.join();
    const std::string text = m.render();
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="ok"} 20000)"));
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="error"} 20000)"));
    CHECK(has_line(text, R"(droid_mcp_request_duration_seconds_count{method="tools/call"} 40000)"));
    CHECK(has_line(text, R"(droid_mcp_request_bytes_total{method="tools/call"} 40000)"));
    CHECK(has_line(text, "droid_mcp_requests_in_flight 0"));
  }

  TEST_CASE("as the server's observer, metrics count what the engine served") {
    auto m = std::make_shared<droid::metrics>();
    droid::server srv(droid::server_info{"metrics-test", "1"}, observed(m));
    register_tools(srv);
    droid::test::session_driver d;
    d.start(srv);
    d.feed(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}})");
    d.feed(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
    const std::string text = m->render();
    INFO(text);
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="tools/call",outcome="ok"} 1)"));
    CHECK(has_line(text, R"(droid_mcp_requests_total{method="ping",outcome="ok"} 1)"));
    CHECK(has_line(text, "droid_mcp_requests_in_flight 0"));
    d.stop();
  }
}
