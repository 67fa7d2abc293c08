// SPDX-License-Identifier: BSL-1.0
/// @file
/// The budget of bytes kept for resumption (retention_budget.hpp).
#include <droid/adapters/secondary/event_store/retention_budget.hpp>

namespace droid {

retention_budget::account::~account() {
  // The stores that charged this account gave their bytes back as they went; what is
  // left (none, unless a store leaked) leaves the server's count with the account.
  budget_->used_.fetch_sub(used_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::lock_guard lock(budget_->mutex_);
  // Another session of the tenant may have opened a fresh account since this one's last
  // owner let go (the weak pointer had expired): that entry is not this account's.
  if (auto it = budget_->accounts_.find(tenant_); it != budget_->accounts_.end() && it->second.expired())
    budget_->accounts_.erase(it);
}

bool retention_budget::account::charge(std::size_t n) noexcept {
  // Optimistic: add, then take it back if a limit was crossed. Two stores racing near a
  // limit may both be refused where one would have fitted; neither can exceed it.
  retention_budget& b = *budget_;
  const std::size_t mine = used_.fetch_add(n, std::memory_order_relaxed) + n;
  if (b.per_tenant_ != 0 && mine > b.per_tenant_) {
    used_.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  const std::size_t all = b.used_.fetch_add(n, std::memory_order_relaxed) + n;
  if (b.total_ != 0 && all > b.total_) {
    b.used_.fetch_sub(n, std::memory_order_relaxed);
    used_.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void retention_budget::account::refund(std::size_t n) noexcept {
  used_.fetch_sub(n, std::memory_order_relaxed);
  budget_->used_.fetch_sub(n, std::memory_order_relaxed);
}

void retention_budget::account::note_squeezed() noexcept {
  budget_->squeezed_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<retention_budget::account> retention_budget::open(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  std::weak_ptr<account>& slot = accounts_[tenant];
  if (auto live = slot.lock()) return live;
  auto fresh = std::make_shared<account>(shared_from_this(), tenant);
  slot = fresh;
  return fresh;
}

std::size_t retention_budget::tenants() {
  std::lock_guard lock(mutex_);
  return accounts_.size();
}

}  // namespace droid
