// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dispatch_on` and `post_on`: hand a function to a shard through an `any_io_executor`
/// without paying for the type erasure when the shard is an io_context.
///
/// HTTP adapter, private. Why: `asio::dispatch` on an
/// `any_io_executor` queries the blocking property, wraps the function in a type-erased
/// function object (a recycled allocation) and calls through it, even when it then runs
/// the function inline on the caller's thread. A request's response sink is handed
/// events, its end and its verdict that way, and the bench's callgrind profile counted
/// about 1,000 instructions a request in that machinery alone. Every shard is an
/// io_context, so the concrete executor is looked up (one type comparison) and used
/// directly: inline when already on its thread, one operation posted otherwise. Any
/// other executor still works, through the erased path.
#pragma once

#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/dispatch.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

namespace droid::http::detail {

/// Runs `f` on `ex`'s thread: at once when the caller is already there, posted otherwise.
template <class F>
void dispatch_on(const asio::any_io_executor& ex, F&& f) {
  if (const auto* io = ex.target<asio::io_context::executor_type>()) {
    asio::dispatch(*io, std::forward<F>(f));
  } else {
    asio::dispatch(ex, std::forward<F>(f));
  }
}

/// True when the caller runs on `ex`'s thread, where `dispatch_on` would run a function
/// inline: a caller that can act directly then builds no closure (and takes no reference
/// on what the closure would have had to keep alive). False for any executor that is
/// not an io_context's.
[[nodiscard]] inline bool runs_here(const asio::any_io_executor& ex) noexcept {
  const auto* io = ex.target<asio::io_context::executor_type>();
  return io && io->running_in_this_thread();
}

/// Queues `f` to run on `ex`'s thread, never inline.
template <class F>
void post_on(const asio::any_io_executor& ex, F&& f) {
  if (const auto* io = ex.target<asio::io_context::executor_type>()) {
    asio::post(*io, std::forward<F>(f));
  } else {
    asio::post(ex, std::forward<F>(f));
  }
}

}  // namespace droid::http::detail
