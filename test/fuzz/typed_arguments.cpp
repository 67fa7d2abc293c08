// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: typed tool arguments, decoded from JSON text into a described struct
/// with every member kind include/droid/domain/mcp/schema.hpp supports (strings, every
/// integer width signed and unsigned, float and double, bool, described enums,
/// `std::optional`, `std::vector`, `std::map<std::string, T>`, nested structs,
/// `boost::json::value`, and defaulted members), the way `tools/call` decodes them
/// (`detail::decode_arguments`).
///
/// Oracles:
/// - A decode that succeeds re-encodes (`to_json_value`, the encoder of typed results)
///   to text that decodes again to an equal value: the decoder accepts what the encoder
///   writes, and no value changes on the way through (an integer rounded through a
///   double, a float that lost its range check).
/// - A decode that fails says so in a sentence that names a member or the arguments
///   (docs/reliability.md, 2.14), never with an empty message.
/// - The free-form `boost::json::object` path of `decode_arguments` agrees with
///   Boost.JSON's own parser on the same text when both accept it (up to Boost's
///   rounding of doubles: see `same`).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/schema.hpp>

#include "fuzz_support.hpp"

namespace fuzz_args {

enum class colour { red, green, blue };
BOOST_DESCRIBE_ENUM(colour, red, green, blue)

struct leaf {
  std::string label;
  std::optional<std::int32_t> rank;
  colour tint = colour::green;
};
BOOST_DESCRIBE_STRUCT(leaf, (), (label, rank, tint))

struct branch {
  std::vector<leaf> leaves;
  std::optional<leaf> best;
  std::map<std::string, leaf> by_name;
};
BOOST_DESCRIBE_STRUCT(branch, (), (leaves, best, by_name))

/// One member of each kind; the defaulted ones may be missing from the arguments.
struct everything {
  std::string s;
  bool b = false;
  std::int8_t i8 = 0;
  std::uint8_t u8 = 0;
  std::int16_t i16 = 0;
  std::uint16_t u16 = 0;
  std::int32_t i32 = 0;
  std::uint32_t u32 = 0;
  std::int64_t i64 = 0;
  std::uint64_t u64 = 0;
  float f = 0;
  double d = 0;
  colour c = colour::red;
  std::optional<std::string> os;
  std::optional<std::uint16_t> ou16;
  std::optional<colour> oc;
  std::vector<std::int64_t> vi;
  std::vector<std::string> vs;
  std::vector<std::vector<bool>> vvb;
  std::vector<double> vd;
  std::map<std::string, std::int8_t> m8;
  branch tree;
  std::optional<branch> maybe_tree;
  boost::json::value any;
  std::int32_t defaulted_int = 7;
  std::string defaulted_text = "seven";
};
BOOST_DESCRIBE_STRUCT(everything, (),
                      (s, b, i8, u8, i16, u16, i32, u32, i64, u64, f, d, c, os, ou16, oc, vi, vs, vvb, vd, m8, tree,
                       maybe_tree, any, defaulted_int, defaulted_text))

}  // namespace fuzz_args

template <>
struct droid::field_hints<fuzz_args::everything> {
  static constexpr droid::field_hint fields[] = {
      {"defaulted_int", "Has a default", true},
      {"defaulted_text", "Has a default", true},
      {"any", "Anything", true},
      {"tree", "A nested struct", true},
      {"vvb", "", true},
  };
};

