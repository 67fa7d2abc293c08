// SPDX-License-Identifier: BSL-1.0
/// @file
/// HTTP/1.1 response framing: status lines, heads, chunks, and the JSON-RPC error bodies
/// the endpoints answer with. Shared by the connection core and every endpoint, so a
/// response is written one way only.
///
/// Primary adapter, private.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <droid/domain/errc.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid::http::detail {

using clock_type = std::chrono::steady_clock;

/// Now on the steady clock, in nanoseconds: what deadlines and idle clocks store (an
/// integer fits an atomic that the reaper reads from another shard).
[[nodiscard]] std::int64_t now_ns() noexcept;

[[nodiscard]] const char* reason_phrase(int status) noexcept;

/// Writes a complete response into `out` (cleared first; a connection keeps its capacity
/// from one response to the next): status line, `Content-Type` (when not empty),
/// `Content-Length`, `Connection: close` when `close`, `extra_headers` (each ending in
/// CRLF), and `body`. `head_only`: the answer to a HEAD request, whose head says the
/// length a GET's body would have and which carries no body (RFC 9110 §9.3.2); a client
/// reads none, so a body sent anyway would be read as the start of the next response.
void write_response(std::string& out, int status, std::string_view content_type, std::string_view body, bool close,
                    std::string_view extra_headers = {}, bool head_only = false);

/// Appends one chunk of a chunked body: hex size, CRLF, data, CRLF.
void append_chunk(std::string& out, std::string_view data);
/// Appends the head of a chunk of `size` bytes (hex size, CRLF): the caller appends the
/// data and its CRLF, so that the data need not be gathered in a string of its own first.
void append_chunk_head(std::string& out, std::size_t size);

/// A JSON-RPC error as an HTTP response body (`id: null`: the request could not be read
/// far enough to know its id, or was no request).
[[nodiscard]] std::string rpc_error_body(ir::errc code, std::string_view message);

/// A JSON-RPC error for request `id` as an HTTP response body.
[[nodiscard]] std::string rpc_error_body(const ir::request_id& id, ir::errc code, std::string_view message,
                                         std::string_view data = {});

}  // namespace droid::http::detail
