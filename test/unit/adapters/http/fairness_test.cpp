// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fairness: one authenticated tenant runs every attack of docs/security.md's threat
/// model at once (a session flood, large answers kept for resumption, a task flood, calls
/// whose client hung up, slow bodies, a connection flood, and 429s asked for in a loop
/// meanwhile) while a second tenant makes ordinary calls. Every call of the second must
/// succeed, and its latency must stay near what it is on an idle server. Small limits, so
/// that the attacks reach them in a second or two.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "auth_fixture.hpp"

using namespace droid::test::auth;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* attacker_address = "127.0.0.2";
constexpr const char* victim_address = "127.0.0.3";

/// Alice's ordinary work: `n` calls in her session on one keep-alive connection, each
/// timed (milliseconds, sorted). `failures` counts calls not answered as hers.
std::vector<double> ordinary_calls(std::uint16_t port, int n, int& failures) {
  raw_connection c(port, 10'000, victim_address);
  const std::string sid = session_of(c, "alice");
  const std::string headers = "Mcp-Session-Id: " + sid + "\r\n" + bearer("alice");
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto start = clock_type::now();
    c.send(mcp_post(call_body(i + 1, "whoami"), headers));
    auto r = c.read_response();
    ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
    if (!r || r->status != 200 || r->body.find("alice") == std::string::npos) ++failures;
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

double p99(const std::vector<double>& sorted) { return sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)]; }

std::optional<droid::test::http_response> from_attacker(std::uint16_t port, const std::string& request) {
  raw_connection c(port, 10'000, attacker_address);
  c.send(request);
  return c.read_response();
}

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("fairness: one tenant runs every attack at once; another's calls all succeed, p99 near idle") {
    droid::http::options opts;
    opts.max_requests_per_principal = 8;
    opts.max_requests_per_address = 16;
    opts.max_sessions_per_tenant = 4;
    opts.max_connections_per_address = 24;
    opts.max_kept_bytes_per_tenant = 256u << 10;
    droid::server_options so;
    so.tasks.max_tasks_per_tenant = 4;
    auth_fixture f(opts, so, /*json=*/false);  // event streams: calls run on after a hang-up
    const std::uint16_t port = f.port();

    int failures = 0;
    const std::vector<double> idle = ordinary_calls(port, 200, failures);
    REQUIRE(failures == 0);

    // Bob, from 127.0.0.2, takes every share he can.
    // 1. Sessions until refused, on one connection he keeps.
    raw_connection bob(port, 10'000, attacker_address);
    std::vector<std::string> sessions;
    int session_refusals = 0;
    for (int i = 0; i < 10 && session_refusals == 0; ++i) {
      bob.send(mcp_post(initialize_body, bearer("bob")));
      auto r = bob.read_response();
      REQUIRE(r);
      if (r->status == 429) ++session_refusals;
      else if (const std::string* sid = r->header("mcp-session-id")) sessions.push_back(*sid);
    }
    CHECK(sessions.size() == 4);
    CHECK(session_refusals == 1);
    // 2. A 200 KB answer kept for resumption in each session: his share is 256 KB.
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      bob.send(mcp_post(call_body(100 + static_cast<int>(i), "big", R"({"bytes":200000})"),
                        "Mcp-Session-Id: " + sessions[i] + "\r\n" + bearer("bob")));
      auto r = bob.read_response();
      REQUIRE(r);
      CHECK(r->status == 200);
    }
    CHECK(f.listener->kept_bytes() <= (256u << 10) + (64u << 10));  // his share, and Alice's small answers
    CHECK(f.listener->kept_squeezed() >= 1);
    // 3. Tasks until refused.
    const std::string task_caps = R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})";
    int tasks = 0;
    bool task_refused = false;
    for (int i = 0; i < 10 && !task_refused; ++i) {
      auto r = from_attacker(port, modern_request(200 + i, "tools/call", "confirm", R"("name":"confirm","arguments":{})",
                                                  task_caps, "bob"));
      REQUIRE(r);
      if (r->body.find("max_tasks_per_tenant") != std::string::npos) {
        task_refused = true;
        CHECK(r->status == 429);
      }
      else if (r->body.find(R"("resultType":"task")") != std::string::npos) ++tasks;
    }
    CHECK(tasks == 4);
    CHECK(task_refused);
    // 4. Calls that run on after their client hung up, until refused.
    int hung_up = 0;
    bool calls_refused = false;
    for (int i = 0; i < 20 && !calls_refused; ++i) {
      raw_connection c(port, 10'000, attacker_address);
      c.send(mcp_post(call_body(300 + i, "wait", R"({"ms":8000})"), "Mcp-Session-Id: " + sessions[0] + "\r\n" + bearer("bob")));
      const std::string head = c.read_until("\r\n\r\n");
      if (head.rfind("HTTP/1.1 429", 0) == 0) calls_refused = true;
      else ++hung_up;
    }  // each connection closes here: the call runs on, holding its slot
    CHECK(hung_up == 8);
    CHECK(calls_refused);
    // 5. Slow bodies: a valid head, then 10 bytes of a 1 MB body, held open.
    std::vector<std::unique_ptr<raw_connection>> held;
    for (int i = 0; i < 4; ++i) {
      held.push_back(std::make_unique<raw_connection>(port, 10'000, attacker_address));
      held.back()->send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\nContent-Length: 1000000\r\n" +
                        bearer("bob") + "\r\n{\"jsonrpc\"");
    }
    // 6. Connections until refused.
    bool connections_refused = false;
    for (int i = 0; i < 40 && !connections_refused; ++i) {
      held.push_back(std::make_unique<raw_connection>(port, 100, attacker_address));
      connections_refused = held.back()->closed_by_peer();
    }
    CHECK(connections_refused);
    // 7. And all the while, requests he may not make, asked again and again.
    std::atomic<bool> done{false};
    std::atomic<int> bob_refused{0};
    std::thread flood([&] {
      while (!done.load()) {
        try {
          bob.send(mcp_post(call_body(400, "whoami"), "Mcp-Session-Id: " + sessions[1] + "\r\n" + bearer("bob")));
          auto r = bob.read_response();
          if (r && r->status == 429) ++bob_refused;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });

    // Alice, from 127.0.0.3, works as usual.
    const std::vector<double> attacked = ordinary_calls(port, 200, failures);
    done = true;
    flood.join();
    CHECK(failures == 0);
    CHECK(bob_refused.load() > 0);
    // Within 3x her idle p99; 25 ms at least, as a shared 2-core CI machine's scheduling
    // alone moves single requests by more than 3x a sub-millisecond p99.
    MESSAGE("alice's p99: idle " << p99(idle) << " ms, attacked " << p99(attacked) << " ms");
    CHECK(p99(attacked) <= std::max(3 * p99(idle), 25.0));
  }
}
