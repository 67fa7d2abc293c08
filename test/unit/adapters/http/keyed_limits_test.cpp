// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-caller count behind `max_requests_per_principal`, `max_requests_per_address` and
/// `max_connections_per_address`: the limit holds, a slot given back frees its place, and
/// idle callers do not pile up however many come and go (docs/reliability.md,
/// "Bearer tokens at the HTTP listener").
#include "adapters/primary/transport/http/wire/keyed_limits.hpp"

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

using droid::http::detail::keyed_limits;

TEST_SUITE("adapters/http/keyed_limits") {
  TEST_CASE("a caller gets `limit` slots, and one more once a slot is given back") {
    keyed_limits limits;
    std::optional<keyed_limits::slot> first(std::in_place);
    keyed_limits::slot second, third;
    CHECK(limits.acquire("pa", 2, *first));
    CHECK(limits.acquire("pa", 2, second));
    CHECK_FALSE(limits.acquire("pa", 2, third));
    CHECK(limits.acquire("pb", 2, third));  // another caller has its own count
    first.reset();
    keyed_limits::slot again;
    CHECK(limits.acquire("pa", 2, again));
    keyed_limits::slot over;
    CHECK_FALSE(limits.acquire("pa", 2, over));
  }

  TEST_CASE("a moved slot is given back once, by its new owner") {
    keyed_limits limits;
    std::optional<keyed_limits::slot> moved;
    {
      keyed_limits::slot s;
      REQUIRE(limits.acquire("pa", 1, s));
      moved.emplace(std::move(s));
    }  // the moved-from slot gives nothing back
    keyed_limits::slot blocked;
    CHECK_FALSE(limits.acquire("pa", 1, blocked));
    moved.reset();
    keyed_limits::slot free;
    CHECK(limits.acquire("pa", 1, free));
  }

  TEST_CASE("idle callers are swept: 100,000 one-shot callers leave a bounded table") {
    keyed_limits limits;
    keyed_limits::slot held;  // a caller with a request in progress throughout
    REQUIRE(limits.acquire("a10.0.0.1", 1, held));
    for (int i = 0; i < 100'000; ++i) {
      keyed_limits::slot s;
      REQUIRE(limits.acquire("a192.0.2." + std::to_string(i), 1, s));
    }
    // Sixteen stripes of at most 64 idle entries each before a sweep, plus the held one.
    CHECK(limits.entries() <= 16 * 65 + 1);
    // The sweeps kept the held caller's count: it is still at its limit.
    keyed_limits::slot again;
    CHECK_FALSE(limits.acquire("a10.0.0.1", 1, again));
  }

  TEST_CASE("a limit of zero takes no slot and never refuses") {
    keyed_limits limits;
    std::vector<keyed_limits::slot> slots(10);
    for (auto& s : slots) CHECK(limits.acquire("pa", 0, s));
    CHECK(limits.entries() == 0);
  }

  TEST_CASE("a held key counts with its lookups and is never swept while held") {
    keyed_limits limits;
    keyed_limits::key_hold held = limits.hold("a10.0.0.1");
    REQUIRE(held);
    CHECK(held.key() == "a10.0.0.1");
    keyed_limits::slot one, two, three;
    CHECK(limits.acquire(held, 2, one));
    CHECK(limits.acquire("a10.0.0.1", 2, two));  // the same count, by lookup
    CHECK_FALSE(limits.acquire(held, 2, three));
    { keyed_limits::slot gone = std::move(one); }
    CHECK(limits.acquire(held, 2, three));
    // Idle (no slot) but held: 100,000 one-shot callers sweep every stripe many times,
    // and the held entry stays where the hold points.
    { keyed_limits::slot a = std::move(two), b = std::move(three); }
    for (int i = 0; i < 100'000; ++i) {
      keyed_limits::slot s;
      REQUIRE(limits.acquire("a192.0.2." + std::to_string(i), 1, s));
    }
    keyed_limits::slot x, y;
    CHECK(limits.acquire(held, 1, x));
    CHECK_FALSE(limits.acquire("a10.0.0.1", 1, y));  // the lookup finds the same entry
    { keyed_limits::slot gone = std::move(x); }
    held = keyed_limits::key_hold();  // let go: idle now, swept with the others
    for (int i = 0; i < 2'000; ++i) {
      keyed_limits::slot s;
      REQUIRE(limits.acquire("a198.51.100." + std::to_string(i), 1, s));
    }
    CHECK(limits.entries() <= 16 * 65);
  }

  TEST_CASE("slots taken and given back on several threads through one held key keep the count exact") {
    keyed_limits limits;
    keyed_limits::key_hold held = limits.hold("a127.0.0.1");
    constexpr std::size_t limit = 4;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 20'000; ++i) {
          keyed_limits::slot s;
          // Up to the limit at once across threads: a refusal is fine, an overcount is not.
          if (i % 2 == 0) (void)limits.acquire(held, limit, s);
          else (void)limits.acquire("a127.0.0.1", limit, s);
        }
      });
    for (auto& t : threads) t.join();
    // Every slot was given back: the whole limit is free again, and no more.
    std::vector<keyed_limits::slot> slots(limit + 1);
    for (std::size_t i = 0; i < limit; ++i) CHECK(limits.acquire(held, limit, slots[i]));
    CHECK_FALSE(limits.acquire(held, limit, slots[limit]));
  }
}
