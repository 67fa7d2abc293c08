// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster's shared store in Redis (redis_shared_store.hpp): its scripts, its keys,
/// and the reading of streams another instance wrote.
#include "redis_shared_store.hpp"

#include <charconv>
#include <optional>
#include <stdexcept>

#include <asio/dispatch.hpp>
#include <asio/post.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <droid/domain/ir/codec.hpp>

#include "redis_event_store.hpp"
#include "redis_task_store.hpp"

namespace droid::redis {

namespace {

using http::detail::session_record;
using http::detail::stored_stream;

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  (void)std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// KEYS[1] a session's record, KEYS[2] its owner's lease; ARGV: the owner expected, the
/// member taking over, the time to live. The new epoch; -1 when the record names another
/// owner, -2 when the owner's lease exists. Why the lease is checked here and not before:
/// between a check and a swap the owner could come back; inside a script nothing comes
/// between. A record that names the caller already is taken at its epoch: two requests of
/// one member racing for one session must end with the one epoch their entry holds.
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

/// KEYS[1] a session's record; ARGV: the writer, its epoch, the time to live, then field
/// and value pairs. Writes only while the record names the writer at that epoch, or there
/// is none (a new session, or a Redis that lost it); 1 written, 0 refused.
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

/// KEYS[1] a session's record, KEYS[2] the set of its stream numbers; ARGV: the member,
/// the key prefixes of its streams ("P e:ID:" and "P r:ID:"), its epoch (the standalone
/// stream is one key per epoch), the prefix of its gap marks ("P g:ID:"). Only the
/// owner's delete counts: a member whose lease lapsed must not end a session another
/// took over.
constexpr std::string_view forget_script = R"(
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then return 0 end
for _, n in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('DEL', ARGV[2] .. n, ARGV[3] .. n, ARGV[5] .. n)
end
for e = 0, tonumber(ARGV[4]) do redis.call('DEL', ARGV[2] .. '0.' .. e, ARGV[5] .. '0.' .. e) end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
)";

/// KEYS: session records, then task records; ARGV[1] the member, ARGV[2] how many of the
/// keys are sessions, then each session's epoch. Per key: 1 still the member's, 2 no
/// record, 0 another's (a session at another epoch is another's: taken over and back).
constexpr std::string_view claim_script = R"(
local out = {}
local sessions = tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  local owner = redis.call('HGET', key, 'owner')
  if not owner then out[i] = 2
  elseif owner ~= ARGV[1] then out[i] = 0
  elseif i <= sessions and (redis.call('HGET', key, 'epoch') or '0') ~= ARGV[2 + i] then out[i] = 0
  else out[i] = 1 end
end
return out
)";

/// KEYS[1] a task's record, KEYS[2] its owner's lease; ARGV: the owner expected, the
/// member adopting it. Its record's JSON, or nil when it names another owner now or its
/// owner's lease exists. The old owner's write revision goes with it: the adopter
/// numbers its writes afresh (`redis_task_store::write_script`).
constexpr std::string_view adopt_task_script = R"(
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return false end
if redis.call('EXISTS', KEYS[2]) == 1 then return false end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
redis.call('HDEL', KEYS[1], 'rev')
return redis.call('HGET', KEYS[1], 'record')
)";

/// Keys a claim script is given at most: one script runs alone in Redis, so a member
/// holding many sessions asks in rounds rather than stall everyone else's commands.
constexpr std::size_t claim_batch = 512;

/// The Redis client of the shard this thread runs (null on other threads). Why: the task
/// store is written from whichever shard changes a task, and each shard has its own client.
thread_local client* shard_client = nullptr;

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

