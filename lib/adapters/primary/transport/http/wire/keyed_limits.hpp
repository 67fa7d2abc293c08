// SPDX-License-Identifier: BSL-1.0
/// @file
/// A count per key with a limit, held by slots: what bounds each tenant's share of the
/// listener (requests in progress, connections). Primary adapter, private; knows no MCP.
#pragma once

#include <array>
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
class keyed_limits {
  struct stripe;
  using stripes = std::array<stripe, 16>;

 public:
  keyed_limits();

  /// A place held by one request or one connection; given back when destroyed. It keeps
  /// the counts alive: a call whose client hung up holds its slot until the call ends,
  /// which may be after the listener that counted it is gone.
  class slot {
   public:
    slot() = default;
    slot(slot&& o) noexcept
        : owner_(std::move(o.owner_)), stripe_(std::exchange(o.stripe_, nullptr)),
          count_(std::exchange(o.count_, nullptr)) {}
    slot& operator=(slot&&) = delete;
    slot(const slot&) = delete;
    ~slot();

   private:
    friend class keyed_limits;
    std::shared_ptr<stripes> owner_;
    stripe* stripe_ = nullptr;
    /// The caller's count in its stripe's map: a node the map keeps in place, and that
    /// no sweep erases while this slot holds it above zero.
    std::size_t* count_ = nullptr;
  };

  /// Takes a slot for `key` unless `limit` are taken already (0: no limit, no slot).
  [[nodiscard]] bool acquire(std::string key, std::size_t limit, slot& out);
  /// How many callers the stripes hold entries for, idle ones included (what the sweep
  /// bounds; tests read it).
  [[nodiscard]] std::size_t entries();

 private:
  struct stripe {
    std::mutex mutex;
    std::unordered_map<std::string, std::size_t> counts;
    /// The map's size at which idle entries are swept next.
    std::size_t sweep_at = 64;
  };
  stripe& stripe_of(const std::string& key);
  std::shared_ptr<stripes> stripes_;
};

}  // namespace droid::http::detail
