// SPDX-License-Identifier: BSL-1.0
/// @file
/// A reader of the YAML subset skill frontmatter is written in (see frontmatter.hpp):
/// block structure by indentation, scalars resolved by YAML 1.2's core schema.
#include <droid/domain/mcp/frontmatter.hpp>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

namespace droid {
namespace {

/// One line of the frontmatter: its number in the file, its indentation, and the text
/// after the indentation (a trailing `\r` removed).
struct line {
  std::size_t number = 0;
  int indent = 0;
  std::string_view text;
  [[nodiscard]] bool blank() const noexcept { return text.find_first_not_of(' ') == std::string_view::npos; }
  /// Blank, or only a comment: skipped between nodes (never inside a block scalar).
  [[nodiscard]] bool empty() const noexcept { return blank() || text.front() == '#'; }
  [[nodiscard]] bool sequence_item() const noexcept { return text == "-" || text.starts_with("- "); }
};

[[noreturn]] void fail(std::size_t number, std::string_view why) {
  throw std::invalid_argument("droid: SKILL.md frontmatter, line " + std::to_string(number) + ": " + std::string(why));
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return trim_right(s);
}

/// `s` without a comment: `#` at the start or after a space begins one.
std::string_view without_comment(std::string_view s) {
  if (s.starts_with('#')) return {};
  const std::size_t at = s.find(" #");
  return trim_right(at == std::string_view::npos ? s : s.substr(0, at));
}

bool all_of(std::string_view s, bool (*ok)(char)) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!ok(c)) return false;
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// A plain scalar as YAML 1.2's core schema reads it.
boost::json::value resolve(std::string_view s, std::size_t number) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::string_view digits = s;
  if (digits.front() == '+' || digits.front() == '-') digits.remove_prefix(1);
  if (all_of(digits, is_digit)) {
    errno = 0;
    char* end = nullptr;
    const std::string text(s);
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0) return static_cast<std::int64_t>(v);
    return std::strtod(text.c_str(), nullptr);
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    const bool octal = s[1] == 'o';
    const std::string_view body = s.substr(2);
    const bool ok = octal ? all_of(body, [](char c) { return c >= '0' && c <= '7'; })
                          : all_of(body, [](char c) {
                              return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
                            });
    if (ok) {
      errno = 0;
      const unsigned long long v = std::strtoull(std::string(body).c_str(), nullptr, octal ? 8 : 16);
      if (errno == 0 && v <= static_cast<unsigned long long>(INT64_MAX)) return static_cast<std::int64_t>(v);
      fail(number, "the number " + std::string(s) + " is too large");
    }
  }
  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  {
    std::size_t i = 0;
    const auto digits_from = [&](std::size_t from) {
      std::size_t k = from;
      while (k < digits.size() && is_digit(digits[k])) ++k;
      return k;
    };
    bool mantissa = false;
    i = digits_from(0);
    mantissa = i > 0;
    if (i < digits.size() && digits[i] == '.') {
      const std::size_t after = digits_from(i + 1);
      mantissa = mantissa || after > i + 1;
      i = after;
    }
    if (mantissa && i < digits.size() && (digits[i] == 'e' || digits[i] == 'E')) {
      std::size_t k = i + 1;
      if (k < digits.size() && (digits[k] == '+' || digits[k] == '-')) ++k;
      const std::size_t end = digits_from(k);
      i = end > k ? end : digits.size() + 1;  // an exponent without digits: not a number
    }
    if (mantissa && i == digits.size()) return std::strtod(std::string(s).c_str(), nullptr);
  }
  const std::string_view bare = digits;
  if (bare == ".inf" || bare == ".Inf" || bare == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN")
    fail(number, "the number " + std::string(s) + " has no JSON form");
  return boost::json::string(s);
}

/// Reads the nodes of the frontmatter's lines, one block at a time.
class reader {
 public:
  explicit reader(std::vector<line> lines) : lines_(std::move(lines)) {}

  boost::json::object document() {
    skip_empty();
    if (at_end()) return {};
    const line& first = lines_[i_];
    if (first.indent != 0) fail(first.number, "the frontmatter's first key is indented");
    if (first.sequence_item()) fail(first.number, "the frontmatter is a sequence, not a mapping of keys");
    boost::json::object o = mapping(0);
    skip_empty();
    if (!at_end()) fail(lines_[i_].number, "unexpected indentation");
    return o;
  }

