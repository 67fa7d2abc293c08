// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::use_task`: the completion token that lets a `task` await any Asio operation.
///
/// Application layer, the one bridge from Asio into `task`. Usage:
///
///     std::error_code ec = co_await timer.async_wait(droid::use_task);
///     auto [ec, n] = co_await sock.async_read_some(buf, droid::use_task(stop_token));
///
/// Results are values, never exceptions: an `error_code` in the signature comes back as
/// an `error_code` (Asio's `use_awaitable` throws it, which turns every timeout into a
/// try/catch). With a stop token, a stop request cancels the operation through its
/// cancellation slot; an operation that parks a waiter and ignores its slot would leak
/// the waiter when it loses a race (docs/conventions.md#coroutines-and-awaiters).
/// A stop requested from another thread is carried to the operation's executor before it
/// touches the operation: Asio's cancellation slots are not thread-safe.
#pragma once

#include <coroutine>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include <asio/async_result.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/post.hpp>

namespace droid {

/// The completion token type; see `use_task`.
struct use_task_t {
  /// When stop is requested on this token, the operation is cancelled (total cancellation).
  std::stop_token stop;

  /// A token that cancels the operation when `t` is stopped.
  [[nodiscard]] use_task_t operator()(std::stop_token t) const { return use_task_t{std::move(t)}; }
};

/// Await an Asio operation from a `droid::task`: `co_await op(args..., droid::use_task)`.
// `inline const`, not `constexpr`: std::stop_token is not a literal type.
inline const use_task_t use_task{};

namespace detail {

/// What `co_await` yields for completion signature `void(Args...)`: nothing, the single
/// argument, or a tuple.
template <class... Args>
struct op_result {
  using type = std::tuple<std::decay_t<Args>...>;
};
template <class A>
struct op_result<A> {
  using type = std::decay_t<A>;
};
template <>
struct op_result<> {
  using type = void;
};

/// The awaiter an Asio initiating function returns under `use_task`.
///
/// Why the initiation runs in `await_suspend` and not at construction: the operation may
/// complete (on another thread, or by a posted handler) only after this coroutine is
/// suspended; starting it earlier is the race Asio's own `await_transform` avoids.
/// Invariants: not copyable or movable, because the handler holds its address.
/// Affinity: the operation's executor must run on the thread that awaits (one shard);
/// `await_suspend` touches the awaiter after starting the operation, which is safe only
/// because Asio never invokes a handler from inside its initiating function and no other
/// thread can run it meanwhile. A stop may be requested from any thread.
template <class Initiation, class InitArgs, class... Args>
class async_op_awaiter {
 public:
  async_op_awaiter(Initiation init, std::stop_token stop, InitArgs args)
      : init_(std::move(init)), args_(std::move(args)), stop_(std::move(stop)) {}
  async_op_awaiter(const async_op_awaiter&) = delete;
  async_op_awaiter& operator=(const async_op_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }

  // void: the coroutine is parked in the operation's handler until it completes.
  void await_suspend(std::coroutine_handle<> h) {
    std::apply([&](auto&... a) { std::move(init_)(handler{this, h}, std::move(a)...); }, args_);
    // Registered after the start so that an already-requested stop cancels a live
    // operation instead of an empty slot.
    if (stop_.stop_possible()) {
      home_thread_ = std::this_thread::get_id();
      on_stop_.emplace(stop_, canceller{this});
    }
  }

  typename op_result<Args...>::type await_resume() {
    // Waits for a canceller running on another thread, so `relay_` is settled here.
    on_stop_.reset();
    if (relay_) relay_->awaiter = nullptr;  // a relayed cancellation still queued finds nothing
    if constexpr (sizeof...(Args) == 0) {
      return;
    } else if constexpr (sizeof...(Args) == 1) {
      return std::move(std::get<0>(*result_));
    } else {
      return std::move(*result_);
    }
  }

 private:
  /// A cancellation on its way from the thread that requested the stop to the
  /// operation's executor. Why shared: it may arrive after the operation completed and
  /// this awaiter is gone; both the relay and `await_resume` run on that executor, so
  /// clearing `awaiter` there needs no lock.
  struct relay {
    async_op_awaiter* awaiter;
  };

  static constexpr bool has_executor = requires(const Initiation& i) { i.get_executor(); };

  /// Runs where the stop is requested: on the awaiting thread it cancels at once;
  /// elsewhere it posts the cancellation to the operation's executor, because emitting
  /// a cancellation signal races with the operation it cancels (ThreadSanitizer sees a
  /// tool's stop source, stopped from another thread, do exactly that). An initiation
  /// that names no executor is cancelled in place, as Asio itself would.
  struct canceller {
    async_op_awaiter* self;
    void operator()() const noexcept {
      if constexpr (has_executor) {
        if (std::this_thread::get_id() != self->home_thread_) {
          self->relay_ = std::make_shared<relay>(relay{self});
          asio::post(self->init_.get_executor(), [r = self->relay_] {
            if (r->awaiter) r->awaiter->signal_.emit(asio::cancellation_type::total);
          });
          return;
        }
      }
      self->signal_.emit(asio::cancellation_type::total);
    }
  };

  struct handler {
    using cancellation_slot_type = asio::cancellation_slot;
    async_op_awaiter* self;
    std::coroutine_handle<> h;
    cancellation_slot_type get_cancellation_slot() const noexcept {
      return self->stop_.stop_possible() ? self->signal_.slot() : cancellation_slot_type();
    }
    template <class... A>
    void operator()(A&&... a) {
      self->result_.emplace(std::forward<A>(a)...);
      h.resume();
    }
  };

  Initiation init_;
  InitArgs args_;
  std::stop_token stop_;
  asio::cancellation_signal signal_;
  std::optional<std::stop_callback<canceller>> on_stop_;
  /// Set by a canceller that ran on another thread (at most once: a stop fires once).
  std::shared_ptr<relay> relay_;
  /// The thread that awaits, which (see Affinity) is the one running the operation.
  std::thread::id home_thread_;
  std::optional<std::tuple<std::decay_t<Args>...>> result_;
};

}  // namespace detail
}  // namespace droid

template <class... Args>
class asio::async_result<droid::use_task_t, void(Args...)> {
 public:
  template <class Initiation, class... InitArgs>
  static auto initiate(Initiation&& init, droid::use_task_t token, InitArgs&&... args) {
    using args_tuple = std::tuple<std::decay_t<InitArgs>...>;
    return droid::detail::async_op_awaiter<std::decay_t<Initiation>, args_tuple, Args...>(
        std::forward<Initiation>(init), std::move(token.stop), args_tuple(std::forward<InitArgs>(args)...));
  }
};
