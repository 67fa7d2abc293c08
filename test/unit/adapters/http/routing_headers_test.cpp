// SPDX-License-Identifier: BSL-1.0
/// @file
/// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against the body (MCP 2026-07-28,
/// SEP-2243), sans-io. Requests go through the real request parser, so header names
/// arrive lower-cased and values trimmed exactly as the listener will see them; tools are
/// registered on a real server, so `header_params` is what registration extracts.
#include "adapters/primary/transport/http/access/routing_headers.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <doctest/doctest.h>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/application/server/hosting.hpp>
#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>

#include "adapters/primary/transport/http/wire/request_parser.hpp"

using droid::http::detail::check_routing_headers;
using droid::http::detail::decode_header_value;
using droid::http::detail::encode_header_value;
using droid::http::detail::request;
using droid::http::detail::request_parser;

namespace {

struct route_args {
  std::string region;
  std::int64_t shard = 0;
  std::optional<bool> dry_run;
  std::optional<std::string> label;
};
BOOST_DESCRIBE_STRUCT(route_args, (), (region, shard, dry_run, label))

}  // namespace

template <>
struct droid::field_hints<route_args> {
  static constexpr droid::field_hint fields[] = {
      {"region", "Where to run", false, "Region"},
      {"shard", "", true, "Shard"},
      {"dry_run", "", false, "Dry-Run"},
      {"label", "", false, "Label"},
  };
};

namespace {

struct bad_number {
  double ratio = 0;
};
BOOST_DESCRIBE_STRUCT(bad_number, (), (ratio))

}  // namespace

template <>
struct droid::field_hints<bad_number> {
  static constexpr droid::field_hint fields[] = {{"ratio", "", false, "Ratio"}};
};

namespace {

/// Parses a POST with the header lines `headers` (each ending in CRLF) and `body`, as
/// the listener would.
request parse(const std::string& headers, const std::string& body) {
  const std::string raw = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + headers +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  request_parser p;
  std::size_t used = 0;
  while (used < raw.size() && !p.complete() && !p.failed()) used += p.feed(raw.data() + used, raw.size() - used);
  REQUIRE_FALSE(p.failed());
  REQUIRE(p.complete());
  return p.take();
}

boost::json::object object_of(const char* json) { return boost::json::parse(json).as_object(); }

/// A server with a typed tool (`route`) and a raw-schema tool (`deep`) that mirror
/// arguments into headers, and one that mirrors nothing (`plain`).
droid::server& registry() {
  static droid::server server({.name = "routing", .version = "1"});
  static const bool registered = [] {
    server.tool("route", "Runs somewhere",
                [](droid::tool_context&, route_args) -> droid::task<std::string> { co_return "ok"; });
    droid::tool_info deep;
    deep.name = "deep";
    deep.description = "Takes a nested target";
    deep.input_schema = object_of(R"({"type":"object","properties":{
        "target":{"type":"object","properties":{
          "zone":{"type":"string","x-mcp-header":"Zone"},
          "rack":{"type":"object","properties":{"slot":{"type":"integer","x-mcp-header":"Slot"}}}}}}})");
    server.tool(std::move(deep),
                [](droid::tool_context&, boost::json::object) -> droid::task<std::string> { co_return "ok"; });
    server.tool("plain", "Mirrors nothing", [](droid::tool_context&) -> droid::task<std::string> { co_return "ok"; });
    return true;
  }();
  (void)registered;
  return server;
}

/// The verdict on a POST carrying `headers` and the JSON-RPC `body`: nothing when the
/// headers agree with the body, else the -32020 message.
std::optional<std::string> verdict(const std::string& headers, const std::string& body) {
  const request req = parse(headers, body);
  droid::ir::decoded d = droid::ir::decode(req.body);
  REQUIRE(std::holds_alternative<droid::ir::message>(d));
  const droid::ir::message& m = std::get<droid::ir::message>(d);
  std::shared_ptr<const droid::detail::tool_entry> tool;
  if (m.method() == "tools/call")
    if (const auto name = droid::ir::string_member(m.params(), "name")) tool = droid::hosting::find_tool(registry(), *name);
  return check_routing_headers(req, m.method(), m.params(), tool.get());
}

