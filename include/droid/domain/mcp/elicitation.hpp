// SPDX-License-Identifier: BSL-1.0
/// @file
/// Form-mode elicitation: the `requestedSchema` of an `elicitation/create` request
/// generated from a flat described struct, and the accepted `content` decoded back into it.
///
/// Domain layer. As with tool arguments (schema.hpp), the form the user is shown and the
/// decoder of what they submit come from one description of one struct, so they cannot
/// drift apart.
///
///     enum class size { s, m, l };
///     BOOST_DESCRIBE_ENUM(size, s, m, l)
///     struct order { std::string email; int count = 1; size fit = size::m; std::optional<std::string> note; };
///     BOOST_DESCRIBE_STRUCT(order, (), (email, count, fit, note))
///     template <> struct droid::elicit_hints<order> {
///       static constexpr droid::elicit_field fields[] = {
///           {.name = "email", .title = "Email", .format = "email"},
///           {.name = "count", .defaulted = true, .minimum = 1, .maximum = 10},
///           {.name = "fit", .title = "Size", .defaulted = true}};
///     };
///     template <> struct droid::enum_titles<size> {
///       static constexpr std::pair<size, std::string_view> titles[] = {
///           {size::s, "Small"}, {size::m, "Medium"}, {size::l, "Large"}};
///     };
///     boost::json::object params{{"message", "Your order?"}};
///     params["requestedSchema"] = droid::elicitation_schema<order>();
///     auto answer = co_await ctx.exchange("elicitation/create", params);
///     // answer.value().at("action") == "accept": decode answer.value().at("content")
///     order o{};
///     if (!droid::decode_elicited(answer.value().at("content"), o, error)) ...
///
/// ## What a form may hold (MCP 2025-11-25 `PrimitiveSchemaDefinition`)
/// | member type                         | property                                          |
/// |-------------------------------------|---------------------------------------------------|
/// | `std::string`                       | `string`, with `minLength`/`maxLength`/`format`   |
/// | integers                            | `integer`, with `minimum`/`maximum`               |
/// | `float`, `double`                   | `number`, with `minimum`/`maximum`                |
/// | `bool`                              | `boolean`                                         |
/// | described enum                      | single select: `enum`, or `oneOf` when titled     |
/// | `std::vector` of a described enum   | multi select: `items.enum`, or `items.anyOf`      |
/// | `std::optional` of any of the above | the same, not required                            |
/// Anything else (nested structs, maps, vectors of strings, ...) is a compile error: the
/// spec allows only top-level primitive properties, and a client would refuse the form.
///
/// ## Required and defaults (SEP-1034)
/// A member is required unless it is a `std::optional` or hinted `defaulted`. A defaulted
/// member states `default`: its value in a value-initialised `T` (the same rule as
/// `field_hints`), so a client can prefill the form.
///
/// ## Why `elicit_hints` and not `field_hints`
/// The constraints are one vocabulary: `minimum`, `maximum`, `min_length`, `max_length`,
/// `min_items`, `max_items` have the same names, types, checks and error sentences in
/// both (schema.hpp holds the shared checks). What differs is what each may carry: a
/// form field has a `title` and a `format`, which mean nothing to a model reading an
/// `inputSchema`, and MCP's form schema has no `pattern`, exclusive bounds or string
/// enums, which a tool argument may have. One struct for both would let each accept
/// keywords the other's clients refuse.
///
/// ## Why integer bounds come only from hints
/// `schema_of` states the range of narrow integer types so a model does not offer 5e9 for
/// an `int`. A person filling a form is better served without "-2147483648 to 2147483647"
/// on an age field (some clients turn bounds into a slider); a value outside the type is
/// still refused when decoding, with a sentence naming the field.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/describe/enumerators.hpp>
#include <boost/describe/members.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/schema.hpp>

