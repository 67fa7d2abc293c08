// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster's shared store (the port in adapters/primary/transport/http/cluster/
/// shared_store.hpp) in memory, for tests that drive a member's lease step by step: a
/// lease ends when the test says, a renewal goes unconfirmed while the test says, and
/// every record can be read and changed between two steps. Redis's own behaviour
/// (scripts, pub/sub, expiry) is tested against a real redis-server elsewhere; this store
/// keeps the port's promises as that adapter does, and nothing more: session streams
/// stay in the owner's memory, and nothing expires by itself.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/post.hpp>

#include "adapters/primary/transport/http/cluster/cluster.hpp"

namespace droid::test {

using droid::http::detail::session_record;
using droid::http::detail::shared_store;

/// What the members of one test share, and the knobs the test turns.
struct memory_world {
  std::mutex m;
  std::map<std::string, session_record> sessions;
  std::set<std::string> leases;
  struct task_entry {
    std::string owner;
    task_record record;
  };
  std::map<std::string, task_entry> tasks;
  struct subscriber {
    std::string member;
    asio::any_io_executor executor;
    shared_store::message_handler handler;
  };
  std::vector<subscriber> subscribers;
  /// Members whose renewals get no answer (as from a Redis that cannot be reached).
  std::set<std::string> unconfirmed;
  /// `claim_all` calls so far, and how many things each asked about.
  std::vector<std::size_t> claims;

  /// The member whose name starts with `name` + "#", or "".
  std::string member(const std::string& name) {
    std::lock_guard lock(m);
    for (const subscriber& s : subscribers)
      if (s.member.starts_with(name + "#")) return s.member;
    return {};
  }

  void deliver(const std::string& to, const std::string& channel, const std::string& payload, std::int64_t& heard) {
    for (const subscriber& s : subscribers) {
      if (!to.empty() && s.member != to) continue;
      ++heard;
      asio::post(s.executor, [h = s.handler, channel, payload] { h(channel, payload); });
    }
  }
};

/// The server's tasks written through to the world, only while their record names this
/// member (as the Redis adapter's script does).
class memory_task_table final : public droid::http::detail::shared_task_table {
 public:
  memory_task_table(std::shared_ptr<memory_world> w, std::shared_ptr<memory_task_store> local, std::string member)
      : w_(std::move(w)), local_(std::move(local)), member_(std::move(member)) {}
  std::optional<task_refusal> create(task_record record) override {
    const std::string id = record.id;
    auto refused = local_->create(std::move(record));
    if (!refused) publish(id);
    return refused;
  }
  std::optional<task_record> get(std::string_view id, std::string_view owner) override { return local_->get(id, owner); }
  std::optional<task_page> list(std::string_view owner, std::string_view after, std::size_t limit) override {
    return local_->list(owner, after, limit);
  }
  bool ask(std::string_view id, std::string key, std::string request_json) override {
    const bool ok = local_->ask(id, std::move(key), std::move(request_json));
    if (ok) publish(id);
    return ok;
  }
  std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) override {
    auto taken = local_->answered(id, keys);
    if (!taken.empty()) publish(id);
    return taken;
  }
  void set_message(std::string_view id, std::string message) override {
    local_->set_message(id, std::move(message));
    publish(id);
  }
  bool finish(std::string_view id, task_status status, std::string result, std::string error,
              std::string message) override {
    const bool ended = local_->finish(id, status, std::move(result), std::move(error), std::move(message));
    if (ended) publish(id);
    return ended;
  }
  void remove(std::string_view id) override {
    local_->remove(id);
    publish(id);
  }
  bool holds(std::string_view id) override { return local_->peek(id).has_value(); }
  void adopt(task_record record, const std::string&) override {
    const std::string id = record.id;
    (void)local_->create(std::move(record));
    publish(id);
  }
  std::vector<std::string> held() override {
    std::lock_guard lock(w_->m);
    std::vector<std::string> out;
    for (const auto& [id, t] : w_->tasks)
      if (t.owner == member_ && local_->peek(id)) out.push_back(id);
    return out;
  }
  void republish(std::string_view id) override { publish(id); }
  void drop(std::string_view id) override { local_->remove(id); }

