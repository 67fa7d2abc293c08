// SPDX-License-Identifier: BSL-1.0
/// @file
/// The cluster's shared store in Redis (redis_shared_store.hpp), against a real
/// redis-server: what the cluster's tests cannot cause through an instance. Here, event
/// writes that never reach Redis (a client whose pipeline is full drops them): the stream
/// they belong to is marked, and a reader refuses it rather than replay it with a hole.
#include "adapters/secondary/redis/redis_shared_store.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <doctest/doctest.h>

#include <droid/application/spawn.hpp>

#include "redis_server.hpp"

namespace {

using droid::http::detail::shared_store;
using droid::http::detail::stored_stream;

std::shared_ptr<droid::redis::redis_shared_store> store_for(asio::io_context& io, const std::string& url,
                                                             std::size_t max_pending) {
  std::string error;
  auto where = droid::redis::parse_url(url, error);
  REQUIRE_MESSAGE(where.has_value(), error);
  droid::redis::shared_store_options o;
  o.connection.where = *where;
  o.connection.max_pending = max_pending;
  o.connection.command_timeout = std::chrono::seconds(5);
  return std::make_shared<droid::redis::redis_shared_store>(std::vector<asio::any_io_executor>{io.get_executor()}, o);
}

/// Runs `io` until `done` holds (bounded).
template <class F>
void run_until(asio::io_context& io, F done) {
  for (int i = 0; i < 2000 && !done(); ++i) {
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  REQUIRE(done());
}

shared_store::read_outcome read(asio::io_context& io, droid::redis::redis_shared_store& store, std::uint64_t stream,
                                stored_stream& out) {
  bool done = false;
  auto outcome = shared_store::read_outcome::unavailable;
  auto reader = [](droid::redis::redis_shared_store& s, std::uint64_t n, stored_stream& o, bool& d,
                   shared_store::read_outcome& r) -> droid::task<void> {
    r = co_await s.read_stream(0, "S1", n, 0, o);
    d = true;
  };
  droid::spawn(io.get_executor(), reader(store, stream, out, done, outcome), [](std::exception_ptr) {});
  run_until(io, [&] { return done; });
  return outcome;
}

}  // namespace

TEST_SUITE("adapters/redis") {
  TEST_CASE("shared store: a stream whose event writes Redis never got is refused to a reader, not replayed with a hole") {
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    asio::io_context io;
    // Eight commands waiting at most: a burst of events overflows the pipeline.
    auto store = store_for(io, redis.url(), 8);
    auto events = store->session_events(0, "S1", 0, std::make_unique<droid::memory_event_store>(1024, 64, 1u << 20));
    const droid::ir::request_id id(std::int64_t{7});

    // Stream 1, written a step at a time: every command reaches Redis.
    events->begin(1, id);
    run_until(io, [&] { return true; });
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      events->append(1, seq, R"({"n":1})");
      io.restart();
      io.run_for(std::chrono::milliseconds(50));
    }
    // Stream 2, a burst of twenty events at once: most are dropped by the full pipeline.
    events->begin(2, id);
    for (std::uint64_t seq = 1; seq <= 20; ++seq) events->append(2, seq, R"({"n":2})");
    io.restart();
    io.run_for(std::chrono::milliseconds(200));
    // The next write, once the pipeline has room: the gap mark goes first.
    events->append(2, 21, R"({"n":2})");
    io.restart();
    io.run_for(std::chrono::milliseconds(200));

    stored_stream whole;
    CHECK(read(io, *store, 1, whole) == shared_store::read_outcome::ok);
    CHECK(whole.events.size() == 3);
    stored_stream holed;
    CHECK(read(io, *store, 2, holed) == shared_store::read_outcome::trimmed);
    store->stop();
    io.restart();
    io.run_for(std::chrono::milliseconds(50));
  }
}