namespace droid {

/// What a form says about one member of a described struct: its label, help text,
/// format, default marker and bounds.
///
/// Why `std::optional` bounds and not sentinels: 0 is a real bound, and an optional reads
/// as "absent" in the designated initialisers users write, while staying a literal type
/// that `static constexpr` arrays accept. Designated initialisers must follow the order
/// of the members below.
struct elicit_field {
  std::string_view name;  ///< the member's name, as `BOOST_DESCRIBE_STRUCT` lists it
  /// The label a client shows (`title`).
  std::string_view title = {};
  std::string_view description = {};  ///< help text for the field (`description`)
  /// Strings only: one of `email`, `uri`, `date`, `date-time`.
  std::string_view format = {};
  /// Not required, and `default` is the member's value in a value-initialised `T`.
  bool defaulted = false;
  /// Integer and number members only. For integers: whole numbers the type can hold.
  std::optional<double> minimum = {};
  std::optional<double> maximum = {};  ///< see `minimum`
  /// String members only, in Unicode code points (as JSON Schema counts them).
  std::optional<std::size_t> min_length = {};
  std::optional<std::size_t> max_length = {};  ///< see `min_length`
  /// Multi-select members only: how many options must / may be chosen.
  std::optional<std::size_t> min_items = {};
  std::optional<std::size_t> max_items = {};  ///< see `min_items`
};

/// Specialise with `static constexpr elicit_field fields[] = {...};` to label members.
template <class T>
struct elicit_hints {};

/// Specialise for a described enum with
/// `static constexpr std::pair<E, std::string_view> titles[] = {{E::a, "A"}, ...};`
/// to show titles instead of enumerator names: `oneOf` (single select) and `items.anyOf`
/// (multi select) of `{const, title}` (SEP-1330). Every enumerator needs a title.
///
/// Add `static constexpr bool legacy_enum_names = true;` to write a single select the
/// pre-SEP-1330 way, `enum` plus `enumNames`, for clients that only know that (the spec
/// keeps it as `LegacyTitledEnumSchema`, deprecated). A multi select has no legacy form
/// and keeps `items.anyOf`.
template <class E>
struct enum_titles {};

namespace detail {

enum class form_kind : std::uint8_t { boolean, integer, number, string, single_select, multi_select, unsupported };

template <class M>
struct form_value {
  using type = M;
};
template <class M>
struct form_value<std::optional<M>> {
  using type = M;
};
/// The value a member holds once an optional is looked through.
template <class M>
using form_value_t = typename form_value<M>::type;

template <class V>
consteval form_kind form_kind_of() {
  if constexpr (std::is_same_v<V, bool>) return form_kind::boolean;
  else if constexpr (integer<V>) return form_kind::integer;
  else if constexpr (std::is_floating_point_v<V>) return form_kind::number;
  else if constexpr (std::is_same_v<V, std::string>) return form_kind::string;
  else if constexpr (described_enum<V>) return form_kind::single_select;
  else if constexpr (is_vector<V>::value) {
    if constexpr (described_enum<typename V::value_type>) return form_kind::multi_select;
    else return form_kind::unsupported;
  } else return form_kind::unsupported;
}

template <class T, class D>
using member_t = std::remove_cvref_t<decltype(std::declval<const T&>().*D::pointer)>;

template <class T>
const elicit_field* find_elicit_hint(std::string_view name) {
  if constexpr (requires { elicit_hints<T>::fields; }) {
    for (const elicit_field& h : elicit_hints<T>::fields)
      if (h.name == name) return &h;
  }
  return nullptr;
}

template <class E>
concept titled_enum = requires { enum_titles<E>::titles; };

template <class E>
constexpr bool uses_enum_names() {
  if constexpr (requires { enum_titles<E>::legacy_enum_names; }) return enum_titles<E>::legacy_enum_names;
  else return false;
}

/// True when `v` keeps the bounds, lengths and item counts `h` states; otherwise false,
/// with `error` a sentence naming `path`. Types and enum names are `decode_value`'s job.
template <class V>
bool keeps_hints(const V& v, const elicit_field& h, const json_path& path, std::string& error) {
  if constexpr (std::is_same_v<V, std::string>) {
    return keeps_length(v, h.min_length, h.max_length, path, error);
  } else if constexpr (integer<V> || std::is_floating_point_v<V>) {
    return keeps_range(v, h.minimum, h.maximum, path, error);
  } else if constexpr (is_vector<V>::value) {
    if (h.min_items && v.size() < *h.min_items)
      return error = path.quoted() + ": " + std::to_string(v.size()) + " selected, at least " +
                     std::to_string(*h.min_items) + " required",
             false;
    if (h.max_items && v.size() > *h.max_items)
      return error = path.quoted() + ": " + std::to_string(v.size()) + " selected, at most " +
                     std::to_string(*h.max_items) + " allowed",
             false;
  }
  return true;
}

/// Throws `std::invalid_argument` when `h` states something member `V` cannot carry: a
/// format on a number, bounds an `int` cannot hold, a minimum above the maximum.
///
/// Why throw and not drop the keyword: a dropped `format` or bound is a form that quietly
/// accepts what the author meant to refuse, found only when bad data arrives. The schema
/// is built when a tool is written or registered, which is the moment to say so.
template <class V>
void check_hint_fits(const elicit_field& h) {
  constexpr form_kind k = form_kind_of<V>();
  const std::string who = "droid: elicit_hints gives " + quoted(h.name);
  if (!h.format.empty()) {
    if (k != form_kind::string) throw std::invalid_argument(who + " a format, which only string members can have");
    if (h.format != "email" && h.format != "uri" && h.format != "date" && h.format != "date-time")
      throw std::invalid_argument(who + " the format " + quoted(h.format) +
                                  "; forms allow only email, uri, date and date-time");
  }
  if ((h.min_length || h.max_length) && k != form_kind::string)
    throw std::invalid_argument(who + " minLength or maxLength, which only string members can have");
  if ((h.minimum || h.maximum) && k != form_kind::integer && k != form_kind::number)
    throw std::invalid_argument(who + " minimum or maximum, which only integer and number members can have");
  if ((h.min_items || h.max_items) && k != form_kind::multi_select)
    throw std::invalid_argument(who +
                                " minItems or maxItems, which only multi-select members (std::vector of an enum) "
                                "can have");
  for (const std::optional<double>& b : {h.minimum, h.maximum}) check_bound<V>(b, who);
  if (h.minimum && h.maximum && *h.minimum > *h.maximum)
    throw std::invalid_argument(who + " a minimum above its maximum");
  if (h.min_length && h.max_length && *h.min_length > *h.max_length)
    throw std::invalid_argument(who + " a minLength above its maxLength");
  if (h.min_items && h.max_items && *h.min_items > *h.max_items)
    throw std::invalid_argument(who + " a minItems above its maxItems");
}

template <class T>
void check_hint_names() {
  if constexpr (requires { elicit_hints<T>::fields; }) {
    const auto& all = elicit_hints<T>::fields;
    for (std::size_t i = 0; i < std::size(all); ++i) {
      bool found = false;
      boost::mp11::mp_for_each<public_members<T>>([&](auto d) { found = found || all[i].name == d.name; });
      if (!found)
        throw std::invalid_argument("droid: elicit_hints names " + quoted(all[i].name) +
                                    ", which is not a described member");
      // Only the first of two hints would be read; the second is a mistake either way.
      for (std::size_t j = 0; j < i; ++j)
        if (all[j].name == all[i].name)
          throw std::invalid_argument("droid: elicit_hints names " + quoted(all[i].name) + " twice");
    }
  }
}

template <class E>
boost::json::array enum_names() {
  boost::json::array names;
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto d) { names.emplace_back(d.name); });
  return names;
}

