// SPDX-License-Identifier: BSL-1.0
/// @file
/// A member's lease driven step by step (docs/scale-out.md, "The lease"), through the
/// cluster's port with an in-memory store in Redis's place: the test decides when a
/// renewal goes unconfirmed and when a lease is gone, which a real Redis decides by its
/// own clock. What these prove: a member that cannot show its lease holds its clients'
/// requests and refuses them past the documented bound, never serving them on a lease it
/// may have lost; and a member back from a lapse asks about everything it holds in one
/// round trip, gives up what another now owns and writes again what the store lost.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "../redis/cluster_fixture.hpp"
#include "memory_shared_store.hpp"

using namespace droid::test::cluster;
using droid::test::memory_world;
using droid::test::use_memory_world;

namespace {

using clock_type = std::chrono::steady_clock;

/// Waits (bounded) until `done` holds.
template <class F>
bool eventually(F done, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto until = clock_type::now() + bound;
  while (clock_type::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace

TEST_CASE("cluster lease: a member whose renewals go unconfirmed holds its clients' requests until one is") {
  auto world = std::make_shared<memory_world>();
  use_memory_world in_place(world);
  instance a("redis://memory", "a");  // ttl 400 ms: fenced 320 ms after its last confirmed renewal
  raw_connection ca(a.port(), guard_ms);
  const std::string sid = initialize(ca);
  const std::string member = world->member("a");
  REQUIRE_FALSE(member.empty());
  REQUIRE(eventually([&] {
    std::lock_guard lock(world->m);
    return world->sessions.contains(sid);
  }));

  {
    std::lock_guard lock(world->m);
    world->unconfirmed.insert(member);
  }
  // Past the fence: the last confirmed renewal is now more than 320 ms old.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::atomic<std::int64_t> answered_at{0};
  auto asked = std::async(std::launch::async, [&] {
    raw_connection c(a.port(), guard_ms);
    c.send(mcp_post(call(7, "echo", R"({"text":"held"})"), session_header(sid)));
    auto r = c.read_response();
    answered_at = clock_type::now().time_since_epoch().count();
    return r;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(answered_at.load() == 0);  // held: not served on a lease that may have ended
  const auto released = clock_type::now().time_since_epoch().count();
  {
    std::lock_guard lock(world->m);
    world->unconfirmed.erase(member);
  }
  auto r = asked.get();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(answered_at.load() >= released);
  CHECK(result_text(sse_messages(r->body)) == "held");

  // Unconfirmed for longer than instance_ttl + forward_timeout: refused, saying so, with
  // the request's id and Retry-After, and never run later.
  {
    std::lock_guard lock(world->m);
    world->unconfirmed.insert(member);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  raw_connection c(a.port(), guard_ms);
  c.send(mcp_post(call(8, "echo", R"({"text":"refused"})"), session_header(sid)));
  auto refused = c.read_response();
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK(refused->header("retry-after"));
  CHECK(refused->body.find(R"("id":8)") != std::string::npos);
  {
    std::lock_guard lock(world->m);
    world->unconfirmed.erase(member);
  }
}

TEST_CASE("cluster lease: back from a lapse, one claim for everything held; another's given up, a lost record written") {
  auto world = std::make_shared<memory_world>();
  use_memory_world in_place(world);
  instance a("redis://memory", "a");
  raw_connection c1(a.port(), guard_ms), c2(a.port(), guard_ms), c3(a.port(), guard_ms);
  const std::string kept = initialize(c1), taken = initialize(c2), lost = initialize(c3);
  const std::string member = world->member("a");
  REQUIRE(eventually([&] {
    std::lock_guard lock(world->m);
    return world->sessions.size() == 3 && world->leases.contains(member);
  }));

  {
    // What a lapse looks like from the store: the lease ran out; meanwhile another member
    // (whose lease is current) took one session over, and the store lost another record.
    std::lock_guard lock(world->m);
    world->leases.erase(member);
    world->leases.insert("z#1");
    world->sessions[taken].owner = "z#1";
    ++world->sessions[taken].epoch;
    world->sessions.erase(lost);
    world->claims.clear();
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(world->m);
    return world->leases.contains(member) && world->sessions.contains(lost);
  }));
  {
    std::lock_guard lock(world->m);
    REQUIRE(world->claims.size() == 1);  // one round trip, not one per session
    CHECK(world->claims.front() == 3);
    CHECK(world->sessions[lost].owner == member);  // written again, as its owner
    CHECK(world->sessions[taken].owner == "z#1");  // left to its new owner
  }
  // Once current again: the kept session is served here, and the one taken over is not
  // served from the stale copy (it was given up): it is looked up and sent to z, which
  // nobody hears, so the client is told to retry rather than answered from here.
  REQUIRE(eventually([&] {
    raw_connection c(a.port(), guard_ms);
    c.send(mcp_post(call(2, "echo", R"({"text":"kept"})"), session_header(kept)));
    auto r = c.read_response();
    return r && r->status == 200;
  }));
  raw_connection c(a.port(), guard_ms);
  c.send(mcp_post(call(3, "echo", R"({"text":"stale"})"), session_header(taken)));
  auto r = c.read_response();
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(r->body.find("stale") == std::string::npos);
}
