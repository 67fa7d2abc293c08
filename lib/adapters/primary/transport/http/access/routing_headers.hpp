// SPDX-License-Identifier: BSL-1.0
/// @file
/// The routing headers of MCP 2026-07-28's Streamable HTTP (SEP-2243): `Mcp-Method`,
/// `Mcp-Name` and the `Mcp-Param-*` headers that mirror tool arguments marked with
/// `x-mcp-header`, checked against the JSON-RPC body they claim to describe. Sans-io:
/// a parsed request and the decoded body in, nothing or the reason for a refusal out.
///
/// Primary adapter, private. A client copies the method, the tool (prompt, resource) name
/// and chosen arguments into headers so that load balancers and gateways can route and
/// filter on them without parsing JSON. That only works if the server refuses a request
/// whose headers say something other than its body: an intermediary that admitted
/// `Mcp-Name: read_only_tool` must not see `delete_everything` run. Every refusal is an
/// HTTP 400 with the JSON-RPC error -32020 (`ir::errc::header_mismatch`).
///
/// ## Header values
/// A value that is not plain visible ASCII (inner spaces and tabs allowed), or has
/// leading or trailing whitespace, or looks like the sentinel, is sent as
/// `=?base64?<base64 of its UTF-8>?=`. The sentinel's prefix and suffix are matched
/// exactly (lower case); a value lacking either is a literal. Inside them, only strict
/// standard base64 is accepted: a length that is a multiple of four, `=` only as the
/// final padding, no other characters, and zero bits in the padding, so each value has
/// exactly one spelling and `=?base64?SGVsbG8?=` (no padding) is refused rather than
/// guessed at.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid::detail {
struct tool_entry;
}  // namespace droid::detail

namespace droid::http::detail {

struct request;

/// A header value after `decode_header_value`: the text it stands for, or why it stands
/// for nothing.
struct header_value {
  /// The value: as sent (without surrounding whitespace), or base64-decoded.
  std::string text{};
  /// Empty when the value is usable; else the end of a sentence that starts with the
  /// header's name ("contains a character ...", "is not valid base64 ...").
  std::string_view problem{};

  [[nodiscard]] bool ok() const noexcept { return problem.empty(); }
};

/// Decodes one header value: removes surrounding spaces and tabs (RFC 9110 OWS), decodes
/// the `=?base64?...?=` sentinel strictly, and refuses a literal value with a character
/// outside visible ASCII, space and tab (such a value had to be sent encoded, and its
/// bytes cannot be compared without guessing their charset).
[[nodiscard]] header_value decode_header_value(std::string_view raw);

/// How a client writes `value` into a header: as is when it is plain visible ASCII with
/// at most inner spaces and tabs, else as `=?base64?...?=`. The empty string is encoded
/// too, because some HTTP stacks drop a field with an empty value, and the server would
/// then see a missing header for a value that is present.
[[nodiscard]] std::string encode_header_value(std::string_view value);

/// Checks the routing headers of one POSTed JSON-RPC request or notification against its
/// body. Returns nothing when they agree; else the -32020 error message, a sentence
/// naming the header and what is wrong with it.
///
/// - `Mcp-Method` is required and must equal `method` exactly (case matters: JSON-RPC
///   method names are case-sensitive).
/// - For `tools/call` and `prompts/get`, `Mcp-Name` must equal `params.name`; for
///   `resources/read`, `params.uri`. It is required when the body has that string, and
///   refused when the body has none.
/// - For `tools/call` of `tool` (null when no tool has the name: that call fails later,
///   with -32602, and no parameter header can be checked), each of
///   `tool->header_params` must be sent exactly when its argument is present and not
///   null, and its decoded value must equal the argument: strings exactly, numbers
///   numerically (`42` and `42.0` are equal), booleans as `true` or `false`.
/// - Any of these headers sent twice is refused: which copy would an intermediary have
///   routed on?
///
/// `method` empty (a response the client POSTs) checks nothing: responses carry no
/// routing headers. `params` is the body's validated `params` member. Headers other than
/// these, including `Mcp-Param-*` headers the tool does not declare, are not looked at.
/// Safe to call from inside an `ir::visit_json` callback (a nested visit gets its own
/// parser).
[[nodiscard]] std::optional<std::string> check_routing_headers(const request& req, std::string_view method,
                                                               const ir::raw_json& params,
                                                               const droid::detail::tool_entry* tool);
/// The same with `params` already parsed (null: the body has no params object). Why: the
/// server reads a 2026 request's params once for the headers, its `_meta` and its tool,
/// instead of once for each.
[[nodiscard]] std::optional<std::string> check_routing_headers(const request& req, std::string_view method,
                                                               const ir::json_node* params,
                                                               const droid::detail::tool_entry* tool);

}  // namespace droid::http::detail