/// The title of each enumerator of `E`, in described order.
///
/// Errors (`std::invalid_argument`): an enumerator with no title or two, or a title for a
/// value that is no described enumerator. Why not fall back to the name: an enumerator
/// added later would show its C++ name to users with nothing to flag it.
template <class E>
std::vector<std::string_view> enum_title_list(std::string_view member) {
  const std::string where = " (member " + quoted(member) + ")";
  // `.first`, not a structured binding: clang 14 cannot capture one in a lambda.
  for (const auto& entry : enum_titles<E>::titles) {
    bool known = false;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>(
        [&](auto d) { known = known || d.value == entry.first; });
    if (!known)
      throw std::invalid_argument("droid: enum_titles titles a value that is not a described enumerator" + where);
  }
  std::vector<std::string_view> out;
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto d) {
    std::size_t count = 0;
    for (const auto& entry : enum_titles<E>::titles) {
      if (entry.first != d.value) continue;
      if (count++ == 0) out.push_back(entry.second);
    }
    if (count == 0) throw std::invalid_argument("droid: enum_titles gives no title for " + quoted(d.name) + where);
    if (count > 1) throw std::invalid_argument("droid: enum_titles gives " + quoted(d.name) + " two titles" + where);
  });
  return out;
}

/// `[{"const": name, "title": title}, ...]`, the options of a titled select.
template <class E>
boost::json::array titled_options(std::string_view member) {
  const std::vector<std::string_view> titles = enum_title_list<E>(member);
  const boost::json::array names = enum_names<E>();
  boost::json::array options;
  for (std::size_t i = 0; i < names.size(); ++i) {
    boost::json::object o;
    o["const"] = names[i];
    o["title"] = titles[i];
    options.emplace_back(std::move(o));
  }
  return options;
}

