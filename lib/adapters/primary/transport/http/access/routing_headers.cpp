// SPDX-License-Identifier: BSL-1.0
/// @file
/// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against the body, and the header value
/// encoding.
///
/// ## Why the body is read once, before any header is compared
/// The node views of `ir::visit_json` live only inside its callback, and the messages
/// need the body's values after it. So the callback copies out exactly what the checks
/// compare (the name, and one small value per declared parameter) and the comparisons run
/// afterwards on plain values, in the order the messages should be reported in.
///
/// ## Why numbers compare as numbers
/// A client writes the header from its own idea of the number: a JavaScript client has
/// only doubles and writes `42` for a body that says `42.0`, or the other way round. Both
/// denote one value, so the text is parsed and compared, never matched character by
/// character.
#include "routing_headers.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/content.hpp>

#include "adapters/primary/transport/http/wire/request_parser.hpp"

namespace droid::http::detail {
namespace {

constexpr std::string_view sentinel_prefix = "=?base64?";
constexpr std::string_view sentinel_suffix = "?=";

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_sentinel(std::string_view v) noexcept {
  return v.size() >= sentinel_prefix.size() + sentinel_suffix.size() && v.starts_with(sentinel_prefix) &&
         v.ends_with(sentinel_suffix);
}

/// The six bits of a base64 character, or -1.
int sextet(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/// Strict RFC 4648 standard base64: false on any deviation (see the header's "Header
/// values").
bool decode_base64(std::string_view in, std::string& out) {
  if (in.size() % 4 != 0) return false;
  out.clear();
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    const std::size_t pad = last ? (in[i + 3] == '=' ? (in[i + 2] == '=' ? 2 : 1) : 0) : 0;
    unsigned quad = 0;
    for (std::size_t j = 0; j < 4 - pad; ++j) {
      const int s = sextet(in[i + j]);
      if (s < 0) return false;
      quad = (quad << 6) | static_cast<unsigned>(s);
    }
    quad <<= 6 * pad;
    // Padding bits must be zero: otherwise "SGVsbG9=" would be a second spelling of "Hello".
    if (pad == 1 && (quad & 0xffu) != 0) return false;
    if (pad == 2 && (quad & 0xffffu) != 0) return false;
    out += static_cast<char>((quad >> 16) & 0xffu);
    if (pad < 2) out += static_cast<char>((quad >> 8) & 0xffu);
    if (pad < 1) out += static_cast<char>(quad & 0xffu);
  }
  return true;
}

/// A body value that a header is compared with, copied out of the parsed body.
struct body_value {
  enum class kind : std::uint8_t { absent, string, integer, unsigned_integer, floating, boolean, other };
  kind k = kind::absent;
  std::string text{};  ///< strings; for `other`, the JSON type's name ("an object")
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  bool b = false;
};

body_value copy_value(const ir::json_node& n) {
  using K = ir::json_node::type;
  using V = body_value::kind;
  body_value v;
  switch (n.kind()) {
    case K::null:  // null means "not given": no header is expected
      break;
    case K::string:
      v.k = V::string;
      v.text = std::string(n.string());
      break;
    case K::integer:
      v.k = V::integer;
      v.i = n.integer();
      v.d = n.number();
      break;
    case K::unsigned_integer:
      v.k = V::unsigned_integer;
      v.u = n.unsigned_integer();
      v.d = n.number();
      break;
    case K::floating:
      v.k = V::floating;
      v.d = n.number();
      break;
    case K::boolean:
      v.k = V::boolean;
      v.b = n.boolean();
      break;
    case K::array:
    case K::object:
      v.k = V::other;
      v.text = std::string(n.kind_name());
      break;
  }
  return v;
}

/// `v` as a client would write it into a header (for messages).
std::string render(const body_value& v) {
  switch (v.k) {
    case body_value::kind::string:
      return v.text;
    case body_value::kind::integer:
      return std::to_string(v.i);
    case body_value::kind::unsigned_integer:
      return std::to_string(v.u);
    case body_value::kind::floating: {
      char buffer[32];
      const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v.d);
      return ec == std::errc() ? std::string(buffer, end) : std::string("a number");
    }
    case body_value::kind::boolean:
      return v.b ? "true" : "false";
    case body_value::kind::absent:
    case body_value::kind::other:
      break;
  }
  return v.text;
}

/// True when `header` (decoded) denotes the number `v`.
bool same_number(std::string_view header, const body_value& v) {
  const char* first = header.data();
  const char* last = header.data() + header.size();
  // An integer on both sides compares exactly: doubles lose digits above 2^53.
  const bool integral = !header.empty() && header.find_first_not_of("-0123456789") == std::string_view::npos;
  if (integral && v.k == body_value::kind::integer) {
    std::int64_t h = 0;
    const auto [end, ec] = std::from_chars(first, last, h);
    return ec == std::errc() && end == last && h == v.i;
  }
  if (integral && v.k == body_value::kind::unsigned_integer) {
    std::uint64_t h = 0;
    const auto [end, ec] = std::from_chars(first, last, h);
    return ec == std::errc() && end == last && h == v.u;
  }
  double h = 0;
  const auto [end, ec] = std::from_chars(first, last, h);
  return ec == std::errc() && end == last && std::isfinite(h) && h == v.d;
}

bool matches(std::string_view header, const body_value& v) {
  switch (v.k) {
    case body_value::kind::string:
      return header == v.text;
    case body_value::kind::integer:
    case body_value::kind::unsigned_integer:
    case body_value::kind::floating:
      return same_number(header, v);
    case body_value::kind::boolean:
      return header == (v.b ? "true" : "false");
    case body_value::kind::absent:
    case body_value::kind::other:
      break;
  }
  return false;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string dotted(const std::vector<std::string>& path) {
  std::string out = "arguments";
  for (const std::string& key : path) out.append(1, '.').append(key);
  return out;
}

std::string differs(std::string_view header, std::string_view sent, std::string_view body) {
  std::string m = "Header mismatch: ";
  m.append(header).append(" header value '").append(sent).append("' does not match body value '").append(body);
  m += '\'';
  return m;
}

std::string problem(std::string_view header, std::string_view what) {
  std::string m = "Header mismatch: the ";
  m.append(header).append(" header ").append(what);
  return m;
}

/// The single value of header `lower` (a lower-cased name), null when absent; sets
/// `error` when it is sent more than once.
const std::string_view* single(const request& req, std::string_view lower, std::string_view display,
                               std::optional<std::string>& error) {
  if (req.count(lower) > 1) {
    error = problem(display, "is sent more than once; send it once, with the value of the body");
    return nullptr;
  }
  return req.find(lower);
}

/// Where `Mcp-Name` comes from for `method`, or empty when the method has none.
std::string_view name_source(std::string_view method) noexcept {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  // The tasks extension: a task's requests name it, so a balancer can route them to the
  // instance that holds it.
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return "taskId";
  return {};
}

}  // namespace

header_value decode_header_value(std::string_view raw) {
  const std::string_view v = trim_ows(raw);
  header_value out;
  if (is_sentinel(v)) {
    const std::string_view payload =
        v.substr(sentinel_prefix.size(), v.size() - sentinel_prefix.size() - sentinel_suffix.size());
    if (!decode_base64(payload, out.text)) {
      out.text.clear();
      out.problem = "is not valid base64 between =?base64? and ?= (standard alphabet, padded to a multiple of four)";
    }
    return out;
  }
  for (const char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u >= 0x7f) {
      out.problem =
          "contains a character outside visible ASCII, space and tab; send such values as =?base64?<base64 of the "
          "UTF-8 value>?=";
      return out;
    }
  }
  out.text = std::string(v);
  return out;
}

