// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster: records, heartbeats, the inbox, forwarding and takeover (cluster.hpp).
#include "cluster.hpp"


#include <charconv>
#include <random>

#include <unistd.h>

#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <boost/json/serialize.hpp>

#include <droid/application/server/hosting.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/ir/codec.hpp>

#include "adapters/primary/transport/http/endpoint_state.hpp"
#include "adapters/primary/transport/http/wire/responses.hpp"
#include "adapters/primary/transport/http/sessions/stream.hpp"

namespace droid::http::detail {

namespace {

using clock_type = std::chrono::steady_clock;

std::string default_instance_name() {
  char host[256] = {};
  (void)::gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[9];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host) + "-" + std::to_string(::getpid()) + "-" + suffix;
}

/// A random incarnation: 64 bits from the system's entropy, in hex. Why random and not a
/// counter or a start time: two lives of one instance name must never share one, whatever
/// the clocks say and wherever state about the first life survives (Redis, the other
/// instances' memory).
std::string new_incarnation() {
  std::random_device rd;
  const std::uint64_t bits = (std::uint64_t{rd()} << 32) ^ rd();
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(bits));
  return out;
}

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  (void)std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// Set while this thread tells local clients of a change another instance announced, so
/// that the announcement is not sent back out (and round again, forever).
thread_local bool relaying_change = false;

/// The cluster's ear on the server's changes: each one raised here is published on the
/// common channel. Why a listener: the server must not know about clusters; it tells
/// whoever listens, as it tells `subscriptions/listen` streams.
class change_fanout final : public droid::hosting::change_listener {
 public:
  explicit change_fanout(std::function<void(std::string)> publish) : publish_(std::move(publish)) {}
  void list_changed(std::string_view method) override {
    if (!relaying_change) publish_(encode_fields({"lc", method}));
  }
  void resource_updated(std::string_view uri) override {
    if (!relaying_change) publish_(encode_fields({"upd", uri}));
  }

 private:
  std::function<void(std::string)> publish_;
};

/// The error response of request `id_json` whose instance died before it answered.
std::string stopped_error(const std::string& id_json) {
  std::string body = R"({"jsonrpc":"2.0","id":)";
  body.append(id_json).append(
      R"(,"error":{"code":-32603,"message":"Internal error: the server instance running this request stopped )"
      R"(before it answered; the session goes on, and the request may be sent again"}})");
  return body;
}

}  // namespace

// ---- fields ------------------------------------------------------------------------------

std::string encode_fields(std::initializer_list<std::string_view> fields) {
  return encode_fields(std::vector<std::string_view>(fields));
}

std::string encode_fields(const std::vector<std::string_view>& fields) {
  std::size_t size = 0;
  for (const std::string_view f : fields) size += f.size() + 8;
  std::string out;
  out.reserve(size);
  for (const std::string_view f : fields) {
    out += std::to_string(f.size());
    out += ':';
    out += f;
  }
  return out;
}

bool decode_fields(std::string_view text, std::vector<std::string_view>& out) {
  out.clear();
  while (!text.empty()) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 10) return false;
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + colon, n);
    if (ec != std::errc() || end != text.data() + colon || n > text.size() - colon - 1) return false;
    out.push_back(text.substr(colon + 1, n));
    text.remove_prefix(colon + 1 + n);
  }
  return !out.empty();
}

// ---- cluster -----------------------------------------------------------------------------

cluster::cluster(endpoint_state& st, const options::scale_out& o, std::vector<asio::any_io_executor> shards,
                 std::shared_ptr<shared_store> store)
    : st_(st),
      opts_(o),
      name_(o.instance_id.empty() ? default_instance_name() : o.instance_id),
      member_(name_ + "#" + new_incarnation()),
      shards_(std::move(shards)),
      store_(std::move(store)) {
  // The lease must be renewed, with a beat to spare, before it may have ended (see
  // lease_span_ns): a heartbeat past that would fence the instance between two beats.
  if (opts_.heartbeat.count() <= 0 || 2 * opts_.heartbeat >= opts_.instance_ttl - opts_.instance_ttl / 5)
    throw std::invalid_argument(
        "http::options::cluster.heartbeat must be under 2/5 of instance_ttl (the lease is renewed at least twice "
        "before it may end)");
  // Named so: a channel name is a field of every message, and a name with a separator
  // in it would be one nobody could reply to.
  if (name_.find_first_of(" \r\n") != std::string::npos)
    throw std::invalid_argument("http::options::cluster.instance_id must not contain spaces or line breaks");
  if (std::shared_ptr<memory_task_store> local = droid::hosting::default_task_store(st_.srv)) {
    tasks_ = store_->share_tasks(std::move(local), member_);
    droid::hosting::wrap_task_store(st_.srv, tasks_);
  }
}

