// SPDX-License-Identifier: BSL-1.0
/// @file
/// Two instances of a server sharing their 2025 sessions through a real redis-server
/// (docs/scale-out.md): a session opened on one is served by the other, an exchange's
/// answer finds its frame whichever instance it reaches, a session outlives the instance
/// that opened it, and a Redis that is down gets 503 with Retry-After, never a hang.
#include <droid/adapters/primary/transport/http/http.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>

#include "http_client.hpp"
#include "redis_server.hpp"

using droid::test::mcp_post;
using droid::test::raw_connection;

namespace {

/// How long a read may wait for what the server must send: a guard against a hang, never
/// a wait (ThreadSanitizer and a loaded machine make forwarded answers slow, and 5 s, the
/// client's default, was seen to be too short under them).
constexpr int guard_ms = 30'000;

struct text_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(text_args, (), (text))

struct wait_args {
  int ms = 0;
};
BOOST_DESCRIBE_STRUCT(wait_args, (), (ms))

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

/// One instance: its own server and listener, as another process would have.
struct instance {
  droid::server srv{droid::server_info{.name = "cluster-test", .version = "1"}};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  instance(const std::string& redis_url, const std::string& name,
           std::chrono::milliseconds idle = std::chrono::minutes(5)) {
    srv.tool("echo", "Echoes", [](droid::tool_context& ctx, text_args a) -> droid::task<droid::tool_result> {
      co_await ctx.progress(1, 1, "echoing");
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("whoami", "Says what the session knows of its client",
             [](droid::tool_context& ctx) -> droid::task<std::string> {
               const droid::peer_info& p = ctx.peer();
               std::string level = p.min_log_level ? std::string(droid::to_string(*p.min_log_level)) : "none";
               co_return boost::json::serialize(p.client_info.at("name")) + " " + p.protocol_version + " " +
                   (p.has_capability("sampling") ? "sampling" : "-") + " " + level;
             });
    srv.tool("wait", "Waits, then answers", [](droid::tool_context& ctx, wait_args a) -> droid::task<std::string> {
      co_await ctx.sleep(std::chrono::milliseconds(a.ms));
      co_return "waited";
    });
    srv.tool("ask", "Asks the client's model", [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":1})");
      if (!answer) co_return droid::tool_result::error(answer.error().message);
      co_return droid::tool_result::text("model said " + droid::ir::to_json_text(answer.value().at("content")));
    });
    // A task (2026-07-28 extension): asks a name, then greets, or with "wait" runs on.
    droid::tool_info confirm{.name = "confirm", .description = "Asks, then works", .tasks = droid::task_support::optional};
    srv.tool(confirm, [](droid::tool_context& ctx) -> droid::task<std::string> {
      auto answer = co_await ctx.elicit<name_form>("Your name?", "user_name");
      if (!answer || !answer->content) co_return "no name";
      if (answer->content->name == "wait") (void)co_await ctx.sleep(std::chrono::seconds(30));
      co_return "Hello " + answer->content->name;
    });
    droid::http::options o;
    o.threads = 2;
    o.session_idle_timeout = idle;
    o.cluster.redis_url = redis_url;
    o.cluster.instance_id = name;
    o.cluster.heartbeat = std::chrono::milliseconds(100);
    o.cluster.instance_ttl = std::chrono::milliseconds(400);
    o.cluster.redis_timeout = std::chrono::milliseconds(300);
    listener = std::make_unique<droid::http::listener>(srv, o);
    runner = std::thread([this] { listener->run(); });
  }
  ~instance() { stop(); }
  void stop() {
    if (!listener) return;
    listener->stop();
    runner.join();
    listener.reset();
  }
  [[nodiscard]] std::uint16_t port() const { return listener->port(); }
};

std::string initialize(raw_connection& c, const std::string& capabilities = "{}") {
  c.send(mcp_post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":)" +
                  capabilities + R"(,"clientInfo":{"name":"cluster-client","version":"1"}}})"));
  auto r = c.read_response();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const std::string* sid = r->header("mcp-session-id");
  REQUIRE(sid);
  return *sid;
}

std::string session_header(const std::string& sid) { return "Mcp-Session-Id: " + sid + "\r\n"; }

std::string call(int id, const std::string& tool, const std::string& arguments = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":)" + arguments + R"(,"_meta":{"progressToken":1}}})";
}

/// The JSON-RPC messages of an SSE body, parsed (priming events skipped).
std::vector<boost::json::value> sse_messages(const std::string& body) {
  std::vector<boost::json::value> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    if (end > at + 6) out.push_back(boost::json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

/// A 2026-07-28 request about task `task` (or creating one), as the client sends it.
constexpr std::string_view task_caps = R"({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}})";
std::string modern_request(int id, std::string_view method, std::string_view members) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) + R"(","params":{)" +
         std::string(members) + R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)" +
         R"("io.modelcontextprotocol/clientCapabilities":)" + std::string(task_caps) + "}}}";
}
std::string modern_headers(std::string_view method, std::string_view name) {
  return "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " + std::string(method) + "\r\nMcp-Name: " +
         std::string(name) + "\r\n";
}
/// Sends a 2026 request to `port` and returns its one JSON-RPC answer.
boost::json::value modern(std::uint16_t port, int id, std::string_view method, std::string_view name,
                          std::string_view members) {
  raw_connection c(port, guard_ms);
  c.send(mcp_post(modern_request(id, method, members), modern_headers(method, name)));
  auto r = c.read_response();
  REQUIRE(r);
  const std::string* type = r->header("content-type");
  REQUIRE(type);
  if (*type == "application/json") return boost::json::parse(r->body);
  const auto messages = sse_messages(r->body);
  REQUIRE_FALSE(messages.empty());
  return messages.back();
}

