// SPDX-License-Identifier: BSL-1.0
/// @file
/// The end of a JSON answer, on the connection's shard or posted there.
#include "json_answer.hpp"

#include <asio/post.hpp>

namespace droid::http::detail {

void json_answer::finish() {
  if (ended_) return;
  ended_ = true;
  held_.reset();
  if (!remote_) {
    finished_ = true;
    wake();
    return;
  }
  // On the engine's shard: the connection's state is touched on its own, after this post
  // (which orders the answer written above before the connection reads it).
  asio::post(home_, [self = shared_from_this()] {
    self->finished_ = true;
    if (self->waiter_) std::exchange(self->waiter_, nullptr).resume();
  });
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
