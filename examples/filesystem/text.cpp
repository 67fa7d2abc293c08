// SPDX-License-Identifier: BSL-1.0
/// @file
/// The filesystem example's text algorithms: the line diff behind `edit_file`'s output,
/// glob matching for `search_files` and `directory_tree`, and name ordering for
/// `list_directory_with_sizes`.
///
/// Why written out here and not taken from a library: each must give the very output
/// of the JavaScript library the reference server uses (jsdiff, minimatch, ICU's
/// collation), since a model or a test compares the texts; a different but valid diff
/// would be a different answer.
#include "fs_ops.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fsx {

namespace {

/// Lines with their newline, as jsdiff's line tokenizer cuts them (the text after the
/// last newline is a line of its own only when not empty).
std::vector<std::string_view> line_tokens(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

/// One run of the edit script: `count` tokens kept, added or removed.
struct component {
  int count = 0;
  bool added = false, removed = false;
  int previous = -1;  // index in the pool; the script is a list built from its end
};

/// A furthest-reaching path on one diagonal of the Myers search.
struct search_path {
  long old_pos = -1;
  int last = -1;
};

/// The edit script from old to new, in jsdiff's order of preference: at each step the
/// path that got further in the old text is extended, and a removal is preferred when
/// both got equally far, which decides where an ambiguous change is shown.
std::vector<component> line_script(const std::vector<std::string_view>& old_t,
                                   const std::vector<std::string_view>& new_t) {
  std::vector<component> pool;
  const long old_len = static_cast<long>(old_t.size()), new_len = static_cast<long>(new_t.size());
  const auto extend = [&](search_path& p, long diagonal) {
    long old_pos = p.old_pos, new_pos = old_pos - diagonal;
    int common = 0;
    while (new_pos + 1 < new_len && old_pos + 1 < old_len &&
           old_t[static_cast<std::size_t>(old_pos + 1)] == new_t[static_cast<std::size_t>(new_pos + 1)]) {
      ++old_pos, ++new_pos, ++common;
    }
    if (common) {
      pool.push_back({common, false, false, p.last});
      p.last = static_cast<int>(pool.size()) - 1;
    }
    p.old_pos = old_pos;
    return new_pos;
  };
  const auto step = [&](const search_path& p, bool added, long inc) {
    search_path next{p.old_pos + inc, -1};
    if (p.last >= 0 && pool[static_cast<std::size_t>(p.last)].added == added &&
        pool[static_cast<std::size_t>(p.last)].removed == !added) {
      const component last = pool[static_cast<std::size_t>(p.last)];
      pool.push_back({last.count + 1, added, !added, last.previous});
    } else {
      pool.push_back({1, added, !added, p.last});
    }
    next.last = static_cast<int>(pool.size()) - 1;
    return next;
  };
  const auto unwind = [&](int last) {
    std::vector<component> out;
    for (int at = last; at >= 0; at = pool[static_cast<std::size_t>(at)].previous)
      out.push_back(pool[static_cast<std::size_t>(at)]);
    std::reverse(out.begin(), out.end());
    return out;
  };

  const long max_edit = old_len + new_len;
  std::vector<std::optional<search_path>> best(static_cast<std::size_t>(2 * max_edit + 3));
  const auto at = [&](long diagonal) -> std::optional<search_path>& {
    return best[static_cast<std::size_t>(diagonal + max_edit + 1)];
  };
  at(0) = search_path{};
  long new_pos = extend(*at(0), 0);
  if (at(0)->old_pos + 1 >= old_len && new_pos + 1 >= new_len) return unwind(at(0)->last);

  long min_diagonal = std::numeric_limits<long>::min() / 2, max_diagonal = std::numeric_limits<long>::max() / 2;
  for (long edit = 1; edit <= max_edit; ++edit) {
    for (long d = std::max(min_diagonal, -edit); d <= std::min(max_diagonal, edit); d += 2) {
      std::optional<search_path> remove_path = d - 1 >= -max_edit - 1 ? at(d - 1) : std::nullopt;
      std::optional<search_path> add_path = d + 1 <= max_edit + 1 ? at(d + 1) : std::nullopt;
      if (remove_path) at(d - 1).reset();
      const bool can_add = add_path && add_path->old_pos - d >= 0 && add_path->old_pos - d < new_len;
      const bool can_remove = remove_path && remove_path->old_pos + 1 < old_len;
      if (!can_add && !can_remove) {
        at(d).reset();
        continue;
      }
      search_path base = (!can_remove || (can_add && remove_path->old_pos < add_path->old_pos))
                             ? step(*add_path, true, 0)
                             : step(*remove_path, false, 1);
      new_pos = extend(base, d);
      if (base.old_pos + 1 >= old_len && new_pos + 1 >= new_len) return unwind(base.last);
      at(d) = base;
      if (base.old_pos + 1 >= old_len) max_diagonal = std::min(max_diagonal, d - 1);
      if (new_pos + 1 >= new_len) min_diagonal = std::max(min_diagonal, d + 1);
    }
  }
  return {};  // not reached: max_edit steps always reach the end
}

/// One line of a hunk: its mark (' ', '+' or '-') and its text. Built by append, not
/// `" " + std::string(line)`: g++ 12 at -O3 inlines that insert-at-front into a memcpy it
/// then warns may overlap (-Wrestrict, a false positive that -Werror turns into a failed build).
std::string hunk_line(char mark, std::string_view text) {
  std::string out;
  out.reserve(text.size() + 1);
  out += mark;
  out += text;
  return out;
}

}  // namespace

std::string unified_diff(std::string_view name, std::string_view before, std::string_view after) {
  const std::vector<std::string_view> old_t = line_tokens(before), new_t = line_tokens(after);
  const std::vector<component> script = line_script(old_t, new_t);

  // Each run's lines, then an empty sentinel run that closes the last hunk.
  struct run {
    std::vector<std::string_view> lines;
    bool added = false, removed = false;
  };
  std::vector<run> runs;
  std::size_t op = 0, np = 0;
  for (const component& c : script) {
    run r{{}, c.added, c.removed};
    const auto n = static_cast<std::size_t>(c.count);
    if (c.removed) {
      r.lines.assign(old_t.begin() + static_cast<std::ptrdiff_t>(op),
                     old_t.begin() + static_cast<std::ptrdiff_t>(op + n));
      op += n;
    } else {
      r.lines.assign(new_t.begin() + static_cast<std::ptrdiff_t>(np),
                     new_t.begin() + static_cast<std::ptrdiff_t>(np + n));
      np += n;
      if (!c.added) op += n;
    }
    runs.push_back(std::move(r));
  }
  runs.push_back({});

  constexpr std::size_t context = 4;
  struct hunk {
    std::size_t old_start, old_lines, new_start, new_lines;
    std::vector<std::string> lines;
  };
  std::vector<hunk> hunks;
  std::size_t old_start = 0, new_start = 0, old_line = 1, new_line = 1;
  std::vector<std::string> current;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const run& r = runs[i];
    if (r.added || r.removed) {
      if (!old_start) {
        old_start = old_line;
        new_start = new_line;
        if (i > 0) {
          const auto& prev = runs[i - 1].lines;
          const std::size_t take = std::min(context, prev.size());
          current.clear();
          for (std::size_t k = prev.size() - take; k < prev.size(); ++k) current.push_back(hunk_line(' ', prev[k]));
          old_start -= take;
          new_start -= take;
        }
      }
      for (std::string_view l : r.lines) current.push_back(hunk_line(r.added ? '+' : '-', l));
      (r.added ? new_line : old_line) += r.lines.size();
      continue;
    }
    if (old_start) {
      if (r.lines.size() <= context * 2 && i + 2 < runs.size()) {
        for (std::string_view l : r.lines) current.push_back(hunk_line(' ', l));
      } else {
        const std::size_t take = std::min(r.lines.size(), context);
        for (std::size_t k = 0; k < take; ++k) current.push_back(hunk_line(' ', r.lines[k]));
        hunks.push_back(
            {old_start, old_line - old_start + take, new_start, new_line - new_start + take, std::move(current)});
        old_start = new_start = 0;
        current.clear();
      }
    }
    old_line += r.lines.size();
    new_line += r.lines.size();
  }