bool parse_record(const reply& hash, session_record& out) {
  if (hash.type != reply::kind::array || hash.elements.size() % 2 != 0) return false;
  bool have_owner = false, have_version = false;
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    const std::string& k = hash.elements[i].str;
    const std::string& v = hash.elements[i + 1].str;
    // Everything read back goes through the same exact parser as every message (the
    // record was written by an instance of ours, but Redis is not ours alone).
    const auto object = [&](boost::json::object& into) {
      boost::json::value parsed;
      if (ir::parse_exact(v, parsed) && parsed.is_object()) into = std::move(parsed.as_object());
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
      if (ir::parse_exact(v, parsed) && parsed.is_array())
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

/// The sequence number of a stream entry id "seq-n".
bool entry_seq(std::string_view id, std::uint64_t& seq, std::uint64_t& sub) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos) return false;
  const auto a = std::from_chars(id.data(), id.data() + dash, seq);
  const auto b = std::from_chars(id.data() + dash + 1, id.data() + id.size(), sub);
  return a.ec == std::errc() && b.ec == std::errc();
}

}  // namespace

redis_shared_store::redis_shared_store(std::vector<asio::any_io_executor> shards, shared_store_options o)
    : shards_(std::move(shards)), opts_(std::move(o)) {
  for (const auto& ex : shards_) clients_.push_back(client::create(ex, opts_.connection));
  inbox_ = client::create(shards_.front(), opts_.connection);
}

std::string redis_shared_store::key(std::string_view kind, std::string_view id) const {
  std::string k = opts_.key_prefix;
  k.append(kind).append(id);
  return k;
}

void redis_shared_store::start(std::string member, message_handler on_message, std::function<void()> on_lost) {
  for (std::size_t i = 0; i < shards_.size(); ++i)
    asio::dispatch(shards_[i], [c = clients_[i]] { shard_client = c.get(); });
  asio::dispatch(shards_.front(), [this, member = std::move(member), on_message = std::move(on_message),
                                   on_lost = std::move(on_lost)]() mutable {
    inbox_->on_message(std::move(on_message));
    inbox_->on_lost(std::move(on_lost));
    inbox_->subscribe(key("c:", member));
    inbox_->subscribe(key("all", ""));
  });
}

void redis_shared_store::stop() {
  asio::dispatch(shards_.front(), [inbox = inbox_] { inbox->close(); });
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    asio::post(shards_[i], [] { shard_client = nullptr; });
    // Behind what the shard has queued (a goodbye, say): the client flushes what it holds
    // before its close takes effect only if the write was started, which the second
    // post's turn gives it.
    asio::post(shards_[i], [ex = shards_[i], c = clients_[i]] { asio::post(ex, [c] { c->close(); }); });
  }
}

// ---- the lease ------------------------------------------------------------------------------

task<http::detail::shared_store::renewal> redis_shared_store::renew_lease(std::string member,
                                                                          std::chrono::milliseconds ttl) {
  // Named awaiters throughout: g++ 12 cannot keep a braced list's array alive across a
  // co_await in the same full expression.
  auto set = clients_.front()->command({"SET", key("i:", member), "1", "XX", "PX", std::to_string(ttl.count())});
  auto r = co_await set;
  if (!r || r->is_error()) co_return renewal::unavailable;
  co_return r->is_nil() ? renewal::gone : renewal::renewed;
}

task<bool> redis_shared_store::take_lease(std::string member, std::chrono::milliseconds ttl) {
  auto set = clients_.front()->command({"SET", key("i:", member), "1", "PX", std::to_string(ttl.count())});
  auto r = co_await set;
  co_return r && !r->is_error();
}

task<std::optional<bool>> redis_shared_store::lease_exists(std::size_t shard, std::string member) {
  auto exists = clients_[shard]->command({"EXISTS", key("i:", member)});
  auto r = co_await exists;
  if (!r || r->is_error()) co_return std::nullopt;
  co_return r->integer == 1;
}

void redis_shared_store::leave(std::string member) {
  (void)clients_.front()->send({"DEL", key("i:", member)});
}

// ---- sessions -------------------------------------------------------------------------------

task<http::detail::shared_store::found_session> redis_shared_store::read_session(std::size_t shard, std::string id) {
  found_session out;
  auto get = clients_[shard]->command({"HGETALL", key("s:", id)});
  auto hash = co_await get;
  if (!hash || hash->is_error()) {
    out.is = found_session::what::unavailable;
    co_return out;
  }
  if (!hash->elements.empty() && parse_record(*hash, out.record)) out.is = found_session::what::found;
  co_return out;
}

