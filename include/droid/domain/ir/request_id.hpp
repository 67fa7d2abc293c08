// SPDX-License-Identifier: BSL-1.0
/// @file
/// `ir::request_id`: a JSON-RPC id kept exactly as the peer sent it.
///
/// Domain layer. MCP allows an id to be an integer or a string and JSON-RPC says `7` and
/// `"7"` are different ids, so the id is a tagged value, never a normalised string.
/// Normalising would let a peer's `"7"` answer our `7`, or make two in-flight requests
/// look like one to the duplicate check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace droid::ir {

/// An integer or string request id, compared and hashed by kind and value.
///
/// Why: the engine's in-flight table and the exchange table are keyed by it; an id that
/// changed shape on the way through (a rounded double, a re-escaped string that compares
/// differently) would route an answer to the wrong waiter.
/// Invariants: integers are the full int64 range; strings are unescaped UTF-8.
///
/// Why two members and not `std::variant<std::int64_t, std::string>`: g++ 12 at -O3
/// reports a false "may be used uninitialized" for copies of that variant, and the
/// build treats warnings as errors.
class request_id {
 public:
  request_id() noexcept = default;
  /// An integer id.
  request_id(std::int64_t n) noexcept : integer_(n) {}  // NOLINT: ids are written as literals in tests
  /// A string id.
  explicit request_id(std::string s) noexcept : string_(std::move(s)), is_string_(true) {}

  /// True for an integer id.
  [[nodiscard]] bool is_integer() const noexcept { return !is_string_; }
  /// True for a string id.
  [[nodiscard]] bool is_string() const noexcept { return is_string_; }
  /// The integer. Precondition: `is_integer()`.
  [[nodiscard]] std::int64_t integer() const noexcept { return integer_; }
  /// The string. Precondition: `is_string()`.
  [[nodiscard]] const std::string& string() const noexcept { return string_; }

  /// Appends the id as a JSON value (a number, or a string with JSON escapes).
  void append_json(std::string& out) const;
  /// The id as JSON text, for logs and tests.
  [[nodiscard]] std::string to_json() const {
    std::string s;
    append_json(s);
    return s;
  }

  /// Equal when of the same kind and value: `7` and `"7"` differ.
  friend bool operator==(const request_id& a, const request_id& b) noexcept {
    return a.is_string_ == b.is_string_ && (a.is_string_ ? a.string_ == b.string_ : a.integer_ == b.integer_);
  }

 private:
  std::int64_t integer_ = 0;
  std::string string_;
  bool is_string_ = false;
};

/// Appends `s` to `out` as a JSON string literal (quotes included), escaping what JSON
/// requires. Shared by every encoder so that no two of them disagree on an escape.
void append_json_string(std::string& out, std::string_view s);

}  // namespace droid::ir

template <>
struct std::hash<droid::ir::request_id> {
  std::size_t operator()(const droid::ir::request_id& id) const noexcept {
    // Kinds hash apart so that 7 and "7" land in different buckets as well as compare
    // unequal.
    return id.is_integer() ? std::hash<std::int64_t>{}(id.integer())
                           : std::hash<std::string>{}(id.string()) ^ 0x9e3779b97f4a7c15ULL;
  }
};
