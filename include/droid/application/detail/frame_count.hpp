// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one allocation hook for every `droid::task` frame, and the live-frame counter.
///
/// Application layer, detail: visible to headers, not API. Why a hook: frame recycling
/// (a per-thread cache, lib/application/detail/frame_count.cpp) lives here alone. Why
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

/// Memory for one frame of `size` bytes: from this thread's cache of freed frames when it
/// holds a block of the size class and recycling is on, otherwise from `::operator new`.
///
/// Why a cache: every tools/call creates and destroys three frames (the driver, the
/// dispatcher's wrapper and the tool), and taking them from the allocator each time was
/// a measurable share of a call (bench/engine). Asio's per-thread handler recycling is
/// the model; ours is not tied to an io_context, because frames are created outside
/// `run()` (a session's `receive` from a transport, a test's direct call).
[[nodiscard]] void* allocate_frame(std::size_t size);
/// Returns a frame's memory; `size` must be what was passed to `allocate_frame`.
void deallocate_frame(void* p, std::size_t size) noexcept;

/// Whether freed frames are kept for reuse (default: yes, except under AddressSanitizer,
/// whose quarantine is what reveals a coroutine resumed after its frame was destroyed;
/// a cache would hand that block to the next frame and hide the bug). Tests switch it
/// on to exercise the cache under the sanitizers; switching at any time is safe.
[[nodiscard]] bool frame_recycling() noexcept;
void set_frame_recycling(bool on) noexcept;

/// Base of every promise: routes frame allocation through one place and counts it.
struct frame_allocation {
  static void* operator new(std::size_t size) {
    void* p = allocate_frame(size);
    live_frames.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  // The sized form: a coroutine's frame is freed with the size it was allocated with,
  // which names its size class without a header in the block.
  static void operator delete(void* p, std::size_t size) noexcept {
    live_frames.fetch_sub(1, std::memory_order_relaxed);
    deallocate_frame(p, size);
  }
};

}  // namespace droid::detail

namespace droid {

/// The number of coroutine frames of `droid::task` alive right now.
[[nodiscard]] inline long live_frames() noexcept {
  return detail::live_frames.load(std::memory_order_relaxed);
}

}  // namespace droid
