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
/// ## Descriptions and defaults
/// Specialise `droid::field_hints<T>` with a `static constexpr droid::field_hint fields[]`
/// naming members. `defaulted = true` makes a member optional in the schema, with the
/// value of that member in a value-initialised `T` as its `default`; a missing member
/// keeps that value when decoding. `mcp_header` mirrors the member into an HTTP header
/// (see `field_hint`).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
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

#include <droid/domain/ir/json_node.hpp>

namespace droid {

/// A description, a default marker and an HTTP header name for one member of a
/// described struct.
///
///     template <>
///     struct droid::field_hints<route_args> {
///       static constexpr droid::field_hint fields[] = {
///           {"region", "Where to route the call", false, "Region"},
///       };
///     };
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
  std::string_view description;  ///< the property's `description`
  /// The member has a useful default: not required, and `default` appears in the schema.
  bool defaulted = false;
  /// The header the member is mirrored into, without the `Mcp-Param-` prefix; see above.
  std::string_view mcp_header{};
};

/// Specialise with `static constexpr field_hint fields[] = {...};` to document members.
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
    const T defaults{};
    if constexpr (requires { field_hints<T>::fields; }) {
      // A hint naming no member is a typo that would silently drop a description or a
      // default; registration is the moment to say so.
      for (const field_hint& h : field_hints<T>::fields) {
        bool found = false;
        boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) { found = found || h.name == d.name; });
        if (!found)
          throw std::invalid_argument("droid: field_hints names \"" + std::string(h.name) +
                                      "\", which is not a described member");
      }
    }
    boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) {
      using M = std::remove_cvref_t<decltype(defaults.*d.pointer)>;
      boost::json::object p = schema_of<M>();
      const field_hint* hint = detail::find_hint<T>(d.name);
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
    switch (n.kind()) {
      case K::null: out = nullptr; return true;
      case K::boolean: out = n.boolean(); return true;
      case K::integer: out = n.integer(); return true;
      case K::unsigned_integer: out = n.unsigned_integer(); return true;
      case K::floating: out = n.number(); return true;
      case K::string: out.emplace_string().assign(n.string()); return true;
      case K::array: {
        boost::json::array a;
        a.reserve(n.size());
        bool ok = true;
        n.for_each_element([&](const ir::json_node& e) {
          if (!ok) return;
          boost::json::value v;
          ok = decode_value(e, v, path, error);
          a.push_back(std::move(v));
        });
        out = std::move(a);
        return ok;
      }
      case K::object: {
        // Decoded in place: a value built on the side and moved in costs a copy per
        // member (Boost.JSON moves between storages by copying), and this runs for every
        // 2026 request's clientInfo.
        boost::json::object& o = out.emplace_object();
        o.reserve(n.size());
        bool ok = true;
        n.for_each_member([&](std::string_view k, const ir::json_node& e) {
          if (ok) ok = decode_value(e, o[k], path, error);
        });
        return ok;
      }
    }
    return false;
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