 private:
  void publish(std::string_view id) {
    std::optional<task_record> r = local_->peek(id);
    std::lock_guard lock(w_->m);
    auto it = w_->tasks.find(std::string(id));
    if (it != w_->tasks.end() && it->second.owner != member_) return;
    if (!r) {
      if (it != w_->tasks.end()) w_->tasks.erase(it);
      return;
    }
    w_->tasks[std::string(id)] = {member_, *r};
  }
  std::shared_ptr<memory_world> w_;
  std::shared_ptr<memory_task_store> local_;
  std::string member_;
};

/// One member's view of the world.
class memory_shared_store final : public shared_store {
 public:
  memory_shared_store(std::shared_ptr<memory_world> w, std::vector<asio::any_io_executor> shards)
      : w_(std::move(w)), shards_(std::move(shards)) {}

  void start(std::string member, message_handler on_message, std::function<void()>) override {
    std::lock_guard lock(w_->m);
    member_ = member;
    w_->subscribers.push_back({std::move(member), shards_.front(), std::move(on_message)});
  }
  void stop() override {
    std::lock_guard lock(w_->m);
    std::erase_if(w_->subscribers, [&](const memory_world::subscriber& s) { return s.member == member_; });
  }
  [[nodiscard]] bool inbox_connected() const override { return true; }
  void probe_inbox() override {}
  [[nodiscard]] std::string last_failure(std::size_t) const override { return "the test's store refused"; }

  task<renewal> renew_lease(std::string member, std::chrono::milliseconds) override {
    std::lock_guard lock(w_->m);
    if (w_->unconfirmed.contains(member)) co_return renewal::unavailable;
    co_return w_->leases.contains(member) ? renewal::renewed : renewal::gone;
  }
  task<bool> take_lease(std::string member, std::chrono::milliseconds) override {
    std::lock_guard lock(w_->m);
    if (w_->unconfirmed.contains(member)) co_return false;
    w_->leases.insert(member);
    co_return true;
  }
  task<std::optional<bool>> lease_exists(std::size_t, std::string member) override {
    std::lock_guard lock(w_->m);
    co_return w_->leases.contains(member);
  }
  void leave(std::string member) override {
    std::lock_guard lock(w_->m);
    w_->leases.erase(member);
  }

  task<found_session> read_session(std::size_t, std::string id) override {
    std::lock_guard lock(w_->m);
    found_session out;
    if (auto it = w_->sessions.find(id); it != w_->sessions.end()) {
      out.is = found_session::what::found;
      out.record = it->second;
    }
    co_return out;
  }
  task<takeover> take_over(std::size_t, std::string id, std::string from, std::string to,
                           std::chrono::milliseconds) override {
    std::lock_guard lock(w_->m);
    takeover out;
    auto it = w_->sessions.find(id);
    if (it == w_->sessions.end() || it->second.owner != from) {
      out.is = takeover::what::raced;
    } else if (from != to && w_->leases.contains(from)) {
      out.is = takeover::what::owner_current;
    } else {
      if (from != to) ++it->second.epoch;
      it->second.owner = to;
      out.is = takeover::what::taken;
      out.epoch = it->second.epoch;
    }
    co_return out;
  }
  task<write_outcome> write_session(std::size_t, std::string id, session_record r, std::chrono::milliseconds) override {
    std::lock_guard lock(w_->m);
    auto it = w_->sessions.find(id);
    if (it != w_->sessions.end() && (it->second.owner != r.owner || it->second.epoch != r.epoch))
      co_return write_outcome::refused;
    w_->sessions[id] = std::move(r);
    co_return write_outcome::written;
  }
  void touch_session(std::size_t, const std::string&, std::chrono::milliseconds) override {}
  void forget_session(std::size_t, const std::string& id, const std::string& member, std::uint64_t) override {
    std::lock_guard lock(w_->m);
    if (auto it = w_->sessions.find(id); it != w_->sessions.end() && it->second.owner == member) w_->sessions.erase(it);
  }
  task<std::optional<std::vector<claim>>> claim_all(std::string member,
                                                    std::vector<std::pair<std::string, std::uint64_t>> sessions,
                                                    std::vector<std::string> tasks) override {
    std::lock_guard lock(w_->m);
    w_->claims.push_back(sessions.size() + tasks.size());
    std::vector<claim> out;
    for (const auto& [id, epoch] : sessions) {
      auto it = w_->sessions.find(id);
      out.push_back(it == w_->sessions.end()                                         ? claim::missing
                    : it->second.owner == member && it->second.epoch == epoch ? claim::ours
                                                                                   : claim::another);
    }
    for (const std::string& id : tasks) {
      auto it = w_->tasks.find(id);
      out.push_back(it == w_->tasks.end() ? claim::missing : it->second.owner == member ? claim::ours : claim::another);
    }
    co_return out;
  }

