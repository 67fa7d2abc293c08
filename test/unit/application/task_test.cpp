// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::task`: laziness, symmetric transfer, exceptions, frame ownership
/// (docs/conventions.md#coroutines-and-awaiters).
#include <droid/application/task.hpp>
#include <droid/application/when_all.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include <asio/io_context.hpp>

#include <doctest/doctest.h>

#include "support.hpp"

using droid::task;

namespace {

task<int> value_of(int v) { co_return v; }

task<int> sum_of_many(int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total += co_await value_of(1);
  co_return total;
}

task<void> throws() {
  throw std::runtime_error("boom");
  co_return;
}

task<std::string> catches() {
  try {
    co_await throws();
  } catch (const std::runtime_error& e) {
    co_return std::string(e.what());
  }
  co_return "nothing";
}

}  // namespace

TEST_SUITE("application/task") {
  TEST_CASE("live_frames sums every thread's count, those of threads that ended included") {
    const long before = droid::live_frames();
    std::optional<task<int>> made_elsewhere;
    std::thread maker([&] { made_elsewhere.emplace(value_of(7)); });  // +1 on a thread that ends
    maker.join();
    CHECK(droid::live_frames() == before + 1);
    std::thread([] {
      task<int> brief = value_of(1);  // +1 and -1 on another thread that ends
    }).join();
    CHECK(droid::live_frames() == before + 1);
    made_elsewhere.reset();  // -1 here, for the frame the first thread made
    CHECK(droid::live_frames() == before);
  }

  TEST_CASE("a task does not start until awaited") {
    bool started = false;
    auto make = [&]() -> task<void> {
      started = true;
      co_return;
    };
    {
      task<void> t = make();
      CHECK_FALSE(started);
      CHECK(droid::live_frames() == 1);
    }
    // Destroyed without ever running: the frame is freed, the body never ran.
    CHECK_FALSE(started);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a million synchronously completing awaits do not grow the stack") {
    // Symmetric transfer at final_suspend: without it this overflows the stack.
    asio::io_context io;
    CHECK(droid::test::run(io, sum_of_many(1'000'000)) == 1'000'000);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("an exception is rethrown at the co_await that consumes the task") {
    asio::io_context io;
    CHECK(droid::test::run(io, catches()) == "boom");
    CHECK_THROWS_AS(droid::test::run(io, throws()), std::runtime_error);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a task is move-only and moving transfers the frame") {
    static_assert(!std::is_copy_constructible_v<task<int>>);
    static_assert(std::is_nothrow_move_constructible_v<task<int>>);
    task<int> a = value_of(3);
    task<int> b = std::move(a);
    CHECK_FALSE(a.valid());
    CHECK(b.valid());
    asio::io_context io;
    CHECK(droid::test::run(io, std::move(b)) == 3);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("spawn reports the value, or the exception with a default value") {
    asio::io_context io;
    int got = -1;
    std::exception_ptr failure;
    droid::spawn(io.get_executor(), value_of(42), [&](std::exception_ptr e, int v) {
      failure = e;
      got = v;
    });
    CHECK(got == -1);  // posted, never inline
    io.run();
    CHECK(got == 42);
    CHECK_FALSE(failure);
    io.restart();
    droid::spawn(io.get_executor(), throws(), [&](std::exception_ptr e) { failure = e; });
    io.run();
    CHECK(failure);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a task spawned on a loop that never runs is freed with the loop") {
    {
      asio::io_context io;
      droid::spawn(io.get_executor(), value_of(1), [](std::exception_ptr, int) {});
      CHECK(droid::live_frames() == 2);  // the driver and the task
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("freed frames are reused on their thread, counted only while alive, and freed at thread exit") {
    namespace d = droid::detail;
    // Off by default under AddressSanitizer (its quarantine catches resumed dead frames);
    // on here, so the cache is exercised there too, its cached blocks poisoned.
    const bool was = d::frame_recycling();
    d::set_frame_recycling(true);
    // Whatever the cache held, taking one block leaves room to give it back, and the
    // next frame of the same 64-byte size class (193..256 bytes) gets that block.
    void* a = d::allocate_frame(200);
    d::deallocate_frame(a, 200);
    void* b = d::allocate_frame(250);
    CHECK(b == a);
    d::deallocate_frame(b, 250);
    // Frames beyond the largest class go to the allocator as they are.
    void* big = d::allocate_frame(5000);
    d::deallocate_frame(big, 5000);
    // Tasks on recycled frames behave as on fresh ones, and none is counted once freed.
    asio::io_context io;
    for (int i = 0; i < 50; ++i) CHECK(droid::test::run(io, sum_of_many(20)) == 20);
    CHECK(droid::live_frames() == 0);
    // Another thread fills its own cache, which is freed when the thread ends (under
    // LeakSanitizer a block left behind would be reported at exit).
    std::thread([] {
      void* p = droid::detail::allocate_frame(100);
      droid::detail::deallocate_frame(p, 100);
    }).join();
    // Switching off keeps nothing more, and blocks cached before still serve.
    d::set_frame_recycling(false);
    void* c = d::allocate_frame(100);
    d::deallocate_frame(c, 100);
    d::set_frame_recycling(was);
  }

  TEST_CASE("when_all runs tasks together and yields every result in order") {
    asio::io_context io;
    auto both = []() -> task<std::string> {
      auto [a, b, c] = co_await droid::when_all(value_of(1), value_of(2), catches());
      co_return std::to_string(a + b) + c;
    };
    CHECK(droid::test::run(io, both()) == "3boom");
    auto many = []() -> task<int> {
      std::vector<task<int>> tasks;
      for (int i = 0; i < 100; ++i) tasks.push_back(value_of(i));
      const std::vector<int> values = co_await droid::when_all(std::move(tasks));
      int sum = 0;
      for (int v : values) sum += v;
      co_return sum;
    };
    CHECK(droid::test::run(io, many()) == 4950);
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("when_all waits for every task, then rethrows the first exception") {
    asio::io_context io;
    int finished = 0;
    auto counted = [&]() -> task<void> {
      ++finished;
      co_return;
    };
    auto mixed = [&]() -> task<void> { (void)co_await droid::when_all(counted(), throws(), counted()); };
    CHECK_THROWS_AS(droid::test::run(io, mixed()), std::runtime_error);
    CHECK(finished == 2);
    auto none = []() -> task<int> {
      const auto values = co_await droid::when_all(std::vector<task<int>>{});
      co_return static_cast<int>(values.size());
    };
    CHECK(droid::test::run(io, none()) == 0);
    CHECK(droid::live_frames() == 0);
  }
}