task<http::detail::shared_store::takeover> redis_shared_store::take_over(std::size_t shard, std::string id,
                                                                         std::string from, std::string to,
                                                                         std::chrono::milliseconds ttl) {
  takeover out;
  auto swap = clients_[shard]->command({"EVAL", takeover_script, "2", key("s:", id), key("i:", from), from, to,
                                        std::to_string(ttl.count())});
  auto epoch = co_await swap;
  if (!epoch || epoch->is_error()) co_return out;
  if (epoch->integer == -2) {
    out.is = takeover::what::owner_current;
  } else if (epoch->integer < 0) {
    out.is = takeover::what::raced;
  } else {
    out.is = takeover::what::taken;
    out.epoch = static_cast<std::uint64_t>(epoch->integer);
  }
  co_return out;
}

task<http::detail::shared_store::write_outcome> redis_shared_store::write_session(std::size_t shard, std::string id,
                                                                                  session_record r,
                                                                                  std::chrono::milliseconds ttl) {
  std::vector<std::string> cmd{"EVAL",  std::string(write_record_script), "1", key("s:", id), r.owner,
                               std::to_string(r.epoch), std::to_string(ttl.count())};
  for (std::string& f : record_fields(r)) cmd.push_back(std::move(f));
  std::shared_ptr<client> c = clients_[shard];
  auto w = c->command(cmd);
  auto written = co_await w;
  if (!written || written->is_error()) {
    c->count_failed_write();  // a barrier behind this write (`written`) must see it fail
    co_return write_outcome::unavailable;
  }
  co_return written->integer == 0 ? write_outcome::refused : write_outcome::written;
}

void redis_shared_store::touch_session(std::size_t shard, const std::string& id, std::chrono::milliseconds ttl) {
  (void)clients_[shard]->send({"PEXPIRE", key("s:", id), std::to_string(ttl.count())});
}

void redis_shared_store::forget_session(std::size_t shard, const std::string& id, const std::string& member,
                                        std::uint64_t epoch) {
  (void)clients_[shard]->send({"EVAL", forget_script, "2", key("s:", id), key("x:", id), member,
                               key("e:", id + ":"), key("r:", id + ":"), std::to_string(epoch), key("g:", id + ":")});
}

task<std::optional<std::vector<http::detail::shared_store::claim>>> redis_shared_store::claim_all(
    std::string member, std::vector<std::pair<std::string, std::uint64_t>> sessions, std::vector<std::string> tasks) {
  std::vector<claim> out;
  out.reserve(sessions.size() + tasks.size());
  const std::size_t total = sessions.size() + tasks.size();
  for (std::size_t begin = 0; begin < total; begin += claim_batch) {
    const std::size_t end = std::min(total, begin + claim_batch);
    std::vector<std::string> cmd{"EVAL", std::string(claim_script), std::to_string(end - begin)};
    std::size_t session_keys = 0;
    for (std::size_t i = begin; i < end; ++i) {
      if (i < sessions.size()) {
        cmd.push_back(key("s:", sessions[i].first));
        ++session_keys;
      } else {
        cmd.push_back(key("t:", tasks[i - sessions.size()]));
      }
    }
    cmd.push_back(member);
    cmd.push_back(std::to_string(session_keys));
    for (std::size_t i = begin; i < begin + session_keys; ++i) cmd.push_back(std::to_string(sessions[i].second));
    auto ask = clients_.front()->command(cmd);
    auto r = co_await ask;
    if (!r || r->is_error() || r->elements.size() != end - begin) co_return std::nullopt;
    for (const reply& e : r->elements)
      out.push_back(e.integer == 1 ? claim::ours : e.integer == 2 ? claim::missing : claim::another);
  }
  co_return out;
}

// ---- session streams ------------------------------------------------------------------------

namespace {

stream_keys keys_for(const shared_store_options& o, const std::string& id, std::uint64_t epoch) {
  stream_keys k;
  k.prefix = o.key_prefix;
  k.session = id;
  k.epoch = epoch;
  k.ttl = o.session_ttl;
  k.max_events = o.max_events;
  return k;
}

}  // namespace

