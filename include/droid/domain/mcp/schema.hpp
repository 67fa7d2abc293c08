// SPDX-License-Identifier: BSL-1.0
/// @file
/// C++ types as MCP tool arguments and results: JSON Schema generation, decoding and
/// encoding driven by Boost.Describe.
///
/// Domain layer. A tool's `inputSchema` and the decoder of its arguments come from the
/// same description of the same struct, so what the client is told and what the server
/// accepts cannot drift apart.
///
/// ## Why our own decoder and not `boost::json::value_to`
/// Measured with Boost 1.81 (docs/architecture.md#json): `value_to` on a described
/// struct demands every member, so a missing `std::optional` or a member with a default
/// fails, and its errors do not name the field. Tool arguments need both, and MCP
/// 2025-11-25 wants argument errors reported to the model in words it can act on
/// ("`days`: expected an integer").
///
/// ## Supported types
/// `bool`; integers (range-checked, with `minimum`/`maximum` in the schema); `float`,
/// `double`; `std::string`; described enums (as their names); `std::optional<T>` (not
/// required); `std::vector<T>`; `std::map<std::string, T>`; nested described structs
/// (inlined, because many clients strip `$defs`); `boost::json::value` (anything).
///
/// ## Descriptions, constraints and defaults
/// Specialise `droid::field_hints<T>` with a `static constexpr droid::field_hint fields[]`
/// naming members. A hint gives a description, the constraints a value must keep
/// (`minimum`, `maximum`, `exclusive_minimum`, `exclusive_maximum`, `min_length`,
/// `max_length`, `pattern`, `enum_values`, `min_items`, `max_items`: the keywords and
/// member names of `elicit_field`), `defaulted`, and `mcp_header`. Each constraint is
/// written into the schema and checked when decoding, so the model is told the rule the
/// server enforces. `defaulted = true` makes a member optional in the schema, with the
/// value of that member in a value-initialised `T` as its `default`; a missing member
/// keeps that value when decoding. A default member initialiser alone does not (see
/// `field_hint::defaulted` for why, and for the registration check that catches it).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/describe/enum.hpp>
#include <boost/describe/enumerators.hpp>
#include <boost/describe/members.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/pattern.hpp>

