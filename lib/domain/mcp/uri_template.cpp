// SPDX-License-Identifier: BSL-1.0
/// @file
/// RFC 6570 levels 1 and 2: the parser, the expander and the matcher.
///
/// ## Why matching is a table and not a regex
/// The obvious way to match is to turn the template into a `std::regex` with lazy
/// groups. That has three problems. libstdc++'s regex recurses once per character, so
/// a long URI from a client can overflow the stack. Its lazy groups do not promise the
/// leftmost-shortest answer the header documents. And it cannot check that a repeated
/// variable has the same decoded value each time. Instead, `match` first fills a table:
/// can the template's parts from k onward match the URI from offset p onward? Each
/// expression then takes its shortest span whose end the table marks as completable.
/// Without repeated variables that choice can never fail later, so matching is one
/// pass. With them, a later occurrence can reject the choice, and the search
/// backtracks, still only into completable positions.
///
/// ## Why the search has a budget
/// Matching with repeated variables is a pattern with back-references, which is
/// NP-complete in general: `{a}{b}{c}{d}{a}{b}{c}{d}` against a long run of one letter
/// tries every way to cut the first half before it can fail, and 403 bytes took over 12 s.
/// No memo over (part, offset) is sound, because what can follow depends on the values
/// bound so far. So the search counts its work and gives up, with no match, past a
/// budget linear in parts × URI length. A template without repeated variables never comes
/// near it (its search does not backtrack), and the floor leaves room for the short
/// backtracking that realistic repeated templates need.
#include <droid/domain/mcp/uri_template.hpp>

#include <stdexcept>
#include <utility>

namespace droid {

namespace {

constexpr std::string_view hex_digits = "0123456789ABCDEF";

bool is_alpha(unsigned char c) noexcept { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) noexcept { return is_digit(c) || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

/// RFC 3986 `unreserved`: the only bytes simple expansion leaves alone.
bool is_unreserved(unsigned char c) noexcept {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/// RFC 3986 `reserved` (`gen-delims` and `sub-delims`): also kept by `{+var}` and `{#var}`.
bool is_reserved(unsigned char c) noexcept {
  return std::string_view(":/?#[]@!$&'()*+,;=").find(static_cast<char>(c)) != std::string_view::npos;
}

/// ASCII allowed in template literals by RFC 6570's `literals` rule: everything visible
/// except `"`, `'`, `%`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}` (`%` is handled as a
/// triplet and the braces as expressions before this is asked).
bool is_literal_ascii(unsigned char c) noexcept {
  return c > 0x20 && c < 0x7F && std::string_view("\"'%<>\\^`{|}").find(static_cast<char>(c)) == std::string_view::npos;
}

/// True when `s[i]` starts a `%XX` triplet.
bool is_triplet(std::string_view s, std::size_t i) noexcept {
  return i + 2 < s.size() && s[i] == '%' && is_hex(static_cast<unsigned char>(s[i + 1])) &&
         is_hex(static_cast<unsigned char>(s[i + 2]));
}

unsigned hex_value(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  if (is_digit(u)) return u - '0';
  return (u | 0x20U) - 'a' + 10;
}

char decode_triplet(std::string_view s, std::size_t i) noexcept {
  return static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
}

void append_encoded(std::string& out, unsigned char c) {
  out += '%';
  out += hex_digits[c >> 4];
  out += hex_digits[c & 0x0F];
}

/// RFC 6570 section 3.2.1's encoding of one value. Triplets already in a reserved value
/// are kept because the RFC lets `{+path}` carry a pre-encoded path. A `%` that starts
/// no triplet is data, and is written as `%25`.
void append_value(std::string& out, std::string_view value, bool reserved) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (is_unreserved(c) || (reserved && is_reserved(c))) {
      out += value[i];
    } else if (reserved && is_triplet(value, i)) {
      out.append(value.substr(i, 3));
      i += 2;
    } else {
      append_encoded(out, c);
    }
  }
}

/// The length of the one expansion "token" at `uri[p]` that `{var}` (or, when
/// `reserved`, `{+var}`) could have written: 1 for a kept character, 3 for a triplet,
/// 0 when no expansion writes what is there. Spans are measured in tokens, so a span
/// can never end in the middle of a triplet.
std::size_t token_length(std::string_view uri, std::size_t p, bool reserved) noexcept {
  if (p >= uri.size()) return 0;
  const auto c = static_cast<unsigned char>(uri[p]);
  if (is_unreserved(c) || (reserved && is_reserved(c))) return 1;
  return is_triplet(uri, p) ? 3 : 0;
}

/// A strict UTF-8 decode of the sequence at `s[i]` (no overlongs, no surrogates, nothing
/// above U+10FFFF). Returns the code point and its length, or a length of 0 when the
/// bytes are not UTF-8.
std::pair<char32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) noexcept {
  const auto lead = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
    cp = lead & 0x1FU;
    min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    cp = lead & 0x0FU;
    min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    cp = lead & 0x07U;
    min = 0x10000;
  } else {
    return {0, 0};
  }
  if (s.size() - i < len) return {0, 0};
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0U) != 0x80U) return {0, 0};
    cp = (cp << 6) | (c & 0x3FU);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, len};
}

