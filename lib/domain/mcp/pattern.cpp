// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JSON Schema `pattern` matcher: a recursive-descent parser of the ECMA-262 subset,
/// a compiler to a small instruction list, and a Pike VM that runs every thread of the
/// NFA in lock step over the input's code points.
///
/// Why lock step: a thread is a position in the program, and two threads at the same
/// position behave alike from then on, so each input character keeps at most one thread
/// per instruction. That is what bounds the work to (characters x instructions), where a
/// backtracking matcher retries every way of splitting the input.
#include <droid/domain/mcp/pattern.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace droid {

namespace {

/// Counted repetitions and program size are bounded so that a pattern's cost per input
/// character is known when it is registered (docs/tools.md#constraints-and-defaults).
constexpr int max_count = 1000;
constexpr std::size_t max_program = 2000;
constexpr char32_t max_code_point = 0x10FFFF;
constexpr char32_t replacement = 0xFFFD;

struct code_range {
  char32_t lo;
  char32_t hi;
};

/// A set of code points: the ranges, or everything outside them.
struct char_set {
  std::vector<code_range> ranges;
  bool negated = false;

  [[nodiscard]] bool contains(char32_t c) const noexcept {
    bool in = false;
    for (const code_range& r : ranges) {
      if (c >= r.lo && c <= r.hi) {
        in = true;
        break;
      }
    }
    return in != negated;
  }
};

enum class op : std::uint8_t { set, split, jump, line_start, line_end, word_boundary, not_word_boundary, match };

struct instruction {
  op code;
  std::size_t x = 0;  ///< set: index into the sets; split and jump: a target
  std::size_t y = 0;  ///< split: the second target
};

/// One UTF-8 sequence at `s[i]`: its code point and length. Ill-formed input (a stray
/// continuation byte, a truncated or overlong sequence, a surrogate) reads as U+FFFD of
/// length 1, so a matcher fed bytes that are not UTF-8 still ends.
std::pair<char32_t, std::size_t> next_code_point(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c0 = b(i);
  if (c0 < 0x80) return {c0, 1};
  std::size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((c0 & 0xE0) == 0xC0) len = 2, cp = c0 & 0x1F, min = 0x80;
  else if ((c0 & 0xF0) == 0xE0) len = 3, cp = c0 & 0x0F, min = 0x800;
  else if ((c0 & 0xF8) == 0xF0) len = 4, cp = c0 & 0x07, min = 0x10000;
  else return {replacement, 1};
  if (i + len > s.size()) return {replacement, 1};
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {replacement, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > max_code_point || (cp >= 0xD800 && cp <= 0xDFFF)) return {replacement, 1};
  return {cp, len};
}

bool is_word(char32_t c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// The sets behind `\d`, `\w` and `\s` (ECMA-262: WhiteSpace and LineTerminator).
std::vector<code_range> class_ranges(char32_t letter) {
  switch (letter) {
    case 'd': return {{'0', '9'}};
    case 'w': return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    default:
      return {{'\t', '\r'}, {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
              {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  }
}

/// The code points outside `ranges`, for `\D`, `\W` and `\S` inside a class.
std::vector<code_range> complement(std::vector<code_range> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const code_range& a, const code_range& b) { return a.lo < b.lo; });
  std::vector<code_range> out;
  char32_t next = 0;
  for (const code_range& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    if (r.hi + 1 > next) next = r.hi + 1;
  }
  if (next <= max_code_point) out.push_back({next, max_code_point});
  return out;
}

/// A parsed pattern. Why a tree before the program: a counted repetition `x{3,5}` is
/// emitted as copies of `x`, which needs `x` as a unit.
struct node {
  enum class kind : std::uint8_t { set, sequence, alternation, repeat, line_start, line_end, word_boundary,
                                   not_word_boundary };
  kind k = kind::sequence;
  std::size_t set = 0;
  int min = 0;
  int max = 0;  ///< -1: unbounded
  std::vector<node> children;
};

class parser {
 public:
  parser(std::string_view source, std::vector<char_set>& sets) : source_(source), sets_(sets) {
    for (std::size_t i = 0; i < source.size();) {
      const auto [cp, len] = next_code_point(source, i);
      if (cp == replacement && source.substr(i, 3) != "\xEF\xBF\xBD") fail("is not valid UTF-8");
      text_.push_back(cp);
      i += len;
    }
  }

  node parse() {
    node n = alternation();
    if (pos_ < text_.size()) fail("has a `)` that closes no group");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("droid: the pattern \"" + std::string(source_) + "\" " + what);
  }
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char32_t peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : char32_t(0xFFFFFFFF);
  }

  std::size_t add_set(std::vector<code_range> ranges, bool negated) {
    sets_.push_back({std::move(ranges), negated});
    return sets_.size() - 1;
  }
  node set_node(std::vector<code_range> ranges, bool negated = false) {
    node n;
    n.k = node::kind::set;
    n.set = add_set(std::move(ranges), negated);
    return n;
  }

  node alternation() {
    node first = sequence();
    if (peek() != '|') return first;
    node n;
    n.k = node::kind::alternation;
    n.children.push_back(std::move(first));
    while (peek() == '|') {
      ++pos_;
      n.children.push_back(sequence());
    }
    return n;
  }

  node sequence() {
    node n;
    n.k = node::kind::sequence;
    while (!at_end() && peek() != '|' && peek() != ')') n.children.push_back(quantified());
    return n;
  }

  node quantified() {
    node atom_node = atom();
    int min = 0;
    int max = 0;
    if (!quantifier(min, max)) return atom_node;
    if (atom_node.k != node::kind::set && atom_node.k != node::kind::sequence &&
        atom_node.k != node::kind::alternation)
      fail("repeats an anchor or a word boundary, which has nothing to repeat");
    // Lazy and greedy differ in which match is found, not in whether one exists.
    if (peek() == '?') ++pos_;
    int again_min = 0;
    int again_max = 0;
    if (quantifier(again_min, again_max)) fail("has a quantifier right after another one");
    node n;
    n.k = node::kind::repeat;
    n.min = min;
    n.max = max;
    n.children.push_back(std::move(atom_node));
    return n;
  }

  int count() {
    if (peek() < '0' || peek() > '9') return -1;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<long>(peek() - '0');
      if (v > max_count) fail("counts a repetition beyond " + std::to_string(max_count));
      ++pos_;
    }
    return static_cast<int>(v);
  }

  bool quantifier(int& min, int& max) {
    switch (peek()) {
      case '*': ++pos_, min = 0, max = -1; return true;
      case '+': ++pos_, min = 1, max = -1; return true;
      case '?': ++pos_, min = 0, max = 1; return true;
      case '{': break;
      default: return false;
    }
    ++pos_;
    min = count();
    if (min < 0) fail("has a `{` that starts no quantifier {n}, {n,} or {n,m}; write \\{ for the character");
    max = min;
    if (peek() == ',') {
      ++pos_;
      max = peek() == '}' ? -1 : count();
      if (max == -1 && peek() != '}') fail("has a quantifier {n,m} whose m is not a number");
    }
    if (peek() != '}') fail("has a quantifier that is not closed with `}`");
    ++pos_;
    if (max != -1 && min > max) fail("has a quantifier {n,m} with n above m");
    return true;
  }

  node atom() {
    const char32_t c = peek();
    ++pos_;
    switch (c) {
      case '(': return group();
      case '[': return char_class();
      case '.': return set_node({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, true);
      case '^': {
        node n;
        n.k = node::kind::line_start;
        return n;
      }
      case '$': {
        node n;
        n.k = node::kind::line_end;
        return n;
      }
      case '\\': return escape();
      case '*':
      case '+':
      case '?': fail("has a quantifier with nothing to repeat");
      case '{': fail("has a `{` that starts no quantifier {n}, {n,} or {n,m}; write \\{ for the character");
      default: return set_node({{c, c}});
    }
  }

  node group() {
    if (peek() == '?') {
      if (peek(1) == ':') {
        pos_ += 2;
      } else if (peek(1) == '=' || peek(1) == '!') {
        fail("uses a lookahead, which is not supported");
      } else if (peek(1) == '<' && (peek(2) == '=' || peek(2) == '!')) {
        fail("uses a lookbehind, which is not supported");
      } else if (peek(1) == '<') {
        fail("uses a named group, which is not supported; use (...) or (?:...)");
      } else {
        fail("has a `(?` that starts no supported group; only (?:...) is");
      }
    }
    node n = alternation();
    if (peek() != ')') fail("has a group that is not closed with `)`");
    ++pos_;
    return n;
  }

  /// The value of the `digits` hex digits at the cursor (`\xHH`, `\uHHHH`).
  char32_t hex(std::size_t digits) {
    char32_t v = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      const char32_t h = peek();
      int d = -1;
      if (h >= '0' && h <= '9') d = static_cast<int>(h - '0');
      else if (h >= 'a' && h <= 'f') d = static_cast<int>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') d = static_cast<int>(h - 'A' + 10);
      if (d < 0) fail(digits == 2 ? "has a \\x escape without two hex digits" : "has a \\u escape without four hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    return v;
  }

  /// A character escape (after the backslash): its code point. `in_class`: `\b` is a
  /// backspace there, and `-` may be escaped.
  char32_t character_escape(char32_t e, bool in_class) {
    switch (e) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'v': return '\v';
      case 'f': return '\f';
      case 'r': return '\r';
      case '0':
        if (peek() >= '0' && peek() <= '9') fail("has an octal escape, which is not supported; use \\xHH");
        return 0;
      case 'x': return hex(2);
      case 'u': {
        if (peek() == '{') fail("uses \\u{...}, which needs the u flag; use \\uHHHH");
        char32_t v = hex(4);
        // A surrogate pair spelled as two escapes is one code point.
        if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          const std::size_t back = pos_;
          pos_ += 2;
          const char32_t low = hex(4);
          if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
          pos_ = back;
        }
        if (v >= 0xD800 && v <= 0xDFFF) fail("has a \\u escape of a lone surrogate, which no UTF-8 text holds");
        return v;
      }
      default: break;
    }
    if (in_class && e == 'b') return '\b';
    if (e >= '1' && e <= '9') fail("uses a backreference, which is not supported");
    if (e == 'k') fail("uses a named backreference, which is not supported");
    if (e == 'p' || e == 'P') fail("uses a Unicode property escape (\\p), which is not supported");
    if (e == 'c') fail("uses a control escape (\\c), which is not supported; use \\xHH");
    static constexpr std::u32string_view syntax = U"^$\\.*+?()[]{}|/-";
    if (syntax.find(e) != std::u32string_view::npos) return e;
    std::string shown = "\\";
    if (e < 0x80) shown += static_cast<char>(e);
    fail("has the unknown escape " + shown);
  }

  node escape() {
    if (at_end()) fail("ends with a lone backslash");
    const char32_t e = peek();
    ++pos_;
    switch (e) {
      case 'd':
      case 'w':
      case 's': return set_node(class_ranges(e));
      case 'D': return set_node(class_ranges('d'), true);
      case 'W': return set_node(class_ranges('w'), true);
      case 'S': return set_node(class_ranges('s'), true);
      case 'b':
      case 'B': {
        node n;
        n.k = e == 'b' ? node::kind::word_boundary : node::kind::not_word_boundary;
        return n;
      }
      default: {
        const char32_t cp = character_escape(e, false);
        return set_node({{cp, cp}});
      }
    }
  }

  /// One member of a class: a code point (true) or a class escape added to `ranges`
  /// (false, so that it cannot be a range's end).
  bool class_atom(std::vector<code_range>& ranges, char32_t& out) {
    if (at_end()) fail("has a class `[` that is not closed with `]`");
    const char32_t c = peek();
    ++pos_;
    if (c != '\\') return out = c, true;
    if (at_end()) fail("ends with a lone backslash");
    const char32_t e = peek();
    ++pos_;
    switch (e) {
      case 'd':
      case 'w':
      case 's': {
        const auto add = class_ranges(e);
        ranges.insert(ranges.end(), add.begin(), add.end());
        return false;
      }
      case 'D':
      case 'W':
      case 'S': {
        const auto add = complement(class_ranges(static_cast<char32_t>(e - 'A' + 'a')));
        ranges.insert(ranges.end(), add.begin(), add.end());
        return false;
      }
      default: out = character_escape(e, true); return true;
    }
  }

  node char_class() {
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<code_range> ranges;
    while (peek() != ']') {
      char32_t lo = 0;
      if (!class_atom(ranges, lo)) continue;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        char32_t hi = 0;
        if (!class_atom(ranges, hi)) fail("has a class range whose end is a class escape such as \\d");
        if (lo > hi) fail("has a class range out of order");
        ranges.push_back({lo, hi});
      } else {
        ranges.push_back({lo, lo});
      }
    }
    ++pos_;
    return set_node(std::move(ranges), negated);
  }