std::unique_ptr<event_store> redis_shared_store::session_events(std::size_t shard, const std::string& id,
                                                                std::uint64_t epoch,
                                                                std::unique_ptr<memory_event_store> local) {
  return std::make_unique<redis_event_store>(clients_[shard], keys_for(opts_, id, epoch), std::move(local));
}

task<http::detail::shared_store::read_outcome> redis_shared_store::read_stream(std::size_t shard, std::string id,
                                                                               std::uint64_t number,
                                                                               std::uint64_t after,
                                                                               stored_stream& out) {
  const stream_keys keys = keys_for(opts_, id, 0);
  std::shared_ptr<client> c = clients_[shard];
  // At most `max_events` and the end mark: read whole, which also shows what was trimmed.
  // With it, whether a write of the stream never reached Redis (its gap mark): such a
  // stream has a hole and is not replayed as if whole.
  auto range = c->command({"XRANGE", keys.events(number), "-", "+"});
  auto gap = c->command({"EXISTS", keys.gap(number)});
  auto entries = co_await range;
  auto gapped = co_await gap;
  if (!entries || entries->is_error() || !gapped || gapped->is_error()) co_return read_outcome::unavailable;
  if (gapped->integer == 1) co_return read_outcome::trimmed;
  if (entries->elements.empty()) {
    // No event yet, which is the usual state of a long call: the stream exists from its
    // first byte (its request's id, written when it began), and its priming event, which
    // is not recorded, is what the client resumes from.
    auto get = c->command({"GET", keys.request(number)});
    auto rid = co_await get;
    if (!rid || rid->is_error()) co_return read_outcome::unavailable;
    if (rid->type != reply::kind::string || after != 0) co_return read_outcome::unknown;
    out.request_id_json = rid->str;
    co_return read_outcome::ok;
  }
  std::uint64_t first = 0;
  for (const reply& e : entries->elements) {
    if (e.elements.size() != 2) continue;
    std::uint64_t seq = 0, sub = 0;
    if (!entry_seq(e.elements[0].str, seq, sub)) continue;
    const std::vector<reply>& fields = e.elements[1].elements;
    if (fields.size() == 2 && fields[0].str == "end") {
      out.ended = true;
      continue;
    }
    if (fields.size() != 2 || fields[0].str != "d") continue;
    if (first == 0) first = seq;
    out.last = std::max(out.last, seq);
    if (seq > after) out.events.emplace_back(seq, fields[1].str);
  }
  // Events the client has not seen were trimmed: a partial replay would lose them.
  if (first > after + 1) co_return read_outcome::trimmed;
  if (after > out.last && !(out.last == 0 && after == 0)) co_return read_outcome::trimmed;
  auto get = c->command({"GET", keys.request(number)});
  auto rid = co_await get;
  if (rid && rid->type == reply::kind::string) out.request_id_json = rid->str;
  co_return read_outcome::ok;
}

task<http::detail::shared_store::end_outcome> redis_shared_store::end_stream(std::size_t shard, std::string id,
                                                                             std::uint64_t number, std::uint64_t last,
                                                                             std::string final_event) {
  const stream_keys keys = keys_for(opts_, id, 0);
  std::shared_ptr<client> c = clients_[shard];
  const std::string events = keys.events(number);
  // The first writer at "last+1-0" wins (Redis refuses an id not above the stream's
  // last): the owner's end, or one successor's error, never two.
  auto add = c->command({"XADD", events, std::to_string(last + 1) + "-0", "d", final_event});
  auto added = co_await add;
  if (!added) co_return end_outcome::unavailable;
  if (added->is_error()) co_return end_outcome::already;
  (void)c->send({"XADD", events, std::to_string(last + 1) + "-1", "end", "1"});
  (void)c->send({"PEXPIRE", events, std::to_string(keys.ttl.count())});
  co_return end_outcome::ended;
}

// ---- tasks ----------------------------------------------------------------------------------

