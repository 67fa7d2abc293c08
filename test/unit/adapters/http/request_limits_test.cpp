// SPDX-License-Identifier: BSL-1.0
/// @file
/// The per-caller count of requests in progress behind `max_requests_per_principal` and
/// `max_requests_per_address`: the limit holds, a slot given back frees its place, and
/// idle callers do not pile up however many come and go (docs/reliability.md,
/// "Bearer tokens at the HTTP listener").
#include "adapters/primary/transport/http/auth_gate.hpp"

#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using droid::http::detail::request_limits;

TEST_SUITE("adapters/http/request_limits") {
  TEST_CASE("a caller gets `limit` slots, and one more once a slot is given back") {
    request_limits limits;
    std::optional<request_limits::slot> first(std::in_place);
    request_limits::slot second, third;
    CHECK(limits.acquire("pa", 2, *first));
    CHECK(limits.acquire("pa", 2, second));
    CHECK_FALSE(limits.acquire("pa", 2, third));
    CHECK(limits.acquire("pb", 2, third));  // another caller has its own count
    first.reset();
    request_limits::slot again;
    CHECK(limits.acquire("pa", 2, again));
    request_limits::slot over;
    CHECK_FALSE(limits.acquire("pa", 2, over));
  }

  TEST_CASE("a moved slot is given back once, by its new owner") {
    request_limits limits;
    std::optional<request_limits::slot> moved;
    {
      request_limits::slot s;
      REQUIRE(limits.acquire("pa", 1, s));
      moved.emplace(std::move(s));
    }  // the moved-from slot gives nothing back
    request_limits::slot blocked;
    CHECK_FALSE(limits.acquire("pa", 1, blocked));
    moved.reset();
    request_limits::slot free;
    CHECK(limits.acquire("pa", 1, free));
  }

  TEST_CASE("idle callers are swept: 100,000 one-shot callers leave a bounded table") {
    request_limits limits;
    request_limits::slot held;  // a caller with a request in progress throughout
    REQUIRE(limits.acquire("a10.0.0.1", 1, held));
    for (int i = 0; i < 100'000; ++i) {
      request_limits::slot s;
      REQUIRE(limits.acquire("a192.0.2." + std::to_string(i), 1, s));
    }
    // Sixteen stripes of at most 64 idle entries each before a sweep, plus the held one.
    CHECK(limits.entries() <= 16 * 65 + 1);
    // The sweeps kept the held caller's count: it is still at its limit.
    request_limits::slot again;
    CHECK_FALSE(limits.acquire("a10.0.0.1", 1, again));
  }

  TEST_CASE("a limit of zero takes no slot and never refuses") {
    request_limits limits;
    std::vector<request_limits::slot> slots(10);
    for (auto& s : slots) CHECK(limits.acquire("pa", 0, s));
    CHECK(limits.entries() == 0);
  }
}