namespace droid {

/// What a tool's argument struct says about one of its members: a description, the
/// constraints its value must keep, a default marker and an HTTP header name.
///
///     template <>
///     struct droid::field_hints<route_args> {
///       static constexpr std::string_view regions[] = {"eu-west-1", "us-east-1"};
///       static constexpr droid::field_hint fields[] = {
///           {.name = "region", .description = "Where to route the call", .mcp_header = "Region",
///            .enum_values = regions},
///           {.name = "days", .defaulted = true, .minimum = 1, .maximum = 10},
///           {.name = "code", .min_length = 3, .max_length = 3, .pattern = "^[A-Z]+$"},
///           {.name = "tags", .max_length = 20, .max_items = 5},
///       };
///     };
///
/// Designated initialisers must follow the order of the members below; the first four
/// may also be given by position (`{"days", "Days ahead", true}`).
///
/// ## Constraints: declared once, written into the schema, checked when decoding
/// The names and meaning are those of `elicit_field` (one vocabulary for both), plus the
/// keywords a tool argument may carry and a form may not (`exclusive_*`, `pattern`,
/// `enum_values`). On a `std::optional<V>` member they constrain the value when one is
/// given. On a `std::vector<E>` member `min_items`/`max_items` bound the array and every
/// other constraint applies to each element (written into `items`). A value that breaks
/// one is an invalid argument whose sentence names the member and the rule ("`days`: 11
/// is above the maximum 10"). A constraint the member cannot carry (a length on a number,
/// a minimum above the maximum, a bad pattern, an exclusive bound on an integer) makes
/// `schema_of` and tool registration throw `std::invalid_argument`.
///
/// ## `mcp_header`: mirroring an argument into a header (MCP 2026-07-28)
/// A non-empty `mcp_header` puts `"x-mcp-header": "<mcp_header>"` on the member's
/// property. Clients on Streamable HTTP then send the argument's value a second time, as
/// the header `Mcp-Param-<mcp_header>`, so that a load balancer or gateway can route on
/// it without parsing the body; the server refuses a call whose header and body disagree.
/// Why a tool would want it: sending calls for one region, tenant or shard to the
/// replicas that hold its data. Registering the tool throws `std::invalid_argument`
/// (naming the tool, the member and the rule) unless the member is `bool`, an integer,
/// `std::string` or a described enum (sent as its name), or a `std::optional` of one of
/// them; the value is an HTTP token (``A-Z a-z 0-9 !#$%&'*+-.^_`|~``); and no other member
/// of the same tool uses the same value, ignoring case. Members of nested structs may
/// carry one too (not elements of a `std::vector` or values of a `std::map`: they have no
/// single place in the arguments). Leave the member out of the initialiser for no
/// header; an explicit `""` is refused as an empty header name.
struct field_hint {
  std::string_view name;  ///< the member's name, as `BOOST_DESCRIBE_STRUCT` lists it
  std::string_view description = {};  ///< the property's `description`
  /// The member has a useful default: not required, and `default` in the schema is the
  /// member's value in a value-initialised struct (its default member initialiser).
  ///
  /// Why a declaration and not the initialiser itself: C++20 cannot see a default member
  /// initialiser. Value-initialising the struct shows `int days = 0;` and `int days;`
  /// alike, and `std::string lang = "";` like `std::string lang;`; evaluating it at
  /// compile time works only for scalar members of structs whose every member is
  /// `constexpr` (a `std::map` or `boost::json::value` member breaks it). Which members
  /// were optional would then depend on their values and on their neighbours' types.
  /// What registration does check: a required member (or a `std::optional`) whose
  /// initial value differs from its type's value-initialised one (`int days = 3;`) is
  /// refused, since that initialiser could never be used.
  bool defaulted = false;
  /// The header the member is mirrored into, without the `Mcp-Param-` prefix; see above.
  std::string_view mcp_header{};
  /// Integer and number members (or their elements): inclusive bounds. For integers,
  /// whole numbers the type can hold; each replaces the type's own bound on its side.
  std::optional<double> minimum = {};
  std::optional<double> maximum = {};  ///< as `minimum`, the upper bound
  /// Number (`float`, `double`) members only: the value must be strictly beyond these.
  /// Integers are refused: `exclusive_minimum = 0` is `minimum = 1` there.
  std::optional<double> exclusive_minimum = {};
  std::optional<double> exclusive_maximum = {};  ///< as `exclusive_minimum`, the upper bound
  /// String members (or elements): lengths in Unicode code points, as JSON Schema counts.
  std::optional<std::size_t> min_length = {};
  std::optional<std::size_t> max_length = {};  ///< as `min_length`, the upper bound
  /// String members (or elements): an ECMA-262 regular expression, searched (not
  /// anchored) as JSON Schema does; `droid::pattern` says which subset, and why matching
  /// cannot backtrack. Checked after the lengths.
  std::string_view pattern = {};
  /// String members (or elements): the only values allowed (`enum`). Point it at a
  /// `static constexpr std::string_view[]`; for a C++ enum, describe the enum instead.
  std::span<const std::string_view> enum_values = {};
  /// `std::vector` members only: how many elements the array must / may have.
  std::optional<std::size_t> min_items = {};
  std::optional<std::size_t> max_items = {};  ///< as `min_items`, the upper bound
};

/// Specialise with `static constexpr field_hint fields[] = {...};` to describe, constrain
/// or default members (see `field_hint`).
template <class T>
struct field_hints {};

namespace detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class T, class C, class A>
struct is_string_map<std::map<std::string, T, C, A>> : std::true_type {};

template <class T>
concept described_struct = boost::describe::has_describe_members<T>::value && std::is_class_v<T>;
template <class T>
concept described_enum = boost::describe::has_describe_enumerators<T>::value && std::is_enum_v<T>;
template <class T>
concept integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
const field_hint* find_hint(std::string_view name) {
  if constexpr (requires { field_hints<T>::fields; }) {
    for (const field_hint& h : field_hints<T>::fields)
      if (h.name == name) return &h;
  }
  return nullptr;
}

template <class T>
using public_members = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;

/// True when `T` has a JSON form, all the way down: what `to_json_value`, `schema_of` and
/// `decode` accept. Why a trait of its own: registration asserts it first, so that a
/// struct with one unsupported member is refused with one sentence naming the role of
/// the struct (a tool's arguments, its result), not with an error from deep inside the
/// encoder.
template <class T>
constexpr bool json_able();

template <class P>
struct member_type_of;
template <class M, class C>
struct member_type_of<M C::*> {
  using type = M;
};
/// `json_able` for a Boost.Describe member descriptor `D`.
struct member_json_able_q {
  template <class D>
  using fn = std::bool_constant<
      json_able<std::remove_cv_t<typename member_type_of<std::remove_cv_t<decltype(D::pointer)>>::type>>()>;
};

template <class T>
constexpr bool json_able() {
  if constexpr (std::is_same_v<T, bool> || integer<T> || std::is_floating_point_v<T> ||
                std::is_same_v<T, std::string> || std::is_same_v<T, boost::json::value> || described_enum<T>) {
    return true;
  } else if constexpr (is_optional<T>::value || is_vector<T>::value) {
    return json_able<typename T::value_type>();
  } else if constexpr (is_string_map<T>::value) {
    return json_able<typename T::mapped_type>();
  } else if constexpr (described_struct<T>) {
    return boost::mp11::mp_all_of_q<public_members<T>, member_json_able_q>::value;
  } else {
    return false;
  }
}

}  // namespace detail

// ---- encoding ----------------------------------------------------------------------------

