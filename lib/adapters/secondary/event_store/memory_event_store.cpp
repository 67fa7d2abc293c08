// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-memory event ring.
#include <droid/adapters/secondary/event_store/event_store.hpp>

namespace droid {

void memory_event_store::append(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  if (capacity_ == 0) return;
  if (events_.size() == capacity_) {
    const event& oldest = events_.front();
    streams_[oldest.stream].evicted = oldest.seq;
    events_.pop_front();
  }
  events_.push_back(event{stream, seq, std::string(data)});
  streams_[stream].last = seq;
}

bool memory_event_store::replay(std::uint64_t stream, std::uint64_t after_seq,
                                const std::function<void(std::uint64_t, std::string_view)>& f) const {
  const auto it = streams_.find(stream);
  // A stream with no events yet: nothing to replay (the transport knows which streams exist).
  if (it == streams_.end()) return after_seq == 0;
  // Evicted events the client has not seen: a partial replay would silently lose them.
  if (after_seq < it->second.evicted || after_seq > it->second.last) return false;
  for (const event& e : events_)
    if (e.stream == stream && e.seq > after_seq) f(e.seq, e.data);
  return true;
}

}  // namespace droid
