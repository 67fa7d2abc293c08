// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-thread cache of freed coroutine frames behind `detail::allocate_frame`.
///
///     size class k (k = 0..15) holds blocks of (k + 1) * 64 bytes, at most 8 of them
///     allocate:   class has a block?  pop it          : ::operator new(class size)
///     deallocate: recycling, room?    push it         : ::operator delete(class size)
///     frames over 1 KiB bypass the classes and go to the allocator as they are
///
/// Why rounded even when the cache is off: a block's size is recomputed from the frame
/// size on both sides, so a block allocated with recycling off may be cached after it is
/// switched on (and the reverse), and the sized delete always sees the size it was
/// allocated with.
/// Why per thread with no lock: a frame is created and destroyed on its session's shard;
/// one freed on another thread (offloaded work) simply joins that thread's cache.
/// Bound: 16 classes x 8 blocks, at most about 68 KiB per thread, freed at thread exit.
#include <droid/application/detail/frame_count.hpp>

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define DROID_FRAME_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DROID_FRAME_ASAN 1
#endif
#endif

#if defined(DROID_FRAME_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace droid::detail {
namespace {

constexpr std::size_t granule = 64;
constexpr std::size_t classes = 16;
constexpr std::size_t depth = 8;

#if defined(DROID_FRAME_ASAN)
constexpr bool recycle_by_default = false;
// A cached block is poisoned, so that touching a destroyed frame that sits in the cache
// is still reported (as use-after-poison) when a test has recycling on.
void poison(void* p, std::size_t n) noexcept { ASAN_POISON_MEMORY_REGION(p, n); }
void unpoison(void* p, std::size_t n) noexcept { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
constexpr bool recycle_by_default = true;
void poison(void*, std::size_t) noexcept {}
void unpoison(void*, std::size_t) noexcept {}
#endif

std::atomic<bool> recycling{recycle_by_default};

void release(void* p, std::size_t size) noexcept {
  // clang 14 leaves sized deallocation off unless asked (-fsized-deallocation).
#if defined(__cpp_sized_deallocation)
  ::operator delete(p, size);
#else
  (void)size;
  ::operator delete(p);
#endif
}

/// Blocks kept for reuse on one thread, by size class.
///
/// `alive` turns false in the destructor: a frame destroyed later on the same thread (by
/// another thread_local's or a static's destructor) then goes straight to the allocator
/// instead of into a cache nobody will free.
struct frame_cache {
  void* blocks[classes][depth];
  std::uint8_t count[classes];
  bool alive;

  ~frame_cache() {
    alive = false;
    for (std::size_t k = 0; k < classes; ++k) {
      while (count[k] > 0) {
        void* p = blocks[k][--count[k]];
        unpoison(p, (k + 1) * granule);
        release(p, (k + 1) * granule);
      }
    }
  }
};

// Constant-initialised (zeroes, then `alive`): no initialisation guard on the hot path.
constinit thread_local frame_cache cache{{}, {}, true};

}  // namespace

void* allocate_frame(std::size_t size) {
  const std::size_t k = (size - 1) / granule;
  if (k >= classes) return ::operator new(size);
  const std::size_t rounded = (k + 1) * granule;
  frame_cache& c = cache;
  if (c.count[k] > 0) {
    void* p = c.blocks[k][--c.count[k]];
    unpoison(p, rounded);
    return p;
  }
  return ::operator new(rounded);
}

void deallocate_frame(void* p, std::size_t size) noexcept {
  const std::size_t k = (size - 1) / granule;
  if (k >= classes) {
    release(p, size);
    return;
  }
  const std::size_t rounded = (k + 1) * granule;
  frame_cache& c = cache;
  if (c.alive && c.count[k] < depth && recycling.load(std::memory_order_relaxed)) {
    poison(p, rounded);
    c.blocks[k][c.count[k]++] = p;
    return;
  }
  release(p, rounded);
}

bool frame_recycling() noexcept { return recycling.load(std::memory_order_relaxed); }
void set_frame_recycling(bool on) noexcept { recycling.store(on, std::memory_order_relaxed); }

}  // namespace droid::detail