void cluster::start() {
  auto self = shared_from_this();
  // Weak: the store belongs to the cluster, and a strong reference back would keep both
  // alive forever.
  store_->start(
      member_,
      [weak = std::weak_ptr<cluster>(self)](std::string_view channel, std::string_view payload) {
        if (auto c = weak.lock()) c->on_message(channel, payload);
      },
      [weak = std::weak_ptr<cluster>(self)] {
        if (auto c = weak.lock()) c->inbox_lost();
      });
  asio::dispatch(shards_.front(), [self] {
    self->heartbeat_.emplace(self->shards_.front());
    self->beat();
  });
  // Changes may be raised on any thread; the common channel is written from shard 0.
  fanout_ = std::make_shared<change_fanout>([weak = std::weak_ptr<cluster>(self)](std::string what) {
    auto c = weak.lock();
    if (!c || c->stopping_) return;
    asio::dispatch(c->shards_.front(), [c, what = std::move(what)] {
      // The sender's name goes first, so that it can ignore its own announcement.
      std::vector<std::string_view> f;
      if (!decode_fields(what, f)) return;
      c->store_->post_all(0, encode_fields({f[0], c->member_, f[1]}));
    });
  });
  droid::hosting::listen(st_.srv, fanout_);
}

void cluster::beat() {
  if (stopping_) return;
  store_->post_all(0, encode_fields({"hb", member_}));
  store_->probe_inbox();
  // Each holds the cluster while it waits for Redis: a stop in between must not leave it
  // resuming into a cluster that is gone.
  const auto holding = [](std::shared_ptr<cluster> self, task<void> (cluster::*step)()) -> task<void> {
    co_await (self.get()->*step)();
  };
  spawn(shards_.front(), holding(shared_from_this(), &cluster::renew), [](std::exception_ptr) {});
  spawn(shards_.front(), holding(shared_from_this(), &cluster::sweep), [](std::exception_ptr) {});
  heartbeat_->expires_after(opts_.heartbeat);
  heartbeat_->async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->beat();
  });
}

void cluster::stop() {
  if (stopping_.exchange(true)) return;
  // Fenced before the lease goes: from the moment another instance may take a session
  // over, this one serves nothing new of it (what runs still may finish, as the docs say).
  recovering_.store(true);
  auto self = shared_from_this();
  asio::dispatch(shards_.front(), [self] {
    if (self->heartbeat_) self->heartbeat_->cancel();
    self->store_->leave(self->member_);
    self->store_->post_all(0, encode_fields({"bye", self->member_}));
  });
  store_->stop();
}

std::unique_ptr<event_store> cluster::make_store(const session_entry& e) const {
  const options& o = st_.opts;
  if (o.reply == streaming::json || o.event_ring_capacity == 0) return nullptr;
  return store_->session_events(e.shard, e.id, e.epoch,
                                std::make_unique<memory_event_store>(o.event_ring_capacity, 64, o.event_ring_bytes,
                                                                     st_.kept->open(e.tenant)));
}

void cluster::own(const std::shared_ptr<session_entry>& e) {
  std::weak_ptr<session_entry> weak = e;
  auto self = shared_from_this();
  e->s->on_state_change([self, weak] {
    if (auto entry = weak.lock()) self->write_record(entry);
  });
}

