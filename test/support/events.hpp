// SPDX-License-Identifier: BSL-1.0
/// @file
/// Test support for the tests that run a real listener on threads of its own: a count a
/// tool (or any server-side hook) raises and the test thread waits on, and an event store
/// that says when a session let go of it. The waits end on the event itself; their limit is
/// only a failure guard (docs/conventions.md#tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include <droid/adapters/secondary/event_store/event_store.hpp>

namespace droid::test {

/// How long a wait on an event may take before the test gives up on it. Why so long: it
/// is never reached when the code is right (the wait ends on the event), and under
/// ThreadSanitizer on a loaded two-core machine a listener can take seconds to get round.
inline constexpr std::chrono::seconds event_guard{20};

/// A count raised from any thread, which a test waits on until it reaches a value.
///
/// Why not an atomic polled with sleeps: a poll waits for its period after the event and
/// gives up at a wall-clock limit that a slow machine can reach, so a test that polls is
/// both slower and flakier than one that is woken by the event.
/// Affinity: any thread. Lifetime: must outlive whatever raises it (a fixture member
/// declared before the listener).
class event_count {
 public:
  /// Adds one and wakes the waiters.
  void raise() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  /// The count now.
  [[nodiscard]] int value() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  /// Waits until the count is at least `n`; false when `guard` passed first.
  bool wait_for(int n, std::chrono::milliseconds guard = event_guard) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, guard, [&] { return count_ >= n; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  int count_ = 0;
};

/// An `http::options::event_store` factory whose stores count themselves: `made` is
/// raised when a session gets one, `released` when it is destroyed.
///
/// Why: a store lives exactly as long as its session's entry, which the listener drops
/// only once the session is out of its table; so `released` reaching `made` means every
/// session made is gone and `listener::sessions()` already says so. That is the event a
/// reaper test waits on: the reaper's work is otherwise visible only in that count.
/// Lifetime: the counts are shared, so the factory may outlive the test's copy.
struct counted_stores {
  std::shared_ptr<event_count> made = std::make_shared<event_count>();
  std::shared_ptr<event_count> released = std::make_shared<event_count>();

  /// The factory for `http::options::event_store`: a default ring per session.
  [[nodiscard]] event_store_factory factory() const {
    return [made = made, released = released]() -> std::unique_ptr<event_store> {
      made->raise();
      return std::make_unique<store>(released);
    };
  }

 private:
  /// The default in-memory ring, raising `released` when it goes.
  class store final : public event_store {
   public:
    explicit store(std::shared_ptr<event_count> released) : released_(std::move(released)) {}
    ~store() override { released_->raise(); }
    store(const store&) = delete;
    store& operator=(const store&) = delete;
    void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) override {
      ring_.append(stream, seq, data);
    }
    bool replay(std::uint64_t stream, std::uint64_t after_seq,
                const std::function<void(std::uint64_t seq, std::string_view data)>& f) const override {
      return ring_.replay(stream, after_seq, f);
    }
    void finish(std::uint64_t stream, std::uint64_t last_seq) override { ring_.finish(stream, last_seq); }

   private:
    std::shared_ptr<event_count> released_;
    memory_event_store ring_{1024};
  };
};

/// Polls `done` until it holds, for at most `guard`: only for a count the code under test
/// keeps to itself and no event announces (a connection object freed a few steps after its
/// socket closed, a task's frame let go after its record ended). Every use says why it has
/// nothing to wait on; everything else waits on an `event_count` or on the socket.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds guard = event_guard) {
  const auto deadline = std::chrono::steady_clock::now() + guard;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace droid::test