/// The text of the tool result in `messages`' last message.
std::string result_text(const std::vector<boost::json::value>& messages) {
  REQUIRE_FALSE(messages.empty());
  const auto& last = messages.back().as_object();
  REQUIRE(last.contains("result"));
  return std::string(last.at("result").at("content").at(0).at("text").as_string());
}

}  // namespace

TEST_SUITE("adapters/redis") {
  TEST_CASE("a session opened on one instance is served by another: the call is forwarded, its events come back") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms), cb(b.port(), guard_ms);
    const std::string sid = initialize(ca);
    cb.send(mcp_post(call(1, "echo", R"({"text":"via b"})"), session_header(sid)));
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    const auto messages = sse_messages(r->body);
    REQUIRE(messages.size() == 2);  // the progress notification, then the result
    CHECK(messages[0].at("method").as_string() == "notifications/progress");
    CHECK(result_text(messages) == "via b");
    // The event ids are the owner's: a client that resumes anywhere names its stream.
    CHECK(r->body.find("id: ") != std::string::npos);
    CHECK(a.listener->sessions() == 1);
    CHECK(b.listener->sessions() == 0);  // forwarded, never copied

    // A notification and the session's own state, through the other instance.
    cb.send(mcp_post(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}})",
                     session_header(sid)));
    r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    cb.send(mcp_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session_header(sid)));
    r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 202);
    ca.send(mcp_post(call(3, "whoami"), session_header(sid)));
    r = ca.read_response();
    REQUIRE(r);
    CHECK(result_text(sse_messages(r->body)) == "\"cluster-client\" 2025-11-25 - warning");

    // DELETE through the other instance ends it everywhere.
    cb.send("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + session_header(sid) + "\r\n");
    r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    raw_connection again(b.port(), guard_ms);
    again.send(mcp_post(call(4, "echo", R"({"text":"x"})"), session_header(sid)));
    r = again.read_response();
    REQUIRE(r);
    CHECK(r->status == 404);
  }

  TEST_CASE("an exchange's answer that reaches the other instance resumes the frame on the owner") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca, R"({"sampling":{}})");
    // The call reaches b (forwarded to a, which runs the tool); its question comes back
    // on b's stream; the answer is POSTed to b again and forwarded to a's frame.
    raw_connection stream(b.port(), guard_ms);
    stream.send(mcp_post(call(7, "ask"), session_header(sid)));
    std::string head = stream.read_until("sampling/createMessage");
    head += stream.read_until("\n");  // the rest of the question's data line
    const auto line = head.rfind("data: ", head.find("sampling/createMessage"));
    REQUIRE(line != std::string::npos);
    const boost::json::value question = boost::json::parse(head.substr(line + 6, head.find('\n', line) - line - 6));
    const std::string question_id = boost::json::serialize(question.at("id"));
    raw_connection answer(b.port(), guard_ms);
    answer.send(mcp_post(R"({"jsonrpc":"2.0","id":)" + question_id +
                             R"(,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}})",
                         session_header(sid)));
    auto r = answer.read_response();
    REQUIRE(r);
    CHECK(r->status == 202);
    const std::string rest = stream.read_until("model said");
    CHECK(rest.find("model said") != std::string::npos);
  }

  TEST_CASE("a session outlives its instance: the next request elsewhere takes it over with its state") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    auto a = std::make_unique<instance>(redis.url(), "a");
    instance b(redis.url(), "b");
    std::string sid;
    {
      raw_connection ca(a->port(), guard_ms);
      sid = initialize(ca, R"({"sampling":{}})");
      ca.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}})",
                       session_header(sid)));
      REQUIRE(ca.read_response());
    }
    a->stop();  // its goodbye lets b take over at once
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(call(2, "whoami"), session_header(sid)));
    auto r = cb.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(result_text(sse_messages(r->body)) == "\"cluster-client\" 2025-11-25 sampling error");
    CHECK(b.listener->sessions() == 1);
    // And it is b's now: served there without Redis on the path.
    cb.send(mcp_post(call(3, "echo", R"({"text":"still here"})"), session_header(sid)));
    r = cb.read_response();
    REQUIRE(r);
    CHECK(result_text(sse_messages(r->body)) == "still here");
  }

  TEST_CASE("a stream lost at one instance is resumed at another") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca);
    std::string event;
    {
      raw_connection first(a.port(), guard_ms);
      first.send(mcp_post(call(5, "wait", R"({"ms":300})"), session_header(sid)));
      const std::string head = first.read_until("\n\n");  // the priming event
      const auto id_at = head.find("id: ");
      REQUIRE(id_at != std::string::npos);
      event = head.substr(id_at + 4, head.find('\n', id_at) - id_at - 4);
    }  // the connection drops before the answer
    raw_connection resumed(b.port(), guard_ms);
    resumed.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + session_header(sid) +
                 "Last-Event-ID: " + event + "\r\n\r\n");
    const std::string body = resumed.read_until("waited");
    CHECK(body.find("200 OK") != std::string::npos);
    CHECK(body.find("waited") != std::string::npos);
  }

  TEST_CASE("Redis down: a session of another instance gets 503 with Retry-After at once; local ones carry on") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca);
    redis.stop();
    raw_connection cb(b.port(), guard_ms);
    cb.send(mcp_post(call(1, "echo", R"({"text":"x"})"), session_header(sid)));
    auto r = cb.read_response();
    REQUIRE(r);
    CHECK(r->status == 503);
    REQUIRE(r->header("retry-after"));
    CHECK(r->body.find("Redis") != std::string::npos);
    // The owner serves its session from memory.
    ca.send(mcp_post(call(2, "echo", R"({"text":"local"})"), session_header(sid)));
    r = ca.read_response();
    REQUIRE(r);
    CHECK(result_text(sse_messages(r->body)) == "local");
    // Redis back (empty: a crash lost its data), service resumes: the owner writes its
    // records again when its inbox is back (or at a session's next change of state),
    // then the other instance finds the session.
    redis.start();
    // Meanwhile b answers 503 (its client still reconnecting) or 404 (Redis back, the
    // record not yet written again). Nothing announces the end of that window, so this
    // polls, with a guard.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int id = 10; std::chrono::steady_clock::now() < deadline; id += 1) {
      raw_connection retry(b.port(), guard_ms);
      retry.send(mcp_post(call(id, "echo", R"({"text":"back"})"), session_header(sid)));
      r = retry.read_response();
      REQUIRE(r);
      if (r->status == 200) break;
      REQUIRE((r->status == 503 || r->status == 404));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(r->status == 200);
    CHECK(result_text(sse_messages(r->body)) == "back");
  }

  TEST_CASE("a change raised on one instance reaches the clients of another (resources/updated, list_changed)") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    instance a(redis.url(), "a"), b(redis.url(), "b");
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca);
    ca.send(mcp_post(R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched"}})",
                     session_header(sid)));
    auto r = ca.read_response();
    REQUIRE(r);
    REQUIRE(r->status == 200);
    // The standalone stream opened through b: relayed from a, and open (200) before any
    // event is there to carry.
    raw_connection standalone(b.port(), guard_ms);
    standalone.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + session_header(sid) + "\r\n");
    CHECK(standalone.read_until("\r\n\r\n").find("200 OK") != std::string::npos);
    // Raised on b, which holds no session at all.
    b.srv.resource_updated("test://other");    // not subscribed: nothing
    b.srv.resource_updated("test://watched");
    std::string got = standalone.read_until("test://watched");
    CHECK(got.find("notifications/resources/updated") != std::string::npos);
    CHECK(got.find("test://other") == std::string::npos);
    b.srv.tool("late", "Registered on b at run time", [](droid::tool_context&) -> droid::task<std::string> { co_return "late"; });
    got = standalone.read_until("list_changed");
    CHECK(got.find("notifications/tools/list_changed") != std::string::npos);
  }

  TEST_CASE("a 2026 task is polled and answered through any instance, and outlives its instance as a record") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    auto a = std::make_unique<instance>(redis.url(), "a");
    instance b(redis.url(), "b");
    const auto status_at = [&](std::uint16_t port, const std::string& task) {
      const auto r = modern(port, 9, "tasks/get", task, R"("taskId":")" + task + '"');
      REQUIRE_MESSAGE(r.as_object().contains("result"), boost::json::serialize(r));
      return std::string(r.at("result").at("status").as_string());
    };
    // Polls b until the task, which runs on a, reaches `want` (a's tool moves it on its
    // own shard, and nothing announces that across instances; 10 s guard).
    const auto until = [&](const std::string& task, std::string_view want) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      std::string seen;
      while ((seen = status_at(b.port(), task)) != want && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return seen;
    };
    auto created = modern(a->port(), 1, "tools/call", "confirm", R"("name":"confirm","arguments":{})");
    REQUIRE(created.at("result").at("resultType") == "task");
    const std::string task(created.at("result").at("taskId").as_string());
    CHECK(until(task, "input_required") == "input_required");
    // The answer reaches b; the frame waiting for it is on a.
    const auto ack = modern(b.port(), 2, "tasks/update", task,
                            R"("taskId":")" + task + R"(","inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}})");
    CHECK(ack.at("result").at("resultType") == "complete");
    CHECK(until(task, "completed") == "completed");
    const auto done = modern(b.port(), 3, "tasks/get", task, R"("taskId":")" + task + '"');
    CHECK(done.at("result").at("result").at("content").at(0).at("text") == "Hello Ada");

    // A task still running when its instance goes: b answers for it from Redis, ended.
    created = modern(a->port(), 4, "tools/call", "confirm", R"("name":"confirm","arguments":{})");
    const std::string running(created.at("result").at("taskId").as_string());
    CHECK(until(running, "input_required") == "input_required");
    (void)modern(b.port(), 5, "tasks/update", running,
                 R"("taskId":")" + running + R"(","inputResponses":{"user_name":{"action":"accept","content":{"name":"wait"}}})");
    CHECK(until(running, "working") == "working");
    // The finished task's result outlives a too.
    a->stop();
    const std::string after = status_at(b.port(), running);
    CHECK((after == "failed" || after == "cancelled"));
    CHECK(status_at(b.port(), task) == "completed");
    const auto kept = modern(b.port(), 6, "tasks/get", task, R"("taskId":")" + task + '"');
    CHECK(kept.at("result").at("result").at("content").at(0).at("text") == "Hello Ada");
  }

  TEST_CASE("a session used only through another instance stays alive past its idle timeout") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    // Wall-clock time is what this checks: the record's time to live (the idle timeout,
    // 600 ms here) must be refreshed by the owner while others forward to it.
    const auto idle = std::chrono::milliseconds(600);
    instance a(redis.url(), "a", idle), b(redis.url(), "b", idle);
    raw_connection ca(a.port(), guard_ms);
    const std::string sid = initialize(ca);
    const auto until = std::chrono::steady_clock::now() + 3 * idle;
    int calls = 0;
    while (std::chrono::steady_clock::now() < until) {
      raw_connection cb(b.port(), guard_ms);
      cb.send(mcp_post(call(100 + calls, "echo", R"({"text":"still"})"), session_header(sid)));
      auto r = cb.read_response();
      REQUIRE(r);
      REQUIRE_MESSAGE(r->status == 200, "call " << calls << " after " << calls * 50 << " ms: " << r->status);
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(a.listener->sessions() == 1);
  }
}
