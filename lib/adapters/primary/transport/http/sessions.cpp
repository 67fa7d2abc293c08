// SPDX-License-Identifier: BSL-1.0
#include "sessions.hpp"

#include <algorithm>

#include <asio/post.hpp>

#include <droid/application/server/session.hpp>

#include "checks.hpp"
#include "responses.hpp"

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
  std::lock_guard lock(mutex_);
  auto it = map_.find(id);
  return it == map_.end() ? nullptr : it->second;
}

bool session_table::insert(const std::shared_ptr<session_entry>& e, std::size_t cap) {
  std::lock_guard lock(mutex_);
  if (map_.size() >= cap) return false;
  map_.emplace(e->id, e);
  return true;
}

std::vector<std::shared_ptr<session_entry>> session_table::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<session_entry>> out;
  out.reserve(map_.size());
  for (const auto& [id, e] : map_) out.push_back(e);
  return out;
}

std::shared_ptr<session_entry> session_table::insert_or_get(const std::shared_ptr<session_entry>& e,
                                                          std::size_t cap) {
  std::lock_guard lock(mutex_);
  if (auto it = map_.find(e->id); it != map_.end()) return it->second;
  if (map_.size() >= cap) return nullptr;
  map_.emplace(e->id, e);
  return e;
}

std::shared_ptr<session_entry> session_table::erase(std::string_view id) {
  std::lock_guard lock(mutex_);
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  auto e = std::move(it->second);
  map_.erase(it);
  return e;
}

std::vector<std::shared_ptr<session_entry>> session_table::take_idle(std::int64_t cutoff) {
  std::vector<std::shared_ptr<session_entry>> out;
  std::lock_guard lock(mutex_);
  for (auto it = map_.begin(); it != map_.end();) {
    const session_entry& e = *it->second;
    if (e.active.load() == 0 && e.running.load() == 0 && e.last_used.load() < cutoff) {
      out.push_back(std::move(it->second));
      it = map_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<std::shared_ptr<session_entry>> session_table::take_all() {
  std::vector<std::shared_ptr<session_entry>> out;
  std::lock_guard lock(mutex_);
  for (auto& [id, e] : map_) out.push_back(std::move(e));
  map_.clear();
  return out;
}

std::size_t session_table::size() const {
  std::lock_guard lock(mutex_);
  return map_.size();
}

std::size_t session_table::open_streams() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [id, e] : map_) n += static_cast<std::size_t>(std::max(0, e->active.load()));
  return n;
}

bool session_table::any_answering() const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, e] : map_)
    if (e->active.load() > (e->has_standalone.load() ? 1 : 0)) return true;
  return false;
}

}  // namespace droid::http::detail
