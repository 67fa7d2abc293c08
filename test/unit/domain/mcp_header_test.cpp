// SPDX-License-Identifier: BSL-1.0
/// @file
/// `x-mcp-header` (MCP 2026-07-28, SEP-2243): the C++ hint that puts it in a typed tool's
/// schema, reading header parameters out of raw schemas, and every refusal.
#include <droid/domain/mcp/mcp_header.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/domain/mcp/schema.hpp>

namespace {

enum class tier { gold, silver };
BOOST_DESCRIBE_ENUM(tier, gold, silver)

struct location {
  std::string region;
  std::optional<std::string> zone;
};
BOOST_DESCRIBE_STRUCT(location, (), (region, zone))

struct routed {
  std::string tenant;
  std::int64_t shard = 0;
  std::optional<bool> dry_run;
  tier level = tier::gold;
  location where;
  std::string note;
};
BOOST_DESCRIBE_STRUCT(routed, (), (tenant, shard, dry_run, level, where, note))

struct with_number {
  double ratio = 0;
};
BOOST_DESCRIBE_STRUCT(with_number, (), (ratio))
struct with_vector {
  std::vector<std::string> tags;
};
BOOST_DESCRIBE_STRUCT(with_vector, (), (tags))
struct with_struct {
  location where;
};
BOOST_DESCRIBE_STRUCT(with_struct, (), (where))
struct with_any {
  boost::json::value blob;
};
BOOST_DESCRIBE_STRUCT(with_any, (), (blob))
struct with_empty {
  std::string a;
};
BOOST_DESCRIBE_STRUCT(with_empty, (), (a))
struct with_space {
  std::string a;
};
BOOST_DESCRIBE_STRUCT(with_space, (), (a))
struct with_colon {
  std::string a;
};
BOOST_DESCRIBE_STRUCT(with_colon, (), (a))
struct with_twins {
  std::string a;
  int b = 0;
};
BOOST_DESCRIBE_STRUCT(with_twins, (), (a, b))

}  // namespace

template <>
struct droid::field_hints<location> {
  static constexpr droid::field_hint fields[] = {{"region", "", false, "Region"}, {"zone", "", false, "Zone"}};
};
template <>
struct droid::field_hints<routed> {
  static constexpr droid::field_hint fields[] = {
      {"tenant", "Who pays", false, "Tenant"},
      {"shard", "", true, "Shard"},
      {"dry_run", "", false, "Dry-Run"},
      {"level", "", true, "Tier"},
      {"note", "Free text"},
  };
};
template <>
struct droid::field_hints<with_number> {
  static constexpr droid::field_hint fields[] = {{"ratio", "", false, "Ratio"}};
};
template <>
struct droid::field_hints<with_vector> {
  static constexpr droid::field_hint fields[] = {{"tags", "", false, "Tags"}};
};
template <>
struct droid::field_hints<with_struct> {
  static constexpr droid::field_hint fields[] = {{"where", "", false, "Where"}};
};
template <>
struct droid::field_hints<with_any> {
  static constexpr droid::field_hint fields[] = {{"blob", "", false, "Blob"}};
};
template <>
struct droid::field_hints<with_empty> {
  static constexpr droid::field_hint fields[] = {{"a", "", false, ""}};
};
template <>
struct droid::field_hints<with_space> {
  static constexpr droid::field_hint fields[] = {{"a", "", false, "Re gion"}};
};
template <>
struct droid::field_hints<with_colon> {
  static constexpr droid::field_hint fields[] = {{"a", "", false, "Region:"}};
};
template <>
struct droid::field_hints<with_twins> {
  static constexpr droid::field_hint fields[] = {{"a", "", false, "Region"}, {"b", "", false, "REGION"}};
};

