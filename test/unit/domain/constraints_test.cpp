// SPDX-License-Identifier: BSL-1.0
/// @file
/// Constraints and defaults of tool arguments (`field_hint`): written into the schema,
/// enforced when decoding, and refused at registration when they cannot hold.
#include <droid/domain/mcp/schema.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include <boost/describe.hpp>

#include <droid/domain/ir/codec.hpp>

namespace {

enum class unit { celsius, fahrenheit };
BOOST_DESCRIBE_ENUM(unit, celsius, fahrenheit)

struct place {
  double lat = 0;
  double lon = 0;
};
BOOST_DESCRIBE_STRUCT(place, (), (lat, lon))

/// One member per constraint, so each is tested at its bound and past it.
struct booking {
  std::string code;
  int days = 3;
  std::uint8_t guests = 2;
  double ratio = 0.5;
  std::optional<double> budget;
  std::string region;
  std::vector<std::string> tags;
  std::optional<std::vector<int>> scores;
  std::optional<place> near;
  unit units = unit::celsius;
  std::uint64_t big = 0;
};
BOOST_DESCRIBE_STRUCT(booking, (), (code, days, guests, ratio, budget, region, tags, scores, near, units, big))

}  // namespace

template <>
struct droid::field_hints<booking> {
  static constexpr std::string_view regions[] = {"eu-west-1", "us-east-1"};
  static constexpr droid::field_hint fields[] = {
      {.name = "code", .description = "Booking code", .min_length = 3, .max_length = 6, .pattern = "^[A-Z]+[0-9]*$"},
      {.name = "days", .description = "Days ahead", .defaulted = true, .minimum = 1, .maximum = 10},
      {.name = "guests", .defaulted = true, .minimum = 1},
      {.name = "ratio", .defaulted = true, .maximum = 1, .exclusive_minimum = 0},
      {.name = "budget", .minimum = 0, .exclusive_maximum = 1e6},
      {.name = "region", .enum_values = regions},
      {.name = "tags", .defaulted = true, .max_length = 5, .min_items = 0, .max_items = 2},
      {.name = "scores", .minimum = 0, .maximum = 100, .min_items = 1},
      {.name = "units", .defaulted = true},
      {.name = "big", .maximum = 9007199254740992.0},
  };
};
template <>
struct droid::field_hints<place> {
  static constexpr droid::field_hint fields[] = {{.name = "lat", .minimum = -90, .maximum = 90},
                                                 {.name = "lon", .minimum = -180, .maximum = 180}};
};

