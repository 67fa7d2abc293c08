// SPDX-License-Identifier: BSL-1.0
/// @file
/// The hash that names a 2026 request and its questions inside a sealed state
/// (lib/application/era2026/multi_round.cpp). A state sealed by one instance is checked by
/// another, so the values are pinned here: a change to the hash must come with a new
/// state version, and this test is what says so.
#include <cstdint>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include <droid/domain/ir/json_node.hpp>

#include "application/era2026/multi_round.hpp"

namespace {

std::uint64_t binding_of(std::string_view method, std::string_view params) {
  std::uint64_t h = 0;
  const auto ec =
      droid::ir::visit_json(params, [&](const droid::ir::json_node& p) { h = droid::detail::request_binding(method, &p); });
  REQUIRE_FALSE(ec);
  return h;
}

}  // namespace

TEST_SUITE("application/stable_hash") {
  TEST_CASE("the values are the same on every machine and build (state version 2)") {
    CHECK(droid::detail::state_version == 2);
    CHECK(droid::detail::stable_hash("") == 0xf8bb92ce26585846ull);
    CHECK(droid::detail::stable_hash("tools/call") == 0x6f8d19e94ca6a6e5ull);
    CHECK(droid::detail::stable_hash("an argument that is longer than eight bytes") == 0x8f73a6396935a00bull);
  }

  TEST_CASE("every length and every trailing byte makes another hash") {
    std::set<std::uint64_t> seen;
    std::string s;
    for (int i = 0; i < 40; ++i) {
      CHECK(seen.insert(droid::detail::stable_hash(s)).second);
      CHECK(seen.insert(droid::detail::stable_hash(s + '\0')).second);
      s += static_cast<char>('a' + i % 26);
    }
    CHECK(droid::detail::stable_hash("ab") != droid::detail::stable_hash("ba"));
    CHECK(droid::detail::stable_hash("x", 1) != droid::detail::stable_hash("x", 2));
  }

  TEST_CASE("a request's binding is its method and params, except what a retry adds") {
    const auto plain = binding_of("tools/call", R"({"name":"echo","arguments":{"text":"hello"}})");
    CHECK(binding_of("tools/call", R"({"name":"echo","arguments":{"text":"hello"},"_meta":{"a":1},)"
                                   R"("inputResponses":{"q":{}},"requestState":"abc"})") == plain);
    CHECK(binding_of("tools/call", R"({ "name" : "echo" , "arguments" : { "text" : "hello" } })") == plain);
    CHECK(binding_of("tools/call", R"({"name":"echo","arguments":{"text":"hellO"}})") != plain);
    CHECK(binding_of("tools/call", R"({"name":"echo","arguments":{"text":"hello","n":1}})") != plain);
    CHECK(binding_of("prompts/get", R"({"name":"echo","arguments":{"text":"hello"}})") != plain);
    CHECK(binding_of("tools/call", R"({"name":"echo","arguments":{"text":["hello"]}})") != plain);
  }

  TEST_CASE("a state of another version is not read") {
    droid::detail::round_state st;
    st.expires_ms = 1;
    st.binding = 42;
    const std::string sealed = droid::detail::encode_state(st);
    droid::detail::round_state back;
    REQUIRE(droid::detail::decode_state(sealed, back));
    CHECK(back.binding == 42);
    std::string old = sealed;
    const auto at = old.find("\"v\":2");
    REQUIRE(at != std::string::npos);
    old.replace(at, 5, "\"v\":1");
    CHECK_FALSE(droid::detail::decode_state(old, back));
  }
}
