// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::task<T>`: the lazy coroutine type tools and the application layer are written in.
///
/// Application layer; includes no Asio, so the coroutine core is testable without an event
/// loop. Why our own task and not `asio::awaitable`: Asio's promise refuses foreign
/// awaiters (its `await_transform` accepts only Asio's own), and the exchange parks a raw
/// coroutine handle in a table, which is exactly a foreign awaiter. The two worlds meet
/// through `use_task` (Asio -> task) and `spawn` (task -> Asio), nowhere else.
///
///     awaiting coroutine                         task frame
///     ------------------                         ----------
///     co_await t  --- await_suspend(h) ------->  continuation_ = h; resume() the frame
///                                                ... runs until it suspends or ends ...
///     ended already? await_suspend returns false: carry on, no stack growth
///     suspended?     stays parked; when the frame ends later, final_suspend returns h
///                    (symmetric transfer) and the awaiting coroutine resumes
///
/// ## Why a handshake flag and not only symmetric transfer
/// Symmetric transfer is a tail call only when the compiler emits one: g++ 12 does not at
/// -O0 or under ASan, and a loop of a million already-complete awaits then overflows the
/// stack. The flag (cppcoro's original scheme) lets a task that finishes inside
/// `await_suspend` return there instead of resuming its awaiter from underneath, so the
/// stack stays flat in every build; symmetric transfer still hands control back when the
/// task finishes later, from an Asio handler.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include <droid/application/detail/frame_count.hpp>

namespace droid {

template <class T = void>
class task;

namespace detail {

/// What every task promise shares: the continuation and the symmetric hand-back.
struct task_promise_base : frame_allocation {
  /// Hands control back to whoever awaited the task, if it is parked.
  ///
  /// Whoever flips `ready_` second acts: if the awaiter already suspended (flag set), the
  /// task resumes it by symmetric transfer; if the awaiter is still inside its
  /// `await_suspend` (the task finished synchronously), the awaiter sees the flag and
  /// continues by itself.
  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) noexcept {
      task_promise_base& p = h.promise();
      if (p.ready_.exchange(true, std::memory_order_acq_rel) && p.continuation_) return p.continuation_;
      return std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  // Lazy: nothing runs until the task is awaited or spawned, so every frame has an owner
  // from birth and no work starts that nobody will collect.
  std::suspend_always initial_suspend() const noexcept { return {}; }
  final_awaiter final_suspend() const noexcept { return {}; }

  std::coroutine_handle<> continuation_;
  /// Set by whichever of "the awaiter suspended" and "the task finished" happens first.
  /// Atomic because a task may finish on another thread (offloaded work) while its
  /// awaiter is still in `await_suspend`.
  std::atomic<bool> ready_{false};
};

template <class T>
struct task_promise final : task_promise_base {
  task<T> get_return_object() noexcept;
  // By value, not a forwarding template: `co_return {};` and other braced returns must
  // work, and a template cannot deduce from a braced list. Costs one move.
  void return_value(T v) noexcept(std::is_nothrow_move_constructible_v<T>) {
    outcome_.template emplace<1>(std::move(v));
  }
  void unhandled_exception() noexcept { outcome_.template emplace<2>(std::current_exception()); }

  T take() {
    if (outcome_.index() == 2) std::rethrow_exception(std::get<2>(outcome_));
    return std::move(std::get<1>(outcome_));
  }

  std::variant<std::monostate, T, std::exception_ptr> outcome_;
};

template <>
struct task_promise<void> final : task_promise_base {
  task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }
  void take() {
    if (exception_) std::rethrow_exception(exception_);
  }
  std::exception_ptr exception_;
};

}  // namespace detail

/// A lazy, move-only coroutine producing one `T` (or an exception).
///
/// Why: tools are coroutines whose frames are parked in tables (the exchange) and resumed
/// by the router; a task that started eagerly or could be copied would run twice or lose
/// its owner.
/// Invariants: owns its frame until it completes inside an awaiter or is destroyed; a
/// destroyed task destroys the frame it still owns (so an un-awaited task leaks nothing).
/// Affinity: the awaiting coroutine and the task run on the same thread unless the task
/// itself suspends on an executor of another thread.
/// Lifetime: the frame of a task being awaited lives until the `co_await` expression
/// completes; its result is moved out then.
template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::task_promise<T>;  ///< makes a function returning `task` a coroutine
  using value_type = T;  ///< what `co_await` on the task gives

  task() noexcept = default;
  /// Takes ownership of the coroutine frame `h`.
  explicit task(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}
  /// Takes the frame `other` owns; `other` is left empty.
  task(task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  /// Destroys the frame it owns, then takes `other`'s; `other` is left empty.
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { destroy(); }

  /// True when the task owns a frame.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(handle_); }

  /// The awaiter: starts the frame by symmetric transfer and returns its value, or
  /// rethrows what it threw, at the `co_await`.
  auto operator co_await() && noexcept {
    struct awaiter {
      std::coroutine_handle<promise_type> h;
      bool await_ready() const noexcept { return !h || h.done(); }
      // bool: the task may finish inside `resume()`, and then the awaiting coroutine
      // continues without suspending (returns false) instead of being resumed from
      // beneath the task's frame.
      bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
        h.promise().continuation_ = awaiting;
        h.resume();
        return !h.promise().ready_.exchange(true, std::memory_order_acq_rel);
      }
      T await_resume() { return h.promise().take(); }
    };
    return awaiter{handle_};
  }

  /// For the spawn bridge: releases the frame to a driver that will destroy it.
  [[nodiscard]] std::coroutine_handle<promise_type> release() noexcept { return std::exchange(handle_, {}); }

 private:
  void destroy() noexcept {
    if (handle_) handle_.destroy();
  }
  std::coroutine_handle<promise_type> handle_;
};

namespace detail {
template <class T>
task<T> task_promise<T>::get_return_object() noexcept {
  return task<T>(std::coroutine_handle<task_promise<T>>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() noexcept {
  return task<void>(std::coroutine_handle<task_promise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace droid