namespace {

/// The arguments every case starts from; each case changes one member.
constexpr const char* base = R"("code":"AB1","region":"eu-west-1","big":0)";

/// The error decoding `{extra, base}` gives, or "ok". `extra` comes first because the
/// first of two equal keys is the one decoded.
std::string decoding(const std::string& extra, booking* out = nullptr) {
  const std::string json = "{" + extra + (extra.empty() ? "" : ",") + std::string(base) + "}";
  booking b{};
  std::string error;
  bool ok = false;
  const auto ec = droid::ir::visit_json(json, [&](const droid::ir::json_node& n) { ok = droid::decode(n, b, error); });
  REQUIRE_FALSE(ec);
  if (out) *out = b;
  return ok ? "ok" : error;
}

/// The sentence `check_arguments<T>` throws with, or "accepted".
template <class T>
std::string refusal() {
  try {
    droid::detail::check_arguments<T>();
    (void)droid::schema_of<T>();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_SUITE("domain/mcp/constraints") {
  TEST_CASE("every constraint is written into the schema, and defaulted members state their default") {
    CHECK(droid::ir::to_json_text(droid::schema_of<booking>()) ==
          R"({"type":"object","properties":{)"
          R"("code":{"type":"string","minLength":3,"maxLength":6,"pattern":"^[A-Z]+[0-9]*$",)"
          R"("description":"Booking code"},)"
          // A declared bound replaces the type's own on its side.
          R"("days":{"type":"integer","minimum":1,"maximum":10,"description":"Days ahead","default":3},)"
          R"("guests":{"type":"integer","minimum":1,"maximum":255,"default":2},)"
          R"("ratio":{"type":"number","maximum":1,"exclusiveMinimum":0,"default":0.5},)"
          R"("budget":{"type":"number","minimum":0,"exclusiveMaximum":1e+06},)"
          R"("region":{"type":"string","enum":["eu-west-1","us-east-1"]},)"
          // On a vector, item counts bound the array and the rest applies to each element.
          R"("tags":{"type":"array","items":{"type":"string","maxLength":5},"minItems":0,"maxItems":2,"default":[]},)"
          R"("scores":{"type":"array","items":{"type":"integer","minimum":0,"maximum":100},"minItems":1},)"
          R"("near":{"type":"object","properties":{)"
          R"("lat":{"type":"number","minimum":-90,"maximum":90},"lon":{"type":"number","minimum":-180,"maximum":180}},)"
          R"("required":["lat","lon"]},)"
          R"("units":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"},)"
          R"("big":{"type":"integer","minimum":0,"maximum":9007199254740992}},)"
          R"("required":["code","region","big"]})");
  }

  TEST_CASE("defaulted members left out keep their initialisers; given ones replace them") {
    booking b{};
    REQUIRE(decoding("", &b) == "ok");
    CHECK(b.days == 3);
    CHECK(b.guests == 2);
    CHECK(b.ratio == 0.5);
    CHECK(b.tags.empty());
    CHECK(b.units == unit::celsius);
    REQUIRE(decoding(R"("days":7,"units":"fahrenheit","big":1)", &b) == "ok");
    CHECK(b.days == 7);
    CHECK(b.units == unit::fahrenheit);
  }

  TEST_CASE("each constraint accepts its bound and refuses the value past it, naming the member and the rule") {
    struct expectation {
      const char* extra;
      const char* says;
    };
    for (const expectation& e : {
             expectation{R"("days":1)", "ok"},
             expectation{R"("days":10)", "ok"},
             expectation{R"("days":0)", "`days`: 0 is below the minimum 1"},
             expectation{R"("days":11)", "`days`: 11 is above the maximum 10"},
             expectation{R"("days":11.0)", "`days`: 11 is above the maximum 10"},
             // The type's own range still comes first, with its own sentence.
             expectation{R"("guests":256)", "`guests`: 256 is out of range"},
             expectation{R"("guests":0)", "`guests`: 0 is below the minimum 1"},
             expectation{R"("ratio":1)", "ok"},
             expectation{R"("ratio":1e-300)", "ok"},
             expectation{R"("ratio":0)", "`ratio`: 0 is not above the exclusive minimum 0"},
             expectation{R"("ratio":1.5)", "`ratio`: 1.5 is above the maximum 1"},
             expectation{R"("budget":0)", "ok"},
             expectation{R"("budget":999999.5)", "ok"},
             expectation{R"("budget":1e6)", "`budget`: 1e+06 is not below the exclusive maximum 1e+06"},
             expectation{R"("budget":-0.5)", "`budget`: -0.5 is below the minimum 0"},
             expectation{R"("budget":null)", "ok"},
             expectation{R"("code":"ABC")", "ok"},
             expectation{R"("code":"ABCDE1")", "ok"},
             expectation{R"("code":"AB")", "`code`: 2 characters, at least 3 required"},
             expectation{R"("code":"ABCDEF1")", "`code`: 7 characters, at most 6 allowed"},
             expectation{R"("code":"ab1")", "`code`: \"ab1\" does not match the pattern ^[A-Z]+[0-9]*$"},
             expectation{R"("code":"1AB")", "`code`: \"1AB\" does not match the pattern ^[A-Z]+[0-9]*$"},
             expectation{R"("region":"us-east-1")", "ok"},
             expectation{R"("region":"mars")", "`region`: \"mars\" is not one of eu-west-1, us-east-1"},
             expectation{R"("tags":["a","abcde"])", "ok"},
             expectation{R"("tags":["a","b","c"])", "`tags`: 3 items, at most 2 allowed"},
             expectation{R"("tags":["abcdef"])", "`tags[0]`: 6 characters, at most 5 allowed"},
             expectation{R"("scores":[0,100])", "ok"},
             expectation{R"("scores":[])", "`scores`: 0 items, at least 1 required"},
             expectation{R"("scores":[5,101])", "`scores[1]`: 101 is above the maximum 100"},
             expectation{R"("near":{"lat":90,"lon":-180})", "ok"},
             expectation{R"("near":{"lat":90.5,"lon":0})", "`near.lat`: 90.5 is above the maximum 90"},
             expectation{R"("big":9007199254740992)", "ok"},
             // Compared as integers: as doubles, 2^53 + 1 would round down to the bound.
             expectation{R"("big":9007199254740993)", "`big`: 9007199254740993 is above the maximum 9007199254740992"},
         }) {
      CAPTURE(e.extra);
      CHECK(decoding(e.extra) == e.says);
    }
  }

  TEST_CASE("a long value is cut in the error, so the model's context is not filled with it") {
    const std::string long_code(100, 'a');
    CHECK(decoding(R"("code":"AAA)" + long_code + "\"") == "`code`: 103 characters, at most 6 allowed");
    CHECK(decoding(R"("region":")" + long_code + "\"") ==
          "`region`: \"" + std::string(60, 'a') + "...\" is not one of eu-west-1, us-east-1");
  }
}

