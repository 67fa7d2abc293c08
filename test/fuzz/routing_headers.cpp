// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: MCP 2026-07-28's routing headers (`Mcp-Method`, `Mcp-Name`,
/// `Mcp-Param-*`: lib/adapters/primary/transport/http/access/routing_headers.hpp), the header
/// value encoding beside them, and the `x-mcp-header` reader of tool schemas
/// (include/droid/domain/mcp/mcp_header.hpp).
///
/// Input: header lines, an empty line, then a JSON-RPC body; the headers and the body go
/// through the real request parser as one POST, as the listener would see them.
///
/// Oracles:
/// - `check_routing_headers` on the headers as sent either agrees or refuses with a
///   sentence; it never throws or crashes, whatever the headers and body.
/// - The headers a well-behaved client would send for that body (built with
///   `encode_header_value`, from the tool's `header_params`) are accepted: the check
///   refuses nothing a conforming client writes.
/// - `decode_header_value(encode_header_value(x))` is `x`, for every line of the input;
///   and an encoded value is visible ASCII (inner tabs allowed), which any HTTP stack carries.
/// - `header_params_of` on the body's `params` as a schema returns or throws
///   `std::invalid_argument`, nothing else.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include <boost/describe.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/hosting.hpp>
#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/mcp_header.hpp>

#include "adapters/primary/transport/http/wire/request_parser.hpp"
#include "adapters/primary/transport/http/access/routing_headers.hpp"
#include "fuzz_support.hpp"

namespace fuzz_routing {

struct route_args {
  std::string region;
  std::int64_t shard = 0;
  std::optional<bool> dry_run;
  std::optional<std::string> label;
};
BOOST_DESCRIBE_STRUCT(route_args, (), (region, shard, dry_run, label))

}  // namespace fuzz_routing

template <>
struct droid::field_hints<fuzz_routing::route_args> {
  static constexpr droid::field_hint fields[] = {
      {"region", "Where to run", false, "Region"},
      {"shard", "", true, "Shard"},
      {"dry_run", "", false, "Dry-Run"},
      {"label", "", false, "Label"},
  };
};

namespace {

using droid::http::detail::check_routing_headers;
using droid::http::detail::decode_header_value;
using droid::http::detail::encode_header_value;
using droid::http::detail::request;
using droid::http::detail::request_parser;

/// A typed tool and a raw-schema tool with nested parameters, as in
/// test/unit/adapters/http/routing_headers_test.cpp.
droid::server& registry() {
  static droid::server* server = [] {
    auto* s = new droid::server({.name = "fuzz-routing", .version = "1"});
    s->tool("route", "Runs somewhere",
            [](droid::tool_context&, fuzz_routing::route_args) -> droid::task<std::string> { co_return "ok"; });
    droid::tool_info deep;
    deep.name = "deep";
    deep.description = "Takes a nested target";
    deep.input_schema = boost::json::parse(R"({"type":"object","properties":{
        "target":{"type":"object","properties":{
          "zone":{"type":"string","x-mcp-header":"Zone"},
          "rack":{"type":"object","properties":{"slot":{"type":"integer","x-mcp-header":"Slot"}}}}}}})")
                            .as_object();
    s->tool(std::move(deep), [](droid::tool_context&, boost::json::object) -> droid::task<std::string> { co_return "ok"; });
    return s;
  }();
  return *server;
}

std::optional<request> parse(const std::string& header_lines, std::string_view body) {
  const std::string raw = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
                          header_lines + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                          std::string(body);
  request_parser p;
  std::size_t used = 0;
  while (used < raw.size() && !p.complete() && !p.failed()) {
    const std::size_t n = p.feed(raw.data() + used, raw.size() - used);
    used += n;
    if (n == 0 && !p.complete()) break;
  }
  if (!p.complete()) return std::nullopt;
  return p.take();
}

void check_value_round_trip(std::string_view x) {
  const std::string encoded = encode_header_value(x);
  // Inner tabs may stay literal, as the header's rule allows (field values may hold them).
  for (const char c : encoded)
    DROID_FUZZ_CHECK((c >= 0x20 && c < 0x7f) || c == '\t', "an encoded header value is not visible ASCII");
  const auto decoded = decode_header_value(encoded);
  DROID_FUZZ_CHECK(decoded.ok(), "an encoded header value does not decode");
  DROID_FUZZ_CHECK(decoded.text == x, "a header value changed through encode and decode");
}

