// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster: records, heartbeats, the inbox, forwarding and takeover (cluster.hpp).
#include "cluster.hpp"

#include "application/server/server_core.hpp"
#include "application/server/tasks.hpp"

#include <charconv>
#include <random>

#include <unistd.h>

#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <boost/json/serialize.hpp>

#include <droid/application/server/request_runner.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/schema.hpp>

#include "endpoints.hpp"
#include "responses.hpp"
#include "stream.hpp"

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

/// Swaps a session's owner from `ARGV[1]` to `ARGV[2]` if it is still `ARGV[1]` and that
/// owner's lease (`KEYS[2]`) is gone, bumping its epoch; returns the new epoch, -1 when
/// another instance got there first, -2 when the owner's lease is still current. Why the
/// lease is checked here and not before: between a check and a swap the owner could come
/// back; inside one script nothing comes between.
///
/// A record that names the caller already (a session it gave up, or that another of its
/// own requests is taking over this very moment) is taken at its epoch, not a new one:
/// two requests of one member racing for one session must end with one epoch, the one
/// their session entry holds, or the member's next write would be refused as stale.
constexpr std::string_view takeover_script = R"(
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return -1 end
if ARGV[1] == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0')
end
if redis.call('EXISTS', KEYS[2]) == 1 then return -2 end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('HINCRBY', KEYS[1], 'epoch', 1)
)";

/// Every write of a session's record: KEYS[1] the record; ARGV: this member, its epoch of
/// the session, the time to live, then field and value pairs. Writes only while the
/// record names this member at this epoch, or there is no record (a new session, or a
/// Redis that lost it); 1 written, 0 refused (the session is another's now).
constexpr std::string_view write_record_script = R"(
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then
  if owner ~= ARGV[1] then return 0 end
  if (redis.call('HGET', KEYS[1], 'epoch') or '0') ~= ARGV[2] then return 0 end
end
redis.call('HSET', KEYS[1], 'epoch', ARGV[2], unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
)";

/// Ends a session's keys at once (DELETE): KEYS[1] the record, KEYS[2] the set of its
/// stream numbers; ARGV: this member, the key prefixes of its streams ("P e:ID:" and
/// "P r:ID:"), its epoch (the standalone stream is kept per epoch).
/// Only the owner's delete counts (a member whose lease lapsed must not end a session
/// another took over).
constexpr std::string_view forget_script = R"(
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then return 0 end
for _, n in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('DEL', ARGV[2] .. n, ARGV[3] .. n)
end
for e = 0, tonumber(ARGV[4]) do redis.call('DEL', ARGV[2] .. '0.' .. e) end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
)";

/// Takes task `KEYS[1]` over from `ARGV[1]` (whose lease is `KEYS[2]`) for `ARGV[2]`:
/// returns its record's JSON, or nil when its owner is another now or its lease is current.
constexpr std::string_view adopt_task_script = R"(
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return false end
if redis.call('EXISTS', KEYS[2]) == 1 then return false end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
return redis.call('HGET', KEYS[1], 'record')
)";

/// The Redis client of the shard this thread runs (null on other threads). Why: the task
/// store is called on whichever shard runs the request, and each shard has its own client.
thread_local redis::client* shard_client = nullptr;

/// Set while this thread tells local clients of a change another instance announced, so
/// that the announcement is not sent back out (and round again, forever).
thread_local bool relaying_change = false;