std::string encode_header_value(std::string_view value) {
  // A value that merely starts like the sentinel is encoded too, so that no literal can
  // ever be read back as an encoded one.
  bool plain = !value.empty() && !value.starts_with(sentinel_prefix) && trim_ows(value).size() == value.size();
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x21 || u > 0x7e) && c != ' ' && c != '\t') plain = false;
  }
  if (plain) return std::string(value);
  std::string out(sentinel_prefix);
  out += droid::base64_encode(value);
  out += sentinel_suffix;
  return out;
}

std::optional<std::string> check_routing_headers(const request& req, std::string_view method,
                                                 const ir::raw_json& params, const droid::detail::tool_entry* tool) {
  if (method.empty() || params.kind != ir::json_kind::object) return check_routing_headers(req, method, nullptr, tool);
  std::optional<std::string> why;
  (void)ir::visit_json(params.text, [&](const ir::json_node& p) { why = check_routing_headers(req, method, &p, tool); });
  return why;
}

std::optional<std::string> check_routing_headers(const request& req, std::string_view method,
                                                 const ir::json_node* params, const droid::detail::tool_entry* tool) {
  if (method.empty()) return std::nullopt;
  std::optional<std::string> error;

  const std::string_view* sent_method = single(req, "mcp-method", "Mcp-Method", error);
  if (error) return error;
  if (!sent_method)
    return "Header mismatch: the Mcp-Method header is required; send the body's method, '" + std::string(method) + "'";
  if (const std::string_view m = trim_ows(*sent_method); m != method) return differs("Mcp-Method", m, method);

  const std::string_view source = name_source(method);
  const bool call = method == "tools/call" && tool != nullptr && !tool->header_params.empty();
  if (source.empty() && !call) return std::nullopt;

  // What the comparisons need, copied out of the body (see "Why the body is read once").
  std::optional<std::string> body_name;
  std::vector<body_value> arguments(call ? tool->header_params.size() : 0);
  if (params && params->kind() == ir::json_node::type::object) {
    const ir::json_node& p = *params;
    ir::json_node n;
    if (p.find(source, n) && n.kind() == ir::json_node::type::string) body_name = std::string(n.string());
    ir::json_node args;
    if (call && p.find("arguments", args)) {
      for (std::size_t i = 0; i < arguments.size(); ++i) {
        ir::json_node at = args;
        bool found = true;
        for (const std::string& key : tool->header_params[i].path) {
          ir::json_node next;
          found = at.kind() == ir::json_node::type::object && at.find(key, next);
          if (!found) break;
          at = next;
        }
        if (found) arguments[i] = copy_value(at);
      }
    }
  }

  if (!source.empty()) {
    const std::string_view* sent = single(req, "mcp-name", "Mcp-Name", error);
    if (error) return error;
    if (!sent && body_name)
      return "Header mismatch: the Mcp-Name header is required for " + std::string(method) + "; send params." +
             std::string(source) + ", '" + *body_name + "'";
    if (sent && !body_name)
      return "Header mismatch: the Mcp-Name header is sent, but the body has no string params." + std::string(source);
    if (sent) {
      const header_value name = decode_header_value(*sent);
      if (!name.ok()) return problem("Mcp-Name", name.problem);
      if (name.text != *body_name) return differs("Mcp-Name", name.text, *body_name);
    }
  }

  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const header_param& hp = tool->header_params[i];
    const body_value& body = arguments[i];
    const std::string display = "Mcp-Param-" + hp.header;
    const std::string_view* sent = single(req, lowered(display), display, error);
    if (error) return error;
    if (body.k == body_value::kind::absent) {
      if (sent)
        return problem(display, "is sent, but " + dotted(hp.path) +
                                    " is absent or null in the body; send the header only with a value");
      continue;
    }
    if (!sent)
      return problem(display, "is required because " + dotted(hp.path) + " is in the body; send its value, '" +
                                  render(body) + "'");
    const header_value value = decode_header_value(*sent);
    if (!value.ok()) return problem(display, value.problem);
    if (body.k == body_value::kind::other)
      return problem(display, "cannot match " + dotted(hp.path) + ", which is " + body.text +
                                  " in the body: only strings, numbers and booleans can be mirrored");
    if (!matches(value.text, body)) return differs(display, value.text, render(body));
  }
  return std::nullopt;
}

}  // namespace droid::http::detail