/// The JSON value of `v` (what `structuredContent` holds for a typed result).
/// `std::nullopt` members are omitted rather than written as `null`, because the schema
/// says "string" and a validating client would reject `null`.
template <class T>
[[nodiscard]] boost::json::value to_json_value(const T& v) {
  using detail::described_enum;
  using detail::described_struct;
  if constexpr (std::is_same_v<T, bool>) {
    return boost::json::value(v);
  } else if constexpr (detail::integer<T>) {
    if constexpr (std::is_signed_v<T>) return boost::json::value(static_cast<std::int64_t>(v));
    else return boost::json::value(static_cast<std::uint64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return boost::json::value(static_cast<double>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return boost::json::value(boost::json::string_view(v));
  } else if constexpr (std::is_same_v<T, boost::json::value>) {
    return v;
  } else if constexpr (described_enum<T>) {
    boost::json::value out = boost::json::string();
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
      if (v == d.value) out = boost::json::string(d.name);
    });
    return out;
  } else if constexpr (detail::is_optional<T>::value) {
    return v ? to_json_value(*v) : boost::json::value(nullptr);
  } else if constexpr (detail::is_vector<T>::value) {
    boost::json::array a;
    a.reserve(v.size());
    for (const auto& e : v) a.push_back(to_json_value(e));
    return a;
  } else if constexpr (detail::is_string_map<T>::value) {
    boost::json::object o;
    for (const auto& [k, e] : v) o[k] = to_json_value(e);
    return o;
  } else if constexpr (described_struct<T>) {
    boost::json::object o;
    boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) {
      const auto& m = v.*d.pointer;
      if constexpr (detail::is_optional<std::remove_cvref_t<decltype(m)>>::value) {
        if (!m) return;
      }
      o[d.name] = to_json_value(m);
    });
    return o;
  } else {
    static_assert(sizeof(T) == 0,
                  "droid: this type cannot be converted to JSON; use bool, integers, floating point, std::string, "
                  "described enums and structs, std::optional, std::vector, std::map<std::string, T> or "
                  "boost::json::value");
  }
}

// ---- constraints -------------------------------------------------------------------------

namespace detail {

/// Where a value sits in the arguments, spelled out only when an error names it: a
/// member `b` of `a` reads "a.b", an element reads "a[3]".
///
/// Why not a `std::string` per level: every member of every call would build its own
/// path (an allocation for names longer than a string keeps inline), and almost every
/// call decodes without an error. Lifetime: refers to its parent and to the name's
/// characters, which live on the caller's stack and tape for the whole decode.
class json_path {
 public:
  // Implicit: decoders pass the root's text (often empty) where a path is expected.
  json_path(std::string_view root) noexcept : name_(root) {}  // NOLINT(google-explicit-constructor)
  json_path(const std::string& root) noexcept : name_(root) {}  // NOLINT(google-explicit-constructor)
  json_path(const char* root) noexcept : name_(root) {}  // NOLINT(google-explicit-constructor)
  json_path(const json_path& parent, std::string_view member) noexcept : parent_(&parent), name_(member) {}
  json_path(const json_path& parent, std::size_t index) noexcept : parent_(&parent), index_(index), is_index_(true) {}

  [[nodiscard]] std::string str() const {
    if (!parent_) return std::string(name_);
    std::string base = parent_->str();
    if (is_index_) return base + "[" + std::to_string(index_) + "]";
    if (base.empty()) return std::string(name_);
    return base + "." + std::string(name_);
  }
  /// The path in backticks, as error messages name it. Built by appending: g++ 12 at -O3
  /// reports a false -Wrestrict for `"`" + str()`.
  [[nodiscard]] std::string quoted() const {
    std::string q(1, '`');
    q += str();
    q += '`';
    return q;
  }