  std::string_view source_;
  std::vector<char_set>& sets_;
  std::u32string text_;
  std::size_t pos_ = 0;
};

class compiler {
 public:
  compiler(std::string_view source, std::vector<instruction>& code) : source_(source), code_(code) {}

  void emit(const node& n) {
    switch (n.k) {
      case node::kind::set: push({op::set, n.set}); break;
      case node::kind::line_start: push({op::line_start}); break;
      case node::kind::line_end: push({op::line_end}); break;
      case node::kind::word_boundary: push({op::word_boundary}); break;
      case node::kind::not_word_boundary: push({op::not_word_boundary}); break;
      case node::kind::sequence:
        for (const node& c : n.children) emit(c);
        break;
      case node::kind::alternation: {
        std::vector<std::size_t> to_end;
        for (std::size_t i = 0; i + 1 < n.children.size(); ++i) {
          const std::size_t split = push({op::split});
          code_[split].x = code_.size();
          emit(n.children[i]);
          to_end.push_back(push({op::jump}));
          code_[split].y = code_.size();
        }
        emit(n.children.back());
        for (const std::size_t j : to_end) code_[j].x = code_.size();
        break;
      }
      case node::kind::repeat: {
        const node& body = n.children.front();
        for (int i = 0; i < n.min; ++i) emit(body);
        if (n.max == -1) {
          const std::size_t loop = push({op::split});
          code_[loop].x = code_.size();
          emit(body);
          push({op::jump, loop});
          code_[loop].y = code_.size();
        } else {
          std::vector<std::size_t> skips;
          for (int i = n.min; i < n.max; ++i) {
            const std::size_t split = push({op::split});
            code_[split].x = code_.size();
            skips.push_back(split);
            emit(body);
          }
          for (const std::size_t s : skips) code_[s].y = code_.size();
        }
        break;
      }
    }
  }