void cluster::write_record(const std::shared_ptr<session_entry>& e) {
  asio::dispatch(e->executor, [self = shared_from_this(), entry = e] {
    // Read on the session's shard, which alone touches it.
    if (entry->s->is_closed() || !entry->s->is_initialized()) return;
    session_record r;
    r.owner = self->member_;
    r.epoch = entry->epoch;
    r.state = entry->s->state();
    entry->record_touched = now_ns();
    const auto write = [](std::shared_ptr<cluster> self, std::size_t shard, std::string id,
                          session_record r) -> task<void> {
      const std::chrono::milliseconds ttl = self->st_.opts.session_idle_timeout;
      const shared_store::write_outcome written = co_await self->store_->write_session(shard, id, std::move(r), ttl);
      if (written == shared_store::write_outcome::refused) self->give_up(id);  // another member's now
    };
    spawn(entry->executor, write(self, entry->shard, entry->id, std::move(r)), [](std::exception_ptr) {});
  });
}

void cluster::touch(session_entry& e) {
  const std::int64_t now = now_ns();
  const std::int64_t period =
      std::chrono::duration_cast<std::chrono::nanoseconds>(st_.opts.session_idle_timeout).count() / 8;
  // Any shard may carry the session's request; the refresh is written by that shard's
  // client, and at most one of several racing requests writes it.
  std::int64_t last = e.record_touched.load();
  if (now - last < period || !e.record_touched.compare_exchange_strong(last, now)) return;
  asio::dispatch(e.executor, [self = shared_from_this(), id = e.id, shard = e.shard] {
    self->store_->touch_session(shard, id, self->st_.opts.session_idle_timeout);
  });
}

void cluster::forget(const session_entry& e) {
  // Posted, behind `end_session`'s closing of the session's streams (called first), whose
  // last writes (end marks) would otherwise bring keys back after the delete.
  asio::post(e.executor, [self = shared_from_this(), id = e.id, shard = e.shard, epoch = e.epoch] {
    self->forget_id(shard, id, epoch);
  });
}

void cluster::forget_id(std::size_t shard, const std::string& id, std::uint64_t epoch) {
  store_->forget_session(shard, id, member_, epoch);
}

task<bool> cluster::alive(std::size_t shard, std::string owner) {
  if (owner == member_) co_return false;  // a record naming us that we do not hold: given up
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_type::now();
    if (auto it = seen_.find(owner); it != seen_.end() && now - it->second < opts_.instance_ttl) co_return true;
  }
  const std::optional<bool> lease = co_await store_->lease_exists(shard, owner);
  // The store down: the owner cannot be judged dead, so nothing is taken over.
  co_return !lease || *lease;
}

