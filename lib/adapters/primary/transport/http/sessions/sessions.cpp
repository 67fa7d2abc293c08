// SPDX-License-Identifier: BSL-1.0
#include "sessions.hpp"

#include <algorithm>

#include <asio/post.hpp>

#include <droid/application/server/session.hpp>

#include "adapters/primary/transport/http/access/request_rules.hpp"
#include "adapters/primary/transport/http/wire/responses.hpp"

namespace droid::http::detail {

std::shared_ptr<session_entry> session_entry::create(droid::server& srv, asio::any_io_executor executor,
                                                     std::unique_ptr<event_store> store, std::string principal) {
  auto entry = std::make_shared<session_entry>();
  entry->id = new_session_id();
  entry->executor = std::move(executor);
  entry->s = session::create(srv, entry->executor, nullptr, principal);
  entry->principal = std::move(principal);
  entry->store = std::move(store);
  entry->standalone = std::make_shared<logical_stream>(0, entry->store.get(), logical_stream::finish_hook{});
  entry->s->set_outbound(entry->standalone);
  entry->last_used = now_ns();
  return entry;
}

void session_entry::set_store(std::unique_ptr<event_store> st) {
  store = std::move(st);
  standalone = std::make_shared<logical_stream>(0, store.get(), logical_stream::finish_hook{});
  s->set_outbound(standalone);
}

void end_session(const std::shared_ptr<session_entry>& e) {
  asio::post(e->executor, [e] {
    e->s->close();
    if (e->standalone) e->standalone->finish();
    for (auto& sink : std::exchange(e->resumed, {})) sink->finish();
    e->s->set_outbound(nullptr);
  });
}

std::shared_ptr<session_entry> session_table::find(std::string_view id) const {
  stripe& s = stripe_of(id);
  std::lock_guard lock(s.mutex);
  auto it = s.map.find(id);
  return it == s.map.end() ? nullptr : it->second;
}

bool session_table::reserve(std::size_t cap) noexcept {
  std::size_t n = size_.load(std::memory_order_relaxed);
  do {
    if (n >= cap) return false;
  } while (!size_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
  return true;
}

bool session_table::reserve_tenant(const std::string& tenant, std::size_t cap) {
  if (tenant.empty()) return true;
  std::lock_guard lock(tenants_mutex_);
  std::size_t& n = tenants_[tenant];
  if (cap != 0 && n >= cap) {
    if (n == 0) tenants_.erase(tenant);
    return false;
  }
  ++n;
  return true;
}

void session_table::release_tenant(const session_entry& e) {
  if (e.tenant.empty()) return;
  std::lock_guard lock(tenants_mutex_);
  auto it = tenants_.find(e.tenant);
  if (it != tenants_.end() && --it->second == 0) tenants_.erase(it);
}

session_table::admission session_table::insert(const std::shared_ptr<session_entry>& e, std::size_t cap,
                                               std::size_t tenant_cap) {
  if (!reserve_tenant(e->tenant, tenant_cap)) return admission::tenant_full;
  if (!reserve(cap)) {
    release_tenant(*e);
    return admission::server_full;
  }
  stripe& s = stripe_of(e->id);
  std::lock_guard lock(s.mutex);
  if (!s.map.emplace(e->id, e).second) {
    size_.fetch_sub(1, std::memory_order_relaxed);
    release_tenant(*e);
    return admission::duplicate;
  }
  count_on_shard(*e, 1);
  return admission::admitted;
}

std::vector<std::shared_ptr<session_entry>> session_table::snapshot() const {
  std::vector<std::shared_ptr<session_entry>> out;
  out.reserve(size());
  each_stripe([&](const auto& map) {
    for (const auto& [id, e] : map) out.push_back(e);
  });
  return out;
}

std::shared_ptr<session_entry> session_table::insert_or_get(const std::shared_ptr<session_entry>& e,
                                                          std::size_t cap) {
  stripe& s = stripe_of(e->id);
  std::lock_guard lock(s.mutex);
  if (auto it = s.map.find(e->id); it != s.map.end()) return it->second;
  if (!reserve(cap)) return nullptr;
  s.map.emplace(e->id, e);
  count_on_shard(*e, 1);
  return e;
}

std::shared_ptr<session_entry> session_table::erase(std::string_view id) {
  stripe& s = stripe_of(id);
  std::lock_guard lock(s.mutex);
  auto it = s.map.find(id);
  if (it == s.map.end()) return nullptr;
  auto e = std::move(it->second);
  s.map.erase(it);
  size_.fetch_sub(1, std::memory_order_relaxed);
  release_tenant(*e);
  count_on_shard(*e, -1);
  return e;
}

std::vector<std::shared_ptr<session_entry>> session_table::take_idle(std::int64_t cutoff) {
  std::vector<std::shared_ptr<session_entry>> out;
  each_stripe([&](auto& map) {
    for (auto it = map.begin(); it != map.end();) {
      const session_entry& e = *it->second;
      if (e.active.load() == 0 && e.last_used.load() < cutoff) {
        release_tenant(e);
        count_on_shard(e, -1);
        out.push_back(std::move(it->second));
        it = map.erase(it);
        size_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        ++it;
      }
    }
  });
  return out;
}

std::vector<std::shared_ptr<session_entry>> session_table::take_all() {
  std::vector<std::shared_ptr<session_entry>> out;
  each_stripe([&](auto& map) {
    for (auto& [id, e] : map) {
      release_tenant(*e);
      count_on_shard(*e, -1);
      out.push_back(std::move(e));
    }
    size_.fetch_sub(map.size(), std::memory_order_relaxed);
    map.clear();
  });
  return out;
}

void session_table::spread_over(std::size_t shards) {
  shard_count_ = shards;
  per_shard_ = std::make_unique<std::atomic<std::size_t>[]>(shards);
}

void session_table::count_on_shard(const session_entry& e, long n) noexcept {
  if (e.shard >= shard_count_) return;
  if (n > 0) per_shard_[e.shard].fetch_add(1, std::memory_order_relaxed);
  else per_shard_[e.shard].fetch_sub(1, std::memory_order_relaxed);
}

std::size_t session_table::on_shard(std::size_t shard) const noexcept {
  return shard < shard_count_ ? per_shard_[shard].load(std::memory_order_relaxed) : 0;
}

std::size_t session_table::place(std::size_t arrived) const noexcept {
  if (arrived >= shard_count_) return arrived;
  std::size_t least = arrived;
  std::size_t least_n = on_shard(arrived);
  const std::size_t here = least_n;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    const std::size_t n = on_shard(i);
    if (n < least_n) {
      least = i;
      least_n = n;
    }
  }
  return here <= least_n + 1 ? arrived : least;
}

std::size_t session_table::size() const { return size_.load(std::memory_order_relaxed); }

std::size_t session_table::open_streams() const {
  std::size_t n = 0;
  each_stripe([&](const auto& map) {
    for (const auto& [id, e] : map) n += static_cast<std::size_t>(std::max(0, e->active.load()));
  });
  return n;
}

bool session_table::any_answering() const {
  bool any = false;
  each_stripe([&](const auto& map) {
    for (const auto& [id, e] : map)
      if (e->active.load() > (e->has_standalone.load() ? 1 : 0)) any = true;
  });
  return any;
}

}  // namespace droid::http::detail