/// RFC 6570's `ucschar` and `iprivate` together: the non-ASCII code points a template
/// may contain. Excluded are the C1 controls, the noncharacters U+FDD0-FDEF and U+xFFFE-
/// U+xFFFF, and U+E0000-E0FFF (tag characters).
bool is_template_code_point(char32_t cp) noexcept {
  if (cp < 0x10000) return (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFDCF) || (cp >= 0xFDF0 && cp <= 0xFFEF);
  if ((cp & 0xFFFEU) == 0xFFFEU) return false;
  return cp < 0xE0000 || cp > 0xE0FFF;
}

/// `s` in double quotes, with control bytes, `"` and `\` escaped. A malformed template
/// may contain a tab or a newline, and these are written into a log line.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += hex_digits[c >> 4];
      out += hex_digits[c & 0x0F];
    } else {
      out += ch;
    }
  }
  return out + '"';
}

[[noreturn]] void refuse(std::string_view text, const std::string& problem) {
  throw std::invalid_argument("URI template " + quoted(text) + ": " + problem + ".");
}

std::string at(std::size_t offset) { return " at offset " + std::to_string(offset); }

constexpr std::string_view supported = "only levels 1 and 2 are supported: {var}, {+var} and {#var}";
constexpr std::string_view name_rule =
    "names use letters, digits, \"_\" and %XX triplets, with single dots only between them";

/// Whether a byte string growing one byte at a time is still UTF-8, with the same strictness
/// as `decode_utf8` (Unicode's table 3-7: no overlongs, no surrogates, nothing above
/// U+10FFFF). Why incremental: the search tries every end of a span in turn, and checking
/// each candidate from its start would make a long span quadratic.
class utf8_prefix {
 public:
  /// Adds `byte`; false once no continuation can make the bytes so far UTF-8.
  bool add(unsigned char byte) noexcept {
    if (pending_ == 0) {
      low_ = 0x80;
      high_ = 0xBF;
      if (byte < 0x80) return true;
      if (byte >= 0xC2 && byte <= 0xDF) {
        pending_ = 1;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        pending_ = 2;
        if (byte == 0xE0) low_ = 0xA0;   // below is an overlong
        if (byte == 0xED) high_ = 0x9F;  // above is a surrogate
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        pending_ = 3;
        if (byte == 0xF0) low_ = 0x90;   // below is an overlong
        if (byte == 0xF4) high_ = 0x8F;  // above is past U+10FFFF
      } else {
        return false;
      }
      return true;
    }
    if (byte < low_ || byte > high_) return false;
    --pending_;
    low_ = 0x80;
    high_ = 0xBF;
    return true;
  }

  /// True when the bytes so far end on a character boundary.
  [[nodiscard]] bool complete() const noexcept { return pending_ == 0; }

 private:
  unsigned pending_ = 0;  // continuation bytes still owed by the current character
  unsigned char low_ = 0x80;
  unsigned char high_ = 0xBF;
};

