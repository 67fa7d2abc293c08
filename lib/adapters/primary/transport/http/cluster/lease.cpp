// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster's lease (cluster.hpp; docs/scale-out.md, "The lease"): its renewal, the
/// fence it puts on a member that cannot show it, the gate of forwarded requests, and the
/// recovery of what is still a member's own after a lapse.
#include "cluster.hpp"


#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <droid/application/server/hosting.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/use_task.hpp>

#include "adapters/primary/transport/http/endpoint_state.hpp"
#include "adapters/primary/transport/http/wire/responses.hpp"
#include "adapters/primary/transport/http/sessions/stream.hpp"

namespace droid::http::detail {

namespace {

using clock_type = std::chrono::steady_clock;

}  // namespace

std::int64_t cluster::lease_span_ns() const noexcept {
  // The margin covers the drift between this machine's monotonic clock and Redis's over
  // one `instance_ttl` (a fifth of it: far beyond any real clock's rate error).
  const auto ttl = std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.instance_ttl).count();
  return ttl - ttl / 5;
}

bool cluster::fenced() const noexcept {
  return recovering_.load(std::memory_order_acquire) || now_ns() >= lease_until_.load(std::memory_order_acquire);
}

task<bool> cluster::until_current(asio::any_io_executor executor) {
  if (!fenced()) co_return true;
  const auto until = clock_type::now() + opts_.instance_ttl + opts_.forward_timeout;
  while (fenced()) {
    if (clock_type::now() >= until || stopping_) co_return false;
    asio::steady_timer pause(executor, std::chrono::milliseconds(10));
    (void)co_await pause.async_wait(use_task);
  }
  co_return true;
}

std::shared_ptr<forward_gate> cluster::new_gate() const {
  auto g = std::make_shared<forward_gate>();
  g->lapses = lapses_.load(std::memory_order_acquire);
  return g;
}

bool cluster::may_start(forward_gate* gate) const {
  const bool current = !fenced() && (!gate || gate->lapses == lapses_.load(std::memory_order_acquire));
  if (!gate) return current;
  std::uint8_t expected = forward_gate::pending;
  return gate->phase.compare_exchange_strong(expected, current ? forward_gate::started : forward_gate::abandoned) &&
         current;
}

void cluster::abandon(std::string_view from, std::string_view tag) {
  std::shared_ptr<forward_gate> gate;
  {
    std::lock_guard lock(mutex_);
    const std::string key = std::string(from) + "/" + std::string(tag);
    if (auto it = relays_.find(key); it != relays_.end()) gate = it->second.gate;
  }
  if (!gate) {
    // Not here: it never arrived (lost with a dropped subscription), or it ran and its
    // relay ended (then the asker has its answer already and ignores this).
    refuse_forward(0, from, tag, owner_silent, "the request never reached its owner");
    return;
  }
  std::uint8_t expected = forward_gate::pending;
  if (gate->phase.compare_exchange_strong(expected, forward_gate::abandoned) ||
      expected == forward_gate::abandoned) {
    // It will never start (`may_start` stops it), so the asker may look again and have
    // it served wherever the session is then; said now, not when the session's shard
    // gets to it (a busy shard is what kept it waiting).
    refuse_forward(0, from, tag, owner_silent, "the owner had not started it");
    return;
  }
  // Started: its answer is on its way.
}

task<void> cluster::renew() {
  if (recovering_ || lease_until_.load() == 0) {
    co_await recover();
    co_return;
  }
  // A member that cannot hear its inbox does not renew: requests would reach it and be
  // lost, so it lets its lease run out and is taken for gone instead.
  if (!store_->inbox_connected()) co_return;
  const std::int64_t sent = now_ns();
  const shared_store::renewal r = co_await store_->renew_lease(member_, opts_.instance_ttl);
  if (r == shared_store::renewal::unavailable) co_return;  // unconfirmed: the lease runs out by itself
  if (r == shared_store::renewal::gone) {
    co_await recover();  // gone (expired, or a Redis that lost it)
    co_return;
  }
  // Never moved back: a late reply to an older renewal must not shorten a newer one.
  // (Written on shard 0 alone, so a plain compare suffices; other shards only read it.)
  if (sent + lease_span_ns() > lease_until_.load()) lease_until_.store(sent + lease_span_ns());
}

