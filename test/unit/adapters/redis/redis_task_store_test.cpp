// SPDX-License-Identifier: BSL-1.0
/// @file
/// The task store written through to Redis: the record's JSON round trip (every field,
/// numbers exact), what is written after each change, a dead owner's task taken in, and
/// writes that reach a real redis-server out of order.
#include "adapters/secondary/redis/redis_task_store.hpp"

#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cluster_fixture.hpp"

namespace {

droid::task_record sample() {
  droid::task_record r;
  r.id = "t-1";
  r.owner = "p:alice";
  r.status = droid::task_status::input_required;
  r.status_message = "waiting for \"you\"\n";
  r.created_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'000'000'123));
  r.last_updated_at = r.created_at + std::chrono::milliseconds(5);
  r.ttl = std::chrono::minutes(10);
  r.poll_interval = std::chrono::milliseconds(250);
  r.revision = "2026-07-28";
  r.input_requests = {{"user_name", R"({"method":"elicitation/create","params":{"message":"Your name?"}})"}};
  r.result = R"({"content":[{"type":"text","text":"1.3927926388013963E-143"}]})";
  return r;
}

}  // namespace

TEST_SUITE("adapters/redis") {
  TEST_CASE("a task record survives its JSON round trip whole") {
    const droid::task_record r = sample();
    const auto back = droid::redis::parse_task_record(droid::redis::task_record_json(r));
    REQUIRE(back);
    CHECK(back->id == r.id);
    CHECK(back->owner == r.owner);
    CHECK(back->status == r.status);
    CHECK(back->status_message == r.status_message);
    CHECK(back->created_at == r.created_at);
    CHECK(back->last_updated_at == r.last_updated_at);
    CHECK(back->ttl == r.ttl);
    CHECK(back->poll_interval == r.poll_interval);
    CHECK(back->revision == r.revision);
    CHECK(back->input_requests == r.input_requests);
    CHECK(back->result == r.result);
    for (const char* bad : {"", "[]", R"({"id":"x","status":"sleeping"})", R"({"status":"working"})", "{"})
      CHECK_FALSE(droid::redis::parse_task_record(bad));
  }

  TEST_CASE("every change is written through; a dead owner's running task is taken in as failed, an ended one as it was") {
    std::vector<std::vector<std::string>> written;
    auto local = std::make_shared<droid::memory_task_store>();
    droid::redis::redis_task_store store(local, "me", "droid:", [&](std::vector<std::string> c) { written.push_back(std::move(c)); });
    droid::task_record mine = sample();
    mine.id = "mine";
    mine.status = droid::task_status::working;
    mine.created_at = std::chrono::system_clock::now();
    REQUIRE_FALSE(store.create(mine));
    // One conditional write per change (the script writes only while the record names
    // this instance): key, writer, record, expiry.
    REQUIRE(written.size() == 1);
    CHECK(written[0][0] == "EVAL");
    CHECK(written[0][1] == droid::redis::redis_task_store::write_script);
    CHECK(written[0][3] == "droid:t:mine");
    CHECK(written[0][4] == "me");
    CHECK(droid::redis::parse_task_record(written[0][5])->status == droid::task_status::working);
    CHECK(store.held() == std::vector<std::string>{"mine"});
    CHECK(store.finish("mine", droid::task_status::completed, R"({"content":[]})", {}, {}));
    CHECK(droid::redis::parse_task_record(written[1][5])->status == droid::task_status::completed);
    store.remove("mine");
    CHECK(written.back()[3] == "droid:t:mine");
    CHECK(written.back()[5].empty());  // an empty record: deleted, if it is still ours
    CHECK(store.held().empty());

    droid::task_record theirs = sample();
    theirs.created_at = std::chrono::system_clock::now();
    CHECK_FALSE(store.holds(theirs.id));
    store.adopt(theirs, "The server instance running this task stopped before it finished.");
    CHECK(store.holds(theirs.id));
    const auto failed = store.get(theirs.id, theirs.owner);
    REQUIRE(failed);
    CHECK(failed->status == droid::task_status::failed);
    CHECK(failed->status_message == "The server instance running this task stopped before it finished.");
    CHECK(failed->error.find("stopped before it finished") != std::string::npos);
    CHECK(failed->input_requests.empty());
    CHECK(written.back()[4] == "me");  // the record names its new holder

    droid::task_record ended = sample();
    ended.id = "ended";
    ended.status = droid::task_status::completed;
    ended.created_at = std::chrono::system_clock::now();
    store.adopt(ended, "unused");
    const auto kept = store.get("ended", ended.owner);
    REQUIRE(kept);
    CHECK(kept->status == droid::task_status::completed);
    CHECK(kept->result == ended.result);
  }

  TEST_CASE("of two writes of one task that reach Redis in the other order, the later snapshot stays") {
    // Two shards write a task's record through two connections, which keep no order
    // between them: `working` (an answer taken in on shard 0) may land after `completed`
    // (the frame that finished on its own shard). Replayed here newest first.
    REQUIRE(droid::test::have_redis_server());
    droid::test::redis_server redis;
    std::vector<std::vector<std::string>> written;
    auto local = std::make_shared<droid::memory_task_store>();
    droid::redis::redis_task_store store(local, "me", "droid:", [&](std::vector<std::string> c) { written.push_back(std::move(c)); });
    droid::task_record r = sample();
    r.id = "crossed";
    r.status = droid::task_status::working;
    r.created_at = std::chrono::system_clock::now();
    REQUIRE_FALSE(store.create(r));
    REQUIRE(store.finish("crossed", droid::task_status::completed, R"({"content":[]})", {}, {}));
    REQUIRE(written.size() == 2);
    const auto status_in_redis = [&] {
      const auto kept = droid::redis::parse_task_record(droid::test::cluster::redis_cli(redis, {"HGET", "droid:t:crossed", "record"}));
      REQUIRE(kept);
      return kept->status;
    };
    CHECK(droid::test::cluster::redis_cli(redis, written[1]) == "1");
    CHECK(status_in_redis() == droid::task_status::completed);
    CHECK(droid::test::cluster::redis_cli(redis, written[0]) == "1");  // older: dropped
    CHECK(status_in_redis() == droid::task_status::completed);
    // In order, each write lands: a newer change after the end (a removal) still applies.
    store.remove("crossed");
    CHECK(droid::test::cluster::redis_cli(redis, written.back()) == "1");
    CHECK(droid::test::cluster::redis_cli(redis, {"EXISTS", "droid:t:crossed"}) == "0");
    // Another instance's record is never written over, whatever its revision.
    REQUIRE_FALSE(store.create(r));
    CHECK(droid::test::cluster::redis_cli(redis, {"HSET", "droid:t:crossed", "owner", "other"}) == "1");
    CHECK(droid::test::cluster::redis_cli(redis, written.back()) == "0");
  }
}