/// What one occurrence of a variable says about its value during matching.
/// `empty_or_undefined` is a zero-length `{var}` or `{+var}`. Expansion writes nothing
/// for both, so it agrees with either until another occurrence settles the question.
enum class bound : unsigned char { unbound, empty_or_undefined, undefined, defined };

struct binding {
  bound state = bound::unbound;
  std::string value{};
};

/// Adds the evidence of one more occurrence to `b`. Returns false when the two
/// occurrences contradict each other (`{a}-{a}` against `1-2`).
bool merge(binding& b, bound incoming, const std::string& value) {
  switch (b.state) {
    case bound::unbound:
      b.state = incoming;
      b.value = value;
      return true;
    case bound::defined:
      if (incoming == bound::defined) return b.value == value;
      return incoming == bound::empty_or_undefined && b.value.empty();
    case bound::undefined:
      return incoming != bound::defined;
    case bound::empty_or_undefined:
      if (incoming == bound::defined && !value.empty()) return false;
      b.state = incoming;
      return true;
  }
  return false;
}

/// False once the decoded text of a growing span can no longer equal what `b` already
/// holds. This keeps a repeated variable's later occurrences from scanning further than
/// the value they must repeat. Asked after each byte added, and never again once false,
/// so only the newest byte needs comparing: a whole-prefix compare would make each walk
/// quadratic.
bool can_extend(const binding& b, const std::string& decoded) {
  switch (b.state) {
    case bound::unbound:
      return true;
    case bound::defined:
      return decoded.size() <= b.value.size() && b.value[decoded.size() - 1] == decoded.back();
    case bound::empty_or_undefined:
    case bound::undefined:
      return decoded.empty();
  }
  return false;
}

}  // namespace

