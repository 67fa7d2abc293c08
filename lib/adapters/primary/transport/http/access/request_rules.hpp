// SPDX-License-Identifier: BSL-1.0
/// @file
/// Small pure checks of the Streamable HTTP transport: Host and Origin (DNS rebinding),
/// media types (CSRF through simple requests), session ids. Sans-io so every edge case
/// in docs/reliability.md#http-security is a unit test.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace droid::http::detail {

/// True when `host` (a Host header value, port optional) names the loopback interface
/// exactly: `localhost`, `127.0.0.1` or `[::1]`, in any letter case.
///
/// Why exact names only: `127.1`, `2130706433`, `0x7f000001` and `localhost.` resolve to
/// loopback too, but no legitimate client sends them, and accepting spellings is how
/// allowlists get bypassed (docs/reliability.md, A1).
[[nodiscard]] bool is_loopback_host(std::string_view host) noexcept;

/// Whether a request may proceed given its Host header. On a socket whose local address
/// is loopback (docs/reliability.md, decision 10: the check follows the socket, so a
/// 0.0.0.0 bind reached through loopback is protected too), only loopback names or
/// `allowed` ones pass. Elsewhere, `allowed` (when not empty) is enforced.
[[nodiscard]] bool host_allowed(std::string_view host, bool local_is_loopback,
                                const std::vector<std::string>& allowed) noexcept;

/// Whether a request may proceed given its Origin header (null when absent). Absent
/// passes (non-browser clients send none); `http(s)://` loopback origins with any port
/// pass; configured ones pass; everything else (including `null`) does not.
[[nodiscard]] bool origin_allowed(const std::string_view* origin, const std::vector<std::string>& allowed) noexcept;

/// True when `a` and `b` are equal ignoring ASCII letter case (header values, schemes).
[[nodiscard]] bool iequals(std::string_view a, std::string_view b) noexcept;

/// The value of query parameter `name` in request-target `target` (the last one when it
/// is given more than once; empty when it has no `=`), or nothing when absent. Not
/// percent-decoded: the values looked up (session ids, and whether a token is there at
/// all) are compared as sent.
[[nodiscard]] std::optional<std::string_view> query_param(std::string_view target, std::string_view name) noexcept;

/// True when `content_type`'s media type (parameters ignored, case-insensitive) is `type`.
[[nodiscard]] bool media_type_is(std::string_view content_type, std::string_view type) noexcept;

/// True when an Accept header value admits `type` ("a/b"), through `a/b`, `a/*` or `*/*`
/// (a range with `q=0` refuses).
[[nodiscard]] bool accepts(std::string_view accept, std::string_view type) noexcept;

/// The CORS header lines (each ending in CRLF) of every response to a browser's request
/// from `origin`, an origin already found allowed: the origin echoed (never `*`: the
/// answer is for that page only), `Vary: Origin` for caches, and the response headers a
/// page must be able to read (`Mcp-Session-Id` above all).
[[nodiscard]] std::string cors_headers(std::string_view origin);

/// The extra header lines of a 204 answering a CORS preflight from an allowed origin:
/// the methods `allow` names, the request headers the page asked for
/// (`Access-Control-Request-Headers`, echoed when it is a well-formed list of header
/// names, else the MCP headers), and how long the browser may cache the answer.
[[nodiscard]] std::string preflight_headers(std::string_view allow, const std::string_view* requested);

/// A new session id: 128 bits from the OS CSPRNG (getrandom), base64url, 22 characters.
/// Throws `std::system_error` if the OS cannot provide randomness (never silently weaker).
[[nodiscard]] std::string new_session_id();

/// True when `id` is a session id a client may legitimately present: 1 to 128 visible
/// ASCII characters (MCP: 0x21 to 0x7E).
[[nodiscard]] bool valid_session_id(std::string_view id) noexcept;

}  // namespace droid::http::detail