/// The cluster's ear on the server's changes: each one raised here is published on the
/// common channel. Why a listener: the server must not know about clusters; it tells
/// whoever listens, as it tells `subscriptions/listen` streams.
class change_fanout final : public droid::detail::change_listener {
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

// ---- records -----------------------------------------------------------------------------

std::vector<std::string> record_fields(const session_record& r) {
  const session_state& s = r.state;
  boost::json::array subs;
  for (const std::string& uri : s.subscriptions) subs.emplace_back(uri);
  return {"owner",     r.owner,
          "version",   s.protocol_version,
          "client",    boost::json::serialize(s.client_info),
          "caps",      boost::json::serialize(s.capabilities),
          "level",     s.min_log_level ? std::string(to_string(*s.min_log_level)) : std::string(),
          "subs",      boost::json::serialize(subs),
          "principal", s.principal,
          "tools",     s.tools_advertised ? "1" : "0"};
}

bool parse_record(const redis::reply& hash, session_record& out) {
  if (hash.type != redis::reply::kind::array || hash.elements.size() % 2 != 0) return false;
  bool have_owner = false, have_version = false;
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    const std::string& k = hash.elements[i].str;
    const std::string& v = hash.elements[i + 1].str;
    // Everything read back goes through the same exact parser as every message (the
    // record was written by an instance of ours, but Redis is not ours alone).
    const auto object = [&](boost::json::object& into) {
      boost::json::value parsed;
      if (parse_exact(v, parsed) && parsed.is_object()) into = std::move(parsed.as_object());
    };
    if (k == "owner") {
      out.owner = v;
      have_owner = true;
    } else if (k == "epoch") {
      out.epoch = to_u64(v);
    } else if (k == "version") {
      out.state.protocol_version = v;
      have_version = true;
    } else if (k == "client") {
      object(out.state.client_info);
    } else if (k == "caps") {
      object(out.state.capabilities);
    } else if (k == "level") {
      log_level level{};
      if (parse_log_level(v, level)) out.state.min_log_level = level;
    } else if (k == "subs") {
      boost::json::value parsed;
      if (parse_exact(v, parsed) && parsed.is_array())
        for (const auto& uri : parsed.as_array())
          if (uri.is_string()) out.state.subscriptions.emplace_back(uri.as_string());
    } else if (k == "principal") {
      out.state.principal = v;
    } else if (k == "tools") {
      out.state.tools_advertised = v == "1";
    }
  }
  return have_owner && have_version;
}

// ---- cluster -----------------------------------------------------------------------------

cluster::cluster(endpoint_state& st, const options::scale_out& o, std::vector<asio::any_io_executor> shards)
    : st_(st),
      opts_(o),
      name_(o.instance_id.empty() ? default_instance_name() : o.instance_id),
      member_(name_ + "#" + new_incarnation()),
      shards_(std::move(shards)) {
  std::string error;
  auto where = redis::parse_url(opts_.redis_url, error);
  if (!where) throw std::invalid_argument(std::string("http::options::cluster.redis_url: ").append(error));
  redis::client_options co;
  co.where = *where;
  co.command_timeout = opts_.redis_timeout;
  co.connect_timeout = opts_.redis_timeout;
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
  for (const auto& ex : shards_) clients_.push_back(redis::client::create(ex, co));
  inbox_ = redis::client::create(shards_.front(), co);
  droid::detail::task_engine& engine = droid::detail::core(st_.srv).tasks();
  if (engine.memory()) {
    // Written through from the shard that changes a task; from another thread (a tool's
    // own), through shard 0.
    std::weak_ptr<redis::client> first = clients_.front();
    asio::any_io_executor home = shards_.front();
    tasks_ = std::make_shared<redis::shared_task_store>(
        engine.memory(), member_, opts_.key_prefix, [first, home](std::vector<std::string> command) {
          if (shard_client) {
            (void)shard_client->send(command);
            return;
          }
          asio::post(home, [first, command = std::move(command)] {
            if (auto c = first.lock()) (void)c->send(command);
          });
        });
    engine.wrap_store(tasks_);
  }
}

void cluster::start() {
  auto self = shared_from_this();
  for (std::size_t i = 0; i < shards_.size(); ++i)
    asio::dispatch(shards_[i], [self, i] { shard_client = self->clients_[i].get(); });
  asio::dispatch(shards_.front(), [self] {
    // Weak: the inbox belongs to the cluster, and a strong reference back would keep
    // both alive forever.
    self->inbox_->on_message([weak = std::weak_ptr<cluster>(self)](std::string_view channel, std::string_view payload) {
      if (auto c = weak.lock()) c->on_message(channel, payload);
    });
    self->inbox_->on_lost([weak = std::weak_ptr<cluster>(self)] {
      if (auto c = weak.lock()) c->inbox_lost();
    });
    self->inbox_->subscribe(self->opts_.key_prefix + "c:" + self->member_);
    self->inbox_->subscribe(self->opts_.key_prefix + "all");
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
      const std::string payload = encode_fields({f[0], c->member_, f[1]});
      (void)c->clients_.front()->send({"PUBLISH", c->opts_.key_prefix + "all", payload});
    });
  });
  droid::detail::core(st_.srv).listen(fanout_);
}

