// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-memory event ring.
#include <droid/adapters/secondary/event_store/event_store.hpp>

namespace droid {

memory_event_store::~memory_event_store() {
  if (account_) account_->refund(bytes_);
}

void memory_event_store::evict_front() {
  const event& oldest = events_.front();
  if (auto it = streams_.find(oldest.stream); it != streams_.end()) {
    stream_state& st = it->second;
    st.evicted = oldest.seq;
    // An unfinished stream that has nothing left here needs no state: its next event
    // brings it back with everything before marked evicted (see append).
    if (--st.held == 0 && !st.finished) drop(it);
  }
  pop_front();
}

void memory_event_store::pop_front() {
  const std::size_t n = events_.front().data.size();
  bytes_ -= n;
  if (account_) account_->refund(n);
  events_.pop_front();
}

std::pair<memory_event_store::stream_map::iterator, bool> memory_event_store::state_of(std::uint64_t stream) {
  if (auto it = streams_.find(stream); it != streams_.end()) return {it, false};
  if (spare_.empty()) return streams_.try_emplace(stream);
  spare_.key() = stream;
  spare_.mapped() = stream_state{};
  return {streams_.insert(std::move(spare_)).position, true};
}

void memory_event_store::drop(stream_map::iterator it) {
  if (spare_.empty()) spare_ = streams_.extract(it);
  else streams_.erase(it);
}

void memory_event_store::forget_unkept(std::uint64_t stream, std::uint64_t seq) {
  auto [it, fresh] = state_of(stream);
  stream_state& st = it->second;
  st.last = st.evicted = seq;
  // Nothing held, not finished: the state goes (see evict_front), and the stream's next
  // event brings it back with everything before marked evicted.
  if (st.held == 0 && !st.finished) drop(it);
}

void memory_event_store::append(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  if (capacity_ == 0) return;
  if (data.size() > max_bytes_) {
    // Too large to keep: recorded as sent and evicted at once, so a replay from before it
    // refuses instead of skipping it. Nothing else is evicted for it.
    forget_unkept(stream, seq);
    return;
  }
  while (!events_.empty() && (events_.size() == capacity_ || bytes_ + data.size() > max_bytes_)) evict_front();
  if (account_) {
    // The tenant's or the server's share is full: this session gives up its own oldest
    // events for the new one (a client resumes what it just lost, not what it lost long
    // ago); with none left to give, the new event is not kept. Never another session's:
    // a store knows only its own, and evicting a neighbour's would let one tenant's
    // traffic erase another's resumable answers.
    while (!account_->charge(data.size())) {
      account_->note_squeezed();
      if (events_.empty()) {
        forget_unkept(stream, seq);
        return;
      }
      evict_front();
    }
  }
  events_.push_back(event{stream, seq, std::string(data)});
  bytes_ += data.size();
  auto [it, fresh] = state_of(stream);
  // A stream seen again after its state went: what came before is gone, and a replay
  // from there must refuse rather than skip it.
  if (fresh) it->second.evicted = seq - 1;
  it->second.last = seq;
  ++it->second.held;
}

void memory_event_store::finish(std::uint64_t stream, std::uint64_t last_seq) {
  if (capacity_ == 0) return;
  auto [it, fresh] = state_of(stream);
  stream_state& st = it->second;
  if (st.finished) return;
  // No events here (none sent, or all evicted): a client that saw `last_seq` can still
  // resume to the end, one that saw less cannot.
  if (fresh) st.last = st.evicted = last_seq;
  st.finished = true;
  finished_.push_back(stream);
  if (finished_.size() <= finished_cap_) return;
  if (const auto gone = streams_.find(finished_.front()); gone != streams_.end()) drop(gone);
  finished_.pop_front();
  // The ring mostly holds streams in the order they finish: the forgotten stream's
  // events are usually at the front, and go now rather than at eviction.
  while (!events_.empty() && !streams_.contains(events_.front().stream)) pop_front();
}

bool memory_event_store::replay(std::uint64_t stream, std::uint64_t after_seq,
                                const std::function<void(std::uint64_t, std::string_view)>& f) const {
  const auto it = streams_.find(stream);
  // Unknown: never recorded, or forgotten. The transport answers for a live stream with
  // nothing recorded (it knows its sequence), so nothing here can tell the two apart.
  if (it == streams_.end()) return false;
  // Evicted events the client has not seen: a partial replay would silently lose them.
  if (after_seq < it->second.evicted || after_seq > it->second.last) return false;
  events_.for_each([&](const event& e) {
    if (e.stream == stream && e.seq > after_seq) f(e.seq, e.data);
  });
  return true;
}

}  // namespace droid