namespace {

/// How one decode ended: the text is not JSON (the transport would have refused it
/// before any tool saw it), or the arguments decoded, or they did not.
enum class outcome { not_json, decoded, refused };

template <class T>
outcome decode_text(std::string_view text, T& out, std::string& error) {
  bool ok = false;
  const std::error_code ec = droid::ir::visit_json(
      text, [&](const droid::ir::json_node& n) { ok = droid::detail::decode_arguments(&n, out, error); });
  if (ec) return outcome::not_json;
  return ok ? outcome::decoded : outcome::refused;
}

/// `a` and `b` are the same JSON value, doubles within a few units in the last place.
///
/// Why not `==`: Boost.JSON 1.81 does not round every decimal to the nearest double (it
/// reads `-9e+300` one unit in the last place off, where simdjson is exact), and it reads
/// a zero with a huge exponent (`-0e2300`) as not finite; neither is the project's
/// decoder's doing, and JSON text cannot spell an infinity, so a non-finite reading
/// from Boost matches anything. Units in the last place, not a multiple of epsilon:
/// below the smallest normal double a unit is no longer relative (Boost reads
/// `0.1241e-308` as 1.241000000000003e-309, one unit from simdjson's exact 1.241e-309,
/// which is 18 epsilons of it; corpus file subnormal-aee0b8fe).
bool same(const boost::json::value& a, const boost::json::value& b) {
  if (b.is_double() && !std::isfinite(b.get_double())) return true;
  // A number may be read as an integer by one parser and as a double by the other
  // (`-0`, `1e2`): numbers compare by value.
  if (a.is_number() && b.is_number() && (a.is_double() || b.is_double())) {
    const double x = a.to_number<double>(), y = b.to_number<double>();
    const double larger = std::max(std::abs(x), std::abs(y));
    const double unit = std::nextafter(larger, std::numeric_limits<double>::infinity()) - larger;
    return x == y || std::abs(x - y) <= 8 * unit;
  }
  if (a.is_array() && b.is_array()) {
    const auto& p = a.get_array();
    const auto& q = b.get_array();
    if (p.size() != q.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (!same(p[i], q[i])) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    const auto& p = a.get_object();
    const auto& q = b.get_object();
    if (p.size() != q.size()) return false;
    for (const auto& m : p) {
      const auto* other = q.if_contains(m.key());
      if (!other || !same(m.value(), *other)) return false;
    }
    return true;
  }
  // Integers compare by value across int64 and uint64; anything else by kind and value.
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The schema is derived from the same description; it must be buildable (once).
  static const boost::json::object schema = droid::schema_of<fuzz_args::everything>();
  (void)schema;

  const std::string_view text = droid::fuzz::as_text(data, size);

  fuzz_args::everything args{};
  std::string error;
  const outcome o = decode_text(text, args, error);
  if (o == outcome::not_json) return 0;
  if (o == outcome::decoded) {
    const boost::json::value encoded = droid::to_json_value(args);
    const std::string again = droid::ir::to_json_text(encoded);
    fuzz_args::everything back{};
    std::string why;
    DROID_FUZZ_CHECK(decode_text(again, back, why) == outcome::decoded, why.c_str());
    // By value: the encoder writes a whole double as an integer (`3.0` as `3`), which
    // JSON does not tell apart, so a `boost::json::value` member may change kind.
    DROID_FUZZ_CHECK(same(droid::to_json_value(back), encoded), "a decoded value changed through encode and decode");
  } else {
    DROID_FUZZ_CHECK(!error.empty(), "a failed decode without a message");
    DROID_FUZZ_CHECK(error.front() == '`', "an argument error that names no member");
  }

  // Any JSON value the decoder takes as an object, Boost.JSON reads the same way.
  boost::json::object loose;
  std::string loose_error;
  if (decode_text(text, loose, loose_error) == outcome::decoded) {
    boost::json::parse_options opts;
    opts.max_depth = 4 * droid::ir::max_depth;
    boost::system::error_code ec;
    const boost::json::value reference = boost::json::parse(text, ec, {}, opts);
    const boost::json::value ours(loose);
    if (!ec && reference.is_object() && !same(ours, reference)) {
      std::fprintf(stderr, "decoded: %s\nBoost.JSON: %s\n", droid::ir::to_json_text(ours).c_str(),
                   droid::ir::to_json_text(reference).c_str());
      DROID_FUZZ_CHECK(false, "the object decoder and Boost.JSON disagree");
    }
  }
  return 0;
}
