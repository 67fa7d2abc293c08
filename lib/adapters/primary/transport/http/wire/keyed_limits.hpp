// SPDX-License-Identifier: BSL-1.0
/// @file
/// A count per key with a limit, held by slots: what bounds each tenant's share of the
/// listener (requests in progress, connections). Primary adapter, private; knows no MCP.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace droid::http::detail {

/// Counts what each caller holds at once (requests in progress per principal and per
/// address, connections per address) and refuses past a limit.
///
/// Why striped maps and not one: every request on every shard takes a slot and gives it
/// back, and one mutex would be a point all shards queue on; sixteen stripes keyed by
/// the caller's hash make a collision of two busy callers rare.
/// Why an entry outlives its count reaching zero: a client that sends one request at a
/// time takes its count from 0 to 1 and back on every request, and erasing the entry
/// each time made every request pay a node allocation, a free and a second lookup
/// (bench callgrind section). Idle entries are swept when a stripe has grown to twice
/// what the last sweep left (at least 64), so a stripe holds at most about twice its
/// callers with requests in progress, plus 64.
/// Why counts are atomic: a slot is given back, and one taken through a `key_hold`, with
/// no lock; the stripe's mutex guards the map (finding, adding, sweeping entries).
class keyed_limits {
  struct stripe;
  struct entry;
  using stripes = std::array<stripe, 16>;

 public:
  keyed_limits();

  /// A place held by one request or one connection; given back when destroyed. It keeps
  /// the counts alive: a call whose client hung up holds its slot until the call ends,
  /// which may be after the listener that counted it is gone.
  class slot {
   public:
    slot() = default;
    slot(slot&& o) noexcept : owner_(std::move(o.owner_)), count_(std::exchange(o.count_, nullptr)) {}
    slot& operator=(slot&&) = delete;
    slot(const slot&) = delete;
    ~slot();

   private:
    friend class keyed_limits;
    std::shared_ptr<stripes> owner_;
    /// The caller's count in its stripe's map: a node the map keeps in place, and that
    /// no sweep erases while this slot holds it above zero.
    std::atomic<std::size_t>* count_ = nullptr;
  };

  /// One caller's entry, kept from the sweep while this lives, so that slots for that
  /// caller are taken with no hashing and no lock. Why: a connection's own address is
  /// the same for every request on it, and looking it up again per request (two hashes
  /// of the key, a lock and an unlock on each side, the key built as a string) was about
  /// 700 instructions of every request (bench callgrind section), with every shard's
  /// requests from one address meeting on one stripe's mutex.
  class key_hold {
   public:
    key_hold() = default;
    key_hold(key_hold&& o) noexcept
        : owner_(std::move(o.owner_)), stripe_(std::exchange(o.stripe_, nullptr)),
          entry_(std::exchange(o.entry_, nullptr)), key_(std::exchange(o.key_, nullptr)) {}
    key_hold& operator=(key_hold&& o) noexcept;
    key_hold(const key_hold&) = delete;
    ~key_hold() { release(); }
    [[nodiscard]] explicit operator bool() const noexcept { return entry_ != nullptr; }
    /// The key held (valid while this lives).
    [[nodiscard]] const std::string& key() const noexcept { return *key_; }

   private:
    friend class keyed_limits;
    void release() noexcept;
    std::shared_ptr<stripes> owner_;
    stripe* stripe_ = nullptr;
    entry* entry_ = nullptr;
    const std::string* key_ = nullptr;
  };

  /// Takes a slot for `key` unless `limit` are taken already (0: no limit, no slot).
  [[nodiscard]] bool acquire(std::string key, std::size_t limit, slot& out);
  /// Holds `key`'s entry (made if absent) for `acquire(const key_hold&, ...)`.
  [[nodiscard]] key_hold hold(std::string key);
  /// As `acquire(key, ...)`, for a key held by `held` (made by this object's `hold`).
  [[nodiscard]] bool acquire(const key_hold& held, std::size_t limit, slot& out);
  /// How many callers the stripes hold entries for, idle ones included (what the sweep
  /// bounds; tests read it).
  [[nodiscard]] std::size_t entries();

 private:
  struct entry {
    std::atomic<std::size_t> count{0};
    /// `key_hold`s of this entry (under the stripe's mutex): a held entry is not swept.
    std::size_t holds = 0;
  };
  struct stripe {
    std::mutex mutex;
    std::unordered_map<std::string, entry> counts;
    /// The map's size at which idle entries are swept next.
    std::size_t sweep_at = 64;
  };
  stripe& stripe_of(const std::string& key);
  /// Finds or adds `key`'s entry, sweeping idle ones first when the stripe has grown.
  /// Under `s.mutex`.
  static std::pair<const std::string, entry>& find_or_add(stripe& s, std::string key);
  /// Counts one more against `limit` on `e`; false, counting nothing, when it is reached.
  static bool take(entry& e, std::size_t limit) noexcept;
  std::shared_ptr<stripes> stripes_;
};

}  // namespace droid::http::detail