namespace {

using droid::header_param_type;

/// The message `header_params_of` refuses `schema` with, or "" when it accepts it.
std::string refusal(const boost::json::object& schema) {
  try {
    (void)droid::header_params_of("route", schema);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

std::string refusal(const char* schema_text) { return refusal(boost::json::parse(schema_text).as_object()); }

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("domain/mcp/mcp_header") {
  TEST_CASE("a field hint's mcp_header puts x-mcp-header on that member's property and nowhere else") {
    const boost::json::object s = droid::schema_of<routed>();
    const auto& props = s.at("properties").as_object();
    CHECK(props.at("tenant").at("x-mcp-header") == "Tenant");
    CHECK(props.at("tenant").at("description") == "Who pays");
    CHECK(props.at("shard").at("x-mcp-header") == "Shard");
    CHECK(props.at("dry_run").at("x-mcp-header") == "Dry-Run");
    CHECK(props.at("level").at("x-mcp-header") == "Tier");
    // Nested structs carry their own hints, inlined with the struct.
    CHECK(props.at("where").at("properties").at("region").at("x-mcp-header") == "Region");
    // A hint that says nothing about a header adds none (its view is null, not "").
    CHECK_FALSE(props.at("note").as_object().contains("x-mcp-header"));
  }

  TEST_CASE("header parameters come out of a typed tool's schema with their paths and types") {
    const std::vector<droid::header_param> params = droid::header_params_of("route", droid::schema_of<routed>());
    REQUIRE(params.size() == 6);
    CHECK(params[0].header == "Tenant");
    CHECK(params[0].path == std::vector<std::string>{"tenant"});
    CHECK(params[0].type == header_param_type::string);
    CHECK(params[1].header == "Shard");
    CHECK(params[1].type == header_param_type::integer);
    CHECK(params[2].header == "Dry-Run");
    CHECK(params[2].type == header_param_type::boolean);
    // A described enum is a string parameter whose value is the enumerator's name.
    CHECK(params[3].header == "Tier");
    CHECK(params[3].type == header_param_type::string);
    CHECK(params[4].header == "Region");
    CHECK(params[4].path == std::vector<std::string>{"where", "region"});
    CHECK(params[5].header == "Zone");
    CHECK(params[5].path == std::vector<std::string>{"where", "zone"});
  }

  TEST_CASE("a hint on a member that is not a bool, an integer or a string is refused, naming tool and member") {
    // The author learns at registration, instead of finding the tool missing from a
    // client's list (clients must drop tools whose x-mcp-header breaks a rule).
    const std::string number = refusal(droid::schema_of<with_number>());
    CHECK(contains(number, "tool \"route\""));
    CHECK(contains(number, "`ratio`"));
    CHECK(contains(number, "only string, integer and boolean parameters"));
    CHECK(contains(number, "\"number\""));
    CHECK(contains(refusal(droid::schema_of<with_vector>()), "`tags` has x-mcp-header \"Tags\""));
    CHECK(contains(refusal(droid::schema_of<with_vector>()), "its type is \"array\""));
    CHECK(contains(refusal(droid::schema_of<with_struct>()), "its type is \"object\""));
    CHECK(contains(refusal(droid::schema_of<with_any>()), "states no \"type\""));
  }

  TEST_CASE("an empty header name, a non-token one and a case-insensitive duplicate are refused") {
    const std::string empty = refusal(droid::schema_of<with_empty>());
    CHECK(contains(empty, "tool \"route\""));
    CHECK(contains(empty, "`a`"));
    CHECK(contains(empty, "is empty"));
    CHECK(contains(refusal(droid::schema_of<with_space>()), "\"Re gion\" of `a` is not an HTTP token"));
    CHECK(contains(refusal(droid::schema_of<with_colon>()), "is not an HTTP token"));
    const std::string twins = refusal(droid::schema_of<with_twins>());
    CHECK(contains(twins, "\"REGION\" of `b` repeats \"Region\" of `a`"));
    CHECK(contains(twins, "without regard to case"));
  }

  TEST_CASE("every tchar is accepted in a header name, and control characters and delimiters are not") {
    CHECK(droid::is_http_token("!#$%&'*+-.^_`|~09AZaz"));
    for (const char* bad : {"", "a b", "a:b", "a\r\nb", "a\tb", "a(b)", "a,b", "a/b", "a\"b", "a@b", "a=b", "a{b}",
                            "a[b]", "a?b", "a;b", "a\\b", "caf\xc3\xa9"}) {
      CAPTURE(bad);
      CHECK_FALSE(droid::is_http_token(bad));
    }
  }

  TEST_CASE("a raw schema's header parameters are found through chains of properties at any depth") {
    const boost::json::value schema = boost::json::parse(R"({
        "type": "object",
        "properties": {
          "region": {"type": "string", "x-mcp-header": "Region"},
          "request": {"type": "object", "properties": {
            "target": {"type": "object", "properties": {
              "shard": {"type": "integer", "x-mcp-header": "Shard"}}},
            "flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"}}},
          "a/b~c": {"type": "string", "x-mcp-header": "Odd"}
        },
        "default": {"x-mcp-header": "data, not a schema"},
        "examples": [{"x-mcp-header": "data too"}]
      })");
    const auto params = droid::header_params_of("route", schema.as_object());
    REQUIRE(params.size() == 4);
    CHECK(params[0].path == std::vector<std::string>{"region"});
    CHECK(params[1].path == std::vector<std::string>{"request", "target", "shard"});
    CHECK(params[1].type == header_param_type::integer);
    CHECK(params[2].path == std::vector<std::string>{"request", "flag"});
    CHECK(params[2].type == header_param_type::boolean);
    CHECK(params[3].path == std::vector<std::string>{"a/b~c"});
    CHECK(droid::header_params_of("route", boost::json::object{{"type", "object"}}).empty());
  }

  TEST_CASE("an x-mcp-header under items, anyOf, $ref targets and other subschemas is refused") {
    // None of these has one fixed place in the arguments, so no one header can mirror it;
    // skipping them silently would leave the author believing they are checked.
    struct expectation {
      const char* schema;
      const char* where;
    };
    for (const expectation& e : {
             expectation{R"({"properties":{"tags":{"type":"array","items":{"type":"string","x-mcp-header":"Tag"}}}})",
                         "/properties/tags/items"},
             expectation{
                 R"({"properties":{"t":{"type":"array","prefixItems":[{"type":"string","x-mcp-header":"T"}]}}})",
                 "/properties/t/prefixItems/0"},
             expectation{R"({"anyOf":[{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}]})",
                         "/anyOf/0/properties/r"},
             expectation{R"({"properties":{"r":{"oneOf":[{"type":"string","x-mcp-header":"R"}]}}})",
                         "/properties/r/oneOf/0"},
             expectation{R"({"allOf":[{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}]})",
                         "/allOf/0/properties/r"},
             expectation{R"({"not":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}})", "/not/properties/r"},
             expectation{R"({"if":{"properties":{"r":{"type":"string"}}},
                             "then":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}})",
                         "/then/properties/r"},
             expectation{R"({"properties":{"r":{"$ref":"#/$defs/region"}},
                             "$defs":{"region":{"type":"string","x-mcp-header":"R"}}})",
                         "/$defs/region"},
             expectation{R"({"additionalProperties":{"type":"string","x-mcp-header":"R"}})", "/additionalProperties"},
             expectation{R"({"patternProperties":{"^r":{"type":"string","x-mcp-header":"R"}}})",
                         "/patternProperties/^r"},
         }) {
      CAPTURE(e.schema);
      const std::string why = refusal(e.schema);
      CHECK(contains(why, "tool \"route\""));
      CHECK(contains(why, "cannot be reached from the root of inputSchema through `properties` alone"));
      CHECK(contains(why, e.where));
    }
  }

  TEST_CASE("a raw schema whose x-mcp-header breaks a value or type rule is refused") {
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"number","x-mcp-header":"R"}}})"), "its type is \"number\""));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"null","x-mcp-header":"R"}}})"), "its type is \"null\""));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"array","x-mcp-header":"R"}}})"), "\"array\""));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":["string","integer"],"x-mcp-header":"R"}}})"),
                   "allows both \"string\" and \"integer\""));
    CHECK(contains(
        refusal(R"({"properties":{"r":{"$ref":"#/$defs/x","x-mcp-header":"R"}},"$defs":{"x":{"type":"string"}}})"),
        "states no \"type\""));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"string","x-mcp-header":7}}})"), "must be a string"));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"string","x-mcp-header":""}}})"), "is empty"));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"string","x-mcp-header":"A\r\nB"}}})"), "not an HTTP token"));
    CHECK(contains(refusal(R"({"properties":{"r":{"type":"string","x-mcp-header":"Région"}}})"), "not an HTTP token"));
    CHECK(contains(refusal(R"({"properties":{"a":{"type":"string","x-mcp-header":"Region"},
                                             "b":{"type":"object","properties":{
                                               "c":{"type":"string","x-mcp-header":"region"}}}}})"),
                   "\"region\" of `b.c` repeats \"Region\" of `a`"));
    CHECK(contains(refusal(R"({"type":"object","x-mcp-header":"Root"})"), "the root of inputSchema"));
  }
}
