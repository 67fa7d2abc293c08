// SPDX-License-Identifier: BSL-1.0
/// @file
/// The two error vocabularies of the framework, as `std::error_code` categories.
///
/// Domain layer: no I/O, no Asio. `droid::ir::errc` values *are* the JSON-RPC wire codes,
/// so an error can travel from the decoder to the encoder without a translation table
/// that could drift. `droid::errc` names framework conditions (a refused exchange, a
/// session that ended) whose numeric values are not a contract: compare enumerators.
#pragma once

#include <string>
#include <system_error>

namespace droid::ir {

/// JSON-RPC 2.0 and MCP error codes, valued exactly as they appear on the wire.
///
/// Why: a peer acts on the number (the TypeScript client shows "-32602" and retries
/// nothing), so the number is the contract and is never remapped.
enum class errc : int {
  /// The bytes are not one well-formed JSON document (bad syntax, invalid UTF-8, too
  /// deep). Answered with `id: null` because no id could be trusted.
  parse_error = -32700,
  /// Well-formed JSON that is not a valid JSON-RPC message of a shape MCP allows
  /// (a batch, a scalar, a missing `jsonrpc`, an id that is null or fractional, a
  /// duplicate envelope key), or a request the session cannot take in its state.
  invalid_request = -32600,
  /// A request whose method this server does not serve.
  method_not_found = -32601,
  /// A known method with parameters of the wrong shape, or naming something that does
  /// not exist (an unknown tool, an invalid cursor).
  invalid_params = -32602,
  /// The handler failed for a reason the peer cannot act on; details go to the log.
  internal_error = -32603,
  /// MCP 2025-11-25 and earlier: `resources/read` for a URI the server does not have.
  /// (2026-07-28 answers `invalid_params` instead and forbids this code.)
  resource_not_found = -32002,
  /// MCP 2026-07-28 `HeaderMismatch`: an HTTP routing header (`MCP-Protocol-Version`,
  /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) is missing, malformed, or disagrees with the
  /// body. HTTP 400.
  header_mismatch = -32020,
  /// MCP 2026-07-28 `MissingRequiredClientCapability`: serving the request needs a client
  /// capability the request's `_meta` did not declare; `data.requiredCapabilities` names
  /// them. HTTP 400.
  missing_client_capability = -32021,
  /// MCP 2026-07-28 `UnsupportedProtocolVersion`: the request's protocol version is not
  /// one this server speaks; `data.supported` lists those it does. HTTP 400.
  unsupported_protocol_version = -32022,
};

/// The category for `ir::errc`; `message()` gives the JSON-RPC standard wording.
[[nodiscard]] const std::error_category& wire_category() noexcept;

/// Makes `errc` a `std::error_code` (found by argument-dependent lookup).
[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), wire_category()};
}

}  // namespace droid::ir

namespace droid {

/// Framework conditions that are neither transport failures nor wire codes.
///
/// Why: a tool that awaits something must be able to tell "the peer said no" from "the
/// session is gone" from "I was cancelled" and react differently; a string would force
/// it to parse prose.
enum class errc : int {
  /// The await could not even start: this session cannot carry the question. The
  /// message names the setting or capability that would allow it.
  exchange_refused = 1,
  /// The session ended (EOF, disconnect, shutdown) before the awaited thing happened.
  session_ended,
  /// The request being served was cancelled by the peer or by the tool's own stop token.
  cancelled,
  /// A message referred to a session this server does not know (or no longer knows).
  unknown_session,
  /// The peer answered a server-to-client request with a JSON-RPC error; its code,
  /// message and data travel with the outcome.
  peer_error,
};

/// The category for `droid::errc`.
[[nodiscard]] const std::error_category& framework_category() noexcept;

/// Makes `errc` a `std::error_code` (found by argument-dependent lookup).
[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), framework_category()};
}

}  // namespace droid

template <>
struct std::is_error_code_enum<droid::ir::errc> : std::true_type {};
template <>
struct std::is_error_code_enum<droid::errc> : std::true_type {};
