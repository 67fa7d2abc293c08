// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-caller count behind `max_requests_per_principal`, `max_requests_per_address` and
/// `max_connections_per_address`: the limit holds, a slot given back frees its place, and
/// idle callers do not pile up however many come and go (docs/reliability.md,
/// "Bearer tokens at the HTTP listener").
#include "adapters/primary/transport/http/wire/keyed_limits.hpp"

#include <optional>
#include <string>
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
}
