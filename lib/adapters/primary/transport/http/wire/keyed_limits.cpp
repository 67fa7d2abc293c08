// SPDX-License-Identifier: BSL-1.0
/// @file
/// Counts per key with a limit (keyed_limits.hpp).
#include "keyed_limits.hpp"

#include <algorithm>
#include <functional>

namespace droid::http::detail {

keyed_limits::keyed_limits() : stripes_(std::make_shared<stripes>()) {}

keyed_limits::slot::~slot() {
  // No lock: the entry is not swept while its count is above zero, and this slot is
  // part of that count until the decrement.
  if (count_) count_->fetch_sub(1, std::memory_order_acq_rel);
}

keyed_limits::key_hold& keyed_limits::key_hold::operator=(key_hold&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::move(o.owner_);
    stripe_ = std::exchange(o.stripe_, nullptr);
    entry_ = std::exchange(o.entry_, nullptr);
    key_ = std::exchange(o.key_, nullptr);
  }
  return *this;
}

void keyed_limits::key_hold::release() noexcept {
  if (!entry_) return;
  {
    std::lock_guard lock(stripe_->mutex);
    --entry_->holds;
  }
  entry_ = nullptr;
  stripe_ = nullptr;
  key_ = nullptr;
  owner_.reset();
}

keyed_limits::stripe& keyed_limits::stripe_of(const std::string& key) {
  return (*stripes_)[std::hash<std::string>{}(key) % stripes_->size()];
}

std::pair<const std::string, keyed_limits::entry>& keyed_limits::find_or_add(stripe& s, std::string key) {
  if (s.counts.size() >= s.sweep_at) {
    std::erase_if(s.counts, [](const auto& e) {
      return e.second.holds == 0 && e.second.count.load(std::memory_order_acquire) == 0;
    });
    s.sweep_at = std::max<std::size_t>(64, 2 * s.counts.size());
  }
  return *s.counts.try_emplace(std::move(key)).first;
}

bool keyed_limits::take(entry& e, std::size_t limit) noexcept {
  std::size_t n = e.count.load(std::memory_order_relaxed);
  do {
    if (n >= limit) return false;
  } while (!e.count.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel, std::memory_order_relaxed));
  return true;
}

bool keyed_limits::acquire(std::string key, std::size_t limit, slot& out) {
  if (limit == 0) return true;
  stripe& s = stripe_of(key);
  std::lock_guard lock(s.mutex);
  entry& e = find_or_add(s, std::move(key)).second;
  if (!take(e, limit)) return false;
  out.owner_ = stripes_;
  out.count_ = &e.count;
  return true;
}

keyed_limits::key_hold keyed_limits::hold(std::string key) {
  stripe& s = stripe_of(key);
  std::lock_guard lock(s.mutex);
  auto& node = find_or_add(s, std::move(key));
  ++node.second.holds;
  key_hold h;
  h.owner_ = stripes_;
  h.stripe_ = &s;
  h.entry_ = &node.second;
  h.key_ = &node.first;
  return h;
}

bool keyed_limits::acquire(const key_hold& held, std::size_t limit, slot& out) {
  if (limit == 0) return true;
  // No lock: a held entry is never swept.
  if (!take(*held.entry_, limit)) return false;
  out.owner_ = stripes_;
  out.count_ = &held.entry_->count;
  return true;
}

std::size_t keyed_limits::entries() {
  std::size_t n = 0;
  for (stripe& s : *stripes_) {
    std::lock_guard lock(s.mutex);
    n += s.counts.size();
  }
  return n;
}

}  // namespace droid::http::detail
