// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-thread cache of freed coroutine frames behind `detail::allocate_frame`.
///
///     size class k (k = 0..31) holds blocks of (k + 1) * 64 bytes, at most 8 of them
///     (4 from 1 KiB up)
///     allocate:   class has a block?  pop it          : ::operator new(class size)
///     deallocate: recycling, room?    push it         : ::operator delete(class size)
///     frames over 2 KiB bypass the classes and go to the allocator as they are
///
/// Why rounded even when the cache is off: a block's size is recomputed from the frame
/// size on both sides, so a block allocated with recycling off may be cached after it is
/// switched on (and the reverse), and the sized delete always sees the size it was
/// allocated with.
/// Why per thread with no lock: a frame is created and destroyed on its session's shard;
/// one freed on another thread (offloaded work) simply joins that thread's cache.
/// Bound: 16 classes x 8 blocks up to 1 KiB and 16 x 4 up to 2 KiB, at most about 168 KiB
/// per thread, freed at thread exit. Why up to 2 KiB: the HTTP transport's handlers that
/// take a request through admission and into its session keep more locals than 1 KiB,
/// and two frames of that size went to `malloc` on every request (the bench's callgrind
/// section: about 300 instructions).
///
/// The live-frame count lives in the same per-thread object: each thread writes its own
/// counter (a plain store, no shared cache line) and `live_frames()` sums the enrolled
/// threads' counters with what exited threads left behind.
#include <droid/application/detail/frame_count.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

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
constexpr std::size_t classes = 32;
constexpr std::size_t depth = 8;
/// How many blocks class `k` keeps: fewer of the large ones, which are fewer per request.
constexpr std::size_t depth_of(std::size_t k) noexcept { return k < 16 ? depth : depth / 2; }

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

struct frame_cache;

/// The threads whose counters `live_frames()` sums, and what ended threads left.
///
/// Why a function-local static: a thread may enrol while other statics are still being
/// constructed (a frame made during static initialisation), and one that ends after
/// main has returned must still find it. Never destroyed, for the same reason.
struct frame_census {
  std::mutex mutex;
  std::vector<frame_cache*> threads;
  /// Frames counted by threads that have ended (a frame created on one thread and
  /// destroyed on another leaves +1 on one and -1 on the other; only the sum means much).
  std::atomic<long> retired{0};
};
frame_census& census() {
  static frame_census* const c = new frame_census();
  return *c;
}

/// Where a thread's cache is in its life. `fresh` until the thread's first frame enrols
/// it, `ready` while it caches and counts, `gone` once the thread is ending.
enum class cache_state : std::uint8_t { fresh, ready, gone };

/// Blocks kept for reuse on one thread, by size class, and the thread's frame count.
///
/// Trivially destructible on purpose: a `thread_local` with a destructor is reached
/// through a guard that registers the destructor on first use, on every access, and
/// every frame of every request touches this object twice. The destructor's work lives
/// in `cache_owner` instead, whose guard only the thread's first frame pays.
/// Once `gone`, a frame destroyed later on the same thread (by another thread_local's or
/// a static's destructor) goes straight to the allocator instead of into a cache nobody
/// will free, and is counted in the census directly.
struct frame_cache {
  void* blocks[classes][depth];
  std::uint8_t count[classes];
  cache_state state;
  /// Frames this thread created minus those it destroyed. Atomic only so that
  /// `live_frames()` may read it from another thread; this thread alone writes it.
  std::atomic<long> live;

  /// Returns every cached block to the allocator and leaves the count to the census.
  void retire() noexcept {
    frame_census& c = census();
    {
      std::lock_guard lock(c.mutex);
      c.retired.fetch_add(live.load(std::memory_order_relaxed), std::memory_order_relaxed);
      std::erase(c.threads, this);
    }
    state = cache_state::gone;
    for (std::size_t k = 0; k < classes; ++k) {
      while (count[k] > 0) {
        void* p = blocks[k][--count[k]];
        unpoison(p, (k + 1) * granule);
        release(p, (k + 1) * granule);
      }
    }
  }
};

static_assert(std::is_trivially_destructible_v<frame_cache>, "a destructor puts a guard on every frame");

// Constant-initialised (zeroes, `fresh`) and trivially destructible: no guard at all.
constinit thread_local frame_cache cache{};

/// Retires this thread's cache when the thread ends; created by the thread's first frame.
struct cache_owner {
  bool armed = false;
  ~cache_owner() {
    if (armed) cache.retire();
  }
};
thread_local cache_owner owner;

/// The first frame of a thread, or a frame counted while the thread ends: kept out of
/// line so that the hot path is a compare and a store.
[[gnu::noinline]] void count_rarely(frame_cache& c, long n) noexcept {
  if (c.state == cache_state::gone) {
    census().retired.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  owner.armed = true;  // the first use of `owner` on this thread registers its destructor
  {
    frame_census& census_ = census();
    std::lock_guard lock(census_.mutex);
    census_.threads.push_back(&c);
  }
  c.state = cache_state::ready;
  c.live.store(n, std::memory_order_relaxed);
}

inline void count(frame_cache& c, long n) noexcept {
  if (c.state == cache_state::ready) [[likely]] {
    c.live.store(c.live.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    return;
  }
  count_rarely(c, n);
}

}  // namespace

void* allocate_frame(std::size_t size) {
  frame_cache& c = cache;
  const std::size_t k = (size - 1) / granule;
  void* p;
  if (k < classes && c.count[k] > 0) {
    p = c.blocks[k][--c.count[k]];
    unpoison(p, (k + 1) * granule);
  } else {
    p = ::operator new(k < classes ? (k + 1) * granule : size);
  }
  count(c, 1);  // after the allocation: a frame that failed to allocate was never live
  return p;
}

void deallocate_frame(void* p, std::size_t size) noexcept {
  frame_cache& c = cache;
  count(c, -1);
  const std::size_t k = (size - 1) / granule;
  if (k >= classes) {
    release(p, size);
    return;
  }
  const std::size_t rounded = (k + 1) * granule;
  if (c.state == cache_state::ready && c.count[k] < depth_of(k) && recycling.load(std::memory_order_relaxed)) {
    poison(p, rounded);
    c.blocks[k][c.count[k]++] = p;
    return;
  }
  release(p, rounded);
}

bool frame_recycling() noexcept { return recycling.load(std::memory_order_relaxed); }
void set_frame_recycling(bool on) noexcept { recycling.store(on, std::memory_order_relaxed); }

}  // namespace droid::detail

namespace droid {

long live_frames() noexcept {
  detail::frame_census& c = detail::census();
  std::lock_guard lock(c.mutex);
  long sum = c.retired.load(std::memory_order_relaxed);
  for (const detail::frame_cache* t : c.threads) sum += t->live.load(std::memory_order_relaxed);
  return sum;
}

}  // namespace droid