  std::size_t push(instruction i) {
    if (code_.size() >= max_program)
      throw std::invalid_argument("droid: the pattern \"" + std::string(source_) + "\" is larger than " +
                                  std::to_string(max_program) +
                                  " steps once its repetitions are written out; lower the counts in {n,m}");
    code_.push_back(i);
    return code_.size() - 1;
  }

 private:
  std::string_view source_;
  std::vector<instruction>& code_;
};

}  // namespace

struct pattern::program {
  std::vector<instruction> code;
  std::vector<char_set> sets;
};

pattern::pattern(std::string_view source) {
  auto p = std::make_shared<program>();
  parser ps(source, p->sets);
  const node tree = ps.parse();
  compiler c(source, p->code);
  c.emit(tree);
  c.push({op::match});
  program_ = std::move(p);
}

std::size_t pattern::size() const noexcept { return program_->code.size(); }

bool pattern::search(std::string_view text) const noexcept {
  const std::vector<instruction>& code = program_->code;
  const std::vector<char_set>& sets = program_->sets;
  // The threads waiting to read the character at the current position, and those that
  // will read the next one; `mark[pc]` is the last position whose list holds `pc`, so a
  // thread is added once per position however many paths reach it.
  std::vector<std::size_t> current;
  std::vector<std::size_t> next;
  std::vector<std::size_t> stack;
  std::vector<std::size_t> mark(code.size(), 0);
  current.reserve(code.size());
  next.reserve(code.size());

  constexpr char32_t none = 0xFFFFFFFF;
  // Follows jumps, splits and assertions from `start` at position `generation - 1`
  // (between `before` and `after`), adding the threads that read a character to `list`.
  // Returns true when one reaches `match`.
  const auto add = [&](std::vector<std::size_t>& list, std::size_t start, std::size_t generation, char32_t before,
                       char32_t after) {
    stack.push_back(start);
    while (!stack.empty()) {
      const std::size_t pc = stack.back();
      stack.pop_back();
      if (mark[pc] == generation) continue;
      mark[pc] = generation;
      const instruction& in = code[pc];
      switch (in.code) {
        case op::set: list.push_back(pc); break;
        case op::jump: stack.push_back(in.x); break;
        case op::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case op::line_start:
          if (before == none) stack.push_back(pc + 1);
          break;
        case op::line_end:
          if (after == none) stack.push_back(pc + 1);
          break;
        case op::word_boundary:
        case op::not_word_boundary: {
          const bool boundary = (before != none && is_word(before)) != (after != none && is_word(after));
          if (boundary == (in.code == op::word_boundary)) stack.push_back(pc + 1);
          break;
        }
        case op::match: stack.clear(); return true;
      }
    }
    return false;
  };

  char32_t before = none;
  std::size_t i = 0;
  std::size_t generation = 1;
  std::pair<char32_t, std::size_t> here = i < text.size() ? next_code_point(text, i) : std::pair{none, std::size_t(0)};
  while (true) {
    // Search, not match: a thread starts at every position.
    if (add(current, 0, generation, before, here.first)) return true;
    if (here.first == none) return false;
    if (current.empty() && code.front().code == op::line_start) return false;
    const std::size_t after_i = i + here.second;
    const std::pair<char32_t, std::size_t> following =
        after_i < text.size() ? next_code_point(text, after_i) : std::pair{none, std::size_t(0)};
    next.clear();
    for (const std::size_t pc : current) {
      if (sets[code[pc].x].contains(here.first) &&
          add(next, pc + 1, generation + 1, here.first, following.first))
        return true;
    }
    std::swap(current, next);
    before = here.first;
    here = following;
    i = after_i;
    ++generation;
  }
}

namespace detail {

const pattern& cached_pattern(std::string_view source) {
  thread_local std::map<std::string, pattern, std::less<>> cache;
  if (auto it = cache.find(source); it != cache.end()) return it->second;
  return cache.emplace(std::string(source), pattern(source)).first->second;
}

}  // namespace detail

}  // namespace droid
