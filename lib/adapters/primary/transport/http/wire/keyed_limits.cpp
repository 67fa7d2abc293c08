// SPDX-License-Identifier: BSL-1.0
/// @file
/// Counts per key with a limit (keyed_limits.hpp).
#include "keyed_limits.hpp"

#include <algorithm>
#include <functional>

namespace droid::http::detail {

keyed_limits::keyed_limits() : stripes_(std::make_shared<stripes>()) {}

keyed_limits::slot::~slot() {
  if (!stripe_) return;
  std::lock_guard lock(stripe_->mutex);
  --*count_;
}

keyed_limits::stripe& keyed_limits::stripe_of(const std::string& key) {
  return (*stripes_)[std::hash<std::string>{}(key) % stripes_->size()];
}

bool keyed_limits::acquire(std::string key, std::size_t limit, slot& out) {
  if (limit == 0) return true;
  stripe& s = stripe_of(key);
  std::lock_guard lock(s.mutex);
  if (s.counts.size() >= s.sweep_at) {
    std::erase_if(s.counts, [](const auto& entry) { return entry.second == 0; });
    s.sweep_at = std::max<std::size_t>(64, 2 * s.counts.size());
  }
  std::size_t& n = s.counts.try_emplace(std::move(key), 0).first->second;
  if (n >= limit) return false;
  ++n;
  out.owner_ = stripes_;
  out.stripe_ = &s;
  out.count_ = &n;
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
