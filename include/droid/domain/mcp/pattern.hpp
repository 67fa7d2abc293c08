// SPDX-License-Identifier: BSL-1.0
/// @file
/// A JSON Schema `pattern`: the interoperable subset of ECMA-262 regular expressions,
/// compiled once and matched in time linear in the input.
///
/// Domain layer. A tool argument that declares `pattern` (`field_hint::pattern`) is
/// written into `inputSchema` as given and checked with this matcher when the arguments
/// are decoded, so the client and the server read the same expression.
///
/// ## Why our own matcher and not `std::regex`
/// libstdc++'s `std::regex` backtracks recursively: measured with g++ 12, `^[a-z]+$`
/// overflows an 8 MiB stack on a 100 000-character string (and a 1 MiB one on 4 096
/// characters), and `a*a*a*b` on 1 000 characters runs for minutes. An argument is
/// whatever a client sends, so either would let one request crash or stall the server.
/// This matcher is a Thompson NFA simulation (a "Pike VM"): no recursion on the input,
/// and at most (pattern size) steps per input character, whatever the pattern. It also
/// matches code points rather than bytes, as ECMA-262 with the `u` flag does, so
/// `^.{1,3}$` counts characters in UTF-8 input.
///
/// ## What is accepted (docs/tools.md#constraints-and-defaults)
/// The subset JSON Schema recommends for interoperability: literals; `.`; classes
/// `[a-z]`, `[^...]`; `\d \D \w \W \s \S`; `\b \B`; the escapes `\t \n \v \f \r \0`,
/// `\xHH`, `\uHHHH` and an escaped syntax character; groups `(...)` and `(?:...)`;
/// alternation `|`; quantifiers `* + ? {n} {n,} {n,m}`, greedy or lazy (the same for a
/// yes/no match); anchors `^ $`. Matching is a search, as JSON Schema says: `"ab"`
/// matches `"cabd"`; anchor with `^...$` for the whole string. No flags: case-sensitive,
/// and `^ $` match only at the ends.
///
/// Refused when compiled (`std::invalid_argument`, naming the construct): backreferences,
/// lookahead and lookbehind, named groups, `\p{...}`, unknown escapes, a quantifier with
/// nothing to repeat, unbalanced brackets, `{n,m}` with n > m or beyond 1000, invalid
/// UTF-8, and a pattern whose expansion (`(abc){50}` is 150 steps) exceeds 2 000 steps.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace droid {

/// A compiled JSON Schema `pattern`.
///
/// Why a class and not a function of (pattern, text): parsing and expanding the pattern
/// costs more than matching a short string, and a tool's pattern is the same for every
/// call. Copies share one immutable program, so `search` may run on several threads at
/// once.
class pattern {
 public:
  /// Compiles `source`.
  /// Errors: `std::invalid_argument` with a sentence naming what is not supported or
  /// malformed, and where (see the file comment).
  explicit pattern(std::string_view source);

  /// True when some part of `text` (UTF-8) matches. An ill-formed byte reads as U+FFFD.
  [[nodiscard]] bool search(std::string_view text) const noexcept;

  /// How many steps the compiled program has (the factor of the matching time per input
  /// character); tests and the documentation's limit refer to it.
  [[nodiscard]] std::size_t size() const noexcept;

  struct program;

 private:
  std::shared_ptr<const program> program_;
};

namespace detail {

/// The compiled form of `source`, compiled on the calling thread's first use and kept
/// for the thread's lifetime.
///
/// Why per thread: decoding runs on every shard at once, and a shared cache would need a
/// lock on every argument checked. A tool's patterns are a handful of static strings, so
/// each thread keeps a few small programs.
/// Errors: as `pattern`'s constructor (nothing is kept for a refused pattern).
const pattern& cached_pattern(std::string_view source);

}  // namespace detail

}  // namespace droid