 private:
  [[nodiscard]] bool at_end() const noexcept { return i_ >= lines_.size(); }
  void skip_empty() {
    while (!at_end() && lines_[i_].empty()) ++i_;
  }

  boost::json::value block(int indent) {
    if (lines_[i_].sequence_item()) return sequence(indent);
    return mapping(indent);
  }

  boost::json::object mapping(int indent) {
    boost::json::object o;
    while (true) {
      skip_empty();
      if (at_end() || lines_[i_].indent < indent) break;
      const line l = lines_[i_];
      if (l.indent > indent) fail(l.number, "unexpected indentation");
      if (l.sequence_item()) fail(l.number, "a sequence item where a key was expected");
      std::string key;
      std::string_view rest;
      if (!split_key(l, key, rest)) fail(l.number, "expected `key: value`");
      ++i_;
      boost::json::value v = value_after(rest, indent, l.number, false);
      if (o.contains(key)) fail(l.number, "the key \"" + key + "\" appears twice");
      o.emplace(key, std::move(v));
    }
    return o;
  }

  boost::json::array sequence(int indent) {
    boost::json::array a;
    while (true) {
      skip_empty();
      if (at_end() || lines_[i_].indent < indent) break;
      line& l = lines_[i_];
      if (l.indent > indent) fail(l.number, "unexpected indentation");
      if (!l.sequence_item()) break;  // the next key of the mapping this sequence is a value of
      std::string_view rest = l.text.substr(1);
      const std::size_t pad = rest.find_first_not_of(' ');
      rest = pad == std::string_view::npos ? std::string_view() : rest.substr(pad);
      std::string key;
      std::string_view ignored;
      if (!rest.empty() && split_key(line{l.number, 0, rest}, key, ignored)) {
        // `- key: value`: a mapping whose keys sit where `key` starts.
        l.indent += static_cast<int>(1 + pad);
        l.text = rest;
        a.push_back(mapping(l.indent));
        continue;
      }
      ++i_;
      a.push_back(value_after(rest, indent, l.number, true));
    }
    return a;
  }

  /// Splits `key: rest` (or `key:` ending the line); false when `l` is not a key.
  static bool split_key(const line& l, std::string& key, std::string_view& rest) {
    std::string_view t = l.text;
    std::size_t colon = std::string_view::npos;
    if (t.front() == '"' || t.front() == '\'') {
      std::size_t end = 0;
      key = quoted(t, end, l.number);
      if (end >= t.size() || t[end] != ':') return false;
      colon = end;
    } else {
      for (std::size_t k = 0; k < t.size(); ++k) {
        if (t[k] == ':' && (k + 1 == t.size() || t[k + 1] == ' ')) {
          colon = k;
          break;
        }
        if (t[k] == '#' && k > 0 && t[k - 1] == ' ') return false;
      }
      if (colon == std::string_view::npos || colon == 0) return false;
      key = std::string(trim_right(t.substr(0, colon)));
    }
    rest = trim(t.substr(colon + 1));
    return true;
  }

