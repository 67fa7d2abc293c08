// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::detail::request_parser`: HTTP/1.1 request framing with our limits, on top of
/// Debian's libhttp-parser (2.9). Sans-io: bytes in, requests or an error status out.
///
/// Primary adapter, private. Why a wrapper and not the C parser directly: the limits
/// (request line, header block, field count, body) and the smuggling shapes the C parser
/// accepts (obs-fold, whitespace before a colon, bare LF) are ours to refuse
/// (RELIABILITY.md group B), and the connection code should see one request at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace droid::http::detail {

/// Framing limits; the defaults are the (and RELIABILITY B1's).
struct parser_limits {
  std::size_t max_request_line = 8 * 1024;  ///< method + target + version; over: 414
  std::size_t max_header_bytes = 16 * 1024;  ///< the whole header block; over: 431
  std::size_t max_header_count = 100;        ///< fields; over: 431
  std::size_t max_body = 4u << 20;           ///< decoded body bytes; over: 413
};

/// One header field; the name is lower-cased (HTTP field names are case-insensitive).
struct header_field {
  std::string name;
  std::string value;  ///< with surrounding whitespace removed
};

/// One complete request.
struct request {
  std::string method;  ///< as sent, e.g. "POST"
  std::string target;  ///< request-target as sent, e.g. "/mcp?sessionId=x"
  unsigned version_major = 1;
  unsigned version_minor = 1;
  std::vector<header_field> headers;
  std::string body;  ///< de-chunked
  bool keep_alive = true;  ///< per HTTP version and Connection header

  /// The first value of `lower_name`, or null.
  [[nodiscard]] const std::string* find(std::string_view lower_name) const noexcept;
  /// How many fields are named `lower_name`.
  [[nodiscard]] std::size_t count(std::string_view lower_name) const noexcept;
};

/// Incremental request parser. Feed bytes; it stops at the end of the headers (so the
/// caller can answer `Expect: 100-continue`, or refuse an oversized Content-Length
/// before any body byte is read) and at the end of each request (so pipelined bytes stay
/// with the caller for the next one).
///
/// Invariants: after `failed()`, nothing more is parsed; the connection must answer
/// `error_status()` and close, because the stream can no longer be trusted to be in sync.
class request_parser {
 public:
  explicit request_parser(parser_limits limits = {});
  ~request_parser();
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  /// Consumes bytes from `data`; returns how many were used. It returns early (with
  /// bytes left) once the headers are complete (`headers_complete()` turns true, once per
  /// request) and when a request is complete (`complete()`).
  std::size_t feed(const char* data, std::size_t size);

  /// True once, right after the header block of the current request was parsed.
  [[nodiscard]] bool headers_complete() const noexcept;
  /// The request being parsed (method, target, headers filled once headers_complete()).
  [[nodiscard]] const request& current() const noexcept;
  /// The Content-Length of the current request, if it has one.
  [[nodiscard]] std::optional<std::uint64_t> content_length() const noexcept;

  /// True when a whole request is ready to `take()`.
  [[nodiscard]] bool complete() const noexcept;
  /// Moves the complete request out and resets for the next one on the same connection.
  [[nodiscard]] request take();

  /// True after a framing error; `error_status()` is the HTTP status to answer (400,
  /// 413, 414, 431, 501 for an unknown transfer coding, 505 for a bad version).
  [[nodiscard]] bool failed() const noexcept;
  [[nodiscard]] int error_status() const noexcept;
  [[nodiscard]] std::string_view error_reason() const noexcept;

  /// True when nothing of a next request has been seen (for idle timeouts).
  [[nodiscard]] bool idle() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace droid::http::detail