task<cluster::located> cluster::locate(std::size_t shard, asio::any_io_executor executor, std::string id) {
  located out;
  {
    // Known to be another instance's a moment ago, and that instance is heard from:
    // forwarded without asking Redis (the owner refuses what it no longer holds, and the
    // entry is then forgotten: forget_owner).
    std::lock_guard lock(mutex_);
    const auto now = clock_type::now();
    if (auto it = owners_.find(id); it != owners_.end() && now < it->second.until) {
      if (auto seen = seen_.find(it->second.owner); seen != seen_.end() && now - seen->second < opts_.instance_ttl) {
        out.is = located::where::remote;
        out.owner = it->second.owner;
        out.principal = it->second.principal;
        co_return out;
      }
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    shared_store::found_session found = co_await store_->read_session(shard, id);
    if (found.is == shared_store::found_session::what::unavailable) {
      out.is = located::where::unavailable;
      co_return out;
    }
    if (found.is == shared_store::found_session::what::none) co_return out;  // nowhere
    session_record& record = found.record;
    const auto remote = [&] {
      out.is = located::where::remote;
      out.owner = record.owner;
      out.principal = record.state.principal;
      remember_owner(id, record.owner, record.state.principal);
    };
    if (record.owner == member_) {
      // Ours: another request of this instance took it over a moment ago.
      if (auto existing = st_.sessions.find(id)) {
        out.is = located::where::here;
        out.entry = std::move(existing);
        co_return out;
      }
    }
    bool heard = false;
    if (record.owner != member_) {
      std::lock_guard lock(mutex_);
      auto it = seen_.find(record.owner);
      heard = it != seen_.end() && clock_type::now() - it->second < opts_.instance_ttl;
    }
    if (heard) {
      remote();
      co_return out;
    }
    // Not heard from lately: taken over if its lease is gone (checked in the same step as
    // the swap), unless another instance did just now.
    const shared_store::takeover swap =
        co_await store_->take_over(shard, id, record.owner, member_, st_.opts.session_idle_timeout);
    if (swap.is == shared_store::takeover::what::unavailable) {
      out.is = located::where::unavailable;
      co_return out;
    }
    if (swap.is == shared_store::takeover::what::owner_current) {
      remote();  // its lease is current: it is alive, only quiet
      co_return out;
    }
    if (swap.is == shared_store::takeover::what::raced) continue;  // someone else took it: look again
    // Another request of ours may have taken it over a moment ago, on another shard.
    if (auto existing = st_.sessions.find(id)) {
      out.is = located::where::here;
      out.entry = std::move(existing);
      co_return out;
    }
    auto entry = std::make_shared<session_entry>();
    entry->id = id;
    entry->executor = executor;
    entry->shard = shard;
    entry->epoch = swap.epoch;
    // Streams numbered after every earlier owner's: a client resuming an old stream
    // names a number below this, which only Redis has.
    entry->next_stream = entry->epoch << 32;
    entry->principal = record.state.principal;
    entry->s = session::restore(st_.srv, executor, nullptr, std::move(record.state));
    entry->set_store(make_store(*entry));
    entry->last_used = now_ns();
    entry->record_touched = now_ns();
    std::shared_ptr<session_entry> kept = st_.sessions.insert_or_get(entry, st_.opts.max_sessions);
    if (!kept) {
      out.is = located::where::unavailable;  // full: as a new session would be refused
      co_return out;
    }
    if (kept == entry) {
      own(entry);
      write_record(entry);  // the record now names us, as an owner writes it
    }
    out.is = located::where::here;
    out.entry = std::move(kept);
    co_return out;
  }
  out.is = located::where::unavailable;
  co_return out;
}

std::uint64_t cluster::open_forward(std::shared_ptr<response_sink> sink, std::string owner, std::string request_id_json,
                                    bool json) {
  std::lock_guard lock(mutex_);
  const std::uint64_t tag = ++next_tag_;
  forward f;
  f.sink = std::move(sink);
  f.owner = std::move(owner);
  f.request_id_json = std::move(request_id_json);
  f.json = json;
  f.deadline = clock_type::now() + opts_.forward_timeout;
  forwards_.emplace(tag, std::move(f));
  return tag;
}

void cluster::close_forward(std::size_t shard, std::uint64_t tag) {
  std::string owner;
  {
    std::lock_guard lock(mutex_);
    auto it = forwards_.find(tag);
    if (it == forwards_.end()) return;
    auto sink = it->second.sink.lock();
    if (sink && !sink->finished()) owner = it->second.owner;
    forwards_.erase(it);
  }
  if (!owner.empty()) post_to(shard, owner, encode_fields({"stop", member_, std::to_string(tag)}));
}

void cluster::add_relay(std::string key, std::shared_ptr<response_sink> sink, asio::any_io_executor home,
                        std::shared_ptr<forward_gate> gate, std::function<void()> cancel) {
  std::lock_guard lock(mutex_);
  relays_.insert_or_assign(std::move(key), relay_entry{std::move(sink), std::move(home), std::move(gate), std::move(cancel)});
}

void cluster::remove_relay(const std::string& key) {
  std::lock_guard lock(mutex_);
  relays_.erase(key);
}

void cluster::stop_relay(const std::string& key) {
  relay_entry r;
  {
    std::lock_guard lock(mutex_);
    auto it = relays_.find(key);
    if (it == relays_.end()) return;
    r = it->second;
  }
  asio::dispatch(r.home, [weak = r.sink] {
    if (auto sink = weak.lock()) sink->kill();
  });
}

task<cluster::delivery> cluster::send_to(std::size_t shard, std::string owner, std::string payload) {
  const std::optional<std::int64_t> heard = co_await store_->publish(shard, std::move(owner), std::move(payload));
  if (!heard) co_return delivery::unavailable;
  co_return *heard > 0 ? delivery::delivered : delivery::nobody;
}

task<cluster::delivery> cluster::deliver(std::size_t shard, std::string owner, std::string payload) {
  const auto until = clock_type::now() + opts_.instance_ttl + opts_.forward_timeout;
  for (;;) {
    const delivery told = co_await send_to(shard, owner, payload);
    if (told != delivery::nobody) co_return told;
    const std::optional<bool> lease = co_await store_->lease_exists(shard, owner);
    if (!lease) co_return delivery::unavailable;
    if (!*lease) {
      // Gone for good: its last heartbeat must not make the next look take it for alive
      // (and forward to it again) for the rest of `instance_ttl`; the look finds its
      // sessions and tasks free to take over.
      std::lock_guard lock(mutex_);
      seen_.erase(owner);
      co_return delivery::nobody;
    }
    if (clock_type::now() >= until) co_return delivery::unavailable;
    asio::steady_timer pause(shards_[shard], std::min<clock_type::duration>(opts_.heartbeat / 4, std::chrono::milliseconds(50)));
    (void)co_await pause.async_wait(use_task);
  }
}

void cluster::stop_unkept_tasks(std::vector<sse_event>& answers) {
  for (const sse_event& e : answers) {
    boost::json::value v;
    if (!ir::parse_exact(e.data, v) || !v.is_object()) continue;
    const boost::json::value* result = v.as_object().if_contains("result");
    const boost::json::value* id = result && result->is_object() ? result->as_object().if_contains("taskId") : nullptr;
    if (!id || !id->is_string()) continue;
    const std::string task(id->as_string());
    (void)droid::hosting::task_records(st_.srv).finish(task, task_status::failed, {},
                                R"({"code":-32603,"message":"the shared store (Redis) did not keep this task"})",
                                "The shared store (Redis) did not keep this task; it was stopped.");
    droid::hosting::stop_task_tool(st_.srv, task);
  }
}

void cluster::accept_when_written(std::size_t shard, std::shared_ptr<response_sink> sink, bool refuse_unwritten,
                                  std::function<void(std::vector<sse_event>&)> on_refused) {
  const auto barrier = [](std::shared_ptr<cluster> self, std::size_t shard, std::shared_ptr<response_sink> s,
                          bool refuse, std::function<void(std::vector<sse_event>&)> refused) -> task<void> {
    const std::optional<std::string> missing = co_await self->store_->written(shard);
    if (refuse && missing) {
      self->st_.srv.diagnose(diagnostic_level::warning, "the shared store did not take a write; the answer was refused",
                             {{"transport", "http"}, {"error", *missing}});
      std::string why = "Service Unavailable: the shared store did not take this server's write; nothing was kept, "
                        "try again shortly";
      if (refused) {
        std::vector<sse_event> held;
        s->drain(held);
        refused(held);
      }
      s->reject(503, std::move(why));
    } else {
      s->accept();
    }
    s->release();
  };
  spawn(shards_[shard], barrier(shared_from_this(), shard, std::move(sink), refuse_unwritten, std::move(on_refused)),
        [](std::exception_ptr) {});
}

void cluster::report_store_failure(std::size_t index) const {
  std::string why = store_->last_failure(index);
  st_.srv.diagnose(diagnostic_level::warning, "the shared store cannot be reached",
                   {{"transport", "http"}, {"error", why.empty() ? std::string("no reply") : std::move(why)}});
}

void cluster::remember_owner(const std::string& id, const std::string& owner, const std::string& principal) {
  std::lock_guard lock(mutex_);
  const auto now = clock_type::now();
  // Bounded: past the cap the expired entries go, and if that is not enough, all of them
  // (each costs one lookup in Redis to learn again).
  if (owners_.size() >= max_owners_cached) {
    std::erase_if(owners_, [&](const auto& e) { return e.second.until <= now; });
    if (owners_.size() >= max_owners_cached) owners_.clear();
  }
  owners_.insert_or_assign(id, cached_owner{owner, principal, now + opts_.heartbeat});
}

void cluster::forget_owner(const std::string& id) {
  std::lock_guard lock(mutex_);
  owners_.erase(id);
}

void cluster::refuse_forward(std::size_t shard, std::string_view asker, std::string_view tag, int status,
                             std::string_view why) {
  post_to(shard, std::string(asker), encode_fields({"rej", member_, tag, std::to_string(status), why}));
}

void cluster::post_to(std::size_t shard, const std::string& owner, const std::string& payload) {
  store_->post(shard, owner, payload);
}

void cluster::on_message(std::string_view channel, std::string_view payload) {
  std::vector<std::string_view> f;
  if (!decode_fields(payload, f)) return;  // not ours: ignored
  const std::string_view kind = f[0];
  if (channel.size() > opts_.key_prefix.size() && channel.substr(opts_.key_prefix.size()) == "all") {
    if (f.size() < 2 || f[1] == member_) return;
    if ((kind == "lc" || kind == "upd") && f.size() == 3) {
      // Another instance's change: this instance's clients are told as they would be of
      // one of its own (each session and listen stream filters as it always does).
      relaying_change = true;
      if (kind == "lc") droid::hosting::announce_list_changed(st_.srv, f[2]);
      if (kind == "upd") droid::hosting::announce_resource_updated(st_.srv, f[2]);
      relaying_change = false;
      return;
    }
    if (f.size() != 2) return;
    std::lock_guard lock(mutex_);
    if (kind == "hb") seen_[std::string(f[1])] = clock_type::now();
    if (kind == "bye") seen_.erase(std::string(f[1]));
    return;
  }
  // Replies to forwards of ours: to the sink, from any shard (its calls dispatch home).
  // "evs": sender, tag, batch, accepted?, ended?, then (id, data) per event; "rej":
  // sender, tag, status, why. A reply is taken only from the member the forward asked:
  // tags are this process's own, and the channel is this incarnation's, so a reply meant
  // for a previous life of this instance, or sent by anyone else, never reaches a sink.
  if (kind == "brk" && f.size() == 3) {
    // The owner's lease lapsed while it served this forward: it stopped, and cancelled
    // the request; the client's stream ends where it stands.
    forward broken;
    std::shared_ptr<response_sink> sink;
    {
      std::lock_guard lock(mutex_);
      auto it = forwards_.find(to_u64(f[2]));
      if (it == forwards_.end() || it->second.owner != f[1]) return;
      broken = it->second;
      sink = it->second.sink.lock();
      forwards_.erase(it);
    }
    if (sink) break_forward(to_u64(f[2]), broken, sink);
    return;
  }
  if (kind == "evs" || kind == "rej") {
    if (kind == "evs" ? f.size() < 6 || f.size() % 2 != 0 : f.size() != 5) return;
    const bool ended = kind == "rej" || f[5] == "1";
    std::shared_ptr<response_sink> sink;
    bool in_turn = true;
    forward broken;
    {
      std::lock_guard lock(mutex_);
      auto it = forwards_.find(to_u64(f[2]));
      if (it == forwards_.end() || it->second.owner != f[1]) return;
      // A refusal after the owner took the request up (a late answer to "abandon") is
      // not one: the answer is on its way.
      if (kind == "rej" && it->second.settled) return;
      sink = it->second.sink.lock();
      if (kind == "evs") {
        in_turn = to_u64(f[3]) == it->second.next_batch;
        ++it->second.next_batch;
      }
      if (!in_turn) broken = it->second;
      it->second.settled = true;
      if (!sink || ended || !in_turn) forwards_.erase(it);
    }
    if (!sink) return;
    if (!in_turn) {
      break_forward(to_u64(f[2]), broken, sink);
      return;
    }
    if (kind == "rej") {
      sink->reject(static_cast<int>(to_u64(f[3])), std::string(f[4]));
      return;
    }
    if (f[4] == "1") sink->accept();
    for (std::size_t i = 6; i + 1 < f.size(); i += 2) sink->push(sse_event{std::string(f[i]), std::string(f[i + 1])});
    if (ended) sink->finish();
    return;
  }
  // Messages to this member as an owner.
  if (kind == "mark") {
    if (f.size() == 3 && f[1] == member_) marks_seen_ = std::max(marks_seen_, to_u64(f[2]));
    return;
  }
  if (kind == "abandon") {
    if (f.size() == 3) abandon(f[1], f[2]);
    return;
  }
  if (fenced() && (kind == "req" || kind == "sreq" || kind == "get")) {
    // Not served while this member cannot show its lease, and never later: the asker
    // looks the session up again (and waits for it, or takes it over).
    const bool sessionless = kind == "sreq";
    if (f.size() < 4) return;
    refuse_forward(0, f[sessionless ? 1 : 2], f[sessionless ? 2 : 3], owner_silent, "the owner is renewing its lease");
    return;
  }
  if (fenced() && (kind == "msg" || kind == "del")) {
    // Already acknowledged to the client (202, 200): kept for when the lease is current,
    // and served then if the session is still here.
    if (deferred_.size() < max_deferred) deferred_.emplace_back(payload);
    return;
  }
  if (on_request) on_request(std::move(f));
}

void cluster::break_forward(std::uint64_t tag, const forward& f, const std::shared_ptr<response_sink>& sink) {
  // Shard 0: where the inbox, and so every caller of this, runs.
  post_to(0, f.owner, encode_fields({"stop", member_, std::to_string(tag)}));
  if (!f.settled) sink->accept();
  if (f.request_id_json.empty() || (!f.json && f.settled)) {
    // A stream (a call's that has begun, or a GET's) ends where it stands: its client
    // resumes it with Last-Event-ID, and the resume is served from the owner's record of
    // every event.
    sink->finish();
    return;
  }
  // One JSON document cannot be resumed, and neither can a call's stream that nothing
  // reached yet: the owner's first batch, which carries the event id a resume starts
  // from, may be the one lost, and a stream ended empty would leave the client with no
  // answer and nothing to resume. The client is told that the answer was lost.
  std::string body = R"({"jsonrpc":"2.0","id":)";
  body.append(f.request_id_json)
      .append(R"(,"error":{"code":-32603,"message":"Internal error: the answer was lost between the server's )"
              R"(instances (their shared Redis connection broke); the request may have run"}})");
  sink->push(sse_event{std::string(), std::move(body)});
  sink->finish();
}

