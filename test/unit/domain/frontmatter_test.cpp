// SPDX-License-Identifier: BSL-1.0
/// @file
/// `parse_frontmatter` against what a YAML parser makes of the same text. The expected
/// values were produced by the `yaml` package (YAML 1.2, core schema) that the official
/// conformance suite parses skills with, since a client compares a skill's entry with its
/// own parse of the file and refuses the skill on any difference.
#include <droid/domain/mcp/frontmatter.hpp>

#include <stdexcept>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

namespace {

/// JSON equality where numbers compare by value (YAML's 1e3 is the integer 1000 to a
/// JavaScript client, a double here).
bool same(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_number() && b.is_number()) return a.to_number<double>() == b.to_number<double>();
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto& x = a.as_object();
    const auto& y = b.as_object();
    if (x.size() != y.size()) return false;
    for (const auto& m : x)
      if (!y.contains(m.key()) || !same(m.value(), y.at(m.key()))) return false;
    return true;
  }
  if (a.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i])) return false;
    return true;
  }
  return a == b;
}

void check(const std::string& yaml, const char* expected) {
  const boost::json::object got = droid::parse_frontmatter("---\n" + yaml + "\n---\n# Body\n");
  const boost::json::value want = boost::json::parse(expected);
  CAPTURE(yaml);
  CAPTURE(boost::json::serialize(got));
  CHECK(same(got, want));
}

std::string refusal(const std::string& markdown) {
  try {
    (void)droid::parse_frontmatter(markdown);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_SUITE("domain/frontmatter") {
  TEST_CASE("scalars resolve by YAML 1.2's core schema, as a client's parser reads them") {
    check("name: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0",
          R"({"name":"pdf-processing","description":"Extract, fill, and assemble PDF documents","license":"Apache-2.0"})");
    check("name: x\ndescription: d\nversion: 2.1.0\ncount: 42\nneg: -7\nratio: 1.5\nexp: 1e3\nyes: true\nno: "
          "False\nnothing: ~\nempty:\noct: 0o17\nhex: 0x1F\nquoted: \"1.0\"\nsingle: 'it''s'",
          R"({"name":"x","description":"d","version":"2.1.0","count":42,"neg":-7,"ratio":1.5,"exp":1000,"yes":true,)"
          R"("no":false,"nothing":null,"empty":null,"oct":15,"hex":31,"quoted":"1.0","single":"it's"})");
  }

  TEST_CASE("nested mappings, block and flow sequences, and mappings inside sequence items") {
    check("name: x\ndescription: d\nmetadata:\n  author: me\n  version: \"1.0\"\n  tags: [a, \"b c\", 3]\n"
          "allowed-tools:\n- Read\n- Bash(git:*)\nlist:\n  - one\n  - k: v\n    k2: v2",
          R"({"name":"x","description":"d","metadata":{"author":"me","version":"1.0","tags":["a","b c",3]},)"
          R"j("allowed-tools":["Read","Bash(git:*)"],"list":["one",{"k":"v","k2":"v2"}]})j");
  }

  TEST_CASE("folded and literal block scalars with their chomping, multi-line plain values, comments, escapes") {
    check("name: x\ndescription: >\n  A long description\n  over two lines.\n\n  A new paragraph.\nliteral: |\n  line "
          "one\n    indented\n  line three\nstrip: |-\n  no newline\nkeep: |+\n  kept\n\nafter: 1",
          R"({"name":"x","description":"A long description over two lines.\nA new paragraph.\n",)"
          R"("literal":"line one\n  indented\nline three\n","strip":"no newline","keep":"kept\n\n","after":1})");
    check("name: x\ndescription: A plain value\n  continued here\n  and here # comment\nother: \"esc \\u00e9 \\\"q\\\" "
          "\\n\"  # c",
          R"({"name":"x","description":"A plain value continued here and here","other":"esc \u00e9 \"q\" \n"})");
    check("# leading comment\nname: x   # trailing\n\ndescription: d\n", R"({"name":"x","description":"d"})");
    // CRLF line ends and a byte order mark read as the same file.
    CHECK(droid::parse_frontmatter("\xEF\xBB\xBF---\r\nname: x\r\ndescription: d\r\n---\r\n") ==
          boost::json::parse(R"({"name":"x","description":"d"})"));
  }

  TEST_CASE("what it cannot read exactly is refused, naming the line") {
    CHECK(refusal("# no frontmatter\n").find("line 1") != std::string::npos);
    CHECK(refusal("---\nname: x\n").find("no closing") != std::string::npos);
    CHECK(refusal("---\nname: x\nname: y\n---\n").find("line 3: the key \"name\" appears twice") != std::string::npos);
    CHECK(refusal("---\nname: x\n\tdescription: d\n---\n").find("tabs") != std::string::npos);
    CHECK(refusal("---\nname: &a x\n---\n").find("anchors") != std::string::npos);
    CHECK(refusal("---\nname: *a\n---\n").find("aliases") != std::string::npos);
    CHECK(refusal("---\nname: !!str x\n---\n").find("tags") != std::string::npos);
    CHECK(refusal("---\nmeta: {a: 1}\n---\n").find("flow mappings") != std::string::npos);
    CHECK(refusal("---\nname: \"open\n  more\"\n---\n").find("line 2: a quoted value must end on its line") !=
          std::string::npos);
    CHECK(refusal("---\n- a\n- b\n---\n").find("sequence") != std::string::npos);
    CHECK(refusal("---\nn: .inf\n---\n").find("no JSON form") != std::string::npos);
    CHECK(refusal("---\nname: x\n   extra: 1\n---\n").find("line 3") != std::string::npos);
    CHECK(droid::parse_frontmatter("---\n---\n").empty());
  }
}
