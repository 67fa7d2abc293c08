// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::use_task`: awaiting Asio operations from a task, with values for errors and
/// cancellation through a stop token.
#include <droid/application/use_task.hpp>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <system_error>

#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <doctest/doctest.h>

#include <droid/application/spawn.hpp>
#include <droid/application/task.hpp>

#include "support.hpp"

using droid::test::manual_clock;
using droid::test::manual_timer;
using namespace std::chrono_literals;

TEST_SUITE("application/use_task") {
  TEST_CASE("a timer completes only when the manual clock passes its expiry") {
    asio::io_context io;
    manual_timer timer(io, 30s);
    bool done = false;
    std::error_code result = asio::error::would_block;
    auto wait = [&]() -> droid::task<void> {
      result = co_await timer.async_wait(droid::use_task);
      done = true;
    };
    droid::spawn(io.get_executor(), wait(), [](std::exception_ptr) {});
    droid::test::poll(io);
    CHECK_FALSE(done);
    manual_clock::advance(31s);
    droid::test::poll(io);
    CHECK(done);
    CHECK_FALSE(result);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a stop request cancels the awaited operation and yields operation_aborted") {
    asio::io_context io;
    manual_timer timer(io, 1h);
    std::stop_source stop;
    std::error_code result;
    bool done = false;
    auto wait = [&]() -> droid::task<void> {
      result = co_await timer.async_wait(droid::use_task(stop.get_token()));
      done = true;
    };
    droid::spawn(io.get_executor(), wait(), [](std::exception_ptr) {});
    droid::test::poll(io);
    CHECK_FALSE(done);
    stop.request_stop();
    droid::test::poll(io);
    CHECK(done);
    CHECK(result == asio::error::operation_aborted);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a stop requested before the await still cancels the operation") {
    // The stop callback is registered after the operation starts, so an early stop
    // finds a live operation to cancel instead of an empty slot.
    asio::io_context io;
    manual_timer timer(io, 1h);
    std::stop_source stop;
    stop.request_stop();
    std::error_code result;
    auto wait = [&]() -> droid::task<void> { result = co_await timer.async_wait(droid::use_task(stop.get_token())); };
    droid::spawn(io.get_executor(), wait(), [](std::exception_ptr) {});
    droid::test::poll(io);
    CHECK(result == asio::error::operation_aborted);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("an operation with no arguments yields void and one with several a tuple") {
    asio::io_context io;
    int ran = 0;
    auto t = [&]() -> droid::task<void> {
      co_await asio::post(io.get_executor(), droid::use_task);
      ++ran;
    };
    droid::test::run(io, t());
    CHECK(ran == 1);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a stop requested from another thread cancels on the operation's own thread, racing completion or not") {
    // The stop comes from a thread that does not run the operation (a tool's stop source
    // stopped elsewhere, a user's token): the cancellation must reach the operation on its
    // executor. Half the waits here expire as the stop arrives, so the relayed
    // cancellation sometimes finds its operation over and its awaiter gone
    // (ThreadSanitizer runs this suite in CI).
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    constexpr int rounds = 400;
    std::atomic<int> finished{0}, aborted{0};
    for (int i = 0; i < rounds; ++i) {
      std::stop_source stop;
      std::atomic<bool> started{false};
      auto wait = [&, expiry = i % 2 == 0 ? std::chrono::microseconds(50) : std::chrono::microseconds(3'600'000'000LL)]()
          -> droid::task<void> {
        asio::steady_timer timer(io, expiry);
        started = true;
        const std::error_code ec = co_await timer.async_wait(droid::use_task(stop.get_token()));
        if (ec == asio::error::operation_aborted) ++aborted;
        ++finished;
      };
      asio::post(io, [&] { droid::spawn(io.get_executor(), wait(), [](std::exception_ptr) {}); });
      while (!started) std::this_thread::yield();
      stop.request_stop();
      while (finished.load() != i + 1) std::this_thread::yield();
    }
    guard.reset();
    runner.join();
    CHECK(finished == rounds);
    CHECK(aborted >= rounds / 2);  // every hour-long wait, and some of the short ones
    CHECK(droid::live_frames() == 0);
  }
}