void cluster::beat() {
  if (stopping_) return;
  redis::client& r = *clients_.front();
  (void)r.send({"PUBLISH", opts_.key_prefix + "all", encode_fields({"hb", member_})});
  // A subscribed connection has no traffic of its own: a PING is what finds one that
  // died without a word (its watchdog then times it out).
  (void)inbox_->send({"PING"});
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
    redis::client& r = *self->clients_.front();
    (void)r.send({"DEL", self->opts_.key_prefix + "i:" + self->member_});
    (void)r.send({"PUBLISH", self->opts_.key_prefix + "all", encode_fields({"bye", self->member_})});
    self->inbox_->close();
  });
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    asio::post(shards_[i], [] { shard_client = nullptr; });
    // Behind what the shard has queued, so that the goodbye above is written first
    // (the client flushes what it holds before its close takes effect on the socket
    // only if the write was started: the post gives it that turn).
    asio::post(shards_[i], [self, i] { asio::post(self->shards_[i], [self, i] { self->clients_[i]->close(); }); });
  }
}

std::unique_ptr<event_store> cluster::make_store(const session_entry& e) const {
  const options& o = st_.opts;
  if (o.reply == streaming::json || o.event_ring_capacity == 0) return nullptr;
  return std::make_unique<redis::redis_event_store>(
      clients_[e.shard], keys_of(e.id, e.epoch),
      std::make_unique<memory_event_store>(o.event_ring_capacity, 64, o.event_ring_bytes));
}

redis::stream_keys cluster::keys_of(const std::string& id, std::uint64_t epoch) const {
  redis::stream_keys k;
  k.prefix = opts_.key_prefix;
  k.session = id;
  k.epoch = epoch;
  k.ttl = st_.opts.session_idle_timeout;
  k.max_events = std::max<std::size_t>(st_.opts.event_ring_capacity, 16);
  return k;
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
    r.state = entry->s->state();
    std::vector<std::string> cmd{"EVAL", std::string(write_record_script), "1", self->opts_.key_prefix + "s:" + entry->id,
                                 self->member_, std::to_string(entry->epoch),
                                 std::to_string(self->st_.opts.session_idle_timeout.count())};
    for (std::string& f : record_fields(r)) cmd.push_back(std::move(f));
    entry->record_touched = now_ns();
    const auto write = [](std::shared_ptr<cluster> self, std::shared_ptr<redis::client> c, std::string id,
                          std::vector<std::string> cmd) -> task<void> {
      auto w = c->command(cmd);
      auto written = co_await w;
      // A barrier behind this write (a new session's acknowledgement) must see it fail.
      if (!written || written->is_error()) c->count_failed_write();
      else if (written->integer == 0) self->give_up(id);  // another member's now
    };
    spawn(entry->executor, write(self, self->clients_[entry->shard], entry->id, std::move(cmd)),
          [](std::exception_ptr) {});
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
    (void)self->clients_[shard]->send({"PEXPIRE", self->opts_.key_prefix + "s:" + id,
                                       std::to_string(self->st_.opts.session_idle_timeout.count())});
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
  const std::string& p = opts_.key_prefix;
  (void)clients_[shard]->send({"EVAL", forget_script, "2", p + "s:" + id, p + "x:" + id, member_, p + "e:" + id + ":",
                               p + "r:" + id + ":", std::to_string(epoch)});
}