void cluster::inbox_lost() {
  struct broken_forward {
    std::uint64_t tag;
    forward f;
    std::shared_ptr<response_sink> sink;
  };
  std::vector<broken_forward> broken;
  {
    std::lock_guard lock(mutex_);
    for (auto& [tag, f] : forwards_)
      if (auto sink = f.sink.lock()) broken.push_back({tag, f, std::move(sink)});
    forwards_.clear();
  }
  for (const broken_forward& b : broken) break_forward(b.tag, b.f, b.sink);
}

task<void> cluster::sweep() {
  struct doomed {
    std::shared_ptr<response_sink> sink;
    std::string request_id_json;
    bool settled;
  };
  std::vector<std::string> owners;
  std::vector<std::shared_ptr<response_sink>> late;
  std::vector<std::pair<std::string, std::uint64_t>> to_abandon;
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_type::now();
    for (auto it = forwards_.begin(); it != forwards_.end();) {
      auto sink = it->second.sink.lock();
      if (!sink) {
        it = forwards_.erase(it);
        continue;
      }
      forward& f = it->second;
      if (!f.settled && now > f.deadline) {
        // Not taken up in time: the owner is asked to give it up unstarted; its answer (the
        // internal 421: not started, and now never will be) sends the asker to look for
        // the session again. Asked again each beat, in case the question was lost.
        if (!f.abandoned) f.abandoned = now;
        if (now > *f.abandoned + opts_.instance_ttl) {
          // No answer for a whole lease while the owner's lease is renewed: not a member
          // that hears its inbox (a member renews only while it does), so nothing of
          // this request can run there.
          late.push_back(std::move(sink));
          it = forwards_.erase(it);
          continue;
        }
        to_abandon.emplace_back(f.owner, it->first);
      }
      if (std::find(owners.begin(), owners.end(), f.owner) == owners.end()) owners.push_back(f.owner);
      ++it;
    }
  }
  for (const auto& [owner, tag] : to_abandon) post_to(0, owner, encode_fields({"abandon", member_, std::to_string(tag)}));
  for (const auto& sink : late)
    sink->reject(503, "Service Unavailable: the instance that owns this session did not take the request up, and it "
                      "will not run; retry it");
  for (const std::string& owner : owners) {
    // Its lease, not its heartbeats: only a lease that is gone says that the owner has
    // stopped (it fences itself before the lease can end), so that nothing told to the
    // client below can be contradicted by the owner afterwards.
    const std::optional<bool> lease = co_await store_->lease_exists(0, owner);
    if (!lease || *lease) continue;
    std::vector<doomed> gone;
    {
      std::lock_guard lock(mutex_);
      for (auto it = forwards_.begin(); it != forwards_.end();) {
        if (it->second.owner != owner) {
          ++it;
          continue;
        }
        if (auto sink = it->second.sink.lock()) gone.push_back({std::move(sink), it->second.request_id_json, it->second.settled});
        it = forwards_.erase(it);
      }
    }
    for (doomed& d : gone) {
      // Never taken up: the owner refuses it if it ever wakes (fenced), so the asker
      // looks for the session again and the request is served by whoever holds it now.
      if (!d.settled) {
        d.sink->reject(owner_silent, "the owner is gone");
        continue;
      }
      // The request's frame died with its instance (or is cancelled when it wakes): its
      // client gets an error response on the stream it waits on, never silence.
      if (!d.request_id_json.empty()) {
        std::string body = stopped_error(d.request_id_json);
        d.sink->push(sse_event{std::string(), std::move(body)});
      }
      d.sink->finish();
    }
  }
}