 private:
  const json_path* parent_ = nullptr;
  std::string_view name_;
  std::size_t index_ = 0;
  bool is_index_ = false;
};

// Built in a fresh string and moved: g++ 12 at -O3 reports a false -Wrestrict when a
// literal is assigned to, or a `+` chain of temporaries starts from, the caller's string.
inline bool fail(std::string& error, const json_path& path, std::string_view what, const ir::json_node& n) {
  const std::string where = path.str();
  std::string message(1, '`');
  message += where.empty() ? std::string_view("arguments") : std::string_view(where);
  message += "`: expected ";
  message += what;
  message += ", got ";
  message += n.kind_name();
  error = std::move(message);
  return false;
}

/// `d` as the shortest text that reads back as the same double ("150", "0.5"), for error
/// messages: `std::to_string` writes 2^64 as "18446744073709551616.000000".
inline std::string number_text(double d) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

/// `s` in double quotes. Built by appending into a reserved string: g++ 12 at -O3 reports
/// a false `-Wrestrict` overlap for `"\"" + std::string(s) + "\""`.
inline std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

/// `s` quoted for an error message, cut after 60 bytes (on a code point) with "...", so
/// that a long argument does not fill the model's context with its own text.
inline std::string shown_value(std::string_view s) {
  constexpr std::size_t limit = 60;
  if (s.size() <= limit) return quoted(s);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  std::string out = quoted(s.substr(0, cut));
  out.insert(out.size() - 1, "...");
  return out;
}

inline std::string count_text(std::size_t n, std::string_view noun) {
  std::string s = std::to_string(n) + " " + std::string(noun);
  if (n != 1) s += 's';
  return s;
}

/// Code points in well-formed UTF-8: every byte that is not a continuation byte.
inline std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

/// Throws unless `b` (when given) is a finite bound that a member of type `V` can carry:
/// for an integer, a whole number the type holds and a JSON client reads exactly.
/// Shared by `field_hint` and `elicit_field`, which declare bounds the same way.
template <class V>
void check_bound(const std::optional<double>& b, const std::string& who) {
  if (!b) return;
  if (!std::isfinite(*b)) throw std::invalid_argument(who + " a bound that is not a finite number");
  if constexpr (integer<V>) {
    // 2^53: beyond it a JSON number (a double in every JavaScript client) is not exact.
    constexpr double exact = 9007199254740992.0;
    const bool fits = std::trunc(*b) == *b && *b >= static_cast<double>(std::numeric_limits<V>::min()) &&
                      *b <= static_cast<double>(std::numeric_limits<V>::max()) && std::fabs(*b) <= exact;
    if (!fits)
      throw std::invalid_argument(who + " the bound " + number_text(*b) +
                                  ", which is not a whole number its integer type can hold");
  }
}

/// True when `v` keeps the inclusive bounds; otherwise false, with `error` naming `path`.
/// Integers are compared as integers: a checked bound is a whole number the type holds,
/// and a double would round 2^53 + 1 down to the bound.
template <class V>
bool keeps_range(const V& v, const std::optional<double>& minimum, const std::optional<double>& maximum,
                 const json_path& path, std::string& error) {
  bool below = false;
  bool above = false;
  std::string text;
  if constexpr (integer<V>) {
    below = minimum && v < static_cast<V>(*minimum);
    above = maximum && v > static_cast<V>(*maximum);
    if (below || above) text = std::to_string(+v);
  } else {
    below = minimum && static_cast<double>(v) < *minimum;
    above = maximum && static_cast<double>(v) > *maximum;
    if (below || above) text = number_text(static_cast<double>(v));
  }
  if (below) return error = path.quoted() + ": " + text + " is below the minimum " + number_text(*minimum), false;
  if (above) return error = path.quoted() + ": " + text + " is above the maximum " + number_text(*maximum), false;
  return true;
}

/// True when `s` has between `min` and `max` code points; otherwise false with `error`.
inline bool keeps_length(std::string_view s, const std::optional<std::size_t>& min,
                         const std::optional<std::size_t>& max, const json_path& path, std::string& error) {
  if (!min && !max) return true;
  const std::size_t n = code_points(s);
  if (min && n < *min)
    return error = path.quoted() + ": " + count_text(n, "character") + ", at least " + std::to_string(*min) +
                   " required",
           false;
  if (max && n > *max)
    return error = path.quoted() + ": " + count_text(n, "character") + ", at most " + std::to_string(*max) +
                   " allowed",
           false;
  return true;
}

template <class M>
struct optional_value {
  using type = M;
};
template <class M>
struct optional_value<std::optional<M>> {
  using type = M;
};
template <class V>
struct element_or_self {
  using type = V;
};
template <class E, class A>
struct element_or_self<std::vector<E, A>> {
  using type = E;
};
/// What a member's value constraints apply to: the value of an optional, the element of
/// a vector (`field_hint` puts them under `items`).
template <class M>
using constrained_t = typename element_or_self<typename optional_value<M>::type>::type;

/// Whether `h` states anything to check beyond presence, so decoding skips the rest.
constexpr bool has_checks(const field_hint& h) {
  return h.minimum || h.maximum || h.exclusive_minimum || h.exclusive_maximum || h.min_length || h.max_length ||
         !h.pattern.empty() || !h.enum_values.empty() || h.min_items || h.max_items;
}

/// What `hint_index` gives a member with no hint.
inline constexpr std::size_t no_hint = static_cast<std::size_t>(-1);

/// Where the hint of member `D` of `T` is in `field_hints<T>::fields`, found at compile
/// time so that decoding a member with no checks costs nothing. Why an index and not a
/// pointer: g++ with AddressSanitizer cannot compare the address of a global with null
/// in a constant expression, so `if constexpr (pointer != nullptr)` fails to compile there.
template <class T, class D>
consteval std::size_t hint_index() {
  if constexpr (requires { field_hints<T>::fields; }) {
    std::size_t i = 0;
    for (const field_hint& h : field_hints<T>::fields) {
      if (h.name == std::string_view(D::name)) return i;
      ++i;
    }
  }
  return no_hint;
}

/// The hint of member `D` of `T`; only for a member that has one (`hint_index` says).
/// Why a function of `D`: inside the per-member lambdas, `field_hints<T>::fields` alone
/// does not depend on the member, and clang checks it even in a discarded branch.
template <class T, class D>
constexpr const field_hint& hint_of() {
  return field_hints<T>::fields[hint_index<T, D>()];
}

/// True when scalar or string `x` keeps `h`'s value constraints; otherwise false with
/// `error` a sentence naming `path` and the rule.
template <class X>
bool keeps_value(const X& x, const field_hint& h, const json_path& path, std::string& error) {
  if constexpr (integer<X>) {
    return keeps_range(x, h.minimum, h.maximum, path, error);
  } else if constexpr (std::is_floating_point_v<X>) {
    if (!keeps_range(x, h.minimum, h.maximum, path, error)) return false;
    const double d = static_cast<double>(x);
    if (h.exclusive_minimum && !(d > *h.exclusive_minimum))
      return error = path.quoted() + ": " + number_text(d) + " is not above the exclusive minimum " +
                     number_text(*h.exclusive_minimum),
             false;
    if (h.exclusive_maximum && !(d < *h.exclusive_maximum))
      return error = path.quoted() + ": " + number_text(d) + " is not below the exclusive maximum " +
                     number_text(*h.exclusive_maximum),
             false;
    return true;
  } else if constexpr (std::is_same_v<X, std::string>) {
    if (!keeps_length(x, h.min_length, h.max_length, path, error)) return false;
    if (!h.pattern.empty() && !cached_pattern(h.pattern).search(x))
      return error = path.quoted() + ": " + shown_value(x) + " does not match the pattern " + std::string(h.pattern),
             false;
    if (!h.enum_values.empty()) {
      for (const std::string_view allowed : h.enum_values)
        if (allowed == x) return true;
      std::string list;
      for (const std::string_view allowed : h.enum_values) {
        if (!list.empty()) list += ", ";
        list += allowed;
      }
      return error = path.quoted() + ": " + shown_value(x) + " is not one of " + list, false;
    }
    return true;
  } else {
    return true;
  }
}

/// True when member value `v` keeps every constraint of `h`: nothing for an empty
/// optional, the item counts and then each element for a vector.
template <class M>
bool keeps_field_hint(const M& v, const field_hint& h, const json_path& path, std::string& error) {
  if constexpr (is_optional<M>::value) {
    return !v || keeps_field_hint(*v, h, path, error);
  } else if constexpr (is_vector<M>::value) {
    const std::size_t n = v.size();
    if (h.min_items && n < *h.min_items)
      return error = path.quoted() + ": " + count_text(n, "item") + ", at least " + std::to_string(*h.min_items) +
                     " required",
             false;
    if (h.max_items && n > *h.max_items)
      return error = path.quoted() + ": " + count_text(n, "item") + ", at most " + std::to_string(*h.max_items) +
                     " allowed",
             false;
    for (std::size_t i = 0; i < n; ++i)
      if (!keeps_value(v[i], h, json_path(path, i), error)) return false;
    return true;
  } else {
    return keeps_value(v, h, path, error);
  }
}

/// Throws `std::invalid_argument` when `h` states what a member of type `M` cannot carry,
/// states it out of order, or gives a pattern this matcher refuses.
///
/// Why throw and not drop the keyword: a dropped bound is an argument the tool author
/// meant to refuse and the server accepts, found only when bad data arrives. The schema
/// is built when the tool is registered, which is the moment to say so (elicitation
/// forms are refused the same way).
template <class M>
void check_field_hint(const field_hint& h) {
  using V = typename optional_value<M>::type;
  using X = constrained_t<M>;
  constexpr bool array = is_vector<V>::value;
  constexpr bool whole = integer<X>;
  constexpr bool number = std::is_floating_point_v<X>;
  constexpr bool text = std::is_same_v<X, std::string>;
  const std::string who = "droid: field_hints gives " + quoted(h.name);
  if ((h.min_items || h.max_items) && !array)
    throw std::invalid_argument(who + " minItems or maxItems, which only std::vector members can have");
  if ((h.minimum || h.maximum) && !whole && !number)
    throw std::invalid_argument(who +
                                " minimum or maximum, which only integer and number members (or vectors of them) "
                                "can have");
  if ((h.exclusive_minimum || h.exclusive_maximum) && !number)
    throw std::invalid_argument(
        who + (whole ? " exclusiveMinimum or exclusiveMaximum, which integer members do not take: write minimum = "
                       "n + 1 or maximum = n - 1"
                     : " exclusiveMinimum or exclusiveMaximum, which only float and double members (or vectors of "
                       "them) can have"));
  if ((h.min_length || h.max_length) && !text)
    throw std::invalid_argument(who + " minLength or maxLength, which only string members (or vectors of them) can have");
  if (!h.pattern.empty() && !text)
    throw std::invalid_argument(who + " a pattern, which only string members (or vectors of them) can have");
  if (!h.enum_values.empty() && !text)
    throw std::invalid_argument(
        who + (described_enum<X> ? " enum_values, but a described enum's values are its enumerators"
                                 : " enum_values, which only string members (or vectors of them) can have"));
  for (const std::optional<double>& b : {h.minimum, h.maximum, h.exclusive_minimum, h.exclusive_maximum})
    check_bound<X>(b, who);
  if (h.minimum && h.exclusive_minimum)
    throw std::invalid_argument(who + " both minimum and exclusiveMinimum; keep one");
  if (h.maximum && h.exclusive_maximum)
    throw std::invalid_argument(who + " both maximum and exclusiveMaximum; keep one");
  const std::optional<double> lower = h.minimum ? h.minimum : h.exclusive_minimum;
  const std::optional<double> upper = h.maximum ? h.maximum : h.exclusive_maximum;
  if (lower && upper) {
    if (*lower > *upper) throw std::invalid_argument(who + " a minimum above its maximum");
    if (*lower == *upper && (h.exclusive_minimum || h.exclusive_maximum))
      throw std::invalid_argument(who + " an exclusive bound equal to the other bound, which no value keeps");
  }
  if (h.min_length && h.max_length && *h.min_length > *h.max_length)
    throw std::invalid_argument(who + " a minLength above its maxLength");
  if (h.min_items && h.max_items && *h.min_items > *h.max_items)
    throw std::invalid_argument(who + " a minItems above its maxItems");
  if (!h.pattern.empty()) {
    try {
      (void)cached_pattern(h.pattern);
    } catch (const std::invalid_argument& e) {
      std::string_view why = e.what();
      if (why.starts_with("droid: ")) why.remove_prefix(7);
      throw std::invalid_argument(who + " a pattern that cannot be used: " + std::string(why));
    }
  }
  if constexpr (text) {
    // An allowed value the other constraints refuse could never be sent.
    for (std::size_t i = 0; i < h.enum_values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (h.enum_values[j] == h.enum_values[i])
          throw std::invalid_argument(who + " the enum value " + quoted(h.enum_values[i]) + " twice");
      std::string error;
      field_hint rest = h;
      rest.enum_values = {};
      if (!keeps_value(std::string(h.enum_values[i]), rest, json_path(h.name), error))
        throw std::invalid_argument(who + " an enum value its other constraints refuse (" + error + ")");
    }
  }
}

/// Writes `h`'s constraints into the property schema `p` of a member of type `M`: the
/// item counts on the array, the rest on the value (or on `items`). Integer bounds are
/// written as integers, replacing the type's own bound on their side, so a model reads
/// `"minimum": 1` once and not beside `-2147483648`.
template <class M>
void write_constraints(boost::json::object& p, const field_hint& h) {
  using V = typename optional_value<M>::type;
  using X = constrained_t<M>;
  {
    boost::json::object* target = &p;
    if constexpr (is_vector<V>::value) target = &p["items"].as_object();
    boost::json::object& t = *target;
    if constexpr (integer<X>) {
      if (h.minimum) t["minimum"] = static_cast<std::int64_t>(*h.minimum);
      if (h.maximum) t["maximum"] = static_cast<std::int64_t>(*h.maximum);
    } else if constexpr (std::is_floating_point_v<X>) {
      if (h.minimum) t["minimum"] = *h.minimum;
      if (h.maximum) t["maximum"] = *h.maximum;
      if (h.exclusive_minimum) t["exclusiveMinimum"] = *h.exclusive_minimum;
      if (h.exclusive_maximum) t["exclusiveMaximum"] = *h.exclusive_maximum;
    } else if constexpr (std::is_same_v<X, std::string>) {
      if (h.min_length) t["minLength"] = static_cast<std::int64_t>(*h.min_length);
      if (h.max_length) t["maxLength"] = static_cast<std::int64_t>(*h.max_length);
      if (!h.pattern.empty()) t["pattern"] = h.pattern;
      if (!h.enum_values.empty()) {
        boost::json::array values;
        for (const std::string_view v : h.enum_values) values.emplace_back(v);
        t["enum"] = std::move(values);
      }
    }
  }
  // After `items` is no longer referred to: inserting into `p` may move its members.
  if (h.min_items) p["minItems"] = static_cast<std::int64_t>(*h.min_items);
  if (h.max_items) p["maxItems"] = static_cast<std::int64_t>(*h.max_items);
}

/// Throws `std::invalid_argument` when `field_hints<T>` names no member or one member
/// twice, gives a member a constraint it cannot carry, or a default its own constraints
/// refuse. Run by `schema_of` and at tool registration.
template <class T>
void check_struct_hints() {
  if constexpr (requires { field_hints<T>::fields; }) {
    // A hint naming no member is a typo that would silently drop a description or a
    // constraint; registration is the moment to say so.
    const auto& all = field_hints<T>::fields;
    for (std::size_t i = 0; i < std::size(all); ++i) {
      bool found = false;
      boost::mp11::mp_for_each<public_members<T>>([&](auto d) { found = found || all[i].name == d.name; });
      if (!found)
        throw std::invalid_argument("droid: field_hints names " + quoted(all[i].name) +
                                    ", which is not a described member");
      // Only the first of two hints would be read; the second is a mistake either way.
      for (std::size_t j = 0; j < i; ++j)
        if (all[j].name == all[i].name)
          throw std::invalid_argument("droid: field_hints names " + quoted(all[i].name) + " twice");
    }
    const T initial{};
    boost::mp11::mp_for_each<public_members<T>>([&](auto d) {
      using M = std::remove_cvref_t<decltype(initial.*d.pointer)>;
      constexpr std::size_t at = hint_index<T, decltype(d)>();
      if constexpr (at != no_hint) {
        const field_hint* h = &hint_of<T, decltype(d)>();
        check_field_hint<M>(*h);
        std::string error;
        if (h->defaulted && !keeps_field_hint(initial.*d.pointer, *h, json_path(std::string_view(d.name)), error))
          throw std::invalid_argument("droid: the default of " + quoted(d.name) + " breaks its own field_hints (" +
                                      error + ")");
      }
    });
  }
}

/// Throws `std::invalid_argument` for the argument type `T` of a tool (and every struct
/// reachable from it) when `check_struct_hints` would, or when a member that is not
/// hinted `defaulted` starts with a value other than its type's value-initialised one.
///
/// Why refuse that initialiser: `int days = 3;` reads as "optional, 3 when absent", but a
/// required member's initialiser is never used (its absence is an error), and an
/// optional's is used without the schema saying so. Either way the model and the author
/// disagree about the tool. Only arguments are checked: a result struct's initialisers
/// are ordinary values.
/// What is not caught: an initialiser equal to the value-initialised one (`int n = 0;`,
/// `std::string s = "";`), which C++ cannot tell from no initialiser (see
/// `field_hint::defaulted`).
template <class T>
void check_arguments() {
  if constexpr (is_optional<T>::value || is_vector<T>::value) {
    check_arguments<typename T::value_type>();
  } else if constexpr (is_string_map<T>::value) {
    check_arguments<typename T::mapped_type>();
  } else if constexpr (described_struct<T>) {
    check_struct_hints<T>();
    const T initial{};
    boost::mp11::mp_for_each<public_members<T>>([&](auto d) {
      using M = std::remove_cvref_t<decltype(initial.*d.pointer)>;
      constexpr std::size_t at = hint_index<T, decltype(d)>();
      bool defaulted = false;
      if constexpr (at != no_hint) defaulted = hint_of<T, decltype(d)>().defaulted;
      if (!defaulted) {
        const boost::json::value start = to_json_value(initial.*d.pointer);
        if (start != to_json_value(M{})) {
          const std::string value = ir::to_json_text(start);
          if constexpr (is_optional<M>::value)
            throw std::invalid_argument("droid: the member " + quoted(d.name) + " is a std::optional that starts as " +
                                        value + ", which the schema would not state: hint it .defaulted = true " +
                                        "to write \"default\": " + value + ", or remove the initialiser");
          else
            throw std::invalid_argument("droid: the member " + quoted(d.name) + " starts as " + value +
                                        " (its default member initialiser) but is required, so that value is never "
                                        "used: hint it .defaulted = true to make it optional with \"default\": " +
                                        value + ", or remove the initialiser");
        }
      }
      check_arguments<M>();
    });
  }
}

}  // namespace detail