std::shared_ptr<http::detail::shared_task_table> redis_shared_store::share_tasks(std::shared_ptr<memory_task_store> local,
                                                                                 std::string member) {
  // Written from the shard that changes a task; from another thread (a tool's own),
  // through shard 0.
  std::weak_ptr<client> first = clients_.front();
  asio::any_io_executor home = shards_.front();
  return std::make_shared<redis_task_store>(
      std::move(local), std::move(member), opts_.key_prefix, [first, home](std::vector<std::string> command) {
        if (shard_client) {
          (void)shard_client->send(command);
          return;
        }
        asio::post(home, [first, command = std::move(command)] {
          if (auto c = first.lock()) (void)c->send(command);
        });
      });
}

task<http::detail::shared_store::found_task> redis_shared_store::task_owner(std::size_t shard, std::string id) {
  found_task out;
  auto get = clients_[shard]->command({"HGET", key("t:", id), "owner"});
  auto found = co_await get;
  if (!found || found->is_error()) {
    out.is = found_task::what::unavailable;
    co_return out;
  }
  if (found->type == reply::kind::string && !found->str.empty()) {
    out.is = found_task::what::found;
    out.owner = found->str;
  }
  co_return out;
}

task<http::detail::shared_store::adoption> redis_shared_store::adopt_task(std::size_t shard, std::string id,
                                                                          std::string from, std::string to) {
  adoption out;
  auto adopt = clients_[shard]->command({"EVAL", adopt_task_script, "2", key("t:", id), key("i:", from), from, to});
  auto adopted = co_await adopt;
  if (!adopted || adopted->is_error()) co_return out;
  if (adopted->type != reply::kind::string) {
    out.is = adoption::what::refused;
    co_return out;
  }
  out.is = adoption::what::adopted;
  out.record = parse_task_record(adopted->str);
  co_return out;
}

// ---- messages -------------------------------------------------------------------------------

task<std::optional<std::int64_t>> redis_shared_store::publish(std::size_t shard, std::string member,
                                                              std::string payload) {
  auto publish = clients_[shard]->command({"PUBLISH", key("c:", member), payload});
  auto r = co_await publish;
  if (!r || r->type != reply::kind::integer) co_return std::nullopt;
  co_return r->integer;
}

void redis_shared_store::post(std::size_t shard, const std::string& member, const std::string& payload) {
  (void)clients_[shard]->send({"PUBLISH", key("c:", member), payload});
}

void redis_shared_store::post_all(std::size_t shard, const std::string& payload) {
  (void)clients_[shard]->send({"PUBLISH", key("all", ""), payload});
}

// ---- acknowledgements -----------------------------------------------------------------------

task<std::optional<std::string>> redis_shared_store::written(std::size_t shard) {
  // Every write queued before the PING is answered before it (one connection answers in
  // order). A write refused meanwhile (out of memory under `noeviction`, a read-only
  // replica) counts in failed_writes(); another write refused in the same moment counts
  // too: an acknowledgement is never given for what may be missing.
  std::shared_ptr<client> c = clients_[shard];
  const std::uint64_t failed_before = c->failed_writes();
  auto ping = c->command({"PING"});
  auto pong = co_await ping;
  if (!pong) co_return c->last_failure().empty() ? std::string("unreachable") : c->last_failure();
  if (pong->is_error()) co_return pong->str;
  if (c->failed_writes() != failed_before) co_return std::string("it refused a write");
  co_return std::nullopt;
}

}  // namespace droid::redis

namespace droid::http::detail {

std::shared_ptr<shared_store> make_redis_store(const options::scale_out& o, std::vector<asio::any_io_executor> shards,
                                               std::chrono::milliseconds session_ttl, std::size_t max_events) {
  std::string error;
  const std::optional<redis::endpoint> where = redis::parse_url(o.redis_url, error);
  if (!where) throw std::invalid_argument(std::string("http::options::cluster.redis_url: ").append(error));
  redis::shared_store_options so;
  so.connection.where = *where;
  so.connection.command_timeout = o.redis_timeout;
  so.connection.connect_timeout = o.redis_timeout;
  so.key_prefix = o.key_prefix;
  so.session_ttl = session_ttl;
  so.max_events = max_events;
  return std::make_shared<redis::redis_shared_store>(std::move(shards), std::move(so));
}

}  // namespace droid::http::detail