  std::string out = "Index: " + std::string(name) + "\n";
  out += "===================================================================\n";
  out += "--- " + std::string(name) + "\toriginal\n";
  out += "+++ " + std::string(name) + "\tmodified\n";
  for (hunk& h : hunks) {
    // Unified diff's quirk: an empty side's start is one less.
    const std::size_t os = h.old_lines == 0 ? h.old_start - 1 : h.old_start;
    const std::size_t ns = h.new_lines == 0 ? h.new_start - 1 : h.new_start;
    out += "@@ -" + std::to_string(os) + "," + std::to_string(h.old_lines) + " +" + std::to_string(ns) + "," +
           std::to_string(h.new_lines) + " @@\n";
    for (std::string& l : h.lines) {
      if (!l.empty() && l.back() == '\n') {
        l.pop_back();
        out += l + "\n";
      } else {
        out += l + "\n\\ No newline at end of file\n";
      }
    }
  }
  return out;
}

// ---- globs ----------------------------------------------------------------------------------

namespace {

/// One code point's length at `s[i]` (a broken sequence counts one byte).
std::size_t cp_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return std::min(n, s.size() - i);
}

bool posix_class(std::string_view name, unsigned char c) {
  if (name == "alpha") return std::isalpha(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "alnum") return std::isalnum(c);
  if (name == "upper") return std::isupper(c);
  if (name == "lower") return std::islower(c);
  if (name == "space") return std::isspace(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "xdigit") return std::isxdigit(c);
  if (name == "word") return std::isalnum(c) || c == '_';
  return false;
}

