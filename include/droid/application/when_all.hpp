// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::when_all`: await several tasks at once and resume when every one has finished.
///
/// Application layer, no Asio. Why: a tool that asks the client two things, or samples
/// while it lists roots, should not pay two round trips one after the other. Each task
/// starts at once (they interleave on the shard at their awaits); the awaiting coroutine
/// resumes after the last one, with every result; the first exception, if any, is
/// rethrown then (after all have finished, so no frame is abandoned mid-flight).
///
///     auto [summary, roots] = co_await droid::when_all(ctx.sample(request), ctx.list_roots());
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <droid/application/task.hpp>

namespace droid {
namespace detail {

/// How many children are still running (plus one for the parent's own start-up), and
/// whom to resume when that reaches zero.
struct when_all_counter {
  explicit when_all_counter(std::size_t children) : remaining(children + 1) {}
  std::atomic<std::size_t> remaining;
  std::coroutine_handle<> parent;
};

/// The frame that runs one child and reports to the counter.
///
/// Invariants: owned (and destroyed) by the `when_all` frame; it suspends at its end so
/// the owner destroys it after reading the result.
class when_all_child {
 public:
  struct promise_type : frame_allocation {
    when_all_counter* counter = nullptr;
    when_all_child get_return_object() noexcept {
      return when_all_child(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    struct final_awaiter {
      bool await_ready() const noexcept { return false; }
      // The last child to finish resumes the parent by symmetric transfer.
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        when_all_counter& c = *h.promise().counter;
        if (c.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) return c.parent;
        return std::noop_coroutine();
      }
      void await_resume() const noexcept {}
    };
    final_awaiter final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    // The child body catches everything the task throws.
    void unhandled_exception() noexcept { std::terminate(); }
  };

  explicit when_all_child(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  when_all_child(when_all_child&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  when_all_child& operator=(when_all_child&&) = delete;
  ~when_all_child() {
    if (h_) h_.destroy();
  }
  void start(when_all_counter& c) {
    h_.promise().counter = &c;
    h_.resume();
  }

 private:
  std::coroutine_handle<promise_type> h_;
};

template <class T>
using when_all_value = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
when_all_child run_child(task<T> t, std::optional<when_all_value<T>>& slot, std::exception_ptr& error) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(t);
      slot.emplace();
    } else {
      slot.emplace(co_await std::move(t));
    }
  } catch (...) {
    if (!error) error = std::current_exception();
  }
}

/// Starts every child, then suspends the parent unless they all finished already.
struct when_all_awaiter {
  when_all_counter& counter;
  std::vector<when_all_child>& children;
  bool await_ready() const noexcept { return children.empty(); }
  bool await_suspend(std::coroutine_handle<> parent) {
    counter.parent = parent;
    for (when_all_child& c : children) c.start(counter);
    // The parent's own share: if every child already finished, carry on without
    // suspending (and without being resumed from beneath the last child).
    return counter.remaining.fetch_sub(1, std::memory_order_acq_rel) != 1;
  }
  void await_resume() const noexcept {}
};

template <class... T, std::size_t... I>
task<std::tuple<when_all_value<T>...>> when_all_impl(std::index_sequence<I...>, task<T>... tasks) {
  std::tuple<std::optional<when_all_value<T>>...> slots;
  std::exception_ptr error;
  when_all_counter counter(sizeof...(T));
  std::vector<when_all_child> children;
  children.reserve(sizeof...(T));
  (children.push_back(run_child(std::move(tasks), std::get<I>(slots), error)), ...);
  co_await when_all_awaiter{counter, children};
  if (error) std::rethrow_exception(error);
  co_return std::tuple<when_all_value<T>...>(std::move(*std::get<I>(slots))...);
}

}  // namespace detail

/// Runs `tasks` concurrently; yields a tuple of their results (`std::monostate` for
/// `task<void>`). Rethrows the first exception once all have finished.
template <class... T>
[[nodiscard]] task<std::tuple<detail::when_all_value<T>...>> when_all(task<T>... tasks) {
  return detail::when_all_impl(std::index_sequence_for<T...>{}, std::move(tasks)...);
}

/// Runs every task of `tasks` concurrently; yields their results in order.
template <class T>
[[nodiscard]] task<std::vector<detail::when_all_value<T>>> when_all(std::vector<task<T>> tasks) {
  std::vector<std::optional<detail::when_all_value<T>>> slots(tasks.size());
  std::exception_ptr error;
  detail::when_all_counter counter(tasks.size());
  std::vector<detail::when_all_child> children;
  children.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) children.push_back(detail::run_child(std::move(tasks[i]), slots[i], error));
  co_await detail::when_all_awaiter{counter, children};
  if (error) std::rethrow_exception(error);
  std::vector<detail::when_all_value<T>> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  co_return out;
}

}  // namespace droid