// ---- schema ------------------------------------------------------------------------------

/// The JSON Schema (2020-12) of `T`; for a described struct, an object schema with
/// `properties` and `required`.
template <class T>
[[nodiscard]] boost::json::object schema_of() {
  using detail::described_enum;
  using detail::described_struct;
  boost::json::object s;
  if constexpr (std::is_same_v<T, bool>) {
    s["type"] = "boolean";
  } else if constexpr (detail::integer<T>) {
    s["type"] = "integer";
    // Bounds are stated for narrow types so a model does not offer 5e9 for an `int`.
    if constexpr (sizeof(T) < 8 || std::is_unsigned_v<T>) {
      s["minimum"] = static_cast<std::int64_t>(std::numeric_limits<T>::min());
      if constexpr (sizeof(T) < 8) s["maximum"] = static_cast<std::int64_t>(std::numeric_limits<T>::max());
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    s["type"] = "number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    s["type"] = "string";
  } else if constexpr (std::is_same_v<T, boost::json::value>) {
    // Any JSON value: the empty schema.
  } else if constexpr (described_enum<T>) {
    s["type"] = "string";
    boost::json::array names;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) { names.emplace_back(d.name); });
    s["enum"] = std::move(names);
  } else if constexpr (detail::is_optional<T>::value) {
    return schema_of<typename T::value_type>();
  } else if constexpr (detail::is_vector<T>::value) {
    s["type"] = "array";
    s["items"] = schema_of<typename T::value_type>();
  } else if constexpr (detail::is_string_map<T>::value) {
    s["type"] = "object";
    s["additionalProperties"] = schema_of<typename T::mapped_type>();
  } else if constexpr (described_struct<T>) {
    s["type"] = "object";
    boost::json::object props;
    boost::json::array required;
    detail::check_struct_hints<T>();
    const T defaults{};
    boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) {
      using M = std::remove_cvref_t<decltype(defaults.*d.pointer)>;
      boost::json::object p = schema_of<M>();
      const field_hint* hint = detail::find_hint<T>(d.name);
      if (hint) detail::write_constraints<M>(p, *hint);
      if (hint && !hint->description.empty()) p["description"] = hint->description;
      // Tested by data(), not empty(): an explicit "" must reach the registration check
      // and be refused there, while a hint that never mentions a header has a null view.
      if (hint && hint->mcp_header.data() != nullptr) p["x-mcp-header"] = hint->mcp_header;
      const bool defaulted = hint && hint->defaulted;
      // An empty optional has no default to state ("default": null would contradict the
      // member's own type).
      bool has_value = true;
      if constexpr (detail::is_optional<M>::value) has_value = (defaults.*d.pointer).has_value();
      if (defaulted && has_value) p["default"] = to_json_value(defaults.*d.pointer);
      if (!detail::is_optional<M>::value && !defaulted) required.emplace_back(d.name);
      props[d.name] = std::move(p);
    });
    s["properties"] = std::move(props);
    if (!required.empty()) s["required"] = std::move(required);
  } else {
    static_assert(sizeof(T) == 0,
                  "droid: no JSON Schema for this type; use bool, integers, floating point, std::string, described "
                  "enums and structs, std::optional, std::vector, std::map<std::string, T> or boost::json::value");
  }
  return s;
}

