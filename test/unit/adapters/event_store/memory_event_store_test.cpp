// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-memory event ring and event ids: the resumption cursor, sans-io; and what a
/// stream hands its sink when its store records behind.
#include <droid/adapters/secondary/event_store/event_store.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <doctest/doctest.h>

#include "adapters/primary/transport/http/sessions/stream.hpp"

namespace {

std::vector<std::string> replayed(const droid::event_store& store, std::uint64_t stream, std::uint64_t after,
                                  bool* ok = nullptr) {
  std::vector<std::string> out;
  const bool done = store.replay(stream, after, [&](std::uint64_t seq, std::string_view data) {
    out.push_back(std::to_string(seq) + ":" + std::string(data));
  });
  if (ok) *ok = done;
  return out;
}

/// A store that records behind, as one shared between instances does (Redis): what it is
/// given leaves this process only when the test says so (`leave`).
class behind_store final : public droid::event_store {
 public:
  void append(std::uint64_t stream, std::uint64_t seq, std::string_view data) override {
    local_.append(stream, seq, data);
  }
  bool replay(std::uint64_t stream, std::uint64_t after_seq,
              const std::function<void(std::uint64_t seq, std::string_view data)>& f) const override {
    return local_.replay(stream, after_seq, f);
  }
  void finish(std::uint64_t stream, std::uint64_t last_seq) override { local_.finish(stream, last_seq); }
  [[nodiscard]] bool records_behind() const noexcept override { return true; }
  void after_recorded(std::function<void()> f) override { waiting_.push_back(std::move(f)); }
  void leave() {
    for (auto& f : std::exchange(waiting_, {})) f();
  }

 private:
  droid::memory_event_store local_{16};
  std::vector<std::function<void()>> waiting_;
};

/// What `sink` holds now, as "id|data" lines.
std::vector<std::string> drained(asio::io_context& io, droid::http::detail::response_sink& sink) {
  io.restart();
  io.poll();
  std::vector<droid::http::detail::sse_event> events;
  sink.drain(events);
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.id + "|" + e.data);
  return out;
}

}  // namespace