/// Compiles only for a member type a form can hold; the compiler's note names `M`.
template <class M>
constexpr void require_flat() {
  static_assert(form_kind_of<form_value_t<M>>() != form_kind::unsupported,
                "droid: elicitation forms are flat: a member must be bool, an integer, float or double, "
                "std::string, a described enum, a std::vector of a described enum, or a std::optional of one of "
                "these (no nested structs, maps or other vectors)");
}

/// The property schema of member `member` of type `M`; `initial` is its value in a
/// value-initialised struct (the `default`, when hinted so).
template <class M>
boost::json::object form_property(const elicit_field* h, const M& initial, std::string_view member) {
  using V = form_value_t<M>;
  constexpr form_kind k = form_kind_of<V>();
  boost::json::object p;
  if constexpr (k == form_kind::unsupported) {
    require_flat<M>();
  } else {
    if (h) check_hint_fits<V>(*h);
    if constexpr (k == form_kind::boolean) p["type"] = "boolean";
    else if constexpr (k == form_kind::integer) p["type"] = "integer";
    else if constexpr (k == form_kind::number) p["type"] = "number";
    else if constexpr (k == form_kind::multi_select) p["type"] = "array";
    else p["type"] = "string";
    if (h && !h->title.empty()) p["title"] = h->title;
    if (h && !h->description.empty()) p["description"] = h->description;
    if constexpr (k == form_kind::string) {
      if (h && !h->format.empty()) p["format"] = h->format;
      if (h && h->min_length) p["minLength"] = static_cast<std::int64_t>(*h->min_length);
      if (h && h->max_length) p["maxLength"] = static_cast<std::int64_t>(*h->max_length);
    } else if constexpr (k == form_kind::integer || k == form_kind::number) {
      // An integer member's bounds are written as integers (checked whole above), so a
      // client's integer field is not handed 1.0 for 1.
      const auto bound = [](double b) -> boost::json::value {
        if constexpr (k == form_kind::integer) return static_cast<std::int64_t>(b);
        else return b;
      };
      if (h && h->minimum) p["minimum"] = bound(*h->minimum);
      if (h && h->maximum) p["maximum"] = bound(*h->maximum);
    } else if constexpr (k == form_kind::single_select) {
      if constexpr (!titled_enum<V>) {
        p["enum"] = enum_names<V>();
      } else if constexpr (uses_enum_names<V>()) {
        p["enum"] = enum_names<V>();
        boost::json::array shown;
        for (std::string_view t : enum_title_list<V>(member)) shown.emplace_back(t);
        p["enumNames"] = std::move(shown);
      } else {
        p["oneOf"] = titled_options<V>(member);
      }
    } else if constexpr (k == form_kind::multi_select) {
      using E = typename V::value_type;
      if (h && h->min_items) p["minItems"] = static_cast<std::int64_t>(*h->min_items);
      if (h && h->max_items) p["maxItems"] = static_cast<std::int64_t>(*h->max_items);
      boost::json::object items;
      if constexpr (titled_enum<E>) {
        items["anyOf"] = titled_options<E>(member);
      } else {
        items["type"] = "string";
        items["enum"] = enum_names<E>();
      }
      p["items"] = std::move(items);
    }
    // An empty optional has no default to state: `null` is not a value of the field.
    if (h && h->defaulted) {
      const V* value = nullptr;
      if constexpr (is_optional<M>::value) value = initial ? &*initial : nullptr;
      else value = &initial;
      if (value) {
        // A prefilled value the form itself refuses would make "accept unchanged" fail.
        std::string error;
        if (!keeps_hints(*value, *h, std::string(member), error))
          throw std::invalid_argument("droid: the default of " + quoted(member) + " breaks its own elicit_hints (" +
                                      error + ")");
        p["default"] = to_json_value(*value);
      }
    }
  }
  return p;
}

}  // namespace detail