// ---- decoding ----------------------------------------------------------------------------

namespace detail {

template <class T>
bool decode_value(const ir::json_node& n, T& out, const json_path& path, std::string& error);

template <class T>
bool decode_value(const ir::json_node& n, T& out, const json_path& path, std::string& error) {
  using K = ir::json_node::type;
  if constexpr (std::is_same_v<T, bool>) {
    if (n.kind() != K::boolean) return fail(error, path, "a boolean", n);
    out = n.boolean();
    return true;
  } else if constexpr (integer<T>) {
    const K k = n.kind();
    if (k == K::integer) {
      const std::int64_t v = n.integer();
      if constexpr (std::is_signed_v<T>) {
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
          return error = path.quoted() + ": " + std::to_string(v) + " is out of range", false;
      } else {
        if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<T>::max())
          return error = path.quoted() + ": " + std::to_string(v) + " is out of range", false;
      }
      out = static_cast<T>(v);
      return true;
    }
    if (k == K::unsigned_integer) {
      const std::uint64_t v = n.unsigned_integer();
      if (std::is_signed_v<T> || v > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
        return error = path.quoted() + ": " + std::to_string(v) + " is out of range", false;
      out = static_cast<T>(v);
      return true;
    }
    // JSON Schema's "integer" admits 3.0: a number whose fraction is zero. The range is
    // [lowest, limit) with both ends powers of two, which doubles hold exactly: `max()` as
    // a double rounds up to 2^63 or 2^64 for the 64-bit types, and converting a double the
    // type cannot hold is undefined behaviour.
    if (k == K::floating) {
      constexpr double limit = 2.0 * static_cast<double>(T(1) << (std::numeric_limits<T>::digits - 1));
      constexpr double lowest = std::is_signed_v<T> ? -limit : 0.0;
      const double d = n.number();
      if (std::trunc(d) == d) {
        if (d < lowest || d >= limit)
          return error = path.quoted() + ": " + number_text(d) + " is out of range", false;
        out = static_cast<T>(d);
        return true;
      }
    }
    return fail(error, path, "an integer", n);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!n.is_number()) return fail(error, path, "a number", n);
    const double d = n.number();
    // A double beyond a float's range is undefined behaviour to convert, not infinity.
    if (std::abs(d) > static_cast<double>(std::numeric_limits<T>::max()))
      return error = path.quoted() + ": " + number_text(d) + " is out of range", false;
    out = static_cast<T>(d);
    return true;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (n.kind() != K::string) return fail(error, path, "a string", n);
    out.assign(n.string());
    return true;
  } else if constexpr (std::is_same_v<T, boost::json::value>) {
    // Anything goes: every JSON value has a form here.
    ir::assign_value(n, out);
    return true;
  } else if constexpr (described_enum<T>) {
    if (n.kind() != K::string) return fail(error, path, "a string", n);
    const std::string_view s = n.string();
    bool found = false;
    std::string allowed;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
      if (!allowed.empty()) allowed += ", ";
      allowed += d.name;
      if (!found && s == d.name) {
        out = d.value;
        found = true;
      }
    });
    if (!found) error = path.quoted() + ": \"" + std::string(s) + "\" is not one of " + allowed;
    return found;
  } else if constexpr (is_optional<T>::value) {
    // An explicit null for an optional member means "not given".
    if (n.kind() == K::null) {
      out.reset();
      return true;
    }
    typename T::value_type v{};
    if (!decode_value(n, v, path, error)) return false;
    out = std::move(v);
    return true;
  } else if constexpr (is_vector<T>::value) {
    if (n.kind() != K::array) return fail(error, path, "an array", n);
    out.clear();
    bool ok = true;
    std::size_t i = 0;
    n.for_each_element([&](const ir::json_node& e) {
      if (!ok) return;
      typename T::value_type v{};
      ok = decode_value(e, v, json_path(path, i++), error);
      if (ok) out.push_back(std::move(v));
    });
    return ok;
  } else if constexpr (is_string_map<T>::value) {
    if (n.kind() != K::object) return fail(error, path, "an object", n);
    out.clear();
    bool ok = true;
    n.for_each_member([&](std::string_view k, const ir::json_node& e) {
      if (!ok) return;
      typename T::mapped_type v{};
      ok = decode_value(e, v, json_path(path, k), error);
      if (ok) out[std::string(k)] = std::move(v);
    });
    return ok;
  } else if constexpr (described_struct<T>) {
    if (n.kind() != K::object) return fail(error, path, "an object", n);
    bool ok = true;
    boost::mp11::mp_for_each<public_members<T>>([&](auto d) {
      if (!ok) return;
      using M = std::remove_cvref_t<decltype(out.*d.pointer)>;
      const json_path member_path(path, d.name);
      ir::json_node m;
      if (!n.find(d.name, m)) {
        const field_hint* hint = find_hint<T>(d.name);
        if (!is_optional<M>::value && !(hint && hint->defaulted)) {
          error = member_path.quoted() + " is required";
          ok = false;
        }
        return;
      }
      ok = decode_value(m, out.*d.pointer, member_path, error);
      constexpr std::size_t at = hint_index<T, decltype(d)>();
      if constexpr (at != no_hint) {
        if constexpr (has_checks(hint_of<T, decltype(d)>())) {
          if (ok) ok = keeps_field_hint(out.*d.pointer, hint_of<T, decltype(d)>(), member_path, error);
        }
      }
    });
    return ok;
  } else {
    static_assert(sizeof(T) == 0, "droid: this type cannot be decoded from JSON (see schema.hpp for the list)");
  }
}

}  // namespace detail

/// Decodes `node` into `out` (which should start value-initialised, so that members the
/// JSON omits keep their defaults). On failure returns false and sets `error` to a
/// sentence naming the member and the problem.
template <class T>
[[nodiscard]] bool decode(const ir::json_node& node, T& out, std::string& error) {
  return detail::decode_value(node, out, detail::json_path(std::string_view()), error);
}

}  // namespace droid
