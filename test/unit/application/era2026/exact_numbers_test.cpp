// SPDX-License-Identifier: BSL-1.0
/// @file
/// Numbers that pass through the server's own JSON stay exact: a value sealed into a
/// 2026 request's state and read back, and a tool's params re-serialised with trace
/// context, keep every double to the last bit (the sealed_state fuzzer found Boost.JSON
/// 1.81's parser one unit in the last place off; docs/reliability.md, "What fuzzing
/// found so far").
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <doctest/doctest.h>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/schema.hpp>

#include "application/era2026/multi_round.hpp"
#include "application/observe/trace_meta.hpp"

namespace {

/// Doubles whose shortest text Boost.JSON 1.81 reads back one unit in the last place off
/// (the first three, found by a search over random doubles), doubles whose shortest text
/// has 17 significant digits, and long mantissas: where an approximate parser slips.
const std::vector<std::string> hard_numbers = {
    "1.3927926388013963E-143",
    "5.409760742964738E124",
    "-2.128409656321987E-239",
    "4" + std::string(86, '4') + "1.5",
    "0.30000000000000004",
    "2.2250738585072014e-308",
    "4.9406564584124654e-324",
    "1.7976931348623157e308",
    "9007199254740993",
    "0.1000000000000000055511151231257827",
    "123456789012345678901234567890.123456789",
};

/// The bits of a double, so that a test compares exactly (and -0 with 0 apart).
std::uint64_t bits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

}  // namespace

TEST_SUITE("application/exact_numbers") {
  TEST_CASE("parse_exact reads every number as the nearest double") {
    for (const std::string& text : hard_numbers) {
      CAPTURE(text);
      boost::json::value v;
      REQUIRE(droid::ir::parse_exact(text, v));
      const double want = std::strtod(text.c_str(), nullptr);  // glibc rounds correctly
      if (v.is_double()) CHECK(bits(v.as_double()) == bits(want));
      else CHECK(v.is_number());  // an integer that fits (9007199254740993 as int64)
    }
    boost::json::value v;
    CHECK_FALSE(droid::ir::parse_exact("{\"a\":", v));
    CHECK_FALSE(droid::ir::parse_exact("[1,]", v));
  }

  TEST_CASE("a sealed state gives back every answer's numbers to the last bit") {
    for (const std::string& text : hard_numbers) {
      CAPTURE(text);
      droid::detail::round_state st;
      st.expires_ms = 1;
      boost::json::value answer;
      REQUIRE(droid::ir::parse_exact("{\"action\":\"accept\",\"content\":{\"x\":" + text + "}}", answer));
      st.answers.push_back({"elicitation-1", 7, answer});
      st.onces.emplace_back("once-1", answer);
      const std::string sealed = droid::detail::encode_state(st);
      droid::detail::round_state back;
      REQUIRE(droid::detail::decode_state(sealed, back));
      REQUIRE(back.answers.size() == 1);
      CHECK(back.answers[0].value == answer);
      CHECK(back.onces.at(0).second == answer);
      // And sealing what came back is the same text again.
      CHECK(droid::detail::encode_state(back) == sealed);
    }
  }

  TEST_CASE("params re-serialised with trace context keep the tool's numbers") {
    droid::trace_context trace;
    trace.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for (const std::string& text : hard_numbers) {
      CAPTURE(text);
      const std::string params = "{\"n\":" + text + "}";
      const auto traced = droid::detail::traced_params(params, trace);
      REQUIRE(traced);
      boost::json::value before, after;
      REQUIRE(droid::ir::parse_exact(params, before));
      REQUIRE(droid::ir::parse_exact(*traced, after));
      CHECK(after.at("n") == before.at("n"));
      CHECK(after.at("_meta").at("traceparent") == trace.traceparent.c_str());
    }
  }
}
