// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::retention_budget`: the bytes of answers and events that all sessions together
/// keep for resumption, and each tenant's share of them.
///
/// Why: each session's ring is bounded (`http::options::event_ring_bytes`, 8 MiB), but a
/// tenant may hold a thousand sessions, and the server ten thousand: without a budget
/// across them, one tenant could make the server keep gigabytes it will never be asked
/// for. Secondary adapter beside the in-memory event store, which charges it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace droid {

/// A byte budget shared by every in-memory event store of a listener.
///
/// Affinity: any thread. Stores on every shard charge it for each event they keep, so the
/// counts are atomics; the table of tenants is locked only when a session begins or
/// ends. Lifetime: shared; every account keeps its budget alive.
class retention_budget : public std::enable_shared_from_this<retention_budget> {
 public:
  /// One tenant's share: what its sessions' stores charge. Shared by those stores, and
  /// removed from the budget's table when the last of them goes.
  class account {
   public:
    /// Made by `retention_budget::open`, which keeps one account per live tenant.
    account(std::shared_ptr<retention_budget> budget, std::string tenant)
        : budget_(std::move(budget)), tenant_(std::move(tenant)) {}
    ~account();
    account(const account&) = delete;
    account& operator=(const account&) = delete;

    /// Takes `n` bytes from the tenant's share and the server's budget; false (taking
    /// nothing) when either would be exceeded.
    [[nodiscard]] bool charge(std::size_t n) noexcept;
    /// Gives back `n` bytes a store no longer keeps.
    void refund(std::size_t n) noexcept;
    /// Notes an event that was evicted or not kept because a budget was full.
    void note_squeezed() noexcept;
    /// Bytes this tenant's stores keep now.
    [[nodiscard]] std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }

   private:
    std::shared_ptr<retention_budget> budget_;
    std::string tenant_;
    std::atomic<std::size_t> used_{0};
  };

  /// `total`: the bytes all stores may keep together; `per_tenant`: one tenant's share
  /// of them. 0: that limit is off.
  retention_budget(std::size_t total, std::size_t per_tenant) : total_(total), per_tenant_(per_tenant) {}

  /// The account of `tenant` (the same one for every session of the tenant while any of
  /// them lives).
  [[nodiscard]] std::shared_ptr<account> open(const std::string& tenant);

  /// Bytes kept now, server-wide.
  [[nodiscard]] std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  /// Events evicted early or not kept because a budget was full, since the start.
  [[nodiscard]] std::size_t squeezed() const noexcept { return squeezed_.load(std::memory_order_relaxed); }
  /// Tenants with an account (what the table must not grow past the live sessions').
  [[nodiscard]] std::size_t tenants();

 private:
  std::size_t total_;
  std::size_t per_tenant_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> squeezed_{0};
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<account>> accounts_;
};

}  // namespace droid
