// SPDX-License-Identifier: BSL-1.0
/// @file
/// Schemas, decoding and encoding of described C++ types (tool arguments and results).
#include <droid/domain/mcp/schema.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/domain/ir/codec.hpp>

namespace {

enum class color { red, green };
BOOST_DESCRIBE_ENUM(color, red, green)

struct inner {
  std::string label;
  std::optional<double> weight;
};
BOOST_DESCRIBE_STRUCT(inner, (), (label, weight))

struct args {
  std::string city;
  int days = 3;
  std::uint8_t level = 0;
  bool verbose = false;
  color hue = color::red;
  std::optional<std::string> note;
  std::vector<int> numbers;
  std::map<std::string, int> counts;
  inner nested;
  boost::json::value anything;
};
BOOST_DESCRIBE_STRUCT(args, (), (city, days, level, verbose, hue, note, numbers, counts, nested, anything))

}  // namespace

template <>
struct droid::field_hints<args> {
  static constexpr droid::field_hint fields[] = {
      {"city", "Where"}, {"days", "How many days", true}, {"verbose", "", true}, {"hue", "", true},
      {"numbers", "", true}, {"counts", "", true}, {"nested", "", true}, {"anything", "", true}, {"level", "", true}};
};

namespace {

/// Decodes `json` into a fresh value-initialised `T`.
template <class T>
bool decode_text(const std::string& json, T& out, std::string& error) {
  bool ok = false;
  const auto ec = droid::ir::visit_json(json, [&](const droid::ir::json_node& n) { ok = droid::decode(n, out, error); });
  REQUIRE_FALSE(ec);
  return ok;
}

/// `json` decoded as a `T`, or nothing when the parser or the decoder refuses it.
template <class T>
std::optional<T> number_as(const std::string& json) {
  T out{};
  std::string error;
  bool ok = false;
  if (droid::ir::visit_json(json, [&](const droid::ir::json_node& n) { ok = droid::decode(n, out, error); })) {
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return out;
}

/// `d` in its shortest form, given a fraction (`128.0`) when it would have none, so that
/// the parser reads it as a double.
std::string as_double_text(double d) {
  char buf[32];
  std::string text(buf, std::to_chars(buf, buf + sizeof buf, d).ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

TEST_SUITE("domain/mcp/schema") {
  TEST_CASE_TEMPLATE("integers are range-checked exactly at every bound, whether written as integers or doubles", T,
                     std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                     std::uint32_t, std::uint64_t, char, signed char, unsigned char, short, unsigned short, long,
                     unsigned long, long long, unsigned long long, char16_t, char32_t, wchar_t) {
    using L = std::numeric_limits<T>;
    constexpr bool wide = L::digits >= 63;
    CHECK(number_as<T>(std::to_string(+L::min())) == L::min());
    CHECK(number_as<T>(std::to_string(+L::max())) == L::max());
    const std::string below_min = !L::is_signed ? std::string("-1")
                                  : wide        ? std::string("-9223372036854775809")
                                                : std::to_string(static_cast<long long>(L::min()) - 1);
    const std::string above_max = !wide          ? std::to_string(static_cast<long long>(L::max()) + 1)
                                  : L::is_signed ? std::string("9223372036854775808")
                                                 : std::string("18446744073709551616");
    CAPTURE(below_min);
    CAPTURE(above_max);
    CHECK_FALSE(number_as<T>(below_min));
    CHECK_FALSE(number_as<T>(above_max));

    // As doubles: the bounds are -2^digits (signed) or 0, and 2^digits, all exact. Next to
    // them, the nearest doubles outside and inside (1 away, or one ulp for 64 bits).
    const double limit = std::ldexp(1.0, L::digits);
    const double lowest = L::is_signed ? -limit : 0.0;
    const double under = lowest - 1 == lowest ? std::nextafter(lowest, -limit * 2) : lowest - 1;
    const double top = limit - 1 == limit ? std::nextafter(limit, 0.0) : limit - 1;
    for (const double refused : {under, limit, limit + 0.5, limit * 2, 1e300, -1e300, 0.5, -0.5, 1e-300}) {
      CAPTURE(as_double_text(refused));
      CHECK_FALSE(number_as<T>(as_double_text(refused)));
    }
    CHECK(number_as<T>(as_double_text(lowest)) == L::min());
    CHECK(number_as<T>(as_double_text(top)) == static_cast<T>(top));
    CHECK_FALSE(number_as<T>(L::is_signed ? "-1.5" : "-1.0"));
    CHECK(number_as<T>("3.0") == T(3));
    CHECK(number_as<T>("3e0") == T(3));
    CHECK(number_as<T>("-0") == T(0));
    CHECK(number_as<T>("-0.0") == T(0));
    CHECK(number_as<T>("-0e0") == T(0));
  }

  TEST_CASE("64-bit integers refuse 2^63 and 2^64 in every spelling, naming the value") {
    for (const char* json : {"9223372036854775808", "9223372036854775808.0", "9.223372036854775808e18", "1e19"})
      CHECK_FALSE(number_as<std::int64_t>(json));
    for (const char* json : {"18446744073709551616", "18446744073709551616.0", "18446744073709551616.5",
                             "1.8446744073709551616e19", "18446744073709551615.0"})
      CHECK_FALSE(number_as<std::uint64_t>(json));
    CHECK(number_as<std::uint64_t>("9223372036854775808.0") == std::uint64_t(1) << 63);
    CHECK(number_as<std::int64_t>("-9223372036854775808.0") == std::numeric_limits<std::int64_t>::min());
    args a{};
    std::string error;
    CHECK_FALSE(decode_text(R"({"city":"x","days":1e10})", a, error));
    CHECK(error == "`days`: 1e+10 is out of range");
  }

  TEST_CASE("floats refuse doubles beyond their range instead of converting them") {
    CHECK_FALSE(number_as<float>("1e300"));
    CHECK_FALSE(number_as<float>("-1e39"));
    CHECK(number_as<float>("3.5") == 3.5f);
    CHECK(number_as<float>("-0.0") == 0.0f);
    CHECK(number_as<double>("1e300") == 1e300);
  }

  TEST_CASE("a described struct yields an object schema with required members and defaults") {
    const boost::json::object s = droid::schema_of<args>();
    CHECK(s.at("type") == "object");
    const auto& props = s.at("properties").as_object();
    CHECK(props.at("city").at("type") == "string");
    CHECK(props.at("city").at("description") == "Where");
    CHECK(props.at("days").at("type") == "integer");
    CHECK(props.at("days").at("default") == 3);
    CHECK(props.at("level").at("minimum") == 0);
    CHECK(props.at("level").at("maximum") == 255);
    CHECK(props.at("hue").at("enum") == boost::json::array{"red", "green"});
    CHECK(props.at("note").at("type") == "string");
    CHECK(props.at("numbers").at("items").at("type") == "integer");
    CHECK(props.at("counts").at("additionalProperties").at("type") == "integer");
    // Nested structs are inlined: many clients strip $defs and cannot follow $ref.
    CHECK(props.at("nested").at("properties").at("label").at("type") == "string");
    CHECK_FALSE(props.at("anything").as_object().contains("type"));
    CHECK(s.at("required") == boost::json::array{"city"});
  }

  TEST_CASE("decoding fills present members and keeps defaults for absent ones") {
    args a{};
    std::string error;
    REQUIRE(decode_text(R"({"city":"Oslo","hue":"green","note":"hi","numbers":[1,2],"counts":{"x":1},
                           "nested":{"label":"l","weight":2},"anything":{"k":[true]},"level":7.0})",
                        a, error));
    CHECK(a.city == "Oslo");
    CHECK(a.days == 3);
    CHECK(a.hue == color::green);
    CHECK(a.note == "hi");
    CHECK(a.numbers == std::vector<int>{1, 2});
    CHECK(a.counts.at("x") == 1);
    CHECK(a.nested.weight == 2.0);
    CHECK(a.anything.at("k").at(0) == true);
    CHECK(a.level == 7);  // 7.0 is an integer to JSON Schema
  }

  TEST_CASE("decoding errors name the member and the problem") {
    struct expectation {
      const char* json;
      const char* says;
    };
    for (const expectation& e : {
             expectation{R"({})", "`city` is required"},
             expectation{R"({"city":1})", "`city`: expected a string, got an integer"},
             expectation{R"({"city":"x","days":"3"})", "`days`: expected an integer, got a string"},
             expectation{R"({"city":"x","days":1.5})", "`days`: expected an integer, got a number"},
             expectation{R"({"city":"x","level":256})", "`level`: 256 is out of range"},
             expectation{R"({"city":"x","days":3000000000})", "`days`: 3000000000 is out of range"},
             expectation{R"({"city":"x","hue":"blue"})", "`hue`: \"blue\" is not one of red, green"},
             expectation{R"({"city":"x","numbers":[1,"2"]})", "`numbers[1]`: expected an integer, got a string"},
             expectation{R"({"city":"x","nested":{"weight":1}})", "`nested.label` is required"},
             expectation{R"({"city":"x","counts":{"a":true}})", "`counts.a`: expected an integer, got a boolean"},
         }) {
      CAPTURE(e.json);
      args a{};
      std::string error;
      CHECK_FALSE(decode_text(e.json, a, error));
      CHECK(error == e.says);
    }
  }

  TEST_CASE("an explicit null for an optional member means absent") {
    args a{};
    a.note = "before";
    std::string error;
    REQUIRE(decode_text(R"({"city":"x","note":null})", a, error));
    CHECK_FALSE(a.note);
  }

  TEST_CASE("encoding omits empty optionals and writes enums by name") {
    inner i{"l", std::nullopt};
    CHECK(droid::ir::to_json_text(droid::to_json_value(i)) == R"({"label":"l"})");
    CHECK(droid::to_json_value(color::green) == "green");
  }
}

namespace {
struct hinted {
  int a = 0;
  std::optional<int> b;
};
BOOST_DESCRIBE_STRUCT(hinted, (), (a, b))
struct typo {
  int a = 0;
};
BOOST_DESCRIBE_STRUCT(typo, (), (a))
}  // namespace

template <>
struct droid::field_hints<hinted> {
  static constexpr droid::field_hint fields[] = {{"a", "", true}, {"b", "", true}};
};
template <>
struct droid::field_hints<typo> {
  static constexpr droid::field_hint fields[] = {{"aa", "misspelt"}};
};

TEST_SUITE("domain/mcp/schema") {
  TEST_CASE("a hint naming no member is refused, and an empty optional states no default") {
    CHECK_THROWS_AS((void)droid::schema_of<typo>(), std::invalid_argument);
    const auto s = droid::schema_of<hinted>();
    CHECK(s.at("properties").at("a").at("default") == 0);
    CHECK_FALSE(s.at("properties").at("b").as_object().contains("default"));
  }
}
