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
#pragma once

#include <coroutine>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

#include <asio/async_result.hpp>
#include <asio/cancellation_signal.hpp>

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
/// thread can run it meanwhile.
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
    if (stop_.stop_possible()) on_stop_.emplace(stop_, canceller{&signal_});
  }

  typename op_result<Args...>::type await_resume() {
    on_stop_.reset();
    if constexpr (sizeof...(Args) == 0) {
      return;
    } else if constexpr (sizeof...(Args) == 1) {
      return std::move(std::get<0>(*result_));
    } else {
      return std::move(*result_);
    }
  }

 private:
  struct canceller {
    asio::cancellation_signal* signal;
    void operator()() const noexcept { signal->emit(asio::cancellation_type::total); }
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
