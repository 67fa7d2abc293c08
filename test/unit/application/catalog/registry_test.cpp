// SPDX-License-Identifier: BSL-1.0
/// @file
/// The server's registries as sessions read them: a published catalog, looked up without
/// a lock (docs/architecture.md#threading).
///
/// What could go wrong with a lock-free read is what these cases pin: a lookup that
/// misses a registration it should see (one that happened before it), a thread's cached
/// view taken for another server's, an entry freed under a call that still runs, and a
/// torn catalog while another thread registers (run under ThreadSanitizer in
/// scripts/test).
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/thread_pool.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>

#include "application/catalog/server_core.hpp"

namespace {

droid::server make_server(const char* name) { return droid::server(droid::server_info{name, "1", {}, {}, {}, {}}); }

void add_tool(droid::server& srv, const std::string& name, const std::string& description) {
  srv.tool(name, description, [](droid::tool_context&) -> droid::task<std::string> { co_return "ok"; });
}

}  // namespace

TEST_SUITE("application/registry") {
  TEST_CASE("a registration is seen by the next lookup on any thread, and a removal too") {
    droid::server srv = make_server("reg");
    droid::detail::server_core& core = droid::detail::core(srv);
    asio::thread_pool other(1);
    auto on_other = [&](auto f) {
      std::promise<decltype(f())> p;
      asio::post(other, [&] { p.set_value(f()); });
      return p.get_future().get();
    };
    // The other thread caches the empty catalog first, so what follows must refresh it.
    CHECK(on_other([&] { return core.find_tool("a") == nullptr; }));
    add_tool(srv, "a", "first");
    CHECK(on_other([&] { return core.find_tool("a") != nullptr; }));
    CHECK(on_other([&] { return core.tool_count(); }) == 1);
    add_tool(srv, "b", "second");
    CHECK(on_other([&] { return core.tool_count(); }) == 2);
    CHECK(srv.remove_tool("a"));
    CHECK(on_other([&] { return core.find_tool("a") == nullptr; }));
    CHECK(on_other([&] { return core.find_tool("b") != nullptr; }));
    other.join();
  }

  TEST_CASE("two servers read on one thread never see each other's tools") {
    droid::server one = make_server("one");
    droid::server two = make_server("two");
    add_tool(one, "same", "from one");
    add_tool(two, "same", "from two");
    add_tool(two, "only_two", "two alone");
    for (int i = 0; i < 3; ++i) {
      CHECK(droid::detail::core(one).find_tool("same")->info.description == "from one");
      CHECK(droid::detail::core(two).find_tool("same")->info.description == "from two");
      CHECK(droid::detail::core(one).find_tool("only_two") == nullptr);
      CHECK(droid::detail::core(two).tool_count() == 2);
    }
    {
      // A server made and destroyed on this thread, then another in its place: the new
      // one's empty catalog, not the old one's cached view.
      droid::server gone = make_server("gone");
      add_tool(gone, "ghost", "destroyed with its server");
      CHECK(droid::detail::core(gone).find_tool("ghost") != nullptr);
    }
    droid::server fresh = make_server("fresh");
    CHECK(droid::detail::core(fresh).find_tool("ghost") == nullptr);
    CHECK(droid::detail::core(fresh).tool_count() == 0);
  }

  TEST_CASE("an entry found before its removal stays alive for the call that holds it") {
    droid::server srv = make_server("keep");
    add_tool(srv, "doomed", "removed while held");
    std::shared_ptr<const droid::detail::tool_entry> held = droid::detail::core(srv).find_tool("doomed");
    REQUIRE(held);
    CHECK(srv.remove_tool("doomed"));
    CHECK(droid::detail::core(srv).find_tool("doomed") == nullptr);
    CHECK(held->info.name == "doomed");  // the catalog let go; the call's reference did not
    CHECK(held.use_count() == 1);
  }

  TEST_CASE("lookups on two threads while a third registers and removes: every view is whole") {
    droid::server srv = make_server("churn");
    droid::detail::server_core& core = droid::detail::core(srv);
    add_tool(srv, "stable", "always there");
    std::atomic<bool> stop{false};
    std::atomic<long> torn{0};
    std::atomic<long> lookups{0};
    auto reader = [&] {
      std::string next;
      while (!stop.load(std::memory_order_relaxed)) {
        // "stable" never leaves; a churned tool, when found, is whole.
        if (!core.find_tool("stable")) ++torn;
        if (auto t = core.find_tool("churn_7"); t && t->info.description != "churned") ++torn;
        const auto page = core.tools_from("", next);
        for (const auto& entry : page)
          if (!entry || entry->info.name.empty()) ++torn;
        ++lookups;
      }
    };
    std::thread r1(reader);
    std::thread r2(reader);
    // The churn starts once a reader runs and goes on until the readers have looked up
    // thousands of times, so that lookups and edits overlap however the threads are
    // scheduled (in a release build 200 edits can end before a thread has started).
    while (lookups.load() == 0) std::this_thread::yield();
    for (int round = 0; round < 200 || lookups.load() < 2000; ++round) {
      const std::string name = "churn_" + std::to_string(round % 10);
      add_tool(srv, name, "churned");
      CHECK(srv.remove_tool(name));
    }
    stop = true;
    r1.join();
    r2.join();
    CHECK(torn.load() == 0);
    CHECK(core.tool_count() == 1);
  }
}
