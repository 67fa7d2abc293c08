// SPDX-License-Identifier: BSL-1.0
/// @file
/// Test support: run tasks to completion, capture what a session sends, and step the
/// io_context instead of sleeping (tests are deterministic: docs/conventions.md#tests).
#pragma once

#include <coroutine>
#include <deque>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/adapters/primary/testing/run.hpp>
#include <droid/application/server/outbound.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/task.hpp>

namespace droid::test {

/// Runs `t` on `io` until it completes and returns its value (or rethrows): the public
/// helper users' tests call too.
using droid::testing::run;

/// Runs everything that is ready, without blocking on timers in the future.
inline std::size_t poll(asio::io_context& io) {
  io.restart();
  return io.poll();
}

/// An `outbound` that records every message, parsed, for assertions.
class capture final : public outbound {
 public:
  void send(std::string message) override { sent.push_back(std::move(message)); }
  void finish() override { ++finished; }
  [[nodiscard]] std::string exchange_refusal() const override { return refusal; }

  /// The i-th message sent, parsed.
  [[nodiscard]] boost::json::value json(std::size_t i) const { return boost::json::parse(sent.at(i)); }
  /// Parses and removes the oldest message.
  [[nodiscard]] boost::json::value pop() {
    boost::json::value v = boost::json::parse(sent.front());
    sent.pop_front();
    return v;
  }

  std::deque<std::string> sent;
  /// How many request streams were finished on this outbound.
  int finished = 0;
  /// What `exchange_refusal` answers (empty: questions may be asked).
  std::string refusal;
};

}  // namespace droid::test

#include <asio/basic_waitable_timer.hpp>
#include <chrono>

namespace droid::test {

/// A clock that moves only when a test says so (docs/conventions.md#tests).
struct manual_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<manual_clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept { return current; }
  static void advance(duration d) noexcept { current += d; }
  static inline time_point current{};
};

/// Wait traits that never let the reactor block: `poll()` re-checks the manual clock.
struct manual_wait_traits {
  static manual_clock::duration to_wait_duration(const manual_clock::duration&) { return {}; }
  static manual_clock::duration to_wait_duration(const manual_clock::time_point&) { return {}; }
};

using manual_timer = asio::basic_waitable_timer<manual_clock, manual_wait_traits>;

}  // namespace droid::test

#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid::test {

/// Drives one session with no I/O: feeds it JSON text, steps the io_context, and reads
/// what it sent. Shared by the application tests so each states only its server.
struct session_driver {
  asio::io_context io;
  std::shared_ptr<capture> out = std::make_shared<capture>();
  std::shared_ptr<droid::session> s;

  /// Starts a session on `srv` and, when `capabilities` is given, initializes it with
  /// them (the initialize response stays in `out`).
  void start(droid::server& srv, const std::string& capabilities = "{}") {
    s = droid::session::create(srv, io.get_executor(), out);
    feed(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":)" +
         capabilities + R"(,"clientInfo":{"name":"t","version":"1"}}})");
  }
  ~session_driver() { stop(); }
  /// Ends the session and lets its tasks unwind. A derived fixture that owns the server
  /// calls it from its own destructor, because the server must outlive the session.
  void stop() {
    if (s) s->close();
    poll(io);
    s.reset();
  }
  void feed(const std::string& text) {
    auto d = droid::ir::decode(text);
    if (auto* m = std::get_if<droid::ir::message>(&d)) {
      s->receive(std::move(*m));
    } else {
      s->reject(std::get<droid::ir::rejection>(d));
    }
    poll(io);
  }
  /// Sends request id 9 and returns the one message it produced.
  boost::json::value request(const std::string& method, const std::string& params) {
    feed(R"({"jsonrpc":"2.0","id":9,"method":")" + method + R"(","params":)" + params + "}");
    if (out->sent.empty()) throw std::runtime_error("no answer to " + method);
    return out->pop();
  }
};

}  // namespace droid::test
