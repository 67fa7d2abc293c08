// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::testing::run`: runs a task to its end on an io_context and returns its value,
/// the blocking step between a plain test case and the coroutines it tests.
///
/// Primary adapter (testing), on its own so that a test needing only this does not pull in
/// the whole server API with `client.hpp`.
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <asio/io_context.hpp>

#include <droid/application/spawn.hpp>
#include <droid/application/task.hpp>

namespace droid::testing {

/// Runs `work` on `io` until it completes and returns its value, or rethrows what it
/// threw: the blocking helper for a plain test case. Throws `std::runtime_error` when
/// `io` runs out of work first (the task waits for something that will never come).
template <class T>
T run(asio::io_context& io, task<T> work) {
  std::exception_ptr failure;
  std::optional<std::conditional_t<std::is_void_v<T>, int, T>> value;
  bool done = false;
  if constexpr (std::is_void_v<T>) {
    spawn(io.get_executor(), std::move(work), [&](std::exception_ptr e) {
      failure = e;
      value.emplace(0);
      done = true;
    });
  } else {
    spawn(io.get_executor(), std::move(work), [&](std::exception_ptr e, T v) {
      failure = e;
      value.emplace(std::move(v));
      done = true;
    });
  }
  io.restart();
  while (!done && io.run_one() > 0) {
  }
  if (failure) std::rethrow_exception(failure);
  if (!done) throw std::runtime_error("droid::testing::run: the task did not complete (the io_context ran out of work)");
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

}  // namespace droid::testing
