// SPDX-License-Identifier: BSL-1.0
/// @file
/// Events written behind to Redis Streams (read back by redis_shared_store.cpp).
#include "redis_event_store.hpp"

#include <algorithm>

namespace droid::redis {

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

std::string stream_keys::gap(std::uint64_t stream) const {
  std::string key = prefix;
  key.append("g:").append(session).append(":").append(std::to_string(stream));
  if (stream == 0) key.append(".").append(std::to_string(epoch));
  return key;
}

void redis_event_store::sent(bool sent, std::uint64_t stream) {
  if (!sent && std::find(unmarked_.begin(), unmarked_.end(), stream) == unmarked_.end()) unmarked_.push_back(stream);
}

void redis_event_store::mark_gaps() {
  std::erase_if(unmarked_, [&](std::uint64_t stream) {
    return client_->send({"SET", keys_.gap(stream), "1", "PX", std::to_string(keys_.ttl.count())});
  });
}

std::string stream_keys::index() const {
  std::string key = prefix;
  key.append("x:").append(session);
  return key;
}

void redis_event_store::begin(std::uint64_t stream, const ir::request_id& id) {
  local_->begin(stream, id);
  if (!unmarked_.empty()) mark_gaps();
  const std::string ttl = std::to_string(keys_.ttl.count());
  sent(client_->send({"SET", keys_.request(stream), id.to_json(), "PX", ttl}), stream);
  const std::string index = keys_.index();
  (void)client_->send({"SADD", index, std::to_string(stream)});
  (void)client_->send({"PEXPIRE", index, ttl});
}

void redis_event_store::append(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  local_->append(stream, seq, data);
  if (!unmarked_.empty()) mark_gaps();
  const std::string key = keys_.events(stream);
  const std::string id = std::to_string(seq) + "-0";
  const std::string cap = std::to_string(keys_.max_events);
  // Written behind, in order with every other command of this shard: the request is
  // never held up by Redis, and a Redis that is down loses what another instance could
  // have replayed, not what this one serves (see the file comment of the header).
  sent(client_->send({"XADD", key, "MAXLEN", "~", cap, id, "d", data}), stream);
  (void)client_->send({"PEXPIRE", key, std::to_string(keys_.ttl.count())});
}

bool redis_event_store::replay(std::uint64_t stream, std::uint64_t after_seq,
                               const std::function<void(std::uint64_t seq, std::string_view data)>& f) const {
  return local_->replay(stream, after_seq, f);
}

void redis_event_store::finish(std::uint64_t stream, std::uint64_t last_seq) {
  local_->finish(stream, last_seq);
  if (!unmarked_.empty()) mark_gaps();
  const std::string key = keys_.events(stream);
  sent(client_->send({"XADD", key, std::to_string(last_seq + 1) + "-0", "end", "1"}), stream);
  (void)client_->send({"PEXPIRE", key, std::to_string(keys_.ttl.count())});
}

}  // namespace droid::redis