void cluster::end_relays() {
  std::vector<std::pair<std::string, relay_entry>> all;
  {
    std::lock_guard lock(mutex_);
    all.assign(relays_.begin(), relays_.end());
  }
  for (auto& [key, r] : all) {
    if (r.gate) {
      std::uint8_t expected = forward_gate::pending;
      (void)r.gate->phase.compare_exchange_strong(expected, forward_gate::abandoned);
    }
    const std::size_t slash = key.rfind('/');
    post_to(0, key.substr(0, slash), encode_fields({"brk", member_, key.substr(slash + 1)}));
    asio::dispatch(r.home, [weak = r.sink, cancel = std::move(r.cancel)] {
      if (auto sink = weak.lock()) sink->kill();
      if (cancel) cancel();
    });
  }
}

task<void> cluster::recover() {
  if (recovery_running_ || stopping_) co_return;
  recovery_running_ = true;
  if (!recovering_.exchange(true)) {
    lapses_.fetch_add(1);
    end_relays();
  }
  struct done_guard {
    bool& flag;
    ~done_guard() { flag = false; }
  } guard{recovery_running_};
  const std::int64_t sent = now_ns();
  const bool taken = co_await store_->take_lease(member_, opts_.instance_ttl);
  if (!taken) co_return;  // the next heartbeat tries again
  // From here nobody can take what still names this member; what names another is theirs.
  // One round trip asks about everything held.
  std::vector<std::shared_ptr<session_entry>> held;
  std::vector<std::pair<std::string, std::uint64_t>> sessions;
  for (std::shared_ptr<session_entry>& e : st_.sessions.snapshot()) {
    if (e->legacy) continue;
    sessions.emplace_back(e->id, e->epoch);
    held.push_back(std::move(e));
  }
  std::vector<std::string> task_ids = tasks_ ? tasks_->held() : std::vector<std::string>{};
  const std::optional<std::vector<shared_store::claim>> claims =
      co_await store_->claim_all(member_, std::move(sessions), task_ids);
  if (!claims) co_return;
  for (std::size_t i = 0; i < held.size(); ++i) {
    if ((*claims)[i] == shared_store::claim::another) give_up(held[i]->id);
    if ((*claims)[i] == shared_store::claim::missing) write_record(held[i]);
  }
  for (std::size_t i = 0; i < task_ids.size(); ++i) {
    const shared_store::claim mine = (*claims)[held.size() + i];
    if (mine == shared_store::claim::missing) tasks_->republish(task_ids[i]);
    if (mine != shared_store::claim::another) continue;
    // Adopted by another instance (and reported failed there): stopped here, unsaid.
    tasks_->drop(task_ids[i]);
    droid::hosting::stop_task_tool(st_.srv, task_ids[i]);
  }
  // Everything published to the inbox before the mark is refused (it arrives while this
  // member is still recovering); what is published after it is served.
  const std::uint64_t mark = ++marks_sent_;
  // Named: g++ 12 cannot keep a braced list's array alive across a co_await in the same
  // full expression.
  std::string mark_message = encode_fields({"mark", member_, std::to_string(mark)});
  const std::optional<std::int64_t> heard = co_await store_->publish(0, member_, std::move(mark_message));
  if (!heard || *heard < 1) co_return;
  const auto until = clock_type::now() + opts_.redis_timeout;
  while (marks_seen_ < mark) {
    if (clock_type::now() >= until) co_return;
    asio::steady_timer pause(shards_.front(), std::chrono::milliseconds(5));
    (void)co_await pause.async_wait(use_task);
  }
  lease_until_.store(sent + lease_span_ns());
  recovering_.store(false);
  // What waited meanwhile, for the sessions still here.
  std::vector<std::string> waiting = std::move(deferred_);
  deferred_.clear();
  for (const std::string& payload : waiting) {
    std::vector<std::string_view> f;
    if (decode_fields(payload, f) && on_request) on_request(std::move(f));
  }
}

void cluster::give_up(const std::string& id) {
  if (auto gone = st_.sessions.erase(id)) end_session(gone);
  forget_owner(id);
}

}  // namespace droid::http::detail
