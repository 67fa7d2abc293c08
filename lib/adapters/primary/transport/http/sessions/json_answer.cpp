// SPDX-License-Identifier: BSL-1.0
/// @file
/// The end of a JSON answer served on the connection's own shard.
#include "json_answer.hpp"

#include <asio/post.hpp>

namespace droid::http::detail {

void json_answer::finish() {
  if (finished_) return;
  finished_ = true;
  held_.reset();
  wake();
}

void json_answer::hang_up() noexcept {
  hung_up_ = true;
  wake();
}

void json_answer::wake() noexcept {
  if (!waiter_) return;
  asio::post(home_, [h = std::exchange(waiter_, nullptr)] { h.resume(); });
}

}  // namespace droid::http::detail
