// SPDX-License-Identifier: BSL-1.0
/// @file
/// Events written behind to Redis Streams, and read back by another instance.
#include "redis_event_store.hpp"

#include <charconv>

namespace droid::redis {

namespace {

/// The sequence number of a stream entry id "seq-n".
bool entry_seq(std::string_view id, std::uint64_t& seq, std::uint64_t& sub) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos) return false;
  const auto a = std::from_chars(id.data(), id.data() + dash, seq);
  const auto b = std::from_chars(id.data() + dash + 1, id.data() + id.size(), sub);
  return a.ec == std::errc() && b.ec == std::errc();
}

}  // namespace

// Appended piece by piece: g++ 12 at -O3 warns falsely (-Wrestrict, GCC bug 105329) on
// a literal added to a temporary string.
std::string stream_keys::events(std::uint64_t stream) const {
  std::string key = prefix;
  key.append("e:").append(session).append(":").append(std::to_string(stream));
  if (stream == 0) key.append(".").append(std::to_string(epoch));
  return key;
}

std::string stream_keys::request(std::uint64_t stream) const {
  std::string key = prefix;
  key.append("r:").append(session).append(":").append(std::to_string(stream));
  return key;
}

std::string stream_keys::index() const {
  std::string key = prefix;
  key.append("x:").append(session);
  return key;
}

void redis_event_store::begin(std::uint64_t stream, const ir::request_id& id) {
  local_->begin(stream, id);
  const std::string ttl = std::to_string(keys_.ttl.count());
  (void)client_->send({"SET", keys_.request(stream), id.to_json(), "PX", ttl});
  const std::string index = keys_.index();
  (void)client_->send({"SADD", index, std::to_string(stream)});
  (void)client_->send({"PEXPIRE", index, ttl});
}

void redis_event_store::append(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  local_->append(stream, seq, data);
  const std::string key = keys_.events(stream);
  const std::string id = std::to_string(seq) + "-0";
  const std::string cap = std::to_string(keys_.max_events);
  // Written behind, in order with every other command of this shard: the request is
  // never held up by Redis, and a Redis that is down loses what another instance could
  // have replayed, not what this one serves (see the file comment of the header).
  (void)client_->send({"XADD", key, "MAXLEN", "~", cap, id, "d", data});
  (void)client_->send({"PEXPIRE", key, std::to_string(keys_.ttl.count())});
}

bool redis_event_store::replay(std::uint64_t stream, std::uint64_t after_seq,
                               const std::function<void(std::uint64_t seq, std::string_view data)>& f) const {
  return local_->replay(stream, after_seq, f);
}

void redis_event_store::finish(std::uint64_t stream, std::uint64_t last_seq) {
  local_->finish(stream, last_seq);
  const std::string key = keys_.events(stream);
  (void)client_->send({"XADD", key, std::to_string(last_seq + 1) + "-0", "end", "1"});
  (void)client_->send({"PEXPIRE", key, std::to_string(keys_.ttl.count())});
}

task<read_outcome> read_stream(std::shared_ptr<client> c, stream_keys keys, std::uint64_t stream, std::uint64_t after,
                               stored_stream& out) {
  // At most `max_events` and the end mark: read whole, which also shows what was trimmed.
  // Named awaiters: g++ 12 cannot keep a braced list's array alive across a co_await in
  // the same full expression.
  auto range = c->command({"XRANGE", keys.events(stream), "-", "+"});
  auto entries = co_await range;
  if (!entries || entries->is_error()) co_return read_outcome::unavailable;
  if (entries->elements.empty()) {
    // No event yet, which is the usual state of a long call: the stream exists from its
    // first byte (its request's id, written when it began), and its priming event, which
    // is not recorded, is what the client resumes from.
    auto get = c->command({"GET", keys.request(stream)});
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
  auto get = c->command({"GET", keys.request(stream)});
  auto rid = co_await get;
  if (rid && rid->type == reply::kind::string) out.request_id_json = rid->str;
  co_return read_outcome::ok;
}

task<end_outcome> end_stream(std::shared_ptr<client> c, stream_keys keys, std::uint64_t stream, std::uint64_t last,
                              std::string final_event) {
  const std::string key = keys.events(stream);
  // The first writer at "last+1-0" wins (Redis refuses an id not above the stream's
  // last): the owner's end, or one successor's error, never two.
  std::string id = std::to_string(last + 1);
  auto add = c->command({"XADD", key, id + "-0", "d", final_event});
  auto added = co_await add;
  if (!added) co_return end_outcome::unavailable;
  if (added->is_error()) co_return end_outcome::already;
  (void)c->send({"XADD", key, std::to_string(last + 1) + "-1", "end", "1"});
  (void)c->send({"PEXPIRE", key, std::to_string(keys.ttl.count())});
  co_return end_outcome::ended;
}

}  // namespace droid::redis