/// The text a header carries for the node at `path` under `arguments` (null: the
/// header is not sent), or false when the value has the wrong type for its header.
bool header_text(const droid::ir::json_node& arguments, const droid::header_param& hp, std::optional<std::string>& text) {
  using K = droid::ir::json_node::type;
  droid::ir::json_node at = arguments;
  for (const std::string& key : hp.path) {
    droid::ir::json_node next;
    if (at.kind() != K::object || !at.find(key, next)) return true;
    at = next;
  }
  if (at.kind() == K::null) return true;
  if (hp.type == droid::header_param_type::string && at.kind() == K::string) text = std::string(at.string());
  else if (hp.type == droid::header_param_type::integer && at.kind() == K::integer) text = std::to_string(at.integer());
  else if (hp.type == droid::header_param_type::integer && at.kind() == K::unsigned_integer)
    text = std::to_string(at.unsigned_integer());
  else if (hp.type == droid::header_param_type::boolean && at.kind() == K::boolean) text = at.boolean() ? "true" : "false";
  else return false;
  return true;
}

/// The routing headers a conforming client writes for this body, or nothing when the
/// body gives it no single right answer (a parameter of the wrong type, which the call
/// then refuses for other reasons).
///
/// The body is read as the server reads it (the project's parser, first of duplicate
/// keys), not with Boost.JSON (last of duplicate keys): a repeated key inside `params`
/// is the server's to resolve, and the headers only have to agree with what it runs.
std::optional<std::string> client_headers(const droid::ir::message& m, const droid::detail::tool_entry* tool) {
  // Mcp-Method is compared as sent, never base64-decoded (routing_headers.hpp): a method
  // that is not plain visible ASCII has no header that matches it, so there is no
  // conforming request to build (such a method is unknown anyway).
  if (encode_header_value(m.method()) != m.method()) return std::nullopt;
  std::string lines = "Mcp-Method: " + m.method() + "\r\n";
  const char* name_key = m.method() == "resources/read" ? "uri"
                         : (m.method() == "tools/call" || m.method() == "prompts/get") ? "name"
                                                                                        : nullptr;
  if (name_key)
    if (const auto name = droid::ir::string_member(m.params(), name_key))
      lines += "Mcp-Name: " + encode_header_value(*name) + "\r\n";
  if (!tool || m.params().kind != droid::ir::json_kind::object) return lines;
  bool fits = true;
  (void)droid::ir::visit_json(m.params().text, [&](const droid::ir::json_node& p) {
    droid::ir::json_node arguments;
    if (!p.find("arguments", arguments) || arguments.kind() != droid::ir::json_node::type::object) return;
    for (const droid::header_param& hp : tool->header_params) {
      std::optional<std::string> text;
      if (!header_text(arguments, hp, text)) {
        fits = false;
        return;
      }
      if (text) lines += "Mcp-Param-" + hp.header + ": " + encode_header_value(*text) + "\r\n";
    }
  });
  if (!fits) return std::nullopt;
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = droid::fuzz::as_text(data, size);
  const std::size_t split = input.find("\n\n");
  const std::string_view head = input.substr(0, split);
  const std::string_view body = split == std::string_view::npos ? std::string_view() : input.substr(split + 2);

  std::string header_lines;
  for (std::size_t start = 0; start <= head.size();) {
    std::size_t nl = head.find('\n', start);
    if (nl == std::string_view::npos) nl = head.size();
    const std::string_view line = head.substr(start, nl - start);
    check_value_round_trip(line);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const auto decoded = decode_header_value(line.substr(colon + 1));
      if (decoded.ok()) check_value_round_trip(decoded.text);
    }
    if (!line.empty()) header_lines.append(line).append("\r\n");
    start = nl + 1;
  }

  droid::ir::decoded d = droid::ir::decode(std::string(body));
  const auto* m = std::get_if<droid::ir::message>(&d);
  if (!m) return 0;

  if (m->params().kind == droid::ir::json_kind::object) {
    boost::system::error_code ec;
    const boost::json::value schema = boost::json::parse(m->params().text, ec);
    if (!ec && schema.is_object()) {
      try {
        (void)droid::header_params_of("fuzzed", schema.as_object());
      } catch (const std::invalid_argument& e) {
        DROID_FUZZ_CHECK(e.what()[0] != '\0', "a schema refused without a message");
      }
    }
  }

  std::shared_ptr<const droid::detail::tool_entry> tool;
  if (m->method() == "tools/call")
    if (const auto name = droid::ir::string_member(m->params(), "name")) tool = droid::hosting::find_tool(registry(), *name);

  if (const std::optional<request> sent = parse(header_lines, body)) {
    const auto verdict = check_routing_headers(*sent, m->method(), m->params(), tool.get());
    if (verdict) DROID_FUZZ_CHECK(!verdict->empty(), "a refusal without a message");
  }
  if (const std::optional<std::string> lines = client_headers(*m, tool.get())) {
    const std::optional<request> honest = parse(*lines, body);
    DROID_FUZZ_CHECK(honest.has_value(), "a conforming client's request does not parse");
    const auto verdict = check_routing_headers(*honest, m->method(), m->params(), tool.get());
    DROID_FUZZ_CHECK(!verdict, verdict->c_str());
  }
  return 0;
}