  /// The value written after `key:` or `- ` (`rest`), or below it; `indent` is the key's.
  boost::json::value value_after(std::string_view rest, int indent, std::size_t number, bool in_sequence) {
    if (rest.empty() || rest.front() == '#') {
      skip_empty();
      if (at_end()) return nullptr;
      const line& next = lines_[i_];
      if (next.indent > indent) return block(next.indent);
      if (next.indent == indent && next.sequence_item() && !in_sequence) return sequence(indent);
      return nullptr;
    }
    switch (rest.front()) {
      case '&': fail(number, "anchors are not read");
      case '*': fail(number, "aliases are not read");
      case '!': fail(number, "tags are not read");
      case '{': fail(number, "flow mappings ({...}) are not read; write the mapping as indented lines");
      case '@':
      case '`':
      case '%': fail(number, "a plain value cannot start with " + std::string(1, rest.front()));
      case '[': return flow_sequence(rest, number);
      case '|':
      case '>': return block_scalar(rest, indent, number);
      case '"':
      case '\'': {
        std::size_t end = 0;
        std::string s = quoted(rest, end, number);
        if (!without_comment(trim(rest.substr(end))).empty()) fail(number, "text after a quoted value");
        return boost::json::string(s);
      }
      default: break;
    }
    // A plain scalar, perhaps continued on more-indented lines.
    std::string text(without_comment(rest));
    std::size_t blanks = 0;
    while (!at_end()) {
      const line& next = lines_[i_];
      if (next.blank()) {
        ++blanks;
        ++i_;
        continue;
      }
      if (next.indent <= indent || next.text.front() == '#') break;
      const std::string_view more = without_comment(next.text);
      if (more.find(": ") != std::string_view::npos || more.ends_with(':'))
        fail(next.number, "a `key: value` inside a plain value; quote the value or indent the mapping under a key");
      text += blanks ? std::string(blanks, '\n') : std::string(" ");
      text += more;
      blanks = 0;
      ++i_;
    }
    return resolve(text, number);
  }

  static boost::json::value flow_sequence(std::string_view rest, std::size_t number) {
    boost::json::array a;
    std::size_t k = 1;
    const auto skip_spaces = [&] {
      while (k < rest.size() && rest[k] == ' ') ++k;
    };
    skip_spaces();
    if (k < rest.size() && rest[k] == ']') {
      ++k;
    } else {
      while (true) {
        skip_spaces();
        if (k >= rest.size()) fail(number, "a flow sequence ([...]) must end on its line");
        const char c = rest[k];
        if (c == '[' || c == '{') fail(number, "nested flow collections are not read");
        if (c == '"' || c == '\'') {
          std::size_t end = 0;
          a.emplace_back(boost::json::string(quoted(rest.substr(k), end, number)));
          k += end;
        } else {
          const std::size_t end = rest.find_first_of(",]", k);
          if (end == std::string_view::npos) fail(number, "a flow sequence ([...]) must end on its line");
          a.push_back(resolve(trim(rest.substr(k, end - k)), number));
          k = end;
        }
        skip_spaces();
        if (k < rest.size() && rest[k] == ',') {
          ++k;
          continue;
        }
        if (k < rest.size() && rest[k] == ']') {
          ++k;
          break;
        }
        fail(number, "expected , or ] in a flow sequence");
      }
    }
    if (!without_comment(trim(rest.substr(k))).empty()) fail(number, "text after a flow sequence");
    return a;
  }