uri_template::uri_template(std::string_view text) : text_(text) {
  std::string literal;
  const auto flush_literal = [&] {
    if (literal.empty()) return;
    parts_.push_back(part{part_kind::literal, std::move(literal), 0});
    literal.clear();
  };

  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '{') {
      flush_literal();
      const std::size_t open = i;
      const std::size_t close = text.find_first_of("{}", open + 1);
      if (close == std::string_view::npos || text[close] == '{')
        refuse(text, "the \"{\"" + at(open) + " opens an expression that is never closed with \"}\"");
      std::string_view body = text.substr(open + 1, close - open - 1);
      if (body.empty()) refuse(text, "the expression" + at(open) + " is empty; name a variable, as in {id}");

      part_kind kind = part_kind::simple;
      const char op = body.front();
      if (op == '+' || op == '#') {
        kind = op == '+' ? part_kind::reserved : part_kind::fragment;
        body.remove_prefix(1);
        if (body.empty())
          refuse(text, "the expression" + at(open) + " has the \"" + op + "\" operator but no variable; name one, as in {" +
                           op + "path}");
      } else if (std::string_view("./;?&").find(op) != std::string_view::npos) {
        refuse(text, "the \"" + std::string(1, op) + "\" operator" + at(open + 1) + " belongs to RFC 6570 level 3, and " +
                         std::string(supported));
      } else if (std::string_view("=,!@|").find(op) != std::string_view::npos) {
        refuse(text, "the \"" + std::string(1, op) + "\" operator" + at(open + 1) +
                         " is reserved by RFC 6570 for future extensions, and " + std::string(supported));
      }

      // RFC 6570 varname: varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded.
      const std::size_t name_offset = close - body.size();
      bool after_varchar = false;
      for (std::size_t j = 0; j < body.size();) {
        const auto v = static_cast<unsigned char>(body[j]);
        const std::size_t offset = name_offset + j;
        if (is_alpha(v) || is_digit(v) || v == '_') {
          after_varchar = true;
          ++j;
        } else if (v == '%' && is_triplet(body, j)) {
          after_varchar = true;
          j += 3;
        } else if (v == '.' && after_varchar && j + 1 < body.size() && body[j + 1] != '.') {
          // Only a dot with a name character on each side is allowed. The character after
          // it is checked on the next turn, so "a.-" is refused for the "-".
          after_varchar = false;
          ++j;
        } else if (v == ',') {
          refuse(text, "the expression" + at(open) + " lists several variables, which is RFC 6570 level 3, and " +
                           std::string(supported) + "; write one variable per expression");
        } else if (v == ':') {
          refuse(text, "the \":\" prefix modifier" + at(offset) + " belongs to RFC 6570 level 4, and " +
                           std::string(supported));
        } else if (v == '*') {
          refuse(text, "the \"*\" explode modifier" + at(offset) + " belongs to RFC 6570 level 4, and " +
                           std::string(supported));
        } else if (v == '.' || v == '%') {
          refuse(text, "the variable name " + quoted(body) + at(name_offset) + " is not valid: " + std::string(name_rule));
        } else {
          refuse(text, "the character " + quoted(body.substr(j, 1)) + at(offset) +
                           " cannot appear in a variable name: " + std::string(name_rule));
        }
      }
      std::string name(body);
      std::size_t index = 0;
      while (index < variables_.size() && variables_[index] != name) ++index;
      if (index == variables_.size()) variables_.push_back(name);
      parts_.push_back(part{kind, std::move(name), index});
      i = close + 1;
    } else if (c == '}') {
      refuse(text, "the \"}\"" + at(i) + " closes no expression; write %7D for a literal brace");
    } else if (c == '%') {
      if (!is_triplet(text, i))
        refuse(text, "the \"%\"" + at(i) + " does not start a %XX triplet; write %25 for a literal percent sign");
      literal.append(text.substr(i, 3));
      i += 3;
    } else if (c < 0x80) {
      if (!is_literal_ascii(c)) {
        std::string shown = quoted(text.substr(i, 1));
        std::string fix;
        append_encoded(fix, c);
        refuse(text, "the character " + shown + at(i) + " is not allowed outside an expression; percent-encode it as " + fix);
      }
      literal += static_cast<char>(c);
      ++i;
    } else {
      const auto [cp, len] = decode_utf8(text, i);
      if (len == 0) refuse(text, "the bytes" + at(i) + " are not valid UTF-8");
      if (!is_template_code_point(cp)) {
        std::string hex;
        for (int shift = cp > 0xFFFFF ? 20 : cp > 0xFFFF ? 16 : 12; shift >= 0; shift -= 4)
          hex += hex_digits[(cp >> shift) & 0x0F];
        refuse(text, "the code point U+" + hex + at(i) +
                         " is not allowed in a URI template (RFC 6570 accepts only ucschar and iprivate); percent-encode it");
      }
      // RFC 6570 section 3.1: literal characters outside the URI grammar are written as
      // their UTF-8 octets, percent-encoded. Storing them encoded makes `match` compare
      // against what `expand` writes.
      for (std::size_t k = 0; k < len; ++k) append_encoded(literal, static_cast<unsigned char>(text[i + k]));
      i += len;
    }
  }
  flush_literal();
}

std::string uri_template::expand(const value_map& values) const {
  std::string out;
  for (const part& p : parts_) {
    if (p.kind == part_kind::literal) {
      out += p.text;
      continue;
    }
    const auto it = values.find(p.text);
    if (it == values.end()) continue;
    if (p.kind == part_kind::fragment) out += '#';
    append_value(out, it->second, p.kind != part_kind::simple);
  }
  return out;
}

std::size_t uri_template::step_limit(std::size_t uri_size) const noexcept {
  return 16 * (parts_.size() + 1) * (uri_size + 1) + 65536;
}

std::optional<uri_template::value_map> uri_template::match(std::string_view uri) const {
  std::size_t steps = 0;
  return match(uri, steps);
}

