// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::detail::request_parser`: HTTP/1.1 request framing with our limits and smuggling
/// rules, in one strict pass of our own. Sans-io: bytes in, requests or an error status out.
///
/// Primary adapter, private. Why our own parser and not a library: the limits (request
/// line, header block, field count, body) and the smuggling shapes that lenient parsers
/// accept (obs-fold, whitespace before a colon, bare LF) are ours to refuse
/// (docs/reliability.md#http-framing-and-slow-clients), the connection code should see
/// one request at a time, and one pass that decides everything cannot disagree with
/// itself about where a message ends. The
/// reasoning, the decisions and the measured cost are in request_parser.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace droid::http::detail {

/// Framing limits; the defaults are those of `droid::http::options` (docs/reliability.md,
/// B1).
struct parser_limits {
  std::size_t max_request_line = 8 * 1024;  ///< method + target + version; over: 414
  std::size_t max_header_bytes = 16 * 1024;  ///< the whole header block; over: 431
  std::size_t max_header_count = 100;        ///< fields; over: 431
  std::size_t max_body = 4u << 20;           ///< decoded body bytes; over: 413
};

/// One header field, as views into the request's own copy of its header section.
///
/// Why views: a string per name and per value cost two allocations per field, the largest
/// share of the framing cost of a small request. Lifetime: valid while the `request` that
/// holds it lives (moving the request keeps them valid).
struct header_field {
  std::string_view name;   ///< lower-cased (HTTP field names are case-insensitive)
  std::string_view value;  ///< with surrounding whitespace removed
};

/// One complete request. It owns its bytes: the header section is copied once into
/// private storage that `method`, `target` and every `header_field` view, so it stays
/// valid after `request_parser::take()` while the connection reuses its read buffer.
///
/// Move-only: a copy's views would point into the original's storage and dangle once it
/// is gone. A moved-from request is empty.
struct request {
  std::string_view method;  ///< as sent, e.g. "POST"
  /// The request-target in origin form, e.g. "/mcp?sessionId=x". An absolute-form target
  /// (`http://host:8080/mcp`, what a client talking to a proxy sends) is cut to its path
  /// and query here, so routing never has to know the form (RFC 9112 §3.2.2).
  std::string_view target;
  /// The authority of an absolute-form target (`host:8080`), else empty. RFC 9112 §3.2.2:
  /// it replaces the Host field, which the server must then ignore.
  std::string_view authority;
  unsigned version_major = 1;
  unsigned version_minor = 1;
  std::vector<header_field> headers;
  std::string body;  ///< de-chunked; a string because it is moved into the JSON decoder
  bool keep_alive = true;  ///< per HTTP version and Connection header

  request() = default;
  request(request&& other) noexcept;
  request& operator=(request&& other) noexcept;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request() = default;

  /// The first value of `lower_name`, or null. Lifetime: as the request's.
  ///
  /// Inline, so that a field the transport reads on every request, named by a literal,
  /// is found in the parser's index in a few instructions: a request is asked for about
  /// nine fields, and a walk over all of them for each cost about 600 instructions a
  /// request (bench callgrind section). Any other name is looked for the long way.
  [[nodiscard, gnu::always_inline]] inline const std::string_view* find(std::string_view lower_name) const noexcept {
    const int slot = known_slot(lower_name);
    if (slot < 0 || !indexed_) return find_any(lower_name);
    const std::uint8_t at = known_[static_cast<std::size_t>(slot)];
    return at == 0 ? nullptr : &headers[at - 1u].value;
  }
  /// The host this request names: an absolute-form target's authority, which stands for
  /// the Host field (RFC 9112 §3.2.2), else the Host field; null when neither is there.
  [[nodiscard]] const std::string_view* host() const noexcept {
    return authority.empty() ? find("host") : &authority;
  }
  /// How many fields are named `lower_name`. Inline for the same reason as `find`: the
  /// transport asks on every request whether Origin, Authorization and the 2026 routing
  /// fields came more than once, and for an indexed name the answer is in the index.
  [[nodiscard, gnu::always_inline]] inline std::size_t count(std::string_view lower_name) const noexcept {
    const int slot = known_slot(lower_name);
    if (slot < 0 || !indexed_) return count_any(lower_name);
    if (known_[static_cast<std::size_t>(slot)] == 0) return 0;
    return (repeated_ >> slot) & 1u ? count_any(lower_name) : 1;
  }

