// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JSON Schema `pattern` matcher: the ECMA-262 subset it accepts, what it refuses,
/// and that inputs which make a backtracking matcher explode are read in one pass.
#include <droid/domain/mcp/pattern.hpp>

#include <stdexcept>
#include <string>

#include <doctest/doctest.h>

namespace {

bool matches(const char* pattern, const std::string& text) { return droid::pattern(pattern).search(text); }

std::string refusal(const char* pattern) {
  try {
    (void)droid::pattern(pattern);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_SUITE("domain/mcp/pattern") {
  TEST_CASE("a pattern is searched for anywhere in the text, as JSON Schema says, unless anchored") {
    CHECK(matches("ab", "cabd"));
    CHECK_FALSE(matches("^ab", "cabd"));
    CHECK_FALSE(matches("ab$", "cabd"));
    CHECK(matches("^ab$", "ab"));
    CHECK(matches("", "anything"));
    CHECK(matches("^$", ""));
    CHECK_FALSE(matches("^$", "x"));
  }

  TEST_CASE("classes, escapes, groups, alternation and every quantifier behave as in ECMA-262") {
    CHECK(matches("^[a-z]+$", "abc"));
    CHECK_FALSE(matches("^[a-z]+$", "abC"));
    CHECK(matches("^[^0-9]*$", "abc"));
    CHECK_FALSE(matches("^[^0-9]*$", "a1"));
    CHECK(matches("^[a-]$", "-"));
    CHECK(matches("^[-a]$", "-"));
    CHECK_FALSE(matches("[]", "a"));
    CHECK(matches("^[^]$", "\n"));
    CHECK(matches(R"(^\d{3}-\d{4}$)", "555-1234"));
    CHECK_FALSE(matches(R"(^\d{3}-\d{4}$)", "555-123"));
    CHECK(matches(R"(^\w+$)", "snake_case9"));
    CHECK_FALSE(matches(R"(^\w+$)", "kebab-case"));
    CHECK(matches(R"(^\S+\s\S+$)", "two words"));
    CHECK(matches(R"(^[\d\s]+$)", "1 2 3"));
    CHECK(matches(R"(^[\D]+$)", "abc"));
    // A class escape before `-` makes the `-` a character, as ECMA-262 Annex B reads it.
    CHECK(matches(R"(^[\d-z]+$)", "5-z"));
    CHECK(matches(R"(\bcat\b)", "a cat sat"));
    CHECK_FALSE(matches(R"(\bcat\b)", "concatenate"));
    CHECK(matches(R"(\Bcat\B)", "concatenate"));
    CHECK(matches(R"(^\x41\u00e9\t$)", "A\xC3\xA9\t"));
    CHECK(matches(R"(^\uD83D\uDE00$)", "\xF0\x9F\x98\x80"));
    CHECK(matches(R"(^\.\*\+\?\(\)\[\]\{\}\|\/\\\^\$$)", R"(.*+?()[]{}|/\^$)"));
    CHECK(matches("^(?:ab|cd)+$", "abcdab"));
    CHECK_FALSE(matches("^(?:ab|cd)+$", "abc"));
    CHECK(matches("^(a|b|)c$", "c"));
    CHECK(matches("^a{2}$", "aa"));
    CHECK_FALSE(matches("^a{2}$", "aaa"));
    CHECK(matches("^a{2,}$", "aaaaa"));
    CHECK_FALSE(matches("^a{2,}$", "a"));
    CHECK(matches("^a{1,3}$", "aaa"));
    CHECK_FALSE(matches("^a{1,3}$", "aaaa"));
    CHECK(matches("^a{0}b$", "b"));
    CHECK(matches("^colou?r$", "color"));
    CHECK(matches("^a+?b*?c??$", "aab"));
    CHECK(matches("^a.c$", "abc"));
    CHECK_FALSE(matches("^a.c$", "a\nc"));
  }

  TEST_CASE("the text is read as code points, so a quantifier counts characters, not bytes") {
    CHECK(matches("^.{2}$", "\xC3\xA9\xE2\x82\xAC"));  // "é€": 2 characters, 5 bytes
    CHECK(matches("^[\xC3\xA0-\xC3\xBF]$", "\xC3\xA9"));  // a range written as UTF-8
    CHECK(matches("^\xE2\x82\xAC+$", "\xE2\x82\xAC\xE2\x82\xAC"));
    // Bytes that are not UTF-8 read as U+FFFD instead of stopping the matcher.
    CHECK(matches("^.$", "\xFF"));
  }

  TEST_CASE("constructs outside the subset are refused at once, naming the construct") {
    CHECK(refusal("(a") == R"~(droid: the pattern "(a" has a group that is not closed with `)`)~");
    CHECK(refusal("a)") == R"~(droid: the pattern "a)" has a `)` that closes no group)~");
    CHECK(refusal("[a") == R"~(droid: the pattern "[a" has a class `[` that is not closed with `]`)~");
    CHECK(refusal("*a") == R"~(droid: the pattern "*a" has a quantifier with nothing to repeat)~");
    CHECK(refusal("a**") == R"~(droid: the pattern "a**" has a quantifier right after another one)~");
    CHECK(refusal("^*") == R"~(droid: the pattern "^*" repeats an anchor or a word boundary, which has nothing to repeat)~");
    CHECK(refusal(R"((a)\1)") == R"~(droid: the pattern "(a)\1" uses a backreference, which is not supported)~");
    CHECK(refusal("(?=a)") == R"~(droid: the pattern "(?=a)" uses a lookahead, which is not supported)~");
    CHECK(refusal("(?<!a)b") == R"~(droid: the pattern "(?<!a)b" uses a lookbehind, which is not supported)~");
    CHECK(refusal("(?<n>a)") ==
          R"~(droid: the pattern "(?<n>a)" uses a named group, which is not supported; use (...) or (?:...))~");
    CHECK(refusal(R"(\p{L})") ==
          R"~(droid: the pattern "\p{L}" uses a Unicode property escape (\p), which is not supported)~");
    CHECK(refusal(R"(\q)") == R"~(droid: the pattern "\q" has the unknown escape \q)~");
    CHECK(refusal("a{3,1}") == R"~(droid: the pattern "a{3,1}" has a quantifier {n,m} with n above m)~");
    CHECK(refusal("a{2") == R"~(droid: the pattern "a{2" has a quantifier that is not closed with `}`)~");
    CHECK(refusal("a{x}") ==
          R"~(droid: the pattern "a{x}" has a `{` that starts no quantifier {n}, {n,} or {n,m}; write \{ for the character)~");
    CHECK(refusal("[z-a]") == R"~(droid: the pattern "[z-a]" has a class range out of order)~");
    CHECK(refusal(R"([a-\d])") ==
          R"~(droid: the pattern "[a-\d]" has a class range whose end is a class escape such as \d)~");
    CHECK(refusal("a{1001}") == R"~(droid: the pattern "a{1001}" counts a repetition beyond 1000)~");
    CHECK(refusal("(abcdefghij){300}") ==
          R"~(droid: the pattern "(abcdefghij){300}" is larger than 2000 steps once its repetitions are written out; lower the counts in {n,m})~");
    CHECK(refusal("\xFF") == "droid: the pattern \"\xFF\" is not valid UTF-8");
    CHECK(refusal(R"(\)") == R"~(droid: the pattern "\" ends with a lone backslash)~");
  }

  TEST_CASE("patterns that make a backtracking matcher explode run in linear time") {
    // Each would take minutes (or overflow the stack) in a backtracking engine such as
    // libstdc++'s std::regex; here every one is one pass over 100 000 characters.
    // No clock: an exponential matcher never ends, and the suite's timeout reports it.
    const std::string long_a(100000, 'a');
    CHECK_FALSE(matches("^(a+)+$", long_a + "!"));
    CHECK_FALSE(matches("^(a|a)*$", long_a + "!"));
    CHECK_FALSE(matches("a*a*a*a*b", long_a));
    CHECK(matches("^[a-z]+$", long_a));
    CHECK_FALSE(matches("^(a|aa)*c$", long_a));
  }
}
