// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::spawn`: runs a `task` on an Asio executor and reports how it ended.
///
/// Application layer, the one bridge from Asio into `task` frames. Mirrors `co_spawn`:
/// the completion receives `std::exception_ptr` and the value (default-constructed when
/// the task threw), so exceptions never cross the spawn boundary as exceptions; the
/// caller decides what a failure means (a tool error, a -32603, a log line).
#pragma once

#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>

#include <asio/post.hpp>

#include <droid/application/task.hpp>

namespace droid {
namespace detail {

/// A fire-and-forget coroutine that owns the spawned task until it completes.
struct spawn_driver {
  struct promise_type : frame_allocation {
    spawn_driver get_return_object() noexcept {
      return {std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    // Self-destroying: the driver's frame ends with the spawned work.
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    // The driver catches everything the task throws; anything reaching here is a
    // completion handler that threw, which is a bug in the caller.
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

template <class T, class Handler>
spawn_driver drive(task<T> t, Handler on_done) {
  std::exception_ptr failure;
  if constexpr (std::is_void_v<T>) {
    try {
      co_await std::move(t);
    } catch (...) {
      failure = std::current_exception();
    }
    std::move(on_done)(failure);
  } else {
    T value{};
    try {
      value = co_await std::move(t);
    } catch (...) {
      failure = std::current_exception();
    }
    std::move(on_done)(failure, std::move(value));
  }
}

/// Owns a driver frame until the executor runs it; destroys it if the executor is shut
/// down first (Asio destroys unrun handlers), so a task spawned on a stopped loop leaks
/// nothing.
class driver_owner {
 public:
  explicit driver_owner(std::coroutine_handle<> h) noexcept : h_(h) {}
  driver_owner(driver_owner&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  driver_owner& operator=(driver_owner&&) = delete;
  ~driver_owner() {
    if (h_) h_.destroy();
  }
  void operator()() { std::exchange(h_, {}).resume(); }

 private:
  std::coroutine_handle<> h_;
};

}  // namespace detail

/// Starts `t` on `ex` (posted, never inline) and calls `on_done(exception_ptr[, value])`
/// when it completes, on whichever thread completed it (the shard, for shard executors).
///
/// Lifetime: the task's frame lives until it completes. A task suspended on an Asio
/// operation when its io_context is destroyed is not reclaimed by Asio; owners cancel
/// their work and run the loop dry before destroying it (the transports do).
template <class Executor, class T, class Handler>
void spawn(const Executor& ex, task<T> t, Handler&& on_done) {
  detail::spawn_driver d = detail::drive(std::move(t), std::forward<Handler>(on_done));
  asio::post(ex, detail::driver_owner(d.handle));
}

}  // namespace droid
