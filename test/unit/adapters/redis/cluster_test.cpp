// SPDX-License-Identifier: BSL-1.0
/// @file
/// Two instances of a server sharing their 2025 sessions through a real redis-server
/// (docs/scale-out.md): a session opened on one is served by the other, an exchange's
/// answer finds its frame whichever instance it reaches, a session outlives the instance
/// that opened it, and a Redis that is down gets 503 with Retry-After, never a hang.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "cluster_fixture.hpp"

using namespace droid::test::cluster;


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
      event = first_event_id(first);
    }  // the connection drops before the answer
    const std::string body = resume(b.port(), sid, event, "waited");
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
    CHECK(r->body.find("cannot be reached") != std::string::npos);
    CHECK(r->body.find(std::to_string(redis.port())) == std::string::npos);  // the operator's, not the client's
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
