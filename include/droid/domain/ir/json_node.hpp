// SPDX-License-Identifier: BSL-1.0
/// @file
/// `ir::json_node`: a read-only view of one value of a parsed JSON document.
///
/// Domain layer. Typed decoders (tool arguments, MCP parameters) are templates in public
/// headers, but simdjson may only be included by lib/domain/ir/*.cpp (its header costs
/// 4 s per translation unit). This is the narrow waist between the two: an opaque handle
/// whose operations are compiled once, next to the parser.
///
/// Lifetime: a node is valid only inside the `visit_json` callback that produced it; the
/// tape behind it belongs to a per-thread parser that the next `visit_json` reuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace droid::ir {

class json_node;


/// A value on a parsed tape.
///
/// Why opaque bytes and not a simdjson type: the header must not include simdjson; the
/// bytes are a `simdjson::dom::element` (checked by a static_assert in decode.cpp).
class json_node {
 public:
  /// The JSON type of a value; `unsigned_integer` is an integer above `INT64_MAX`.
  enum class type : std::uint8_t { null, boolean, integer, unsigned_integer, floating, string, array, object };

  /// The value's type.
  [[nodiscard]] type kind() const noexcept;
  /// True for integers, unsigned integers and floating point.
  [[nodiscard]] bool is_number() const noexcept {
    const type k = kind();
    return k == type::integer || k == type::unsigned_integer || k == type::floating;
  }
  /// Precondition: `kind()` is the matching type (checked by the typed decoders).
  [[nodiscard]] bool boolean() const noexcept;
  /// Precondition: `kind()` is `type::integer`.
  [[nodiscard]] std::int64_t integer() const noexcept;
  /// Precondition: `kind()` is `type::unsigned_integer`.
  [[nodiscard]] std::uint64_t unsigned_integer() const noexcept;
  /// Any number, as a double.
  [[nodiscard]] double number() const noexcept;
  /// The unescaped string; valid as long as the node.
  [[nodiscard]] std::string_view string() const noexcept;
  /// Number of elements (array) or members (object); 0 for scalars.
  [[nodiscard]] std::size_t size() const noexcept;
  /// The member named `key`, if this is an object that has one (first match).
  [[nodiscard]] bool find(std::string_view key, json_node& out) const noexcept;
  /// The JSON type name, for error messages ("a string", "an object").
  [[nodiscard]] std::string_view kind_name() const noexcept;

  /// Calls `f(json_node)` for each element of an array.
  template <class F>
  void for_each_element(F&& f) const {
    each_element(
        [](void* c, const json_node& n) { (*static_cast<std::remove_reference_t<F>*>(c))(n); },
        static_cast<void*>(&f));
  }
  /// Calls `f(std::string_view key, json_node value)` for each member of an object.
  template <class F>
  void for_each_member(F&& f) const {
    each_member([](void* c, std::string_view k,
                   const json_node& n) { (*static_cast<std::remove_reference_t<F>*>(c))(k, n); },
                static_cast<void*>(&f));
  }

 private:
  friend struct json_node_access;  // lib/domain/ir/decode.cpp
  void each_element(void (*fn)(void*, const json_node&), void* ctx) const;
  void each_member(void (*fn)(void*, std::string_view, const json_node&), void* ctx) const;

  alignas(8) unsigned char bytes_[16] = {};
};

/// Parses `text` (already validated or not) on this thread's parser and calls
/// `visit(ctx, root)`. Returns an `ir::errc::invalid_params` error when the text does
/// not parse (a lone surrogate escape in a string lands here: docs/reliability.md,
/// 2.25), and fills `detail` with the parser's reason.
///
/// Why a callback and not a returned node: the node borrows the parser, and a callback
/// makes "do not keep it" structural instead of a comment.
[[nodiscard]] std::error_code visit_json(std::string_view text, void (*visit)(void*, const json_node&),
                                         void* ctx, std::string_view* detail = nullptr);

/// The same with any callable `f(const json_node&)`.
template <class F>
[[nodiscard]] std::error_code visit_json(std::string_view text, F&& f, std::string_view* detail = nullptr) {
  return visit_json(
      text, [](void* c, const json_node& n) { (*static_cast<std::remove_reference_t<F>*>(c))(n); },
      static_cast<void*>(&f), detail);
}

struct raw_json;
class message;

/// Calls `visit` with the tree of `m`'s params; an error (with `detail`) when they are
/// absent or do not parse (a lone surrogate escape, docs/reliability.md, 2.25).
///
/// Why not `visit_json(m.params().text, ...)`: the decoder parsed the message into a
/// tree already, and on the thread that decoded it, until that thread decodes another,
/// the tree is still there: the params are then read without parsing them again.
[[nodiscard]] std::error_code visit_params(const message& m, void (*visit)(void*, const json_node&), void* ctx,
                                           std::string_view* detail = nullptr);

/// The same with any callable `f(const json_node&)`.
template <class F>
[[nodiscard]] std::error_code visit_params(const message& m, F&& f, std::string_view* detail = nullptr) {
  return visit_params(
      m, [](void* c, const json_node& n) { (*static_cast<std::remove_reference_t<F>*>(c))(n); },
      static_cast<void*>(&f), detail);
}

/// The string member `key` of a JSON object, or nothing when `params` is not an object
/// or has no such string. For the many handlers whose parameters are one string.
[[nodiscard]] std::optional<std::string> string_member(const raw_json& params, std::string_view key);

}  // namespace droid::ir
