// SPDX-License-Identifier: BSL-1.0
/// @file
/// The 2026-07-28 front: telling a stateless request from a 2025 one, and reading and
/// checking what it carries in `_meta` before anything serves it.
///
/// Application layer, transport-neutral and free of I/O. A 2026 request brings, in
/// `params._meta`, what a 2025 client said once in `initialize`: its protocol version,
/// capabilities, identity and log level. This is where that becomes a `peer_info`, or a
/// refusal with the code (and, for HTTP, the status) the specification gives:
///
/// | what is wrong                                    | code   | HTTP |
/// |--------------------------------------------------|--------|------|
/// | no `_meta`, or no protocolVersion / capabilities | -32602 | 400  |
/// | an unrecognised `logLevel`                       | -32602 | 400  |
/// | the header's version is not `_meta`'s            | -32020 | 400  |
/// | a version this server does not speak             | -32022 | 400  |
/// | a method that does not exist in 2026-07-28       | -32601 | 404  |
/// | a tool needing a capability the request lacks    | -32021 | 400  |
///
/// Why before the runner and not inside it: over HTTP the status line goes out before
/// the request is served (an event stream starts at once), so a refusal must be known
/// first; stdio sends the same refusals as plain JSON-RPC errors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <droid/application/server/peer_info.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid {

class server;
namespace detail {
struct tool_entry;
}

/// Why a 2026 request is answered with an error before it is served.
struct request_refusal {
  ir::errc code = ir::errc::invalid_params;  ///< the JSON-RPC error code
  std::string message{};  ///< the error's `message`
  /// JSON text of `error.data`, or empty.
  std::string data{};
  /// The HTTP status the specification gives the error.
  int http_status = 400;
};

/// True when request `msg` is to be served as a 2026-07-28 request. The one rule both
/// transports apply (so that stdio and HTTP cannot drift apart): a request under a
/// 2026-07-28 version header (`header_version`, HTTP's `MCP-Protocol-Version`; stdio has
/// none) is one, unless it is `initialize`, which opens a 2025 session whatever the header
/// says; so is one whose `_meta` names a protocol version
/// (`io.modelcontextprotocol/protocolVersion`) or whose method exists only in that
/// revision (`server/discover`, `subscriptions/listen`). Everything else belongs to the
/// 2025 session era.
///
/// Why a cheap test first: a 2025 request pays for this on every message; the header
/// settles it without the params, the key's text is looked for before anything is
/// parsed, and only a hit is confirmed by a parse.
[[nodiscard]] bool is_modern_request(const ir::message& msg, const std::string_view* header_version = nullptr);
/// The same rule for a caller that parses the params anyway (`params`: them, or null
/// when the request has none), so that they are parsed once.
[[nodiscard]] bool is_modern_request(const ir::message& msg, const std::string_view* header_version,
                                     const ir::json_node* params) noexcept;

/// The two halves of `is_modern_request`, for a caller that parses the params anyway: a
/// method that exists only in 2026-07-28, and params whose `_meta` names a version.
[[nodiscard]] bool is_modern_only(std::string_view method) noexcept;
/// True when `params` has a `_meta` that names a protocol version.
[[nodiscard]] bool names_modern_version(const ir::json_node& params) noexcept;
/// True when `params` (validated text) may name a version: the key's text is in it.
/// Why: the cheap test a 2025 request pays instead of a parse.
[[nodiscard]] bool may_name_version(ir::raw_json params) noexcept;
/// The same for request `msg`, looking in its whole text (a superset of its params):
/// finding where the params are would cost more than the search it saves.
[[nodiscard]] bool may_name_version(const ir::message& msg) noexcept;

/// Reads request `msg`'s `_meta` into `peer` and checks it against this server. Over HTTP
/// `header_version` is the `MCP-Protocol-Version` header (none when absent); stdio passes
/// none. Nothing when the request may be served (and `peer` is filled), otherwise the
/// refusal to answer it with, carrying the request's id.
[[nodiscard]] std::optional<request_refusal> admit_modern(const server& srv, const ir::message& msg,
                                                          std::optional<std::string_view> header_version,
                                                          peer_info& peer);
/// The same with the request's `params` already parsed (null: it has none), for a
/// transport that reads them for other checks too (HTTP's routing headers) and should
/// not parse them twice. Call it inside that `ir::visit_json` callback.
[[nodiscard]] std::optional<request_refusal> admit_modern(const server& srv, std::string_view method,
                                                          const ir::json_node* params,
                                                          std::optional<std::string_view> header_version,
                                                          peer_info& peer);
/// The same for a `tools/call` whose tool the caller looked up already (`hosting::find_tool`
/// of `params.name`; null when the name is missing or unknown), so that a request pays for
/// one lookup: HTTP looks the tool up for its routing-header and scope checks first.
[[nodiscard]] std::optional<request_refusal> admit_modern(const server& srv, std::string_view method,
                                                          const ir::json_node* params,
                                                          std::optional<std::string_view> header_version,
                                                          peer_info& peer, const detail::tool_entry* tool);

/// The refusal for a protocol version this server does not speak (-32022), with
/// `data.supported` (every version it does speak) and `data.requested`.
[[nodiscard]] request_refusal unsupported_version(std::string_view requested);

}  // namespace droid
