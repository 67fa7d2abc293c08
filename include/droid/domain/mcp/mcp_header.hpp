// SPDX-License-Identifier: BSL-1.0
/// @file
/// Tool parameters mirrored into HTTP headers (`x-mcp-header`, MCP 2026-07-28, SEP-2243):
/// reading them out of a tool's `inputSchema`, and refusing the ones the rules forbid.
///
/// Domain layer. A tool's input schema may mark a parameter with
/// `"x-mcp-header": "Region"`; a client then sends the argument's value a second time, as
/// `Mcp-Param-Region: <value>`, so that a load balancer or gateway can route on it without
/// parsing the body. The server checks that the header and the body agree (the HTTP
/// adapter does that, with the list this file produces).
///
/// ## Why the schema is checked at registration
/// A client must drop from `tools/list` every tool whose `x-mcp-header` breaks a rule.
/// Such a tool would simply never be offered to the model, and nothing on the server side
/// would say why. Refusing it when it is registered, in a sentence that names the tool,
/// the parameter and the rule, moves that failure to the one person who can fix it.
///
/// ## The rules (SEP-2243)
/// - The value is a non-empty HTTP token (RFC 9110 `1*tchar`: `A-Z a-z 0-9` and
///   ``!#$%&'*+-.^_`|~``), so `Mcp-Param-<value>` is a valid field name.
/// - Values are unique within one `inputSchema` without regard to case, because HTTP
///   field names are compared that way.
/// - Only `string`, `integer` and `boolean` parameters may carry one (not `number`: its
///   text form is not unique, `1e2` and `100.0` are the same number). A type array of one
///   of these and `"null"` (`["string", "null"]`) counts as that type: a null value just
///   means the header is not sent.
/// - The parameter is reached from the schema's root through `properties` alone, at any
///   depth. Under `items`, `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else`,
///   `additionalProperties`, `$defs` and the like, a parameter has no single place in the
///   arguments (or none at all), so no single header can mirror it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace droid {

/// The JSON type of a parameter that is mirrored into a header.
enum class header_param_type : std::uint8_t { string, integer, boolean };

/// One parameter of a tool that clients mirror into an `Mcp-Param-<header>` header.
struct header_param {
  /// The `x-mcp-header` value as the schema writes it (`Region`); the field is
  /// `Mcp-Param-Region`, matched without regard to case.
  std::string header{};
  /// The keys that lead from `arguments` to the value: `{"location", "region"}` for
  /// `arguments.location.region`.
  std::vector<std::string> path{};
  header_param_type type = header_param_type::string;  ///< how the value is written in the header
};

/// True when `name` is an HTTP token (RFC 9110 `1*tchar`): the characters a header field
/// name may have.
[[nodiscard]] bool is_http_token(std::string_view name) noexcept;

/// The parameters of `input_schema` that carry `x-mcp-header`, in the order of the
/// schema's `properties` (depth first).
///
/// Why the whole schema is walked and not only the `properties` chain: an `x-mcp-header`
/// under `items` or `anyOf` would otherwise be skipped silently, and the author would
/// believe the header is checked when it is not.
///
/// Errors: throws `std::invalid_argument` with a sentence naming `tool`, the parameter
/// and the rule when an `x-mcp-header` is not a string, is empty or not an HTTP token,
/// repeats another one (ignoring case), sits on a parameter that is not a string, integer
/// or boolean, or sits where the `properties` chain from the root does not lead.
[[nodiscard]] std::vector<header_param> header_params_of(std::string_view tool,
                                                         const boost::json::object& input_schema);

}  // namespace droid