// ---- declarations refused at registration --------------------------------------------

namespace {

/// One struct per misuse, so each can carry its own wrong hints.
template <int N>
struct misuse {
  std::string text;
  int count = 0;
  double ratio = 0;
  std::vector<std::string> tags;
  unit units = unit::celsius;
  std::optional<int> maybe;
  BOOST_DESCRIBE_CLASS(misuse, (), (text, count, ratio, tags, units, maybe), (), ())
};

constexpr std::string_view twice[] = {"a", "a"};
constexpr std::string_view too_long[] = {"abc", "abcdef"};

struct starts_at_three {
  int days = 3;
};
BOOST_DESCRIBE_STRUCT(starts_at_three, (), (days))
struct optional_starts_at_three {
  std::optional<int> days = 3;
};
BOOST_DESCRIBE_STRUCT(optional_starts_at_three, (), (days))
struct nested_starts_at_three {
  std::vector<starts_at_three> items;
};
BOOST_DESCRIBE_STRUCT(nested_starts_at_three, (), (items))
/// `= 0` and `= ""` cannot be told from no initialiser: they stay required.
struct starts_at_zero {
  int days = 0;
  std::string name = "";  // NOLINT(readability-redundant-string-init): the point of the test
};
BOOST_DESCRIBE_STRUCT(starts_at_zero, (), (days, name))

}  // namespace

// clang-format off
template <> struct droid::field_hints<misuse<1>> { static constexpr droid::field_hint fields[] = {{.name = "txt"}}; };
template <> struct droid::field_hints<misuse<2>> { static constexpr droid::field_hint fields[] = {{.name = "text"}, {.name = "text"}}; };
template <> struct droid::field_hints<misuse<3>> { static constexpr droid::field_hint fields[] = {{.name = "count", .max_length = 3}}; };
template <> struct droid::field_hints<misuse<4>> { static constexpr droid::field_hint fields[] = {{.name = "text", .minimum = 1}}; };
template <> struct droid::field_hints<misuse<5>> { static constexpr droid::field_hint fields[] = {{.name = "text", .min_items = 1}}; };
template <> struct droid::field_hints<misuse<6>> { static constexpr droid::field_hint fields[] = {{.name = "count", .minimum = 5, .maximum = 1}}; };
template <> struct droid::field_hints<misuse<7>> { static constexpr droid::field_hint fields[] = {{.name = "text", .min_length = 5, .max_length = 1}}; };
template <> struct droid::field_hints<misuse<8>> { static constexpr droid::field_hint fields[] = {{.name = "tags", .min_items = 3, .max_items = 2}}; };
template <> struct droid::field_hints<misuse<9>> { static constexpr droid::field_hint fields[] = {{.name = "count", .minimum = 0.5}}; };
template <> struct droid::field_hints<misuse<10>> { static constexpr droid::field_hint fields[] = {{.name = "count", .exclusive_minimum = 0}}; };
template <> struct droid::field_hints<misuse<11>> { static constexpr droid::field_hint fields[] = {{.name = "text", .exclusive_maximum = 1}}; };
template <> struct droid::field_hints<misuse<12>> { static constexpr droid::field_hint fields[] = {{.name = "ratio", .minimum = 0, .exclusive_minimum = 0}}; };
template <> struct droid::field_hints<misuse<13>> { static constexpr droid::field_hint fields[] = {{.name = "ratio", .exclusive_minimum = 1, .exclusive_maximum = 1}}; };
template <> struct droid::field_hints<misuse<14>> { static constexpr droid::field_hint fields[] = {{.name = "text", .pattern = "(a"}}; };
template <> struct droid::field_hints<misuse<15>> { static constexpr droid::field_hint fields[] = {{.name = "count", .pattern = "a"}}; };
template <> struct droid::field_hints<misuse<16>> { static constexpr droid::field_hint fields[] = {{.name = "units", .enum_values = twice}}; };
template <> struct droid::field_hints<misuse<17>> { static constexpr droid::field_hint fields[] = {{.name = "text", .enum_values = twice}}; };
template <> struct droid::field_hints<misuse<18>> { static constexpr droid::field_hint fields[] = {{.name = "text", .max_length = 3, .enum_values = too_long}}; };
template <> struct droid::field_hints<misuse<19>> { static constexpr droid::field_hint fields[] = {{.name = "count", .defaulted = true, .minimum = 1}}; };
template <> struct droid::field_hints<misuse<20>> { static constexpr droid::field_hint fields[] = {{.name = "ratio", .maximum = std::numeric_limits<double>::infinity()}}; };
template <> struct droid::field_hints<misuse<21>> { static constexpr droid::field_hint fields[] = {{.name = "maybe", .min_length = 1}}; };
template <> struct droid::field_hints<misuse<22>> { static constexpr droid::field_hint fields[] = {{.name = "text", .pattern = R"((a)\1)"}}; };
// clang-format on

