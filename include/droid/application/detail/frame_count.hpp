// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one allocation hook for every `droid::task` frame, and the live-frame counter.
///
/// Application layer, detail: visible to headers, not API. Why a hook: frame recycling
/// (Asio's per-thread cache) can be added here alone once a benchmark shows it pays. Why
/// the counter: "no coroutine frame may leak" is a property tests assert after every
/// scenario, and only a count of live frames can show it.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

namespace droid::detail {

/// Live `task` frames in this process (all threads).
///
/// Relaxed: tests read it only after the threads that touched frames have joined or the
/// io_context has stopped, so no ordering beyond the count itself is needed.
inline std::atomic<long> live_frames{0};

/// Base of every promise: routes frame allocation through one place and counts it.
struct frame_allocation {
  static void* operator new(std::size_t size) {
    void* p = ::operator new(size);
    live_frames.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  static void operator delete(void* p, std::size_t size) noexcept {
    live_frames.fetch_sub(1, std::memory_order_relaxed);
    // clang 14 leaves sized deallocation off unless asked (-fsized-deallocation).
#if defined(__cpp_sized_deallocation)
    ::operator delete(p, size);
#else
    (void)size;
    ::operator delete(p);
#endif
  }
};

}  // namespace droid::detail

namespace droid {

/// The number of coroutine frames of `droid::task` alive right now.
[[nodiscard]] inline long live_frames() noexcept {
  return detail::live_frames.load(std::memory_order_relaxed);
}

}  // namespace droid