task<bool> cluster::alive(std::size_t shard, std::string owner) {
  if (owner == member_) co_return false;  // a record naming us that we do not hold: given up
  {
    std::lock_guard lock(mutex_);
    const auto now = clock_type::now();
    if (auto it = seen_.find(owner); it != seen_.end() && now - it->second < opts_.instance_ttl) co_return true;
  }
  // The awaiter is named: g++ 12 cannot keep a braced list's array alive across a
  // co_await in the same full expression.
  auto exists = clients_[shard]->command({"EXISTS", opts_.key_prefix + "i:" + owner});
  auto r = co_await exists;
  // Redis down: the owner cannot be judged dead, so nothing is taken over.
  co_return !r || r->integer == 1;
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
  const std::string key = opts_.key_prefix + "s:" + id;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto get = clients_[shard]->command({"HGETALL", key});
    auto hash = co_await get;
    if (!hash || hash->is_error()) {
      out.is = located::where::unavailable;
      co_return out;
    }
    session_record record;
    if (hash->elements.empty() || !parse_record(*hash, record)) co_return out;  // nowhere
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
    // Not heard from lately: taken over if its lease is gone (the script checks), unless
    // another instance did just now.
    const std::string ttl = std::to_string(st_.opts.session_idle_timeout.count());
    auto swap = clients_[shard]->command(
        {"EVAL", takeover_script, "2", key, opts_.key_prefix + "i:" + record.owner, record.owner, member_, ttl});
    auto epoch = co_await swap;
    if (!epoch || epoch->is_error()) {
      out.is = located::where::unavailable;
      co_return out;
    }
    if (epoch->integer == -2) {
      remote();  // its lease is current: it is alive, only quiet
      co_return out;
    }
    if (epoch->integer < 0) continue;  // someone else took it: look again
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
    entry->epoch = static_cast<std::uint64_t>(epoch->integer);
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
  auto publish = clients_[shard]->command({"PUBLISH", opts_.key_prefix + "c:" + owner, payload});
  auto r = co_await publish;
  if (!r || r->type != redis::reply::kind::integer) co_return delivery::unavailable;
  co_return r->integer > 0 ? delivery::delivered : delivery::nobody;
}

task<cluster::delivery> cluster::deliver(std::size_t shard, std::string owner, std::string payload) {
  const auto until = clock_type::now() + opts_.instance_ttl + opts_.forward_timeout;
  for (;;) {
    const delivery told = co_await send_to(shard, owner, payload);
    if (told != delivery::nobody) co_return told;
    auto exists = clients_[shard]->command({"EXISTS", opts_.key_prefix + "i:" + owner});
    auto lease = co_await exists;
    if (!lease || lease->is_error()) co_return delivery::unavailable;
    if (lease->integer == 0) co_return delivery::nobody;  // gone for good: look again
    if (clock_type::now() >= until) co_return delivery::unavailable;
    asio::steady_timer pause(shards_[shard], std::min<clock_type::duration>(opts_.heartbeat / 4, std::chrono::milliseconds(50)));
    (void)co_await pause.async_wait(use_task);
  }
}

void cluster::stop_unkept_tasks(std::vector<sse_event>& answers) {
  for (const sse_event& e : answers) {
    boost::json::value v;
    if (!parse_exact(e.data, v) || !v.is_object()) continue;
    const boost::json::value* result = v.as_object().if_contains("result");
    const boost::json::value* id = result && result->is_object() ? result->as_object().if_contains("taskId") : nullptr;
    if (!id || !id->is_string()) continue;
    const std::string task(id->as_string());
    droid::detail::task_engine& engine = droid::detail::core(st_.srv).tasks();
    (void)engine.store().finish(task, task_status::failed, {},
                                R"({"code":-32603,"message":"the shared store (Redis) did not keep this task"})",
                                "The shared store (Redis) did not keep this task; it was stopped.");
    engine.stop_tool(task);
  }
}