/// Matches a bracket expression at `p[pi]` (the `[`) against `c`; sets `end` past the
/// `]`. False with `end == 0` when the bracket does not close, so it is a literal `[`.
bool match_class(std::string_view p, std::size_t pi, std::string_view c, std::size_t& end) {
  std::size_t i = pi + 1;
  bool negate = false;
  if (i < p.size() && (p[i] == '!' || p[i] == '^')) negate = true, ++i;
  bool hit = false, first = true;
  const auto cp = [](std::string_view s) {
    std::uint32_t v = static_cast<unsigned char>(s[0]);
    if (s.size() > 1) {
      v &= 0xFFu >> (s.size() + 1);
      for (std::size_t k = 1; k < s.size(); ++k) v = (v << 6) | (static_cast<unsigned char>(s[k]) & 0x3F);
    }
    return v;
  };
  const std::uint32_t target = cp(c);
  while (i < p.size()) {
    if (p[i] == ']' && !first) {
      end = i + 1;
      return hit != negate;
    }
    first = false;
    if (p.substr(i, 2) == "[:") {
      const std::size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        if (c.size() == 1 && posix_class(p.substr(i + 2, close - i - 2), static_cast<unsigned char>(c[0]))) hit = true;
        i = close + 2;
        continue;
      }
    }
    if (p[i] == '\\' && i + 1 < p.size()) ++i;
    const std::size_t n = cp_len(p, i);
    const std::uint32_t lo = cp(p.substr(i, n));
    i += n;
    std::uint32_t hi = lo;
    if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
      ++i;
      if (p[i] == '\\' && i + 1 < p.size()) ++i;
      const std::size_t m = cp_len(p, i);
      hi = cp(p.substr(i, m));
      i += m;
    }
    if (target >= lo && target <= hi) hit = true;
  }
  end = 0;
  return false;
}

/// Whether the pattern element at `p[pi]` (`?`, a bracket, an escaped or a plain
/// character) matches the one character `c`; `len` is the element's length.
bool match_one(std::string_view p, std::size_t pi, std::string_view c, std::size_t& len) {
  if (p[pi] == '?') return len = 1, true;
  if (p[pi] == '[') {
    std::size_t end = 0;
    const bool hit = match_class(p, pi, c, end);
    if (end) return len = end - pi, hit;
  }
  const std::size_t lit = p[pi] == '\\' && pi + 1 < p.size() ? pi + 1 : pi;
  const std::size_t n = cp_len(p, lit);
  len = lit + n - pi;
  return p.substr(lit, n) == c;
}