task<cluster::task_location> cluster::locate_task(std::size_t shard, std::string id) {
  task_location out;
  if (!tasks_ || tasks_->holds(id)) co_return out;
  // The owner alone: the record (a result may be large) is read only by the step that
  // adopts the task.
  shared_store::found_task found = co_await store_->task_owner(shard, id);
  if (found.is == shared_store::found_task::what::unavailable) {
    out.is = task_location::where::unavailable;
    co_return out;
  }
  if (found.is == shared_store::found_task::what::none || found.owner == member_)
    co_return out;  // unknown: answered here, "not found"
  if (co_await alive(shard, found.owner)) {
    out.is = task_location::where::remote;
    out.owner = std::move(found.owner);
    co_return out;
  }
  // Adopted only if its owner's lease is gone (in one step with the swap, as a session).
  shared_store::adoption adopted = co_await store_->adopt_task(shard, id, found.owner, member_);
  if (adopted.is == shared_store::adoption::what::unavailable) {
    out.is = task_location::where::unavailable;
    co_return out;
  }
  if (adopted.is == shared_store::adoption::what::refused) {
    out.is = task_location::where::remote;  // its owner is current after all (or another adopted it)
    out.owner = std::move(found.owner);
    co_return out;
  }
  if (adopted.record)
    tasks_->adopt(std::move(*adopted.record), "The server instance running this task stopped before it finished.");
  co_return out;
}

