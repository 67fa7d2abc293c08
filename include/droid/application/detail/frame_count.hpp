// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one allocation hook for every `droid::task` frame, and the live-frame counter.
///
/// Application layer, detail: visible to headers, not API. Why a hook: frame recycling
/// (a per-thread cache, lib/application/detail/frame_count.cpp) lives here alone. Why
/// the counter: "no coroutine frame may leak" is a property tests assert after every
/// scenario, and only a count of live frames can show it.
#pragma once

#include <cstddef>
#include <new>

namespace droid::detail {

/// Memory for one frame of `size` bytes: from this thread's cache of freed frames when it
/// holds a block of the size class and recycling is on, otherwise from `::operator new`.
/// Counts the frame as live.
///
/// Why a cache: every tools/call creates and destroys three frames (the driver, the
/// dispatcher's wrapper and the tool), and taking them from the allocator each time was
/// a measurable share of a call (bench/engine). Asio's per-thread handler recycling is
/// the model; ours is not tied to an io_context, because frames are created outside
/// `run()` (a session's `receive` from a transport, a test's direct call).
[[nodiscard]] void* allocate_frame(std::size_t size);
/// Returns a frame's memory; `size` must be what was passed to `allocate_frame`. Counts the
/// frame as gone.
void deallocate_frame(void* p, std::size_t size) noexcept;

/// Whether freed frames are kept for reuse (default: yes, except under AddressSanitizer,
/// whose quarantine is what reveals a coroutine resumed after its frame was destroyed;
/// a cache would hand that block to the next frame and hide the bug). Tests switch it
/// on to exercise the cache under the sanitizers; switching at any time is safe.
[[nodiscard]] bool frame_recycling() noexcept;
void set_frame_recycling(bool on) noexcept;

/// Base of every promise: routes frame allocation through one place and counts it.
struct frame_allocation {
  static void* operator new(std::size_t size) { return allocate_frame(size); }
  // The sized form: a coroutine's frame is freed with the size it was allocated with,
  // which names its size class without a header in the block.
  static void operator delete(void* p, std::size_t size) noexcept { deallocate_frame(p, size); }
};

}  // namespace droid::detail

namespace droid {

/// The number of coroutine frames of `droid::task` alive right now, in this process.
///
/// Each thread counts the frames it creates and frees in its own counter, which no other
/// thread writes, and this sums them: a frame costs no shared write, however many shards
/// run. Exact when the threads that touched frames are synchronised with the caller
/// (joined, or done with work the caller waited for), which is when tests and shutdown
/// ask; a snapshot otherwise.
[[nodiscard]] long live_frames() noexcept;

}  // namespace droid