/// The `requestedSchema` of a form-mode `elicitation/create` for `T`:
/// `{"type":"object","properties":{...},"required":[...]}`, `required` left out when
/// every member is optional or defaulted (as `schema_of` does).
///
/// Errors (`std::invalid_argument`, a sentence starting "droid:"): a hint naming no
/// member or naming one twice; a format outside email, uri, date, date-time; a keyword on
/// a member that cannot carry it; bounds out of order or out of the member's type; a
/// default that breaks its own bounds; a titled enum missing a title.
/// A member of a type a form cannot hold is a compile error (see the file comment).
template <class T>
[[nodiscard]] boost::json::object elicitation_schema() {
  boost::json::object s;
  if constexpr (!detail::described_struct<T>) {
    static_assert(sizeof(T) == 0,
                  "droid: elicitation_schema needs a struct described with BOOST_DESCRIBE_STRUCT; elicitation "
                  "forms are flat structs of primitive members");
  } else {
    detail::check_hint_names<T>();
    const T initial{};
    boost::json::object props;
    boost::json::array required;
    boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) {
      using M = detail::member_t<T, decltype(d)>;
      const elicit_field* h = detail::find_elicit_hint<T>(d.name);
      props[d.name] = detail::form_property<M>(h, initial.*d.pointer, d.name);
      if (!detail::is_optional<M>::value && !(h && h->defaulted)) required.emplace_back(d.name);
    });
    s["type"] = "object";
    s["properties"] = std::move(props);
    if (!required.empty()) s["required"] = std::move(required);
  }
  return s;
}

/// Decodes the `content` of an accepted `elicitation/create` into `out` (which should
/// start value-initialised, so that members the client omits keep their defaults), and
/// checks the bounds, lengths and item counts `elicit_hints<T>` states. On failure
/// returns false and sets `error` to a sentence naming the member ("`age`: 200 is above
/// the maximum 150").
///
/// ## Why not `droid::decode` alone
/// `droid::decode` reads every value a form can hold: bool, range-checked integers,
/// numbers (an integer JSON value included), strings, described enums by name, vectors of
/// them (element errors name `tags[1]`), and optionals (`null` as absent); this function
/// calls its `decode_value` for each member (elicitation_test.cpp checks both). But it
/// decides what is required from `field_hints<T>`, not `elicit_hints<T>`: a member hinted
/// `defaulted` here that the user cleared would be "`x` is required". And nothing checks
/// the hints' bounds, which a client is not obliged to enforce.
///
/// `format` is not checked: a partial email or URI grammar refuses valid input, and the
/// full ones are the client's job; check what the tool relies on itself.
template <class T>
[[nodiscard]] bool decode_elicited(const ir::json_node& content, T& out, std::string& error) {
  if constexpr (!detail::described_struct<T>) {
    static_assert(sizeof(T) == 0, "droid: decode_elicited needs a struct described with BOOST_DESCRIBE_STRUCT");
    return false;
  } else {
    if (content.kind() != ir::json_node::type::object) {
      error = "`content`: expected an object, got " + std::string(content.kind_name());
      return false;
    }
    bool ok = true;
    boost::mp11::mp_for_each<detail::public_members<T>>([&](auto d) {
      if (!ok) return;
      using M = detail::member_t<T, decltype(d)>;
      detail::require_flat<M>();
      const elicit_field* h = detail::find_elicit_hint<T>(d.name);
      const std::string path(d.name);
      ir::json_node m;
      if (!content.find(d.name, m)) {
        if (!detail::is_optional<M>::value && !(h && h->defaulted)) {
          error = "`" + path + "` is required";
          ok = false;
        }
        return;
      }
      auto& member = out.*d.pointer;
      ok = detail::decode_value(m, member, path, error);
      if (!ok || !h) return;
      if constexpr (detail::is_optional<M>::value) {
        if (member) ok = detail::keeps_hints(*member, *h, path, error);
      } else {
        ok = detail::keeps_hints(member, *h, path, error);
      }
    });
    return ok;
  }
}

/// The same for `content` as a JSON value, the shape `tool_context::exchange` answers in.
///
/// Why through text: the decoders read `ir::json_node`, a view of a simdjson tape, and an
/// exchange answer has already been turned into a `boost::json::value`. A form is a few
/// hundred bytes, so writing and re-reading it costs less than a second decoder would.
template <class T>
[[nodiscard]] bool decode_elicited(const boost::json::value& content, T& out, std::string& error) {
  bool ok = false;
  const std::error_code ec = ir::visit_json(ir::to_json_text(content), [&](const ir::json_node& n) {
    ok = decode_elicited(n, out, error);
  });
  if (ec) {
    // Only text deeper than ir::max_depth gets here; a form's content is two levels deep.
    error = "`content` could not be read";
    return false;
  }
  return ok;
}

}  // namespace droid
