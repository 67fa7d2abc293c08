// SPDX-License-Identifier: BSL-1.0
// The exchange table on its own: real coroutines parked in it and resumed from it, with
// a carrier that records what the table asks of it. What the engine builds on: a parked
// coroutine resumes exactly once, after its entry is gone; only a question the client
// answers by id can be answered by a response; a withdrawal goes through the carrier
// that took the question; the end of a session releases what only it could answer.
#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <doctest/doctest.h>

#include <droid/domain/errc.hpp>
#include <droid/domain/ir/codec.hpp>

#include "application/engine/exchange_table.hpp"

namespace {

using droid::exchange_result;
using droid::detail::exchange_table;
using droid::detail::exchange_waiter;
using droid::detail::question_carrier;

/// A carrier that records what it was told, and answers withdrawals as told to.
struct recording_carrier final : question_carrier {
  explicit recording_carrier(bool by_id) : by_id(by_id) {}
  std::optional<exchange_result> settle(std::string_view, std::string_view, std::string&) override {
    return std::nullopt;
  }
  void ask(std::int64_t id, std::string_view, std::string_view, std::string) override { asked.push_back(id); }
  std::optional<exchange_result> withdraw(std::int64_t id) override {
    withdrawn.push_back(id);
    if (!holds) return std::nullopt;
    return exchange_result(droid::exchange_error{make_error_code(droid::errc::cancelled), 0, "withdrawn", {}});
  }
  void answered(std::int64_t id) override { answers.push_back(id); }
  bool answered_by_id() const noexcept override { return by_id; }