/// A tools/call of `tool` with `arguments` (JSON text).
std::string call(const std::string& tool, const std::string& arguments) {
  return R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":)" +
         arguments + "}}";
}

/// The headers a well-behaved client sends for a call of `tool`, plus `extra` lines.
std::string call_headers(const std::string& tool, const std::string& extra = {}) {
  return "Mcp-Method: tools/call\r\nMcp-Name: " + tool + "\r\n" + extra;
}

/// A call of `route` with `region` and the `Mcp-Param-Region` line `header_line` (or
/// none when empty).
std::optional<std::string> region(const std::string& body_value, const std::string& header_line) {
  return verdict(call_headers("route", header_line.empty() ? "" : "Mcp-Param-Region: " + header_line + "\r\n"),
                 call("route", R"({"region":)" + body_value + "}"));
}

bool contains(const std::optional<std::string>& text, const char* part) {
  return text && text->find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("adapters/http/routing_headers") {
  TEST_CASE(
      "header values decode strictly: base64 needs its padding and its alphabet, and a partial sentinel is literal") {
    // The official conformance suite's cases, verbatim.
    CHECK(decode_header_value("=?base64?SGVsbG8=?=").text == "Hello");
    CHECK(decode_header_value("=?base64?SGVsbG8=?=").ok());
    CHECK_FALSE(decode_header_value("=?base64?SGVsbG8?=").ok());
    CHECK_FALSE(decode_header_value("=?base64?SGVs!!!bG8=?=").ok());
    CHECK(decode_header_value("SGVsbG8=").text == "SGVsbG8=");
    CHECK(decode_header_value("=?base64?SGVsbG8=").text == "=?base64?SGVsbG8=");
    // The markers are case-sensitive: anything else is a literal value.
    CHECK(decode_header_value("=?BASE64?SGVsbG8=?=").text == "=?BASE64?SGVsbG8=?=");
    CHECK(decode_header_value("SGVsbG8=?=").text == "SGVsbG8=?=");
    // More strictness: base64url characters, inner padding, too much padding, padding
    // bits that are not zero (a second spelling of "Hello"), whitespace inside.
    for (const char* bad :
         {"=?base64?SGVs-G8=?=", "=?base64?SGVs_G8=?=", "=?base64?SG=sbG8=?=", "=?base64?SGVsbG8===?=",
          "=?base64?SGVsbG9=?=", "=?base64?SGVs bG8=?=", "=?base64?S?=", "=?base64?SGV?="}) {
      CAPTURE(bad);
      const auto v = decode_header_value(bad);
      CHECK_FALSE(v.ok());
      CHECK(v.text.empty());
      CHECK(std::string(v.problem).find("is not valid base64") == 0);
    }
    CHECK(decode_header_value("=?base64?\?=").ok());
    CHECK(decode_header_value("=?base64?\?=").text.empty());
    CHECK(decode_header_value("=?base64?SGk=?=").text == "Hi");
    CHECK(decode_header_value("=?base64?SGV5?=").text == "Hey");
  }

  TEST_CASE("header values lose surrounding whitespace, keep inner whitespace, and refuse other control characters") {
    CHECK(decode_header_value("  us-west \t").text == "us-west");
    CHECK(decode_header_value("\t=?base64?SGVsbG8=?= ").text == "Hello");
    CHECK(decode_header_value("New York\tCity").text == "New York\tCity");
    for (const char* bad : {"a\x01z", "a\x7fz", "a\nz", "a\rz", "caf\xc3\xa9"}) {
      CAPTURE(bad);
      const auto v = decode_header_value(bad);
      CHECK_FALSE(v.ok());
      CHECK(std::string(v.problem).find("outside visible ASCII") != std::string::npos);
    }
  }

  TEST_CASE("values a header cannot carry as they are are base64-encoded, and decode back") {
    CHECK(encode_header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?=");
    CHECK(encode_header_value("us-west-2") == "us-west-2");
    CHECK(encode_header_value("New York") == "New York");
    CHECK(encode_header_value(" padded") == "=?base64?IHBhZGRlZA==?=");
    CHECK(encode_header_value("line\nbreak") == "=?base64?bGluZQpicmVhaw==?=");
    // A literal that looks like the sentinel would be read back as base64.
    CHECK(encode_header_value("=?base64?SGVsbG8=?=") == "=?base64?PT9iYXNlNjQ/U0dWc2JHOD0/PQ==?=");
    CHECK(encode_header_value("") == "=?base64?\?=");
    for (const char* v : {"Hello, 世界", " padded ", "tab\tinside", "=?base64?x?=", "", "\x01", "plain"}) {
      CAPTURE(v);
      CHECK(decode_header_value(encode_header_value(v)).text == v);
    }
  }

  TEST_CASE("Mcp-Method is required on every request and notification and must equal the method exactly") {
    const std::string list = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";
    CHECK_FALSE(verdict("Mcp-Method: tools/list\r\n", list));
    CHECK(verdict("", list) ==
          std::optional<std::string>(
              "Header mismatch: the Mcp-Method header is required; send the body's method, 'tools/list'"));
    // JSON-RPC method names are case-sensitive, so a header in other letters is another method.
    CHECK(verdict("Mcp-Method: TOOLS/LIST\r\n", list) ==
          std::optional<std::string>("Header mismatch: Mcp-Method header value 'TOOLS/LIST' does not match body value "
                                     "'tools/list'"));
    CHECK(contains(verdict("Mcp-Method: tools/call\r\n", list), "does not match body value 'tools/list'"));
    CHECK(contains(verdict("Mcp-Method: tools/list\r\nMcp-Method: tools/list\r\n", list), "sent more than once"));
    const std::string note = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
    CHECK_FALSE(verdict("Mcp-Method: notifications/initialized\r\n", note));
    CHECK(contains(verdict("", note), "the Mcp-Method header is required"));
  }

  TEST_CASE("header names match in any letter case, because the parser lower-cases them") {
    const request req =
        parse("MCP-METHOD: tools/call\r\nmcp-name: route\r\nMcP-PaRaM-rEgIoN: eu\r\n", call("route", "{}"));
    CHECK(req.find("mcp-method") != nullptr);
    CHECK(req.find("mcp-param-region") != nullptr);
    CHECK_FALSE(verdict("MCP-METHOD: tools/call\r\nmcp-name: route\r\nMcP-PaRaM-rEgIoN: eu\r\n",
                        call("route", R"({"region":"eu"})")));
    CHECK_FALSE(verdict("mcp-method: tools/list\r\n", R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"));
  }

  TEST_CASE("a response POSTed by the client carries no routing headers and is not checked") {
    const request req = parse("", R"({"jsonrpc":"2.0","id":1,"result":{}})");
    CHECK_FALSE(check_routing_headers(req, "", {}, nullptr));
  }

  TEST_CASE("Mcp-Name must equal params.name of tools/call and prompts/get and params.uri of resources/read") {
    CHECK_FALSE(verdict(call_headers("plain"), call("plain", "{}")));
    CHECK(verdict("Mcp-Method: tools/call\r\nMcp-Name: foo\r\n", call("plain", "{}")) ==
          std::optional<std::string>("Header mismatch: Mcp-Name header value 'foo' does not match body value 'plain'"));
    CHECK(verdict("Mcp-Method: tools/call\r\n", call("plain", "{}")) ==
          std::optional<std::string>(
              "Header mismatch: the Mcp-Name header is required for tools/call; send params.name, 'plain'"));
    CHECK(contains(verdict("Mcp-Method: tools/call\r\nMcp-Name: PLAIN\r\n", call("plain", "{}")), "does not match"));
    CHECK(contains(verdict(call_headers("plain", "Mcp-Name: plain\r\n"), call("plain", "{}")), "sent more than once"));
    // Surrounding whitespace is not part of a field value (RFC 9110 5.5).
    CHECK_FALSE(verdict("Mcp-Method: tools/call\r\nMcp-Name:    plain \t\r\n", call("plain", "{}")));
    // The name may be sent encoded like any other value.
    CHECK_FALSE(verdict("Mcp-Method: tools/call\r\nMcp-Name: =?base64?cGxhaW4=?=\r\n", call("plain", "{}")));
    CHECK(contains(verdict("Mcp-Method: tools/call\r\nMcp-Name: =?base64?cGxhaW4?=\r\n", call("plain", "{}")),
                   "the Mcp-Name header is not valid base64"));

    const std::string prompt = R"({"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet"}})";
    CHECK_FALSE(verdict("Mcp-Method: prompts/get\r\nMcp-Name: greet\r\n", prompt));
    CHECK(contains(verdict("Mcp-Method: prompts/get\r\n", prompt), "required for prompts/get; send params.name"));
    const std::string read =
        R"({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///notes/caf\u00e9.md"}})";
    CHECK_FALSE(verdict(
        "Mcp-Method: resources/read\r\nMcp-Name: " + encode_header_value("file:///notes/café.md") + "\r\n", read));
    CHECK(contains(verdict("Mcp-Method: resources/read\r\nMcp-Name: file:///notes/cafe.md\r\n", read),
                   "does not match body value 'file:///notes/café.md'"));
    CHECK(contains(verdict("Mcp-Method: resources/read\r\n", read), "required for resources/read; send params.uri"));
    // A body without the name fails later as -32602; a header naming something the body
    // does not is still a mismatch.
    const std::string nameless = R"({"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}})";
    CHECK_FALSE(verdict("Mcp-Method: prompts/get\r\n", nameless));
    CHECK(contains(verdict("Mcp-Method: prompts/get\r\nMcp-Name: greet\r\n", nameless),
                   "the body has no string params.name"));
    // Other methods have no Mcp-Name to check.
    CHECK_FALSE(verdict("Mcp-Method: tools/list\r\nMcp-Name: anything\r\n",
                        R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"));
  }

  TEST_CASE(
      "Mcp-Param values are accepted plain, trimmed, or base64-encoded, exactly as the conformance suite sends them") {
    CHECK_FALSE(region(R"("us-west-2")", "us-west-2"));
    CHECK_FALSE(region(R"("us-west-2")", "   us-west-2  "));
    CHECK_FALSE(region(R"("Hello")", "=?base64?SGVsbG8=?="));
    CHECK_FALSE(region(R"("Hello, 世界")", "=?base64?SGVsbG8sIOS4lueVjA==?="));
    CHECK_FALSE(region(R"(" padded ")", "=?base64?IHBhZGRlZCA=?="));
    CHECK_FALSE(region(R"("New York")", "New York"));
    // A value lacking the exact prefix or suffix is a literal, compared as it is.
    CHECK_FALSE(region(R"("SGVsbG8=")", "SGVsbG8="));
    CHECK_FALSE(region(R"("=?base64?SGVsbG8=")", "=?base64?SGVsbG8="));
    CHECK(contains(region(R"("Hello")", "SGVsbG8="),
                   "Mcp-Param-Region header value 'SGVsbG8=' does not match body value 'Hello'"));
    CHECK(contains(region(R"("Hello")", "=?base64?SGVsbG8="), "does not match body value 'Hello'"));
  }

  TEST_CASE("Mcp-Param values with bad base64, raw non-ASCII, or a different value are refused") {
    CHECK(region(R"("Hello")", "=?base64?SGVsbG8?=") ==
          std::optional<std::string>("Header mismatch: the Mcp-Param-Region header is not valid base64 between "
                                     "=?base64? and ?= (standard alphabet, padded to a multiple of four)"));
    CHECK(contains(region(R"("Hello")", "=?base64?SGVs!!!bG8=?="), "is not valid base64"));
    CHECK(contains(region(R"("Hello, 世界")", "Hello, 世界"),
                   "the Mcp-Param-Region header contains a character outside visible ASCII"));
    CHECK(region(R"("us-west-2")", "eu-west-1") ==
          std::optional<std::string>(
              "Header mismatch: Mcp-Param-Region header value 'eu-west-1' does not match body value 'us-west-2'"));
    CHECK(contains(region(R"("us-west-2")", "US-WEST-2"), "does not match"));
    CHECK(contains(verdict(call_headers("route", "Mcp-Param-Region: a\r\nMcp-Param-Region: a\r\n"),
                           call("route", R"({"region":"a"})")),
                   "the Mcp-Param-Region header is sent more than once"));
  }

  TEST_CASE("a header is expected exactly when its argument is present and not null") {
    // Omitting the header for a value the body has would let an intermediary route a
    // call it never saw the value of.
    CHECK(region(R"("us-west-2")", "") ==
          std::optional<std::string>("Header mismatch: the Mcp-Param-Region header is required because "
                                     "arguments.region is in the body; send its value, 'us-west-2'"));
    CHECK_FALSE(region("null", ""));
    CHECK_FALSE(verdict(call_headers("route"), call("route", "{}")));
    CHECK_FALSE(
        verdict(call_headers("route"), R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"route"}})"));
    CHECK(contains(region("null", "us-west-2"),
                   "the Mcp-Param-Region header is sent, but arguments.region is absent or null in the body"));
    CHECK(contains(verdict(call_headers("route", "Mcp-Param-Label: x\r\n"), call("route", "{}")),
                   "arguments.label is absent or null"));
    CHECK(contains(verdict(call_headers("route"), call("route", R"({"label":"x"})")),
                   "the Mcp-Param-Label header is required because arguments.label is in the body"));
    // A value no header can carry is refused whether or not a header came with it.
    CHECK(contains(region(R"({"a":1})", ""), "is required because arguments.region is in the body"));
    CHECK(contains(region(R"(["a"])", "a"), "cannot match arguments.region, which is an array in the body"));
  }

  TEST_CASE("integers compare as numbers and booleans as true or false") {
    const auto shard = [](const std::string& body, const std::string& header) {
      return verdict(call_headers("route", "Mcp-Param-Shard: " + header + "\r\n"),
                     call("route", R"({"shard":)" + body + "}"));
    };
    CHECK_FALSE(shard("42", "42"));
    CHECK_FALSE(shard("42", "42.0"));
    CHECK_FALSE(shard("42.0", "42"));
    CHECK_FALSE(shard("-7", "-7"));
    CHECK_FALSE(shard("9007199254740993", "9007199254740993"));
    CHECK_FALSE(shard("18446744073709551615", "18446744073709551615"));
    CHECK(shard("42", "43") ==
          std::optional<std::string>(
              "Header mismatch: Mcp-Param-Shard header value '43' does not match body value '42'"));
    // Compared as integers, not doubles: these two are the same double.
    CHECK(contains(shard("9007199254740993", "9007199254740992"), "does not match"));
    CHECK(contains(shard("42", "forty-two"), "does not match"));
    CHECK(contains(shard("42", "42abc"), "does not match"));
    CHECK(contains(shard("42", ""), "does not match"));

    const auto dry = [](const std::string& body, const std::string& header) {
      return verdict(call_headers("route", "Mcp-Param-Dry-Run: " + header + "\r\n"),
                     call("route", R"({"dry_run":)" + body + "}"));
    };
    CHECK_FALSE(dry("true", "true"));
    CHECK_FALSE(dry("false", "false"));
    CHECK(contains(dry("true", "false"), "Mcp-Param-Dry-Run header value 'false' does not match body value 'true'"));
    CHECK(contains(dry("true", "True"), "does not match"));
    CHECK(contains(dry("true", "1"), "does not match"));
  }

  TEST_CASE("parameters of a raw schema are found along nested properties") {
    const std::string headers = call_headers("deep", "Mcp-Param-Zone: z1\r\nMcp-Param-Slot: 3\r\n");
    CHECK_FALSE(verdict(headers, call("deep", R"({"target":{"zone":"z1","rack":{"slot":3}}})")));
    CHECK(contains(verdict(headers, call("deep", R"({"target":{"zone":"z2","rack":{"slot":3}}})")),
                   "Mcp-Param-Zone header value 'z1' does not match body value 'z2'"));
    CHECK(contains(verdict(call_headers("deep", "Mcp-Param-Zone: z1\r\n"),
                           call("deep", R"({"target":{"zone":"z1","rack":{"slot":3}}})")),
                   "the Mcp-Param-Slot header is required because arguments.target.rack.slot is in the body"));
    // A missing or non-object level means the value is absent.
    CHECK_FALSE(verdict(call_headers("deep"), call("deep", R"({"target":{"rack":"not an object"}})")));
    CHECK_FALSE(verdict(call_headers("deep"), call("deep", R"({})")));
  }

  TEST_CASE("Mcp-Param headers of undeclared parameters, other tools and unknown tools are not looked at") {
    CHECK_FALSE(verdict(call_headers("plain", "Mcp-Param-Region: anything\r\n"), call("plain", R"({"region":"x"})")));
    CHECK_FALSE(verdict(call_headers("route", "Mcp-Param-Other: x\r\nMcp-Param-Region: a\r\n"),
                        call("route", R"({"region":"a"})")));
    // An unknown tool fails later with -32602; its name is still checked.
    CHECK_FALSE(verdict(call_headers("nosuch", "Mcp-Param-Region: a\r\n"), call("nosuch", R"({"region":"b"})")));
    CHECK(contains(verdict("Mcp-Method: tools/call\r\nMcp-Name: other\r\n", call("nosuch", "{}")), "does not match"));
  }

  TEST_CASE("registration extracts header parameters, and refuses a schema that breaks the rules, naming the tool") {
    const auto route = droid::hosting::find_tool(registry(), "route");
    REQUIRE(route);
    REQUIRE(route->header_params.size() == 4);
    CHECK(route->header_params[0].header == "Region");
    CHECK(droid::hosting::find_tool(registry(), "plain")->header_params.empty());

    droid::server s({.name = "refusals", .version = "1"});
    const auto message = [&](auto register_it) -> std::string {
      try {
        register_it();
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return {};
    };
    const std::string typed = message([&] {
      s.tool("ratio", "Has a number",
             [](droid::tool_context&, bad_number) -> droid::task<std::string> { co_return ""; });
    });
    CHECK(typed.find("tool \"ratio\"") != std::string::npos);
    CHECK(typed.find("`ratio` has x-mcp-header \"Ratio\"") != std::string::npos);
    const std::string raw = message([&] {
      droid::tool_info info;
      info.name = "tags";
      info.description = "Has an array";
      info.input_schema =
          object_of(R"({"type":"object","properties":{"t":{"type":"array","items":{"type":"string","x-mcp-header":"T"}}}})");
      s.tool(std::move(info),
             [](droid::tool_context&, boost::json::object) -> droid::task<std::string> { co_return ""; });
    });
    CHECK(raw.find("tool \"tags\"") != std::string::npos);
    CHECK(raw.find("cannot be reached") != std::string::npos);
    // A refused tool is not registered.
    CHECK(s.tool_count() == 0);
  }
}