  /// A quoted scalar at the start of `t`; `end` is set past its closing quote.
  static std::string quoted(std::string_view t, std::size_t& end, std::size_t number) {
    const char q = t.front();
    std::string out;
    for (std::size_t k = 1; k < t.size(); ++k) {
      const char c = t[k];
      if (q == '\'' && c == '\'') {
        if (k + 1 < t.size() && t[k + 1] == '\'') {
          out += '\'';
          ++k;
          continue;
        }
        end = k + 1;
        return out;
      }
      if (q == '"' && c == '"') {
        end = k + 1;
        return out;
      }
      if (q == '"' && c == '\\') {
        if (++k >= t.size()) break;
        switch (t[k]) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case '0': out += '\0'; break;
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case ' ': out += ' '; break;
          case 'u': {
            if (k + 4 >= t.size()) fail(number, "a \\u escape needs four hex digits");
            const unsigned long cp = std::strtoul(std::string(t.substr(k + 1, 4)).c_str(), nullptr, 16);
            k += 4;
            // UTF-8 of a code point of the Basic Multilingual Plane (surrogates refused).
            if (cp >= 0xD800 && cp <= 0xDFFF) fail(number, "surrogate escapes are not read");
            if (cp < 0x80) {
              out += static_cast<char>(cp);
            } else if (cp < 0x800) {
              out += static_cast<char>(0xC0 | (cp >> 6));
              out += static_cast<char>(0x80 | (cp & 0x3F));
            } else {
              out += static_cast<char>(0xE0 | (cp >> 12));
              out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (cp & 0x3F));
            }
            break;
          }
          default: fail(number, std::string("the escape \\") + t[k] + " is not read");
        }
        continue;
      }
      out += c;
    }
    fail(number, "a quoted value must end on its line");
  }

  /// A literal (`|`) or folded (`>`) block scalar below a key of `indent`.
  boost::json::value block_scalar(std::string_view header, int indent, std::size_t number) {
    const bool folded = header.front() == '>';
    char chomp = 'c';  // clip
    std::string_view rest = header.substr(1);
    if (!rest.empty() && (rest.front() == '-' || rest.front() == '+')) {
      chomp = rest.front();
      rest.remove_prefix(1);
    }
    if (!rest.empty() && is_digit(rest.front())) fail(number, "explicit indentation indicators are not read");
    if (!without_comment(trim(rest)).empty()) fail(number, "text after a block scalar's indicator");
    // The content lines: blank ones, and those indented past the key.
    std::vector<std::string_view> content;
    int content_indent = -1;
    while (!at_end()) {
      const line& l = lines_[i_];
      if (l.blank()) {
        content.emplace_back();
        ++i_;
        continue;
      }
      if (l.indent <= indent || (content_indent >= 0 && l.indent < content_indent)) break;
      if (content_indent < 0) content_indent = l.indent;
      // What lies past the content indentation is content, spaces included.
      content.push_back(std::string_view(l.text.data() - (l.indent - content_indent), l.text.size() + (l.indent - content_indent)));
      ++i_;
    }
    std::size_t trailing = 0;
    while (!content.empty() && content.back().empty()) {
      content.pop_back();
      ++trailing;
    }
    std::string out;
    if (!content.empty()) {
      if (!folded) {
        for (std::size_t k = 0; k < content.size(); ++k) {
          if (k) out += '\n';
          out += content[k];
        }
      } else {
        // Line breaks between two lines of text fold into a space; blank lines stay line
        // breaks; lines indented further keep their breaks.
        std::size_t k = 0;
        while (k < content.size() && content[k].empty()) {
          out += '\n';
          ++k;
        }
        bool previous_more = false;
        bool first = true;
        std::size_t blanks = 0;
        for (; k < content.size(); ++k) {
          const std::string_view l = content[k];
          if (l.empty()) {
            ++blanks;
            continue;
          }
          const bool more = l.front() == ' ';
          if (!first) {
            if (previous_more || more) out.append(blanks + 1, '\n');
            else if (blanks) out.append(blanks, '\n');
            else out += ' ';
          }
          out += l;
          first = false;
          previous_more = more;
          blanks = 0;
        }
      }
      if (chomp != '-') out += '\n';
    }
    if (chomp == '+') out.append(trailing, '\n');
    return boost::json::string(out);
  }

  std::vector<line> lines_;
  std::size_t i_ = 0;
};

}  // namespace

boost::json::object parse_frontmatter(std::string_view markdown) {
  if (markdown.starts_with("\xEF\xBB\xBF")) markdown.remove_prefix(3);
  std::vector<line> lines;
  std::size_t number = 0;
  bool opened = false;
  bool closed = false;
  while (!markdown.empty()) {
    const std::size_t eol = markdown.find('\n');
    std::string_view text = markdown.substr(0, eol);
    markdown.remove_prefix(eol == std::string_view::npos ? markdown.size() : eol + 1);
    if (text.ends_with('\r')) text.remove_suffix(1);
    ++number;
    if (!opened) {
      if (trim_right(text) != "---") fail(number, "SKILL.md must begin with a line `---` opening its frontmatter");
      opened = true;
      continue;
    }
    if (trim_right(text) == "---") {
      closed = true;
      break;
    }
    line l{number, 0, text};
    while (l.indent < static_cast<int>(text.size()) && text[l.indent] == ' ') ++l.indent;
    if (l.indent < static_cast<int>(text.size()) && text[l.indent] == '\t' && !trim(text).empty())
      fail(number, "tabs cannot indent YAML");
    l.text = text.substr(l.indent);
    if (l.blank()) l.text = {};
    else l.text = trim_right(l.text);
    lines.push_back(l);
  }
  if (!opened) fail(1, "SKILL.md is empty; it must begin with YAML frontmatter between `---` lines");
  if (!closed) fail(number, "the frontmatter has no closing `---` line");
  return reader(std::move(lines)).document();
}

}  // namespace droid