  /// The index slot of a field the transport reads on every request, or -1. The one
  /// table of those names: `find` folds it for a literal, the parser runs it per field.
  static constexpr int known_slot(std::string_view n) noexcept {
    // The length is settled by the switch, so each comparison is of a known length:
    // memcmp, which the compiler turns into a few word compares (string_view's == was
    // left as a call per field in the parser).
    const auto is = [n](std::string_view lit) {
      return std::is_constant_evaluated() ? n == lit : std::memcmp(n.data(), lit.data(), lit.size()) == 0;
    };
    switch (n.size()) {
      case 4: return is("host") ? 0 : -1;
      case 6: return is("accept") ? 1 : is("origin") ? 2 : is("expect") ? 3 : -1;
      case 8: return is("mcp-name") ? 9 : -1;
      case 10: return is("mcp-method") ? 10 : -1;
      case 12: return is("content-type") ? 4 : -1;
      case 13: return is("authorization") ? 5 : is("last-event-id") ? 6 : -1;
      case 14: return is("mcp-session-id") ? 7 : -1;
      case 20: return is("mcp-protocol-version") ? 8 : -1;
      default: return -1;
    }
  }

 private:
  friend class request_parser;
  [[nodiscard]] const std::string_view* find_any(std::string_view lower_name) const noexcept;
  [[nodiscard]] std::size_t count_any(std::string_view lower_name) const noexcept;
  /// The request line and header section as received (names lower-cased in place), which
  /// every view above points into. A vector, not a string: moving a vector keeps its
  /// buffer, while a short string's small-buffer storage would move and leave the views
  /// pointing at the old object.
  std::vector<char> head_;
  /// Where the first field of each `known_slot` name is in `headers`, plus one (0:
  /// absent). Valid when `indexed_`: the parser builds it, and gives up on a request of
  /// more than 255 fields (then every name is looked for the long way).
  std::array<std::uint8_t, 11> known_{};
  /// Bit `slot` set: the name of that slot came more than once (so `count` walks).
  std::uint16_t repeated_ = 0;
  bool indexed_ = false;
};

/// Incremental request parser. Feed bytes; it stops at the end of the headers (so the
/// caller can answer `Expect: 100-continue`, or refuse an oversized Content-Length
/// before any body byte is read) and at the end of each request (so pipelined bytes stay
/// with the caller for the next one).
///
/// Invariants: after `failed()`, nothing more is parsed; the connection must answer
/// `error_status()` and close, because the stream can no longer be trusted to be in sync.
/// Affinity: the connection that owns it.
class request_parser {
 public:
  explicit request_parser(parser_limits limits = {});
  ~request_parser();
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  /// Consumes bytes from `data`; returns how many were used. It returns early (with
  /// bytes left) once the headers are complete (`headers_complete()` turns true, once per
  /// request) and when a request is complete (`complete()`). Used bytes may be discarded
  /// by the caller: whatever the request needs of them has been copied.
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
  /// Gives a served request's storage back, for the next request to parse into.
  ///
  /// Why: a connection serves one request after another, and each one's header storage
  /// (the head section and the field list) was two allocations and two frees per request
  /// (bench callgrind section). Kept only while no byte of the next request is parsed,
  /// and only when small (a 4 KiB head, 32 fields), so an idle connection stays small
  /// after one large request.
  void recycle(request&& served) noexcept;

  /// True after a framing error; `error_status()` is the HTTP status to answer (400,
  /// 413, 414, 431, 501 for CONNECT or an unknown transfer coding, 505 for a bad version).
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
