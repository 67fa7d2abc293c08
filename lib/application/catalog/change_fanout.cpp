// SPDX-License-Identifier: BSL-1.0
#include "change_fanout.hpp"

#include "server_core.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include <asio/post.hpp>

#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid::detail {

namespace {

/// The live entries of `list`, taken out from under its lock, and the expired ones
/// forgotten.
template <class T>
std::vector<std::shared_ptr<T>> live_of(std::vector<std::weak_ptr<T>>& list) {
  std::vector<std::shared_ptr<T>> live;
  std::erase_if(list, [&](const std::weak_ptr<T>& w) {
    auto p = w.lock();
    if (!p) return true;
    live.push_back(std::move(p));
    return false;
  });
  return live;
}

}  // namespace

void change_fanout::on_roots_list_changed(std::function<void(const peer_info&)> handler) {
  std::lock_guard lock(mutex_);
  roots_handlers_.push_back(std::move(handler));
}

void change_fanout::attach(const std::shared_ptr<session>& s) {
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= sweep_at_) {
    std::erase_if(sessions_, [](const std::weak_ptr<session>& w) { return w.expired(); });
    sweep_at_ = std::max<std::size_t>(64, 2 * sessions_.size());
  }
  sessions_.push_back(s);
}

void change_fanout::listen(const std::shared_ptr<change_listener>& l) {
  std::lock_guard lock(mutex_);
  std::erase_if(listeners_, [](const std::weak_ptr<change_listener>& w) { return w.expired(); });
  listeners_.push_back(l);
}

change_fanout::audience change_fanout::audience_now() {
  std::lock_guard lock(mutex_);
  return {live_of(sessions_), live_of(listeners_)};
}

void change_fanout::list_changed(std::string_view method, std::shared_ptr<const changed_entry> what) {
  auto [live, listeners] = audience_now();
  for (auto& l : listeners) l->list_changed(method);
  // Only when there is something to scope by: without a predicate every view changed.
  std::shared_ptr<const visibility_predicate> shown = what ? core(owner_).visibility() : nullptr;
  // Posted, not called: a session belongs to its shard, and registration may come from
  // any thread (or from inside a tool running on that very session).
  for (auto& s : live) {
    asio::post(s->executor(), [s, m = std::string(method), what, shown] {
      if (shown && !sees(*s, *shown, *what)) return;
      s->notify(m);
    });
  }
}

bool change_fanout::sees(const session& s, const visibility_predicate& shown, const changed_entry& what) {
  const std::shared_ptr<const request_origin> origin = s.last_origin();
  visibility_query q{what.kind, what.name, what.tool ? &what.tool->info : nullptr, &s.peer(), origin.get()};
  try {
    return shown(q);
  } catch (...) {
    // Told, then: a client that refetches a list loses nothing (and the predicate's
    // failure is reported when a request runs into it).
    return true;
  }
}

void change_fanout::resource_updated(std::string_view uri) {
  auto [live, listeners] = audience_now();
  for (auto& l : listeners) l->resource_updated(uri);
  std::string params = R"({"uri":)";
  ir::append_json_string(params, uri);
  params += '}';
  for (auto& s : live) {
    asio::post(s->executor(), [s, u = std::string(uri), params] {
      if (s->is_subscribed(u)) s->notify("notifications/resources/updated", params);
    });
  }
}

void change_fanout::roots_list_changed(const peer_info& peer) const {
  std::vector<std::function<void(const peer_info&)>> handlers;
  {
    std::lock_guard lock(mutex_);
    handlers = roots_handlers_;
  }
  for (auto& h : handlers) {
    try {
      h(peer);
    } catch (const std::exception& e) {
      owner_.diagnose(diagnostic_level::error, "roots handler failed", {{"error", e.what()}});
    }
  }
}

}  // namespace droid::detail