TEST_SUITE("domain/mcp/constraints") {
  TEST_CASE("a constraint a member cannot carry, or cannot keep, is refused with a sentence naming it") {
    CHECK(refusal<misuse<1>>() == R"~(droid: field_hints names "txt", which is not a described member)~");
    CHECK(refusal<misuse<2>>() == R"~(droid: field_hints names "text" twice)~");
    CHECK(refusal<misuse<3>>() ==
          R"~(droid: field_hints gives "count" minLength or maxLength, which only string members (or vectors of them) can have)~");
    CHECK(refusal<misuse<4>>() ==
          R"~(droid: field_hints gives "text" minimum or maximum, which only integer and number members (or vectors of them) can have)~");
    CHECK(refusal<misuse<5>>() == R"~(droid: field_hints gives "text" minItems or maxItems, which only std::vector members can have)~");
    CHECK(refusal<misuse<6>>() == R"~(droid: field_hints gives "count" a minimum above its maximum)~");
    CHECK(refusal<misuse<7>>() == R"~(droid: field_hints gives "text" a minLength above its maxLength)~");
    CHECK(refusal<misuse<8>>() == R"~(droid: field_hints gives "tags" a minItems above its maxItems)~");
    CHECK(refusal<misuse<9>>() ==
          R"~(droid: field_hints gives "count" the bound 0.5, which is not a whole number its integer type can hold)~");
    CHECK(refusal<misuse<10>>() ==
          R"~(droid: field_hints gives "count" exclusiveMinimum or exclusiveMaximum, which integer members do not take: write minimum = n + 1 or maximum = n - 1)~");
    CHECK(refusal<misuse<11>>() ==
          R"~(droid: field_hints gives "text" exclusiveMinimum or exclusiveMaximum, which only float and double members (or vectors of them) can have)~");
    CHECK(refusal<misuse<12>>() == R"~(droid: field_hints gives "ratio" both minimum and exclusiveMinimum; keep one)~");
    CHECK(refusal<misuse<13>>() ==
          R"~(droid: field_hints gives "ratio" an exclusive bound equal to the other bound, which no value keeps)~");
    CHECK(refusal<misuse<14>>() ==
          R"~(droid: field_hints gives "text" a pattern that cannot be used: the pattern "(a" has a group that is not closed with `)`)~");
    CHECK(refusal<misuse<15>>() ==
          R"~(droid: field_hints gives "count" a pattern, which only string members (or vectors of them) can have)~");
    CHECK(refusal<misuse<16>>() ==
          R"~(droid: field_hints gives "units" enum_values, but a described enum's values are its enumerators)~");
    CHECK(refusal<misuse<17>>() == R"~(droid: field_hints gives "text" the enum value "a" twice)~");
    CHECK(refusal<misuse<18>>() ==
          R"~(droid: field_hints gives "text" an enum value its other constraints refuse (`text`: 6 characters, at most 3 allowed))~");
    CHECK(refusal<misuse<19>>() ==
          R"~(droid: the default of "count" breaks its own field_hints (`count`: 0 is below the minimum 1))~");
    CHECK(refusal<misuse<20>>() == R"~(droid: field_hints gives "ratio" a bound that is not a finite number)~");
    CHECK(refusal<misuse<21>>() ==
          R"~(droid: field_hints gives "maybe" minLength or maxLength, which only string members (or vectors of them) can have)~");
    CHECK(refusal<misuse<22>>() ==
          R"~(droid: field_hints gives "text" a pattern that cannot be used: the pattern "(a)\1" uses a backreference, which is not supported)~");
  }

  TEST_CASE("an initialiser on a member not hinted defaulted is refused, since it could never be used") {
    // `int days = 3;` reads as "optional, 3 by default"; the framework cannot see
    // initialisers, so it says so instead of silently requiring the member.
    CHECK(refusal<starts_at_three>() ==
          R"~(droid: the member "days" starts as 3 (its default member initialiser) but is required, so that value is never used: hint it .defaulted = true to make it optional with "default": 3, or remove the initialiser)~");
    CHECK(refusal<optional_starts_at_three>() ==
          R"~(droid: the member "days" is a std::optional that starts as 3, which the schema would not state: hint it .defaulted = true to write "default": 3, or remove the initialiser)~");
    // Structs reached through vectors, optionals and maps are checked as well.
    CHECK(refusal<nested_starts_at_three>() == refusal<starts_at_three>());
    // Indistinguishable from no initialiser: accepted, and required.
    CHECK(refusal<starts_at_zero>() == "accepted");
    CHECK(droid::schema_of<starts_at_zero>().at("required") == boost::json::array{"days", "name"});
    // A result struct's initialisers are ordinary values: schema_of alone does not refuse.
    CHECK_NOTHROW((void)droid::schema_of<starts_at_three>());
  }
}

// ---- the example of docs/tools.md#constraints-and-defaults ----------------------------

namespace {

struct booking_args {
  std::string code;
  int nights = 1;
  double deposit = 0.5;
  std::string region;
  std::vector<std::string> tags;
};
BOOST_DESCRIBE_STRUCT(booking_args, (), (code, nights, deposit, region, tags))

}  // namespace

template <>
struct droid::field_hints<booking_args> {
  static constexpr std::string_view regions[] = {"eu-west-1", "us-east-1"};
  static constexpr droid::field_hint fields[] = {
      {.name = "code", .description = "Booking code", .min_length = 3, .max_length = 6, .pattern = "^[A-Z][A-Z0-9]*$"},
      {.name = "nights", .defaulted = true, .minimum = 1, .maximum = 30},
      {.name = "deposit", .defaulted = true, .maximum = 1, .exclusive_minimum = 0},
      {.name = "region", .enum_values = regions},
      {.name = "tags", .defaulted = true, .max_length = 20, .max_items = 3},
  };
};

TEST_SUITE("domain/mcp/constraints") {
  TEST_CASE("the documented example lists the schema and answers the sentences the documentation shows") {
    // docs/tools.md quotes both; this keeps them true.
    REQUIRE(refusal<booking_args>() == "accepted");
    CHECK(droid::ir::to_json_text(droid::schema_of<booking_args>()) ==
          R"({"type":"object","properties":{)"
          R"("code":{"type":"string","minLength":3,"maxLength":6,"pattern":"^[A-Z][A-Z0-9]*$","description":"Booking code"},)"
          R"("nights":{"type":"integer","minimum":1,"maximum":30,"default":1},)"
          R"("deposit":{"type":"number","maximum":1,"exclusiveMinimum":0,"default":0.5},)"
          R"("region":{"type":"string","enum":["eu-west-1","us-east-1"]},)"
          R"("tags":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":3,"default":[]}},)"
          R"("required":["code","region"]})");
    struct expectation {
      const char* extra;
      const char* says;
    };
    for (const expectation& e : {
             expectation{R"("nights":0)", "`nights`: 0 is below the minimum 1"},
             expectation{R"("nights":31)", "`nights`: 31 is above the maximum 30"},
             expectation{R"("nights":"2")", "`nights`: expected an integer, got a string"},
             expectation{R"("deposit":0)", "`deposit`: 0 is not above the exclusive minimum 0"},
             expectation{R"("code":"AB")", "`code`: 2 characters, at least 3 required"},
             expectation{R"("code":"ABCDEFG")", "`code`: 7 characters, at most 6 allowed"},
             expectation{R"("code":"ab1")", "`code`: \"ab1\" does not match the pattern ^[A-Z][A-Z0-9]*$"},
             expectation{R"("region":"mars")", "`region`: \"mars\" is not one of eu-west-1, us-east-1"},
             expectation{R"("tags":["a","b","c","d"])", "`tags`: 4 items, at most 3 allowed"},
             expectation{R"("tags":["a","much-too-long-for-a-tag"])", "`tags[1]`: 23 characters, at most 20 allowed"},
             expectation{R"("code":"B7","nights":30)", "`code`: 2 characters, at least 3 required"},
         }) {
      CAPTURE(e.extra);
      const std::string json = "{" + std::string(e.extra) + R"(,"code":"AB1","region":"eu-west-1"})";
      booking_args b{};
      std::string error;
      bool ok = false;
      REQUIRE_FALSE(droid::ir::visit_json(json, [&](const droid::ir::json_node& n) { ok = droid::decode(n, b, error); }));
      CHECK_FALSE(ok);
      CHECK(error == e.says);
    }
  }
}