/// One path segment against one pattern segment. Why this loop and not recursion on
/// each `*`: a pattern such as `*a*a*a*a*b` would take exponential time on a long name;
/// resuming from the last star only is linear in each star and gives the same answer.
bool match_segment(std::string_view p, std::string_view s) {
  std::size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      star_p = pi;
      star_s = si;
      continue;
    }
    const std::size_t n = cp_len(s, si);
    std::size_t len = 0;
    if (pi < p.size() && match_one(p, pi, s.substr(si, n), len)) {
      pi += len;
      si += n;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    star_s += cp_len(s, star_s);
    si = star_s;
    pi = star_p;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool match_segments(const std::vector<std::string>& pat, std::size_t pi, const std::vector<std::string>& file,
                    std::size_t fi) {
  if (pi == pat.size()) return fi == file.size();
  if (pat[pi] == "**") {
    // `.` and `..` are never crossed by a globstar.
    const auto plain = [&](std::size_t k) { return file[k] != "." && file[k] != ".."; };
    if (pi + 1 == pat.size()) {
      // A trailing globstar must match something: `a/**` matches `a/b`, not `a`.
      if (fi == file.size()) return false;
      for (std::size_t k = fi; k < file.size(); ++k)
        if (!plain(k)) return false;
      return true;
    }
    for (std::size_t k = fi; k <= file.size(); ++k) {
      if (match_segments(pat, pi + 1, file, k)) return true;
      if (k < file.size() && !plain(k)) return false;
    }
    return false;
  }
  return fi < file.size() && match_segment(pat[pi], file[fi]) && match_segments(pat, pi + 1, file, fi + 1);
}

std::vector<std::string> split_slash(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find('/', start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

/// Brace expansion: `a{b,c}d` gives `abd` and `acd`; `{1..3}` a numeric range. A brace
/// with neither a comma nor a range stays literal, as in minimatch.
void expand_braces(const std::string& p, std::vector<std::string>& out, int depth = 0) {
  if (depth > 16 || out.size() > 1024) {
    out.push_back(p);
    return;
  }
  for (std::size_t open = 0; open < p.size(); ++open) {
    if (p[open] == '\\') {
      ++open;
      continue;
    }
    if (p[open] != '{') continue;
    int level = 0;
    std::vector<std::size_t> commas;
    std::size_t close = std::string::npos;
    for (std::size_t i = open; i < p.size(); ++i) {
      if (p[i] == '\\') {
        ++i;
        continue;
      }
      if (p[i] == '{') ++level;
      if (p[i] == '}' && --level == 0) {
        close = i;
        break;
      }
      if (p[i] == ',' && level == 1) commas.push_back(i);
    }
    if (close == std::string::npos) return out.push_back(p);
    const std::string pre = p.substr(0, open), post = p.substr(close + 1);
    const std::string body = p.substr(open + 1, close - open - 1);
    if (commas.empty()) {
      const std::size_t dots = body.find("..");
      if (dots != std::string::npos) {
        try {
          std::size_t used = 0;
          const long a = std::stol(body.substr(0, dots), &used);
          if (used == dots) {
            const long b = std::stol(body.substr(dots + 2), &used);
            if (used == body.size() - dots - 2 && std::labs(b - a) < 1000) {
              for (long v = a;; v += (b >= a ? 1 : -1)) {
                expand_braces(pre + std::to_string(v) + post, out, depth + 1);
                if (v == b) break;
              }
              return;
            }
          }
        } catch (const std::exception&) {
        }
      }
      continue;  // a literal brace; look for a later one
    }
    std::size_t from = open + 1;
    commas.push_back(close);
    for (std::size_t c : commas) {
      expand_braces(pre + p.substr(from, c - from) + post, out, depth + 1);
      from = c + 1;
    }
    return;
  }
  out.push_back(p);
}

}  // namespace

bool glob_match(std::string_view path, std::string_view pattern) {
  if (!pattern.empty() && pattern.front() == '#') return false;
  bool negate = false;
  while (!pattern.empty() && pattern.front() == '!') negate = !negate, pattern.remove_prefix(1);
  if (pattern.empty()) return (path.empty()) != negate;
  std::vector<std::string> alternatives;
  expand_braces(std::string(pattern), alternatives);
  const std::vector<std::string> file = split_slash(path);
  bool hit = false;
  for (const std::string& alt : alternatives) {
    std::vector<std::string> pat = split_slash(alt);
    // `**/**` is one globstar.
    pat.erase(std::unique(pat.begin(), pat.end(),
                          [](const std::string& a, const std::string& b) { return a == "**" && b == "**"; }),
              pat.end());
    if (match_segments(pat, 0, file, 0)) {
      hit = true;
      break;
    }
  }
  return hit != negate;
}

// ---- collation -------------------------------------------------------------------------------

namespace {

/// The order of ASCII in CLDR's root collation: white space, punctuation and symbols,
/// digits, then letters (case is a later, tertiary difference).
constexpr std::string_view root_order =
    "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

std::uint32_t primary(unsigned char c) {
  const unsigned char folded = static_cast<unsigned char>(std::tolower(c));
  const std::size_t at = root_order.find(static_cast<char>(folded));
  if (at != std::string_view::npos) return static_cast<std::uint32_t>(at);
  return 0x100u + c;  // control characters and other bytes: after the letters
}

}  // namespace

int locale_compare(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t pa = primary(static_cast<unsigned char>(a[i])), pb = primary(static_cast<unsigned char>(b[i]));
    if (pa != pb) return pa < pb ? -1 : 1;
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const bool la = std::islower(static_cast<unsigned char>(a[i])), lb = std::islower(static_cast<unsigned char>(b[i]));
    if (a[i] != b[i] && la != lb) return la ? -1 : 1;
  }
  return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
}

}  // namespace fsx
