// SPDX-License-Identifier: BSL-1.0
/// @file
/// RFC 6570 levels 1 and 2: the RFC's own examples, expand/match round trips for MCP
/// resource templates, and the wording of every refusal.
#include <droid/domain/mcp/uri_template.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

using droid::uri_template;
using value_map = uri_template::value_map;

namespace {

/// The variables of RFC 6570 section 3.2 that levels 1 and 2 can use (`undef` is absent).
const value_map rfc_values{
    {"var", "value"},     {"hello", "Hello World!"},
    {"path", "/foo/bar"}, {"half", "50%"},
    {"empty", ""},        {"base", "http://example.com/home/"},
};

std::string expand(std::string_view text, const value_map& values = rfc_values) {
  return uri_template(text).expand(values);
}

/// The message a malformed template is refused with, or "(accepted)".
std::string refusal(std::string_view text) {
  try {
    const uri_template t(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_SUITE("domain/mcp/uri_template") {
  TEST_CASE("the level 1 and 2 examples of RFC 6570 section 1.2 expand as the RFC says") {
    // Section 1.2 defines the levels by these examples; a client that reads our advertised
    // template expands it the same way, so ours must agree character for character.
    CHECK(expand("{var}") == "value");
    CHECK(expand("{hello}") == "Hello%20World%21");
    CHECK(expand("{+var}") == "value");
    CHECK(expand("{+hello}") == "Hello%20World!");
    CHECK(expand("{+path}/here") == "/foo/bar/here");
    CHECK(expand("here?ref={+path}") == "here?ref=/foo/bar");
    CHECK(expand("X{#var}") == "X#value");
    CHECK(expand("X{#hello}") == "X#Hello%20World!");
  }

  TEST_CASE("the level 1 and 2 examples of RFC 6570 sections 3.2.2 to 3.2.4 expand as the RFC says") {
    // These add the edge cases section 1.2 leaves out: a lone "%", empty versus undefined,
    // and a value that is itself a URI.
    CHECK(expand("{half}") == "50%25");
    CHECK(expand("O{empty}X") == "OX");
    CHECK(expand("O{undef}X") == "OX");
    CHECK(expand("{+half}") == "50%25");
    CHECK(expand("{base}index") == "http%3A%2F%2Fexample.com%2Fhome%2Findex");
    CHECK(expand("{+base}index") == "http://example.com/home/index");
    CHECK(expand("O{+empty}X") == "OX");
    CHECK(expand("O{+undef}X") == "OX");
    CHECK(expand("up{+path}{var}/here") == "up/foo/barvalue/here");
    CHECK(expand("{#var}") == "#value");
    CHECK(expand("{#half}") == "#50%25");
    CHECK(expand("foo{#empty}") == "foo#");
    CHECK(expand("foo{#undef}") == "foo");
  }

  TEST_CASE("reserved expansion keeps triplets already in the value and encodes a stray percent") {
    // RFC 6570 3.2.3: {+path} may carry a pre-encoded path, so "%2F" must not become "%252F".
    CHECK(expand("{+v}", {{"v", "a%2Fb"}}) == "a%2Fb");
    CHECK(expand("{v}", {{"v", "a%2Fb"}}) == "a%252Fb");
    CHECK(expand("{+v}", {{"v", "100%"}}) == "100%25");
    CHECK(expand("{+v}", {{"v", "%zz"}}) == "%25zz");
  }

  TEST_CASE("non-ASCII values and literals are written as percent-encoded UTF-8") {
    CHECK(expand("{v}", {{"v", "caf\xC3\xA9"}}) == "caf%C3%A9");
    CHECK(expand("{+v}", {{"v", "caf\xC3\xA9"}}) == "caf%C3%A9");
    CHECK(expand("caf\xC3\xA9/{v}", {{"v", "1"}}) == "caf%C3%A9/1");
  }

  TEST_CASE("keys that name no variable of the template are ignored") {
    CHECK(expand("a/{b}", {{"b", "1"}, {"c", "2"}}) == "a/1");
  }

  TEST_CASE("text is kept verbatim and variables are listed once in order of appearance") {
    const uri_template t("x{b}/{+a}%20{#b}{c.d}{%41}");
    CHECK(t.text() == "x{b}/{+a}%20{#b}{c.d}{%41}");
    CHECK(t.variables() == std::vector<std::string>{"b", "a", "c.d", "%41"});
    CHECK(uri_template("plain://text").variables().empty());
  }

  TEST_CASE("MCP resource templates round trip through expand and match") {
    // The property the router relies on: whatever a client builds from an advertised
    // template is routed back to the same values.
    struct round_trip {
      std::string_view text;
      value_map values;
      std::string_view uri;
    };
    const round_trip cases[] = {
        {"test://template/{id}/data", {{"id", "abc"}}, "test://template/abc/data"},
        {"test://template/{id}/data", {{"id", "hello world"}}, "test://template/hello%20world/data"},
        {"test://template/{id}/data", {{"id", "a/b"}}, "test://template/a%2Fb/data"},
        {"test://template/{id}/data", {{"id", ""}}, "test://template//data"},
        {"file:///{+path}", {{"path", "docs/readme.md"}}, "file:///docs/readme.md"},
        {"file:///{+path}", {{"path", "my docs/a b.txt"}}, "file:///my%20docs/a%20b.txt"},
        {"file:///{+path}", {{"path", "a?b=c#d"}}, "file:///a?b=c#d"},
        {"repo://{owner}/{repo}/issues/{number}",
         {{"owner", "droid-org"}, {"repo", "protocol.droid"}, {"number", "42"}},
         "repo://droid-org/protocol.droid/issues/42"},
        {"users://{name}/profile", {{"name", "Jos\xC3\xA9 M."}}, "users://Jos%C3%A9%20M./profile"},
        {"doc://{id}{#section}", {{"id", "7"}, {"section", "intro/part 2"}}, "doc://7#intro/part%202"},
    };
    for (const round_trip& c : cases) {
      CAPTURE(c.text);
      CAPTURE(c.uri);
      const uri_template t(c.text);
      CHECK(t.expand(c.values) == c.uri);
      const auto matched = t.match(c.uri);
      REQUIRE(matched.has_value());
      CHECK(*matched == c.values);
    }
  }

  TEST_CASE("a URI that differs in its literal text does not match") {
    const uri_template t("test://template/{id}/data");
    CHECK_FALSE(t.match("test://template/1/other"));
    CHECK_FALSE(t.match("test://templates/1/data"));
    CHECK_FALSE(t.match("TEST://template/1/data"));
    CHECK_FALSE(t.match("test://template/1/dat"));
    CHECK_FALSE(t.match(""));
    CHECK_FALSE(uri_template("file:///{+path}").match("http:///x"));
  }

  TEST_CASE("a level 1 variable never matches across a slash or other reserved character") {
    // Otherwise test://template/{id}/data would claim test://template/a/b/data, and a
    // handler would see an id its author never meant to accept.
    const uri_template t("test://template/{id}/data");
    CHECK_FALSE(t.match("test://template/a/b/data"));
    CHECK_FALSE(t.match("test://template/a?b/data"));
    CHECK_FALSE(t.match("test://template/it's/data"));
    const uri_template repo("repo://{owner}/{repo}/issues/{number}");
    CHECK_FALSE(repo.match("repo://o/r/issues/1/2"));
    CHECK_FALSE(repo.match("repo://o/x/r/issues/1"));
  }

  TEST_CASE("an extra suffix after the template's end does not match") {
    CHECK_FALSE(uri_template("test://template/{id}/data").match("test://template/1/data/extra"));
    CHECK_FALSE(uri_template("test://template/{id}/data").match("test://template/1/data#frag"));
    CHECK_FALSE(uri_template("repo://{owner}").match("repo://o/"));
  }

  TEST_CASE("text that no expansion writes does not match any variable") {
    // A raw space, raw non-ASCII or a "%" that starts no triplet can only come from a
    // client that did not expand the template, so guessing its meaning would be wrong.
    const uri_template t("test://template/{id}/data");
    CHECK_FALSE(t.match("test://template/a b/data"));
    CHECK_FALSE(t.match("test://template/%zz/data"));
    CHECK_FALSE(t.match("test://template/%4/data"));
    CHECK_FALSE(t.match("test://template/caf\xC3\xA9/data"));
    CHECK_FALSE(uri_template("file:///{+path}").match("file:///a b"));
    CHECK_FALSE(uri_template("file:///{+path}").match("file:///100%"));
  }

  TEST_CASE("a value that does not decode to UTF-8 does not match") {
    // The decoded value goes into JSON text, which must be UTF-8; expand never writes
    // such a span for a UTF-8 value.
    const uri_template t("test://template/{id}/data");
    CHECK_FALSE(t.match("test://template/%FF/data"));
    CHECK_FALSE(t.match("test://template/%C3/data"));         // a character cut short
    CHECK_FALSE(t.match("test://template/%C0%AF/data"));      // an overlong "/"
    CHECK_FALSE(t.match("test://template/%ED%A0%80/data"));   // a surrogate
    CHECK_FALSE(t.match("test://template/%F4%90%80%80/data"));  // above U+10FFFF
    CHECK_FALSE(uri_template("file:///{+path}").match("file:///a/%E2%82"));
    CHECK(t.match("test://template/%F0%9F%98%80/data") == value_map{{"id", "\xF0\x9F\x98\x80"}});
    // A span may not end inside a character: the shortest reading that is UTF-8 wins.
    CHECK(uri_template("{a}{b}").match("%C3%A9") == value_map{{"a", ""}, {"b", "\xC3\xA9"}});
    CHECK(uri_template("{a}%A9{b}").match("%C3%A9%A9") == value_map{{"a", "\xC3\xA9"}, {"b", ""}});
  }

  TEST_CASE("matched values are percent-decoded whatever the case of the hex digits") {
    const uri_template repo("repo://{owner}/{repo}/issues/{number}");
    const auto m = repo.match("repo://my%20org/caf%c3%a9/issues/%34%32");
    REQUIRE(m);
    CHECK(m->at("owner") == "my org");
    CHECK(m->at("repo") == "caf\xC3\xA9");
    CHECK(m->at("number") == "42");
  }

  TEST_CASE("reserved and fragment values are percent-decoded too") {
    // Decided in the header: a handler gets data, never URI syntax, whichever operator
    // the template used; "%2F" and "/" therefore read back alike.
    const auto m = uri_template("file:///{+path}").match("file:///my%20docs/a%2Fb.txt");
    REQUIRE(m);
    CHECK(m->at("path") == "my docs/a/b.txt");
    const auto f = uri_template("X{#frag}").match("X#a%20b/c");
    REQUIRE(f);
    CHECK(f->at("frag") == "a b/c");
  }

  TEST_CASE("a percent-encoded slash in a level 1 variable decodes to a slash") {
    // The URI keeps segments apart; the decoded value does not, so handlers must treat
    // values as untrusted (e.g. before using one as a file name).
    const auto m = uri_template("test://template/{id}/data").match("test://template/..%2F..%2Fetc/data");
    REQUIRE(m);
    CHECK(m->at("id") == "../../etc");
  }

  TEST_CASE("non-ASCII literal text matches in its encoded form only") {
    const uri_template t("caf\xC3\xA9/{v}");
    const auto m = t.match("caf%C3%A9/1");
    REQUIRE(m);
    CHECK(m->at("v") == "1");
    CHECK_FALSE(t.match("caf\xC3\xA9/1"));
  }

  TEST_CASE("an empty value matches where the RFC expands an empty string") {
    // RFC 6570 defines "" as expanding to nothing, so test://template//data is an
    // expansion of test://template/{id}/data; refusing it would break the round trip.
    const auto m = uri_template("test://template/{id}/data").match("test://template//data");
    REQUIRE(m);
    CHECK(m->at("id") == "");
    const auto whole = uri_template("file:///{+path}").match("file:///");
    REQUIRE(whole);
    CHECK(whole->at("path") == "");
  }

  TEST_CASE("a fragment expression tells an undefined variable from an empty one") {
    // The one place expansion distinguishes them: "#" for "", nothing for undefined.
    const uri_template t("X{#v}");
    const auto undefined = t.match("X");
    REQUIRE(undefined);
    CHECK(undefined->empty());
    const auto empty = t.match("X#");
    REQUIRE(empty);
    CHECK(empty->at("v") == "");
    const auto defined = t.match("X#a/b#c");
    REQUIRE(defined);
    CHECK(defined->at("v") == "a/b#c");
    CHECK_FALSE(t.match("Xa"));
  }

  TEST_CASE("ambiguous URIs are split leftmost-shortest") {
    // Several decompositions can expand to the same URI; the documented rule makes the
    // choice reproducible instead of an accident of the search order.
    const auto slash = uri_template("{+a}/{+b}").match("x/y/z");
    REQUIRE(slash);
    CHECK(*slash == value_map{{"a", "x"}, {"b", "y/z"}});
    const auto adjacent = uri_template("{+a}{+b}").match("xy");
    REQUIRE(adjacent);
    CHECK(*adjacent == value_map{{"a", ""}, {"b", "xy"}});
    const auto dotted = uri_template("{a}.{b}").match("a.b.c");
    REQUIRE(dotted);
    CHECK(*dotted == value_map{{"a", "a"}, {"b", "b.c"}});
    const auto fragment = uri_template("{+a}{#b}").match("x#y");
    REQUIRE(fragment);
    CHECK(*fragment == value_map{{"a", "x"}, {"b", "y"}});
  }

  TEST_CASE("a repeated variable must decode to the same value at each occurrence") {
    const uri_template t("{a}-{a}");
    CHECK_FALSE(t.match("1-2"));
    CHECK(t.match("1-1") == value_map{{"a", "1"}});
    CHECK(t.match("%41-A") == value_map{{"a", "A"}});
    // The shortest choice for the first {+a} ("x") fails at the second; the search must
    // go back and try the longer one.
    CHECK(uri_template("{+a}/{+a}").match("x/y/x/y") == value_map{{"a", "x/y"}});
    // Zero-length {a} agrees with an undefined {#a} and with an empty one.
    CHECK(uri_template("{a}{#a}").match("") == value_map{});
    CHECK(uri_template("{a}{#a}").match("#") == value_map{{"a", ""}});
    CHECK_FALSE(uri_template("{a}{#a}").match("x#y"));
    CHECK(uri_template("{a}{#a}").match("x#x") == value_map{{"a", "x"}});
  }

  TEST_CASE("long URIs match in linear time, even when the match fails late") {
    // A naive backtracking matcher takes quadratic time on {+a}{+b}x against a long run
    // with no x; a client controls the URI, so that would be a denial of service.
    const std::string run(200'000, 'a');
    const auto whole = uri_template("file:///{+path}").match("file:///" + run);
    REQUIRE(whole);
    CHECK(whole->at("path").size() == run.size());
    CHECK_FALSE(uri_template("{+a}{+b}x").match(run));
    CHECK_FALSE(uri_template("{a}/{b}").match(run));
  }

  TEST_CASE("repeated variables cannot make matching exponential: the search stops at its step limit") {
    // With repeated variables a failing match tries every way to cut the URI, and the
    // URI is the client's: 403 bytes took over 12 s before the search had a budget.
    // Steps are counted rather than timed, so the bound holds on any machine.
    const std::string run = std::string(395, 'a') + "b";
    const uri_template square("test://{a}{b}{c}{d}{a}{b}{c}{d}");
    std::size_t steps = 0;
    CHECK_FALSE(square.match("test://" + run, steps));
    CHECK(steps <= square.step_limit(7 + run.size()));
    const uri_template dashes("test://{x}-{y}-{z}-{x}-{y}-{z}");
    std::string dashed = "test://";
    for (int i = 0; i < 79; ++i) dashed += "a-";
    dashed += "b";
    steps = 0;
    CHECK_FALSE(dashes.match(dashed, steps));
    CHECK(steps <= dashes.step_limit(dashed.size()));
    // What the budget is not for: a short repeated match, and any template without a
    // repeated variable, whose search never backtracks.
    steps = 0;
    CHECK(square.match("test://xyxy", steps) == value_map{{"a", ""}, {"b", ""}, {"c", ""}, {"d", "xy"}});
    CHECK(steps < 100);
    steps = 0;
    CHECK(uri_template("file:///{+path}").match("file:///" + std::string(200'000, 'a'), steps));
    CHECK(steps <= 3 * 200'010);
    steps = 0;
    CHECK_FALSE(uri_template("{a}{b}{c}{d}x").match(std::string(10'000, 'a'), steps));
    CHECK(steps == 0);  // the table alone refuses it
  }

  TEST_CASE("a template with no expression matches only its own text") {
    const uri_template t("config://app%20settings");
    CHECK(t.expand({}) == "config://app%20settings");
    CHECK(t.match("config://app%20settings") == value_map{});
    CHECK_FALSE(t.match("config://app%20Settings"));
    CHECK(uri_template("").match("") == value_map{});
  }

  TEST_CASE("malformed braces are refused with the offset of the problem") {
    CHECK(refusal("test://{id") ==
          R"(URI template "test://{id": the "{" at offset 7 opens an expression that is never closed with "}".)");
    CHECK(refusal("{a{b}") ==
          R"(URI template "{a{b}": the "{" at offset 0 opens an expression that is never closed with "}".)");
    CHECK(refusal("a}b") == R"(URI template "a}b": the "}" at offset 1 closes no expression; write %7D for a literal brace.)");
    CHECK(refusal("x{}") == R"(URI template "x{}": the expression at offset 1 is empty; name a variable, as in {id}.)");
    CHECK(refusal("{+}") ==
          R"(URI template "{+}": the expression at offset 0 has the "+" operator but no variable; name one, as in {+path}.)");
  }

  TEST_CASE("level 3 and reserved operators are refused with a sentence naming levels 1 and 2") {
    CHECK(refusal("x{/path}") ==
          R"(URI template "x{/path}": the "/" operator at offset 2 belongs to RFC 6570 level 3, and only levels 1 and 2 are supported: {var}, {+var} and {#var}.)");
    for (const std::string_view op : {".", ";", "?", "&"}) {
      CAPTURE(op);
      const std::string text = "{" + std::string(op) + "x}";
      CHECK(refusal(text) == "URI template \"" + text + "\": the \"" + std::string(op) +
                                 "\" operator at offset 1 belongs to RFC 6570 level 3, and only levels 1 and 2 are "
                                 "supported: {var}, {+var} and {#var}.");
    }
    CHECK(refusal("{=x}") ==
          R"(URI template "{=x}": the "=" operator at offset 1 is reserved by RFC 6570 for future extensions, and only levels 1 and 2 are supported: {var}, {+var} and {#var}.)");
    for (const std::string_view op : {",", "!", "@", "|"}) {
      CAPTURE(op);
      CHECK(refusal("{" + std::string(op) + "x}").find("is reserved by RFC 6570 for future extensions") != std::string::npos);
    }
  }

  TEST_CASE("lists, prefixes and explodes are refused as levels 3 and 4") {
    CHECK(refusal("{a,b}") ==
          R"(URI template "{a,b}": the expression at offset 0 lists several variables, which is RFC 6570 level 3, and only levels 1 and 2 are supported: {var}, {+var} and {#var}; write one variable per expression.)");
    CHECK(refusal("{+a,b}").find("lists several variables") != std::string::npos);
    CHECK(refusal("{var:3}") ==
          R"(URI template "{var:3}": the ":" prefix modifier at offset 4 belongs to RFC 6570 level 4, and only levels 1 and 2 are supported: {var}, {+var} and {#var}.)");
    CHECK(refusal("{#list*}") ==
          R"(URI template "{#list*}": the "*" explode modifier at offset 6 belongs to RFC 6570 level 4, and only levels 1 and 2 are supported: {var}, {+var} and {#var}.)");
  }

  TEST_CASE("variable names outside the RFC varname grammar are refused") {
    CHECK(refusal("{a-b}") ==
          R"(URI template "{a-b}": the character "-" at offset 2 cannot appear in a variable name: names use letters, digits, "_" and %XX triplets, with single dots only between them.)");
    CHECK(refusal("{a b}").find("the character \" \" at offset 2 cannot appear in a variable name") != std::string::npos);
    CHECK(refusal("{a..b}") ==
          R"(URI template "{a..b}": the variable name "a..b" at offset 1 is not valid: names use letters, digits, "_" and %XX triplets, with single dots only between them.)");
    CHECK(refusal("{a.}").find("the variable name \"a.\" at offset 1 is not valid") != std::string::npos);
    CHECK(refusal("{+.a}").find("the variable name \".a\" at offset 2 is not valid") != std::string::npos);
    CHECK(refusal("{a%4}").find("the variable name \"a%4\" at offset 1 is not valid") != std::string::npos);
    CHECK(refusal("{a.b_1%41}") == "(accepted)");
  }

  TEST_CASE("literal characters the RFC excludes are refused with the encoding to use") {
    CHECK(refusal("a b{x}") ==
          R"(URI template "a b{x}": the character " " at offset 1 is not allowed outside an expression; percent-encode it as %20.)");
    CHECK(refusal("it's/{x}").find("the character \"'\" at offset 2 is not allowed outside an expression; "
                                   "percent-encode it as %27") != std::string::npos);
    CHECK(refusal("a\tb") ==
          R"(URI template "a\x09b": the character "\x09" at offset 1 is not allowed outside an expression; percent-encode it as %09.)");
    CHECK(refusal("100%{x}") ==
          R"(URI template "100%{x}": the "%" at offset 3 does not start a %XX triplet; write %25 for a literal percent sign.)");
    CHECK(refusal("\xFF{x}").find("the bytes at offset 0 are not valid UTF-8") != std::string::npos);
    CHECK(refusal("\xC0\xAF").find("not valid UTF-8") != std::string::npos);
    CHECK(refusal("a\xC2\x85").find("the code point U+0085 at offset 1 is not allowed in a URI template") !=
          std::string::npos);
    CHECK(refusal("\xEF\xBF\xBF").find("U+FFFF") != std::string::npos);
    CHECK(refusal("\xF3\xA0\x80\x81").find("the code point U+E0001 at offset 0") != std::string::npos);
    CHECK(refusal("\xF4\x8F\xBF\xBE").find("the code point U+10FFFE at offset 0") != std::string::npos);
    CHECK(refusal("\xF0\x9F\x98\x80/{x}") == "(accepted)");
  }
}