task<bool> cluster::replay_foreign(std::size_t shard, std::shared_ptr<session_entry> e, std::uint64_t number,
                                   std::uint64_t after, std::shared_ptr<response_sink> sink) {
  stored_stream stored;
  const shared_store::read_outcome outcome = co_await store_->read_stream(shard, e->id, number, after, stored);
  if (outcome != shared_store::read_outcome::ok) co_return false;
  for (auto& [seq, data] : stored.events) sink->push(sse_event{event_id(number, seq), std::move(data)}, true);
  if (!stored.ended && !stored.request_id_json.empty()) {
    // Its owner died with the request unanswered (the stream is below this owner's
    // epoch, so no live instance writes it): end it with an error, once for everyone.
    std::string body = stopped_error(stored.request_id_json);
    const shared_store::end_outcome ended = co_await store_->end_stream(shard, e->id, number, stored.last, body);
    if (ended == shared_store::end_outcome::ended) {
      sink->push(sse_event{event_id(number, stored.last + 1), std::move(body)});
    } else {
      // Someone ended it first: read what they wrote.
      stored_stream again;
      const shared_store::read_outcome read = co_await store_->read_stream(shard, e->id, number, stored.last, again);
      if (read == shared_store::read_outcome::ok)
        for (auto& [seq, data] : again.events) sink->push(sse_event{event_id(number, seq), std::move(data)}, true);
    }
  }
  co_return true;
}

}  // namespace droid::http::detail