void cluster::accept_when_written(std::size_t shard, std::shared_ptr<response_sink> sink, bool refuse_unwritten,
                                  std::function<void(std::vector<sse_event>&)> on_refused) {
  const auto barrier = [](std::shared_ptr<redis::client> c, std::shared_ptr<response_sink> s, bool refuse,
                          std::function<void(std::vector<sse_event>&)> refused) -> task<void> {
    // Every write queued before the PING is answered before it (one connection answers in
    // order). A write refused meanwhile (out of memory under `noeviction`, a read-only
    // replica) counts in failed_writes(): the answer is then refused too, because what it
    // names may not be in Redis. Another write refused in the same moment refuses it as
    // well: an acknowledgement is never given for what may be missing.
    const std::uint64_t failed_before = c->failed_writes();
    auto ping = c->command({"PING"});
    auto pong = co_await ping;
    if (refuse && (!pong || pong->is_error() || c->failed_writes() != failed_before)) {
      std::string why = "Service Unavailable: the shared store (Redis) did not take this server's write (";
      why.append(!pong ? (c->last_failure().empty() ? std::string("unreachable") : c->last_failure())
                 : pong->is_error() ? pong->str
                                    : std::string("it refused a write"))
          .append("); nothing was kept, try again shortly");
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
  spawn(shards_[shard], barrier(clients_[shard], std::move(sink), refuse_unwritten, std::move(on_refused)),
        [](std::exception_ptr) {});
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
  (void)clients_[shard]->send({"PUBLISH", opts_.key_prefix + "c:" + owner, payload});
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
      if (kind == "lc") droid::detail::core(st_.srv).notify_list_changed(f[2]);
      if (kind == "upd") droid::detail::core(st_.srv).resource_updated(f[2]);
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
  if (f.request_id_json.empty() || !f.json) {
    // A stream (a call's, or a GET's) ends where it stands: its client resumes it with
    // Last-Event-ID, and the resume is served from the owner's record of every event.
    sink->finish();
    return;
  }
  // One JSON document cannot be resumed: the client is told that the answer was lost.
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
    auto exists = clients_.front()->command({"EXISTS", opts_.key_prefix + "i:" + owner});
    auto lease = co_await exists;
    if (!lease || lease->is_error() || lease->integer != 0) continue;
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
  // The owner alone: the record (a result may be large) is read only by the script that
  // adopts the task.
  auto get = clients_[shard]->command({"HGET", opts_.key_prefix + "t:" + id, "owner"});
  auto found = co_await get;
  if (!found || found->is_error()) {
    out.is = task_location::where::unavailable;
    co_return out;
  }
  std::string owner = found->type == redis::reply::kind::string ? found->str : std::string();
  if (owner.empty() || owner == member_) co_return out;  // unknown: answered here, "not found"
  if (co_await alive(shard, owner)) {
    out.is = task_location::where::remote;
    out.owner = std::move(owner);
    co_return out;
  }
  // Adopted only if its owner's lease is gone (in one script with the swap, as a session).
  auto adopt = clients_[shard]->command(
      {"EVAL", adopt_task_script, "2", opts_.key_prefix + "t:" + id, opts_.key_prefix + "i:" + owner, owner, member_});
  auto adopted = co_await adopt;
  if (!adopted || adopted->is_error()) {
    out.is = task_location::where::unavailable;
    co_return out;
  }
  if (adopted->type != redis::reply::kind::string) {
    out.is = task_location::where::remote;  // its owner is current after all (or another adopted it)
    out.owner = std::move(owner);
    co_return out;
  }
  if (std::optional<task_record> r = redis::parse_task_record(adopted->str))
    tasks_->adopt(std::move(*r), "The server instance running this task stopped before it finished.");
  co_return out;
}

task<bool> cluster::replay_foreign(std::size_t shard, std::shared_ptr<session_entry> e, std::uint64_t number,
                                   std::uint64_t after, std::shared_ptr<response_sink> sink) {
  const redis::stream_keys keys = keys_of(e->id, 0);
  redis::stored_stream stored;
  const redis::read_outcome outcome = co_await redis::read_stream(clients_[shard], keys, number, after, stored);
  if (outcome != redis::read_outcome::ok) co_return false;
  for (auto& [seq, data] : stored.events) sink->push(sse_event{event_id(number, seq), std::move(data)});
  if (!stored.ended && !stored.request_id_json.empty()) {
    // Its owner died with the request unanswered (the stream is below this owner's
    // epoch, so no live instance writes it): end it with an error, once for everyone.
    std::string body = stopped_error(stored.request_id_json);
    auto ended = co_await redis::end_stream(clients_[shard], keys, number, stored.last, body);
    if (ended == redis::end_outcome::ended) {
      sink->push(sse_event{event_id(number, stored.last + 1), std::move(body)});
    } else {
      // Someone ended it first: read what they wrote.
      redis::stored_stream again;
      if (co_await redis::read_stream(clients_[shard], keys, number, stored.last, again) == redis::read_outcome::ok)
        for (auto& [seq, data] : again.events) sink->push(sse_event{event_id(number, seq), std::move(data)});
    }
  }
  co_return true;
}

}  // namespace droid::http::detail