std::optional<uri_template::value_map> uri_template::match(std::string_view uri, std::size_t& steps) const {
  const std::size_t n = parts_.size();
  const std::size_t width = uri.size() + 1;

  // completes[k][p]: parts k.. can match uri[p..]. reaches[k][p], for an expression k:
  // some token boundary of the span starting at p is in completes[k + 1]; this is the
  // reason a shortest-first walk from p stops at the first boundary it finds marked.
  // Both ignore repeated variables; the search below enforces those.
  std::vector<char> completes((n + 1) * width, 0);
  std::vector<char> reaches(n * width, 0);
  const auto cell = [width](std::vector<char>& table, std::size_t k, std::size_t p) -> char& {
    return table[k * width + p];
  };
  cell(completes, n, uri.size()) = 1;
  for (std::size_t k = n; k-- > 0;) {
    const part& pt = parts_[k];
    if (pt.kind == part_kind::literal) {
      const std::size_t len = pt.text.size();
      for (std::size_t p = 0; p + len <= uri.size(); ++p)
        cell(completes, k, p) = cell(completes, k + 1, p + len) && uri.compare(p, len, pt.text) == 0;
      continue;
    }
    const bool reserved = pt.kind != part_kind::simple;
    // Right to left, because a span from p reaches whatever the span from p + token does.
    for (std::size_t p = width; p-- > 0;) {
      const std::size_t len = token_length(uri, p, reserved);
      cell(reaches, k, p) = cell(completes, k + 1, p) || (len != 0 && cell(reaches, k, p + len));
    }
    for (std::size_t p = 0; p < width; ++p) {
      cell(completes, k, p) = pt.kind != part_kind::fragment
                                  ? cell(reaches, k, p)
                                  : cell(completes, k + 1, p) || (p < uri.size() && uri[p] == '#' && cell(reaches, k, p + 1));
    }
  }
  if (!cell(completes, 0, 0)) return std::nullopt;

  std::vector<binding> bindings(variables_.size());
  // Once the budget is spent every frame fails at its next charge, so the search unwinds
  // at once; work that would overdraw it is refused, not done.
  const std::size_t budget = steps + step_limit(uri.size());
  bool exhausted = false;
  const auto charge = [&](std::size_t units) {
    if (exhausted || units > budget - steps) {
      exhausted = true;
      return false;
    }
    steps += units;
    return true;
  };
  // Every call starts at a position the table marks as completable, and recursion depth
  // is the number of parts, which is fixed by the server's template, not by the client.
  const auto search = [&](const auto& self, std::size_t k, std::size_t p) -> bool {
    if (k == n) return true;
    const part& pt = parts_[k];
    if (pt.kind == part_kind::literal) return self(self, k + 1, p + pt.text.size());

    binding& b = bindings[pt.variable];
    const auto attempt = [&](bound evidence, const std::string& value, std::size_t end) {
      if (!charge(1) || !cell(completes, k + 1, end)) return false;
      // Binding copies the value, which is work the budget must see.
      const bound before = b.state;
      if (before == bound::unbound && !charge(value.size())) return false;
      if (merge(b, evidence, value) && self(self, k + 1, end)) return true;
      // `merge` changes the value of an unbound variable only, so this restores it all.
      b.state = before;
      if (before == bound::unbound) b.value.clear();
      return false;
    };

    std::size_t start = p;
    if (pt.kind == part_kind::fragment) {
      // No `#` at all is the shortest reading: the variable was undefined.
      if (attempt(bound::undefined, std::string(), p)) return true;
      if (p == uri.size() || uri[p] != '#') return false;
      start = p + 1;
    }
    const bool reserved = pt.kind != part_kind::simple;
    std::string decoded;
    utf8_prefix utf8;
    for (std::size_t q = start; cell(reaches, k, q);) {
      if (!charge(1)) return false;
      const bound evidence = q == p ? bound::empty_or_undefined : bound::defined;
      // A span that ends inside a character is skipped rather than refused: a longer one
      // may finish the character.
      if (utf8.complete() && attempt(evidence, decoded, q)) return true;
      const std::size_t len = token_length(uri, q, reserved);
      if (len == 0) return false;
      const char byte = len == 3 ? decode_triplet(uri, q) : uri[q];
      decoded += byte;
      q += len;
      if (!utf8.add(static_cast<unsigned char>(byte)) || !can_extend(b, decoded)) return false;
    }
    return false;
  };
  if (!search(search, 0, 0) || exhausted) return std::nullopt;

  value_map out;
  for (std::size_t v = 0; v < variables_.size(); ++v) {
    // `unbound` cannot happen: every variable comes from an expression, and the search
    // passed every expression.
    if (bindings[v].state == bound::undefined) continue;
    out.emplace(variables_[v], std::move(bindings[v].value));
  }
  return out;
}

}  // namespace droid
