// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::deadline`: a stop token that is requested when a time limit passes.
///
/// Application layer. Nothing in the framework imposes a timeout on an exchange (the
/// client may be a person filling in a form); a tool that wants one races its await
/// against a deadline by passing this token, and every awaitable that honours a stop
/// token (`ctx.exchange`, `use_task(token)` on any Asio operation) then completes as
/// cancelled when time runs out:
///
///     droid::deadline limit(ctx.executor(), std::chrono::seconds(30));
///     auto answer = co_await ctx.exchange("elicitation/create", params, limit.token());
///     if (!answer && limit.expired()) co_return droid::tool_result::error("no answer in 30 s");
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>

namespace droid {

/// A stop source requested by a timer.
///
/// Why a timer and a stop token rather than a `when_any`: the losing operation must
/// leave its table (docs/conventions.md#coroutines-and-awaiters), and a stop token is the
/// one cancellation path every droid awaiter already honours; a generic race would need
/// each awaiter to support abandonment as well.
/// Affinity: the executor's thread (the tool's shard). Lifetime: destroying the deadline
/// disarms it; a token taken from it stays valid (and simply never stops).
class deadline {
 public:
  /// Arms a timer on `executor` that requests the stop once `limit` has passed.
  deadline(const asio::any_io_executor& executor, std::chrono::steady_clock::duration limit)
      : state_(std::make_shared<state>()), timer_(executor, limit) {
    timer_.async_wait([s = state_](const std::error_code& ec) {
      if (ec) return;  // disarmed
      s->expired = true;
      s->source.request_stop();
    });
  }
  ~deadline() { timer_.cancel(); }
  deadline(const deadline&) = delete;
  deadline& operator=(const deadline&) = delete;

  /// Requested when the limit passes.
  [[nodiscard]] std::stop_token token() const noexcept { return state_->source.get_token(); }
  /// True once the limit has passed.
  [[nodiscard]] bool expired() const noexcept { return state_->expired; }

 private:
  struct state {
    std::stop_source source;
    bool expired = false;
  };
  std::shared_ptr<state> state_;
  asio::steady_timer timer_;
};

}  // namespace droid
