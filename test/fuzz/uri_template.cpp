// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: RFC 6570 URI templates, levels 1 and 2 (`droid::uri_template`,
/// include/droid/domain/mcp/uri_template.hpp): parsing, expansion and matching.
///
/// Input: the template on the first line, a URI on the second, then `name=value` lines
/// (values may hold any byte but a newline).
///
/// Oracles, each a promise of the header:
/// - A template either parses or throws `std::invalid_argument` with a message; nothing
///   else escapes the constructor, and `text()` is what it was given.
/// - Matching is bounded: the steps a match spends never pass `step_limit(uri.size())`,
///   so one `resources/read` cannot stall a shard.
/// - Every matched value is valid UTF-8, and only the template's variables are bound.
/// - `expand(match(u))` gives back `u`, up to the spelling of percent-encoded triplets
///   (unless a value holds a `%`, the documented exception).
/// - `match(expand(v))` succeeds for valid UTF-8 values without a `%` when no variable
///   repeats (the repeated case may give up at the step limit), and expanding its answer
///   gives the same URI again.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <droid/domain/mcp/uri_template.hpp>

#include "fuzz_support.hpp"

namespace {

using droid::uri_template;

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/// Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

/// `uri` with every triplet that stands for an unreserved or reserved character decoded
/// and the others' hex digits upper-cased: one spelling per URI, as far as `match` is
/// promised not to care.
std::string canonical(std::string_view uri) {
  static constexpr std::string_view plain =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=";
  std::string out;
  for (std::size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() && is_hex(uri[i + 1]) && is_hex(uri[i + 2])) {
      const char c = static_cast<char>(hex(uri[i + 1]) * 16 + hex(uri[i + 2]));
      if (plain.find(c) != std::string_view::npos) {
        out += c;
      } else {
        out += '%';
        out += static_cast<char>(std::toupper(static_cast<unsigned char>(uri[i + 1])));
        out += static_cast<char>(std::toupper(static_cast<unsigned char>(uri[i + 2])));
      }
      i += 2;
    } else {
      out += uri[i];
    }
  }
  return out;
}

std::string_view next_line(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return line;
}

bool has_percent(const uri_template::value_map& values) {
  for (const auto& [name, value] : values)
    if (value.find('%') != std::string::npos) return true;
  return false;
}

void check_match(const uri_template& t, std::string_view uri) {
  std::size_t steps = 0;
  const std::optional<uri_template::value_map> m = t.match(uri, steps);
  DROID_FUZZ_CHECK(steps <= t.step_limit(uri.size()), "matching passed its step limit");
  if (!m) return;
  const std::set<std::string, std::less<>> names(t.variables().begin(), t.variables().end());
  for (const auto& [name, value] : *m) {
    DROID_FUZZ_CHECK(names.count(name) == 1, "a match bound a name that is not a variable");
    DROID_FUZZ_CHECK(valid_utf8(value), "a matched value is not UTF-8");
  }
  if (!has_percent(*m))
    DROID_FUZZ_CHECK(canonical(t.expand(*m)) == canonical(uri), "expanding a match does not give the URI back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest = droid::fuzz::as_text(data, size);
  const std::string_view text = next_line(rest);
  const std::string_view uri = next_line(rest);

  std::optional<uri_template> t;
  try {
    t.emplace(text);
  } catch (const std::invalid_argument& e) {
    DROID_FUZZ_CHECK(e.what()[0] != '\0', "a template refused without a message");
    return 0;
  }
  DROID_FUZZ_CHECK(t->text() == text, "text() is not what the template was built from");

  check_match(*t, uri);

  uri_template::value_map values;
  bool utf8 = true;
  while (!rest.empty()) {
    const std::string_view line = next_line(rest);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string value(line.substr(eq + 1));
    utf8 = utf8 && valid_utf8(value);
    values[std::string(line.substr(0, eq))] = std::move(value);
  }
  const std::string expanded = t->expand(values);
  check_match(*t, expanded);

  // Whether a variable repeats, which is the one case the search may give up on.
  std::size_t expressions = 0;
  for (const char c : text) expressions += (c == '{');
  const bool repeats = expressions != t->variables().size();
  // A value with a `%` is the documented exception: `{+var}` keeps its triplets, which
  // then read back decoded (and may not decode to UTF-8 at all).
  if (utf8 && !repeats && !has_percent(values)) {
    const auto back = t->match(expanded);
    DROID_FUZZ_CHECK(back.has_value(), "an expansion does not match its own template");
    DROID_FUZZ_CHECK(canonical(t->expand(*back)) == canonical(expanded), "a round trip changed the URI");
  }
  return 0;
}