TEST_SUITE("adapters/event_store") {
  TEST_CASE("the store's queue keeps its order across wrapping and growing, and frees what it pops") {
    // Against a reference deque: pushes and pops interleaved so that the ring wraps at
    // every size it grows through.
    droid::detail::fifo<std::string> q;
    std::vector<std::string> reference;
    std::size_t popped = 0;
    for (int i = 0; i < 500; ++i) {
      q.push_back(std::string(40, 'a') + std::to_string(i));  // longer than the small-string buffer
      reference.push_back(std::string(40, 'a') + std::to_string(i));
      if (i % 3 == 2) {
        REQUIRE_FALSE(q.empty());
        CHECK(q.front() == reference[popped]);
        q.pop_front();
        ++popped;
      }
      REQUIRE(q.size() == reference.size() - popped);
    }
    std::vector<std::string> seen;
    q.for_each([&](const std::string& v) { seen.push_back(v); });
    CHECK(seen == std::vector<std::string>(reference.begin() + static_cast<std::ptrdiff_t>(popped), reference.end()));
    while (!q.empty()) q.pop_front();
    CHECK(q.size() == 0);
    q.push_back("again");
    CHECK(q.front() == "again");
  }

  TEST_CASE("replay gives exactly the events after the id, of that stream only") {
    droid::memory_event_store store(10);
    store.append(1, 1, "a");
    store.append(2, 1, "x");
    store.append(1, 2, "b");
    store.append(1, 3, "c");
    CHECK(replayed(store, 1, 1) == std::vector<std::string>{"2:b", "3:c"});
    CHECK(replayed(store, 1, 0) == std::vector<std::string>{"1:a", "2:b", "3:c"});
    CHECK(replayed(store, 2, 0) == std::vector<std::string>{"1:x"});
    bool ok = false;
    CHECK(replayed(store, 1, 3, &ok).empty());
    CHECK(ok);
  }

  TEST_CASE("an id beyond the stream's last event cannot be replayed") {
    droid::memory_event_store store(10);
    store.append(1, 1, "a");
    bool ok = true;
    (void)replayed(store, 1, 5, &ok);
    CHECK_FALSE(ok);
  }

  TEST_CASE("the ring evicts the oldest, and a replay that would miss evicted events refuses") {
    droid::memory_event_store store(3);
    for (std::uint64_t seq = 1; seq <= 5; ++seq) store.append(1, seq, "e" + std::to_string(seq));
    CHECK(store.size() == 3);
    bool ok = true;
    (void)replayed(store, 1, 1, &ok);
    CHECK_FALSE(ok);  // event 2 is gone
    CHECK(replayed(store, 1, 2, &ok) == std::vector<std::string>{"3:e3", "4:e4", "5:e5"});
    CHECK(ok);
  }

  TEST_CASE("a long session keeps a flat number of streams: finished ones are forgotten, oldest first") {
    // What a session's POSTs do to its store: one stream per request, an event or two,
    // then the end. 100,000 of them must not leave 100,000 entries behind.
    droid::memory_event_store store(1024);
    std::size_t most = 0;
    for (std::uint64_t number = 1; number <= 100'000; ++number) {
      droid::http::detail::logical_stream stream(number, &store, droid::http::detail::logical_stream::finish_hook{});
      stream.send(R"({"jsonrpc":"2.0","method":"notifications/progress"})");
      stream.send(R"({"jsonrpc":"2.0","id":1,"result":{}})");
      stream.finish();
      if (number > 1000) most = std::max(most, store.streams());
    }
    CHECK(most <= 65);  // the 64 latest finished ones, and the one open
    CHECK(store.size() <= 1024);
  }

  TEST_CASE("the ring is bounded by bytes too: large events evict old ones; one over the bound is not kept") {
    droid::memory_event_store store(1024, 64, 100);
    for (std::uint64_t seq = 1; seq <= 10; ++seq) store.append(1, seq, std::string(30, 'a'));
    CHECK(store.bytes() <= 100);
    CHECK(store.size() == 3);  // 3 x 30 bytes fit in 100, 4 do not
    bool ok = false;
    CHECK(replayed(store, 1, 7, &ok).size() == 3);
    CHECK(ok);
    (void)replayed(store, 1, 6, &ok);  // event 7 is gone: refused, not skipped
    CHECK_FALSE(ok);
    // One event larger than the bound: not kept, nothing else evicted for it, and a replay
    // from before it refuses while one from it on works.
    store.append(2, 1, std::string(101, 'b'));
    CHECK(store.size() == 3);
    (void)replayed(store, 2, 0, &ok);
    CHECK_FALSE(ok);
    store.append(2, 2, "c");
    CHECK(replayed(store, 2, 1, &ok) == std::vector<std::string>{"2:c"});
    CHECK(ok);
    CHECK(store.bytes() <= 100);
  }

  TEST_CASE("a tenant's sessions share one budget: past it a session evicts its own oldest, never a neighbour's") {
    // Two tenants; each may keep 100 bytes, the server 150. Tenant a's two sessions fill
    // its share; a's next event evicts from the session that writes it, and b's session
    // is untouched by a's traffic.
    auto budget = std::make_shared<droid::retention_budget>(150, 100);
    auto a1 = std::make_unique<droid::memory_event_store>(1024, 64, 1000, budget->open("a"));
    auto a2 = std::make_unique<droid::memory_event_store>(1024, 64, 1000, budget->open("a"));
    droid::memory_event_store b(1024, 64, 1000, budget->open("b"));
    CHECK(budget->tenants() == 2);
    b.append(1, 1, std::string(40, 'b'));
    for (std::uint64_t seq = 1; seq <= 2; ++seq) a1->append(1, seq, std::string(30, 'a'));
    a2->append(1, 1, std::string(30, 'a'));
    CHECK(budget->used() == 130);
    CHECK(budget->squeezed() == 0);
    // a's share (100) has 90: 30 more does not fit, so a2 gives up its own event 1.
    a2->append(1, 2, std::string(30, 'a'));
    CHECK(a2->size() == 1);
    CHECK(a1->size() == 2);
    CHECK(b.size() == 1);
    CHECK(budget->squeezed() == 1);
    bool ok = false;
    (void)replayed(*a2, 1, 0, &ok);  // its event 1 went: refused, not skipped
    CHECK_FALSE(ok);
    CHECK(replayed(*a2, 1, 1, &ok) == std::vector<std::string>{"2:" + std::string(30, 'a')});
    CHECK(ok);
    // The server's budget (150) binds b too: b has 40 of it, a 90, so 30 more of b's
    // would make 160. b evicts its own event and keeps the new one.
    b.append(1, 2, std::string(30, 'b'));
    CHECK(b.size() == 1);
    CHECK(budget->used() == 120);
    // A session with nothing of its own to give keeps nothing new, and a replay from
    // before that event refuses rather than skip it.
    droid::memory_event_store a3(1024, 64, 1000, budget->open("a"));
    a3.append(7, 1, std::string(30, 'a'));
    CHECK(a3.size() == 0);
    (void)replayed(a3, 7, 0, &ok);
    CHECK_FALSE(ok);
    a3.append(7, 2, "x");  // small enough to fit a's share (90 + 1)
    CHECK(replayed(a3, 7, 1, &ok) == std::vector<std::string>{"2:x"});
    CHECK(ok);
    // Every byte comes back as stores go; the tenant's entry goes with its last store.
    a1.reset();
    a2.reset();
    CHECK(budget->used() == 31);
    CHECK(budget->tenants() == 2);
  }

  TEST_CASE("what a store lets go of (evicted, forgotten, destroyed) is given back to the budget") {
    auto budget = std::make_shared<droid::retention_budget>(0, 0);  // no limits: counting only
    {
      droid::memory_event_store store(4, 1, 1000, budget->open("t"));
      for (std::uint64_t seq = 1; seq <= 6; ++seq) store.append(1, seq, "12345");
      CHECK(store.size() == 4);  // capacity 4: two evicted
      CHECK(budget->used() == 20);
      store.finish(1, 6);
      store.append(2, 1, "ab");
      store.finish(2, 1);  // one finished stream is kept: stream 1 is forgotten, its events go
      CHECK(budget->used() == store.bytes());
      CHECK(store.bytes() == 2);
    }
    CHECK(budget->used() == 0);
    CHECK(budget->tenants() == 0);
    CHECK(budget->squeezed() == 0);
  }

  TEST_CASE("a stream that just finished resumes to its end; one forgotten or evicted is refused") {
    droid::memory_event_store store(4, 2);
    store.append(1, 1, "a");
    store.append(1, 2, "b");
    store.finish(1, 2);
    bool ok = false;
    CHECK(replayed(store, 1, 1, &ok) == std::vector<std::string>{"2:b"});
    CHECK(ok);
    store.finish(2, 0);  // a stream that sent nothing: known, and empty
    CHECK(replayed(store, 2, 0, &ok).empty());
    CHECK(ok);
    store.finish(3, 0);  // past the cap of two: stream 1 goes, events and all
    CHECK(store.streams() == 2);
    CHECK(store.size() == 0);
    (void)replayed(store, 1, 1, &ok);
    CHECK_FALSE(ok);
    // An unfinished stream whose events were all evicted: its state goes, and coming
    // back with a later event it still refuses a replay from before the gap.
    for (std::uint64_t seq = 1; seq <= 4; ++seq) store.append(4, seq, "x");
    for (std::uint64_t seq = 1; seq <= 4; ++seq) store.append(5, seq, "y");
    store.append(4, 5, "z");
    (void)replayed(store, 4, 1, &ok);
    CHECK_FALSE(ok);
    CHECK(replayed(store, 4, 4, &ok) == std::vector<std::string>{"5:z"});
    CHECK(ok);
    // Finished after all its events went: only a client that saw the last one resumes.
    for (std::uint64_t seq = 1; seq <= 4; ++seq) store.append(6, seq, "w");
    store.finish(5, 4);
    CHECK(replayed(store, 5, 4, &ok).empty());
    CHECK(ok);
    (void)replayed(store, 5, 3, &ok);
    CHECK_FALSE(ok);
  }

  TEST_CASE("a new stream's state starts empty, though it reuses a forgotten stream's node") {
    // The store keeps the node of the last state that went, for the next new stream.
    droid::memory_event_store store(8, 1);
    store.append(1, 1, "a");
    store.append(1, 2, "b");
    store.finish(1, 2);
    store.finish(2, 0);  // past the cap of one: stream 1's state goes, its node is kept
    bool ok = true;
    (void)replayed(store, 1, 0, &ok);
    CHECK_FALSE(ok);
    store.append(3, 1, "c");  // new: in stream 1's node
    CHECK(replayed(store, 3, 0, &ok) == std::vector<std::string>{"1:c"});
    CHECK(ok);
    (void)replayed(store, 3, 2, &ok);  // beyond its last event, not stream 1's
    CHECK_FALSE(ok);
    // Stream 1 had finished; this one has not: its end counts, and stream 2 goes for it.
    store.finish(3, 1);
    CHECK(store.streams() == 1);
    CHECK(replayed(store, 3, 0, &ok) == std::vector<std::string>{"1:c"});
    CHECK(ok);
    (void)replayed(store, 2, 0, &ok);
    CHECK_FALSE(ok);
  }

  TEST_CASE("a capacity of zero records nothing") {
    droid::memory_event_store store(0);
    store.append(1, 1, "a");
    CHECK(store.size() == 0);
  }

  TEST_CASE("event ids encode the stream and round-trip; foreign ids are refused") {
    using droid::http::detail::event_id;
    using droid::http::detail::parse_event_id;
    std::uint64_t stream = 0, seq = 0;
    REQUIRE(parse_event_id(event_id(12, 34), stream, seq));
    CHECK(stream == 12);
    CHECK(seq == 34);
    for (const char* bad : {"", "12", "-3", "3-", "a-1", "1-b", "1-2-3", "1 - 2", "99999999999999999999-1"}) {
      CAPTURE(bad);
      CHECK_FALSE(parse_event_id(bad, stream, seq));
    }
    // The largest ids still fit the formatting buffer and come back whole.
    const std::uint64_t most = ~std::uint64_t{0};
    CHECK(event_id(most, most) == "18446744073709551615-18446744073709551615");
    REQUIRE(parse_event_id(event_id(most, 0), stream, seq));
    CHECK(stream == most);
    CHECK(seq == 0);
  }

  TEST_CASE("the framing sizes say exactly what the framing appends") {
    // A stream's writer sizes a chunk from these before appending its events: one byte
    // off and the chunked body is corrupt for every client.
    using namespace droid::http::detail;
    for (const std::string_view id : {std::string_view(), std::string_view("7-1"), std::string_view("123456-99")}) {
      for (const std::string_view data : {std::string_view("{}"), std::string_view(R"({"jsonrpc":"2.0","id":1})")}) {
        std::string out = "x";
        append_sse_event(out, id, data);
        CHECK(out.size() == 1 + sse_event_size(id, data));
        CHECK(out.ends_with("\n\n"));
      }
      if (id.empty()) continue;
      std::string out;
      append_priming_event(out, id, "1000");
      CHECK(out == "id: " + std::string(id) + "\nretry: 1000\ndata: \n\n");
      CHECK(out.size() == priming_event_size(id, "1000"));
    }
  }

  TEST_CASE("a store that records behind: nothing reaches the sink before its record has left, and all in order") {
    // Why it matters: the sink may be another shard's connection, and a client holding an
    // event id that Redis never got cannot resume it through another instance.
    using droid::http::detail::logical_stream;
    using droid::http::detail::response_sink;
    asio::io_context io;
    behind_store store;
    auto sink = std::make_shared<response_sink>(io.get_executor(), 1 << 20);
    logical_stream stream(7, &store, logical_stream::finish_hook{});
    stream.attach(sink);
    stream.prime();
    stream.send("a");
    stream.send("b");
    stream.finish();
    CHECK(drained(io, *sink).empty());
    CHECK_FALSE(sink->finished());
    store.leave();
    CHECK(drained(io, *sink) == std::vector<std::string>{"7-0|", "7-1|a", "7-2|b"});
    CHECK(sink->finished());
    // A resume replays what the store has, also behind the records.
    auto resumed = std::make_shared<response_sink>(io.get_executor(), 1 << 20);
    REQUIRE(droid::http::detail::replay_into(store, 7, 1, resumed));
    CHECK(drained(io, *resumed).empty());
    store.leave();
    CHECK(drained(io, *resumed) == std::vector<std::string>{"7-2|b"});
  }

  TEST_CASE("calls from another shard reach the sink in their order, carried by one post") {
    // Why one post: a request answered on another shard's session hands its sink the
    // priming event, the answer, the end and the verdict; a post each made four wakes of
    // the connection's thread per request (docs/benchmarks.md).
    using droid::http::detail::response_sink;
    asio::io_context io;  // not running: every call below comes from "another shard"
    auto sink = std::make_shared<response_sink>(io.get_executor(), 1 << 20);
    sink->push({"1-0", ""});
    sink->set_answer_status(429, 3);
    sink->push({"1-1", "a"});
    sink->accept();
    sink->finish();
    sink->push({"1-2", "after the end"});  // dropped, as on the sink's own shard
    CHECK(io.poll() == 1);
    CHECK(sink->finished());
    CHECK(sink->settled());
    CHECK(sink->answer_status() == 429);
    CHECK(sink->answer_retry_after() == 3);
    std::vector<droid::http::detail::sse_event> events;
    sink->drain(events);
    REQUIRE(events.size() == 2);
    CHECK(events[0].id == "1-0");
    CHECK(events[1].data == "a");

    // Once run, the inbox posts again for the next call; a verdict that comes after an
    // event from afar is taken after it.
    auto second = std::make_shared<response_sink>(io.get_executor(), 1 << 20);
    second->push({"2-0", ""});
    io.restart();
    CHECK(io.poll() == 1);
    second->reject(503, "no");
    second->push({"2-1", "b"});
    io.restart();
    CHECK(io.poll() == 1);
    CHECK(second->rejected_status() == 503);
    CHECK(second->rejected_message() == "no");
    CHECK(drained(io, *second) == std::vector<std::string>{"2-0|", "2-1|b"});
  }

  TEST_CASE("a sink fed from another thread while its own runs gets every event once, in order") {
    // The inbox is the one part of a sink two threads touch (ThreadSanitizer runs this).
    using droid::http::detail::response_sink;
    using droid::http::detail::sse_event;
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    auto sink = std::make_shared<response_sink>(io.get_executor(), std::size_t{1} << 30);
    std::vector<std::string> seen;
    bool done = false;
    // The home thread drains whatever has arrived, as a connection does between writes.
    std::thread home([&] {
      while (!done) {
        io.run_one();
        std::vector<sse_event> events;
        sink->drain(events);
        for (sse_event& e : events) seen.push_back(std::move(e.data));
        if (sink->finished()) done = true;
      }
    });
    constexpr int events = 2000;
    for (int i = 0; i < events; ++i) sink->push({std::string(), std::to_string(i)});
    sink->finish();
    home.join();
    REQUIRE(seen.size() == events);
    for (int i = 0; i < events; ++i) CHECK(seen[static_cast<std::size_t>(i)] == std::to_string(i));
  }

  TEST_CASE("a store that keeps events here: the sink has them at once") {
    using droid::http::detail::logical_stream;
    using droid::http::detail::response_sink;
    asio::io_context io;
    droid::memory_event_store store(16);
    auto sink = std::make_shared<response_sink>(io.get_executor(), 1 << 20);
    logical_stream stream(3, &store, logical_stream::finish_hook{});
    stream.attach(sink);
    stream.prime();
    stream.send("a");
    stream.finish();
    CHECK(drained(io, *sink) == std::vector<std::string>{"3-0|", "3-1|a"});
    CHECK(sink->finished());
  }
}