  bool by_id;
  bool holds = true;
  std::vector<std::int64_t> asked, withdrawn, answers;
};

/// The smallest coroutine that runs eagerly and is destroyed by its owner: what a tool
/// frame is to the table.
struct frame {
  struct promise_type {
    frame get_return_object() { return frame{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() { std::terminate(); }
  };
  explicit frame(std::coroutine_handle<promise_type> h) : handle(h) {}
  frame(frame&& o) noexcept : handle(std::exchange(o.handle, {})) {}
  ~frame() {
    if (handle) handle.destroy();
  }
  [[nodiscard]] bool done() const { return handle.done(); }
  std::coroutine_handle<promise_type> handle;
};

/// Parks the awaiting coroutine under `id`, as `ctx.exchange` does.
struct ask_awaiter {
  exchange_table& table;
  question_carrier& carrier;
  std::int64_t id;
  exchange_result result{};
  exchange_waiter waiter{};
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    waiter = exchange_waiter{h, &result};
    table.park(id, waiter, carrier);
    carrier.ask(id, "m", "{}", {});
  }
  exchange_result await_resume() { return std::move(result); }
};

/// A tool that asks once and keeps what it got.
/// (Awaiters are named, not temporaries in the co_await: g++ 12 mishandles those.)
frame asks(exchange_table& t, question_carrier& c, std::int64_t id, std::optional<exchange_result>& got) {
  ask_awaiter question{t, c, id};
  got = co_await question;
}

/// A tool that asks twice in a row: the second question is parked while the first one's
/// answer is still being delivered.
frame asks_twice(exchange_table& t, question_carrier& c, std::int64_t first, std::int64_t second,
                 std::vector<exchange_result>& got) {
  ask_awaiter one{t, c, first};
  got.push_back(co_await one);
  ask_awaiter two{t, c, second};
  got.push_back(co_await two);
}

droid::ir::message decoded(const std::string& text) {
  auto d = droid::ir::decode(text);
  REQUIRE(std::holds_alternative<droid::ir::message>(d));
  return std::get<droid::ir::message>(std::move(d));
}

}  // namespace

TEST_SUITE("application/exchange_table") {
  TEST_CASE("ids start far from the peer's own and never repeat") {
    exchange_table t;
    const std::int64_t a = t.mint();
    const std::int64_t b = t.mint();
    CHECK(a == exchange_table::first_id);
    CHECK(a == std::int64_t{1} << 40);
    CHECK(b == a + 1);
  }

  TEST_CASE("a response resumes the question its id names, once; an id echoed as a string is ours too") {
    exchange_table t;
    recording_carrier wire(true);
    std::optional<exchange_result> first, second;
    const std::int64_t a = t.mint(), b = t.mint();
    frame fa = asks(t, wire, a, first);
    frame fb = asks(t, wire, b, second);
    CHECK(t.size() == 2);
    CHECK(wire.asked == std::vector<std::int64_t>{a, b});

    CHECK(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":)" + std::to_string(a) + R"(,"result":{"x":1}})")));
    CHECK(fa.done());
    REQUIRE(first);
    REQUIRE(first->has_value());
    CHECK(first->value().at("x") == 1);
    CHECK(wire.answers == std::vector<std::int64_t>{a});
    // The same answer again finds nothing: a question is resumed exactly once.
    CHECK_FALSE(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":)" + std::to_string(a) + R"(,"result":{}})")));
    CHECK(t.dropped() == 1);

    CHECK(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":")" + std::to_string(b) +
                                 R"(","error":{"code":-1,"message":"declined","data":{"why":"no"}}})")));
    CHECK(fb.done());
    REQUIRE(second);
    REQUIRE_FALSE(second->has_value());
    CHECK(second->error().condition == droid::errc::peer_error);
    CHECK(second->error().code == -1);
    CHECK(second->error().message == "declined");
    CHECK(second->error().data == R"({"why":"no"})");
    CHECK(t.size() == 0);
  }

  TEST_CASE("answers that match nothing are dropped and counted, never resumed") {
    exchange_table t;
    recording_carrier wire(true);
    std::optional<exchange_result> got;
    const std::int64_t a = t.mint();
    frame f = asks(t, wire, a, got);
    CHECK_FALSE(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":7,"result":{}})")));          // never asked
    CHECK_FALSE(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":"seven","result":{}})")));    // not one of ours
    CHECK_FALSE(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":")" + std::to_string(a) + R"( ","result":{}})")));
    CHECK(t.dropped() == 3);
    CHECK_FALSE(f.done());
    CHECK(t.contains(a));
    CHECK(wire.answers.empty());
  }

  TEST_CASE("a question whose answer comes by key cannot be answered by a response that guesses its id") {
    exchange_table t;
    recording_carrier round(false);
    std::optional<exchange_result> got;
    const std::int64_t a = t.mint();
    frame f = asks(t, round, a, got);
    CHECK_FALSE(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":)" + std::to_string(a) + R"(,"result":{"x":1}})")));
    CHECK_FALSE(f.done());
    CHECK(t.dropped() == 1);
    // Its own way in (a retry's inputResponses) resumes it.
    CHECK(t.resume(a, exchange_result(boost::json::value(42))));
    CHECK(f.done());
    REQUIRE(got);
    CHECK(got->value() == 42);
    CHECK_FALSE(t.resume(a, exchange_result(boost::json::value(43))));
  }

  TEST_CASE("a withdrawal goes through the carrier that took the question; an unknown one does nothing") {
    exchange_table t;
    recording_carrier wire(true), round(false);
    std::optional<exchange_result> by_wire, by_round;
    const std::int64_t a = t.mint(), b = t.mint();
    frame fa = asks(t, wire, a, by_wire);
    frame fb = asks(t, round, b, by_round);

    t.withdraw(b);
    CHECK(round.withdrawn == std::vector<std::int64_t>{b});
    CHECK(wire.withdrawn.empty());
    CHECK(fb.done());
    REQUIRE(by_round);
    CHECK(by_round->error().condition == droid::errc::cancelled);

    t.withdraw(b);  // gone: nothing is asked of any carrier
    CHECK(round.withdrawn.size() == 1);

    // A carrier that no longer holds the question leaves it as it is.
    wire.holds = false;
    t.withdraw(a);
    CHECK(wire.withdrawn == std::vector<std::int64_t>{a});
    CHECK_FALSE(fa.done());
    CHECK(t.contains(a));
  }

  TEST_CASE("the end of a session releases what only it could answer; the rest ends with its requests") {
    exchange_table t;
    recording_carrier wire(true), round(false);
    std::optional<exchange_result> w1, w2, r1;
    const std::int64_t a = t.mint(), b = t.mint(), c = t.mint();
    frame fa = asks(t, wire, a, w1);
    frame fr = asks(t, round, c, r1);
    frame fb = asks(t, wire, b, w2);
    t.end_answered_by_id("the session ended before the peer answered");
    CHECK(fa.done());
    CHECK(fb.done());
    REQUIRE(w1);
    CHECK(w1->error().condition == droid::errc::session_ended);
    CHECK(w1->error().message == "the session ended before the peer answered");
    CHECK_FALSE(fr.done());
    CHECK(t.size() == 1);
    CHECK(t.contains(c));
  }

  TEST_CASE("a tool that asks again while its answer is delivered gets a new entry, and the table stays whole") {
    exchange_table t;
    recording_carrier wire(true);
    std::vector<exchange_result> got;
    const std::int64_t a = t.mint(), b = t.mint();
    frame f = asks_twice(t, wire, a, b, got);
    CHECK(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":)" + std::to_string(a) + R"(,"result":1})")));
    CHECK_FALSE(f.done());
    CHECK(t.size() == 1);
    CHECK(t.contains(b));
    CHECK(t.route_answer(decoded(R"({"jsonrpc":"2.0","id":)" + std::to_string(b) + R"(,"result":2})")));
    CHECK(f.done());
    REQUIRE(got.size() == 2);
    CHECK(got[0].value() == 1);
    CHECK(got[1].value() == 2);
    CHECK(t.size() == 0);
  }
}