  std::unique_ptr<event_store> session_events(std::size_t, const std::string&, std::uint64_t,
                                              std::unique_ptr<memory_event_store> local) override {
    return local;
  }
  task<read_outcome> read_stream(std::size_t, std::string, std::uint64_t, std::uint64_t,
                                 droid::http::detail::stored_stream&) override {
    co_return read_outcome::unknown;
  }
  task<end_outcome> end_stream(std::size_t, std::string, std::uint64_t, std::uint64_t, std::string) override {
    co_return end_outcome::unavailable;
  }

  std::shared_ptr<droid::http::detail::shared_task_table> share_tasks(std::shared_ptr<memory_task_store> local,
                                                                      std::string member) override {
    return std::make_shared<memory_task_table>(w_, std::move(local), std::move(member));
  }
  task<found_task> task_owner(std::size_t, std::string id) override {
    std::lock_guard lock(w_->m);
    found_task out;
    if (auto it = w_->tasks.find(id); it != w_->tasks.end()) {
      out.is = found_task::what::found;
      out.owner = it->second.owner;
    }
    co_return out;
  }
  task<adoption> adopt_task(std::size_t, std::string id, std::string from, std::string to) override {
    std::lock_guard lock(w_->m);
    adoption out;
    auto it = w_->tasks.find(id);
    if (it == w_->tasks.end() || it->second.owner != from || w_->leases.contains(from)) {
      out.is = adoption::what::refused;
      co_return out;
    }
    it->second.owner = to;
    out.is = adoption::what::adopted;
    out.record = it->second.record;
    co_return out;
  }

  task<std::optional<std::int64_t>> publish(std::size_t, std::string member, std::string payload) override {
    std::lock_guard lock(w_->m);
    std::int64_t heard = 0;
    w_->deliver(member, "droid:c:" + member, payload, heard);
    co_return heard;
  }
  void post(std::size_t, const std::string& member, const std::string& payload) override {
    std::lock_guard lock(w_->m);
    std::int64_t heard = 0;
    w_->deliver(member, "droid:c:" + member, payload, heard);
  }
  void post_all(std::size_t, const std::string& payload) override {
    std::lock_guard lock(w_->m);
    std::int64_t heard = 0;
    w_->deliver({}, "droid:all", payload, heard);
  }
  task<std::optional<std::string>> written(std::size_t) override { co_return std::nullopt; }

 private:
  std::shared_ptr<memory_world> w_;
  std::vector<asio::any_io_executor> shards_;
  std::string member_;
};

/// Puts `world` in Redis's place for every listener made while it lives.
class use_memory_world {
 public:
  explicit use_memory_world(std::shared_ptr<memory_world> world) : saved_(droid::http::detail::shared_store_maker()) {
    droid::http::detail::shared_store_maker() = [world](const droid::http::options::scale_out&,
                                                        std::vector<asio::any_io_executor> shards,
                                                        std::chrono::milliseconds, std::size_t) {
      return std::make_shared<memory_shared_store>(world, std::move(shards));
    };
  }
  ~use_memory_world() { droid::http::detail::shared_store_maker() = saved_; }
  use_memory_world(const use_memory_world&) = delete;
  use_memory_world& operator=(const use_memory_world&) = delete;

 private:
  droid::http::detail::store_maker saved_;
};

}  // namespace droid::test
