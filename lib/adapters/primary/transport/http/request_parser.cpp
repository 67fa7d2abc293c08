// SPDX-License-Identifier: BSL-1.0
/// @file
/// `request_parser`: HTTP/1.1 request framing with our limits and smuggling rules, on top
/// of Debian's libhttp-parser 2.9.4 (the only translation unit that includes it).
///
/// Primary adapter, private. The C parser does the tokenising, de-chunking and the
/// keep-alive rules; this file decides what is allowed in, and when to stop.
///
/// ## Why a strict byte scan runs ahead of the C parser
/// Debian's libhttp_parser is built the way upstream's Makefile builds the library, with
/// `HTTP_PARSER_STRICT=0`, which turns every `STRICT_CHECK` off. Measured on this
/// machine, it accepts: a header section ended by `\r\n\r` plus any byte; chunk
/// data followed by any two bytes instead of CRLF; a bare LF inside a chunk extension;
/// `5 garbage` as a chunk-size line; obs-fold continuation lines; whitespace between a
/// field name and its colon (as part of the *name*, so `Content-Length : 5` is an
/// unknown field to it); bare-LF line endings, also in trailers; two spaces in the
/// request line; raw bytes >= 0x80 in the target; `HTTP/0.9` request lines. Each one is a
/// place where a front proxy framing strictly sees a different message boundary than we
/// do, which is request smuggling (RELIABILITY.md B3).
///
/// So every byte outside body data first goes through `scan`, a strict RFC 9112
/// automaton (request line, field lines, chunk lines, trailers), and the C parser is only
/// ever handed the prefix the scan accepted. Where the scan refuses byte `k`, the C parser
/// still gets bytes `[0, k)`, so the status is always that of the *first* offending byte,
/// whichever side finds it, and it does not depend on how the bytes were split across
/// `feed()` calls. The two must then agree on where the header section and the message
/// end; if they ever do not, the request is refused (400), never trusted.
///
/// ## Why the parser pauses, and then executes one more byte
/// `http_parser_pause()` from on_headers_complete makes `http_parser_execute` return
/// *before* the header section's final LF (2.9.4 returns `p - data` there and re-reads
/// that byte as "headers done" on the next call). We execute exactly that one byte at
/// once: then `feed()` reports the whole header block as consumed, the caller's buffer
/// holds only body bytes (what its `Expect: 100-continue` check looks at), and a request
/// without a body is complete in the same call. on_message_complete pauses as well, so a
/// pipelined request stays with the caller until `take()`. A paused parser consumes
/// nothing (`execute` returns 0), so every execute is preceded by an unpause, and never
/// while the parser is in an error state (2.9.4's `http_parser_pause` asserts on that).
///
/// ## Decisions (status in brackets)
/// - Bare LF and bare CR as line endings anywhere outside body data [400]: RFC 9112 §2.2
///   allows a recipient to accept a bare LF, but a proxy in front that does not would
///   frame differently; no MCP client sends one.
/// - Line folding, whitespace before the first field line or before a colon [400]
///   (RFC 9112 §5.1, §5.2, §2.2); NUL, CR, LF, DEL or another control byte in a value
///   [400]; a target byte outside VCHAR [400]; more than one SP between request-line
///   parts [400]; a request line without `HTTP/x.y` (HTTP/0.9) [400].
/// - `HTTP/d.d` other than 1.0 and 1.1 [505], decided as soon as the request line ends;
///   any other version shape [400].
/// - Host: HTTP/1.1 with none, or any request with two [400] (RFC 9112 §3.2). The value
///   is not judged here: the rebinding allowlist answers 403 for it (A1).
/// - Absolute-form targets are accepted and kept as sent (RFC 9112 §3.2.2 says a server
///   MUST accept them); the connection layer reads the authority from it. `CONNECT`
///   [501]: 2.9.4 treats everything after a CONNECT's header section as a tunnel and
///   ignores its Content-Length, so its framing cannot be trusted; we implement no tunnel.
/// - `Upgrade` is ignored (RFC 9110 §7.8 allows that): the request is framed as an
///   ordinary one and parsing goes on after it.
/// - Content-Length: two fields even if equal, a list, a sign, anything but digits
///   [400]; over `max_body` [413] before any body byte is read.
/// - Transfer-Encoding: with Content-Length, twice, or on HTTP/1.0 [400]; `chunked`
///   missing, not last, or twice [400] (RFC 9112 §6.3: the length cannot be determined);
///   `chunked` last behind any other coding, e.g. `gzip, chunked` [501] (we implement
///   none). Trailing SP (`chunked `) is not part of the value (RFC 9110 §5.5): accepted.
///   Trailing HTAB is OWS too, but 2.9.4 then does not de-chunk, so it is refused [400].
/// - Chunked bodies: a size of more than 16 hex digits [400] (this also covers overflow,
///   whatever the leading zeros); the declared sizes summing over `max_body` [413], decided
///   when a size line is read, so no data beyond the limit is consumed; chunk-extension
///   bytes over 16 KiB per message [413] (2.9.4 skips them without a bound; Node caps them
///   the same way after CVE-2024-22019). Extensions are otherwise ignored.
/// - Trailers are checked like header fields (limits included: over them [431]) and
///   dropped; a trailer named Content-Length or Transfer-Encoding [400] (RFC 9110 §6.5.1),
///   since an intermediary that merges trailers would reframe on it.
/// - Empty lines before a request line are skipped (RFC 9112 §2.2) but count towards the
///   request-line limit, so CRLFs alone cannot hold a connection in the header phase.
/// - A method outside 2.9.4's fixed table (lower-case ones included) [400]: the C parser
///   refuses it as malformed before an "unknown method" could be told apart.
#include "request_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#include <http_parser.h>

namespace droid::http::detail {

namespace {

/// Digits beyond this in one chunk size are refused: 16 hex digits hold any uint64, so
/// no overflow arithmetic is needed and leading zeros cannot stretch the line forever.
constexpr std::size_t max_chunk_size_digits = 16;

/// Chunk-extension bytes allowed per message.
constexpr std::size_t max_chunk_extension_bytes = 16 * 1024;

/// RFC 9110 §5.6.2 tchar.
constexpr bool is_tchar(unsigned char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

constexpr bool is_vchar(unsigned char c) noexcept { return c > 0x20 && c < 0x7f; }

/// field-vchar / SP / HTAB, obs-text included (RFC 9110 §5.5).
constexpr bool is_field_byte(unsigned char c) noexcept { return c == '\t' || (c >= 0x20 && c != 0x7f); }

constexpr int hex_value(unsigned char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view lower) noexcept {
  return a.size() == lower.size() && std::equal(a.begin(), a.end(), lower.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? static_cast<char>(x - 'A' + 'a') : x) == y;
         });
}

/// A refusal: the status to answer and a phrase for logs. `status == 0` means none.
struct verdict {
  int status = 0;
  std::string_view reason;
};

/// Judges a Transfer-Encoding value (one field; two are refused before this).
verdict judge_transfer_encoding(std::string_view value) noexcept {
  std::size_t codings = 0;
  bool last_is_chunked = false;
  for (;;) {
    const std::size_t comma = value.find(',');
    const std::string_view coding = trim_ows(value.substr(0, comma));
    if (coding.empty()) return {400, "empty element in Transfer-Encoding"};
    if (last_is_chunked) return {400, "Transfer-Encoding applies chunked before another coding"};
    last_is_chunked = iequals(coding, "chunked");
    ++codings;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  if (!last_is_chunked) return {400, "Transfer-Encoding does not end with chunked"};
  if (codings > 1) return {501, "Transfer-Encoding names a coding this server does not implement"};
  return {};
}

}  // namespace

const std::string* request::find(std::string_view lower_name) const noexcept {
  for (const header_field& f : headers)
    if (f.name == lower_name) return &f.value;
  return nullptr;
}

std::size_t request::count(std::string_view lower_name) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(headers.begin(), headers.end(), [&](const header_field& f) { return f.name == lower_name; }));
}

/// The parser's state: the C parser, the strict scan running ahead of it, and the request
/// being assembled from the C parser's callbacks.
///
/// Invariants: the C parser has only seen bytes the scan accepted; once `failed_`, no
/// byte is executed again; `complete_` means the C parser is paused right after the
/// message. Affinity: the connection that owns it. Lifetime: owned by `request_parser`
/// through a `unique_ptr`, so `parser_.data` (this) stays valid.
struct request_parser::impl {
  /// Where the message is, as far as `feed()` is concerned.
  enum class phase : unsigned char { head, identity_body, chunked_body, done };

  /// Where the strict scan is.
  enum class scan_state : unsigned char {
    line_start,       // empty lines or the first byte of the method
    leading_lf,       // LF of an empty line before the request line
    method,
    target_start,
    target,
    version,
    request_line_lf,
    field_start,      // a field line or the empty line ending the section
    field_name,
    field_value,
    field_lf,
    section_lf,       // LF of the empty line ending the header or trailer section
    chunk_size,
    chunk_ws,         // BWS between a chunk size and `;`
    chunk_ext,
    chunk_size_lf,
    chunk_data,
    chunk_data_cr,
    chunk_data_lf,
    done,
  };

  /// How far `scan` got: bytes the C parser may see, and why it stopped there.
  struct scan_result {
    enum class stop : unsigned char { more, boundary, refused };
    std::size_t end = 0;
    stop how = stop::more;
    verdict refusal{};
  };

  explicit impl(parser_limits limits) : limits_(limits) {
    http_parser_init(&parser_, HTTP_REQUEST);
    parser_.data = this;
  }

  std::size_t feed(const char* data, std::size_t size) {
    if (size == 0 || failed_ || complete_ || closed_) return 0;
    headers_edge_ = false;
    std::size_t used = 0;
    switch (phase_) {
      case phase::head: used = feed_head(data, size); break;
      case phase::identity_body: used = feed_identity(data, size); break;
      case phase::chunked_body: used = feed_chunked(data, size); break;
      case phase::done: break;
    }
    if (used > 0) started_ = true;
    return used;
  }

  request take() {
    request out = std::move(request_);
    // After `Connection: close` (or HTTP/1.0 without keep-alive) whatever follows was
    // pipelined past the end of the conversation: it must never run (B5). 2.9.4 would
    // refuse it too (its s_dead state), but only once a byte is executed.
    closed_ = !out.keep_alive;
    request_ = request{};
    phase_ = phase::head;
    scan_ = scan_state::line_start;
    line_bytes_ = section_bytes_ = field_count_ = 0;
    version_len_ = 0;
    chunk_size_ = chunk_left_ = body_declared_ = 0;
    chunk_digits_ = chunk_extension_bytes_ = 0;
    trailers_ = chunked_ = false;
    field_name_.clear();
    field_value_.clear();
    field_open_ = value_open_ = false;
    headers_parsed_ = headers_edge_ = complete_ = started_ = false;
    content_length_.reset();
    return out;
  }

  // ---- the three phases --------------------------------------------------------------

  std::size_t feed_head(const char* data, std::size_t size) {
    const scan_result scanned = scan(data, size);
    const std::size_t used = execute(data, scanned.end);
    if (!settle()) return used;
    if (scanned.how == scan_result::stop::refused) {
      refuse(scanned.refusal.status, scanned.refusal.reason);
      return used;
    }
    if (scanned.how == scan_result::stop::more) {
      if (used != size || headers_parsed_) refuse(400, disagreement);
      return used;
    }
    // The scan saw the final LF at scanned.end - 1; the C parser paused just before it.
    if (!headers_parsed_ || used + 1 != scanned.end) {
      refuse(400, disagreement);
      return used;
    }
    const std::size_t lf = execute(data + used, 1);
    if (!settle()) return used + lf;
    headers_edge_ = true;
    if (complete_) {
      phase_ = phase::done;
    } else if (chunked_) {
      phase_ = phase::chunked_body;
      scan_ = scan_state::chunk_size;
    } else {
      phase_ = phase::identity_body;
    }
    return used + lf;
  }

  std::size_t feed_identity(const char* data, std::size_t size) {
    // Nothing to scan: body data is opaque and the Content-Length was checked.
    const std::size_t used = execute(data, size);
    if (settle() && complete_) phase_ = phase::done;
    return used;
  }

  std::size_t feed_chunked(const char* data, std::size_t size) {
    const scan_result scanned = scan(data, size);
    const std::size_t used = execute(data, scanned.end);
    if (!settle()) return used;
    if (scanned.how == scan_result::stop::refused) {
      refuse(scanned.refusal.status, scanned.refusal.reason);
      return used;
    }
    const bool at_end = scanned.how == scan_result::stop::boundary;
    if (used != scanned.end || complete_ != at_end) {
      refuse(400, disagreement);
      return used;
    }
    if (complete_) phase_ = phase::done;
    return used;
  }

  /// Runs the C parser over `[data, data + size)`; returns what it consumed.
  std::size_t execute(const char* data, std::size_t size) {
    // A zero length means end of stream to http_parser_execute, never "nothing yet".
    if (size == 0) return 0;
    if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);
    return http_parser_execute(&parser_, &settings(), data, size);
  }

  /// After an execute: false (and failed) if the C parser or a callback refused.
  bool settle() {
    if (failed_) return false;
    const auto err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_OK || err == HPE_PAUSED) return true;
    refuse(err == HPE_HEADER_OVERFLOW ? 431 : 400, http_errno_description(err));
    return false;
  }

  /// Records the first refusal; returns false so callers can `return refuse(...)`.
  bool refuse(int status, std::string_view reason) {
    if (!failed_) {
      failed_ = true;
      status_ = status;
      reason_ = reason;
    }
    return false;
  }

  // ---- the strict scan ---------------------------------------------------------------

  [[nodiscard]] bool in_request_line() const noexcept {
    using enum scan_state;
    return scan_ == line_start || scan_ == leading_lf || scan_ == method || scan_ == target_start ||
           scan_ == target || scan_ == version;
  }
  [[nodiscard]] bool in_field_section() const noexcept {
    using enum scan_state;
    return scan_ == field_start || scan_ == field_name || scan_ == field_value || scan_ == field_lf ||
           scan_ == section_lf;
  }

  static scan_result refused(std::size_t offset, int status, std::string_view reason) {
    return {offset, scan_result::stop::refused, {status, reason}};
  }

  /// 505 for a well-formed version we do not speak, 400 for anything else malformed.
  [[nodiscard]] verdict judge_version() const noexcept {
    const std::string_view v(version_, version_len_);
    const bool shaped = v.size() == 8 && v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
                        v[7] >= '0' && v[7] <= '9';
    if (!shaped) return {400, "malformed HTTP version"};
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) return {505, "HTTP version not supported"};
    return {};
  }

  /// Scans `data` from the current scan state. Stops after the LF that ends the header
  /// or trailer section (`boundary`), at the first byte RFC 9112 does not allow, or that
  /// breaks a limit (`refused`, `end` is that byte), or at the end of `data` (`more`).
  /// Chunk data is skipped by length, so only framing bytes are judged.
  scan_result scan(const char* data, std::size_t size) {
    using stop = scan_result::stop;
    for (std::size_t i = 0; i < size; ++i) {
      const auto c = static_cast<unsigned char>(data[i]);
      // Counted before the byte is judged, so an oversized line is refused while it is
      // still arriving, never after it was buffered whole. The CR ending the request
      // line and the CRLF ending the header section's lines follow the same rule: the
      // request line is method SP target SP version; the header block is every field
      // line with its CRLF plus the final CRLF.
      if (in_request_line() && !(scan_ == scan_state::version && c == '\r') && ++line_bytes_ > limits_.max_request_line)
        return refused(i, 414, "request line longer than the limit");
      if (in_field_section() && ++section_bytes_ > limits_.max_header_bytes)
        return refused(i, 431,
                       trailers_ ? "trailer section larger than the limit" : "header section larger than the limit");
      if ((scan_ == scan_state::chunk_ws || scan_ == scan_state::chunk_ext) &&
          ++chunk_extension_bytes_ > max_chunk_extension_bytes)
        return refused(i, 413, "chunk extensions larger than the limit");

      switch (scan_) {
        case scan_state::line_start:
          if (c == '\r') {
            scan_ = scan_state::leading_lf;
          } else if (is_tchar(c)) {
            scan_ = scan_state::method;
          } else {
            return refused(i, 400, c == '\n' ? "bare LF before the request line" : "invalid character in the method");
          }
          break;
        case scan_state::leading_lf:
          if (c != '\n') return refused(i, 400, "bare CR before the request line");
          scan_ = scan_state::line_start;
          break;
        case scan_state::method:
          if (c == ' ') {
            scan_ = scan_state::target_start;
          } else if (!is_tchar(c)) {
            return refused(i, 400, "invalid character in the method");
          }
          break;
        case scan_state::target_start:
        case scan_state::target:
          if (c == ' ' && scan_ == scan_state::target) {
            scan_ = scan_state::version;
            version_len_ = 0;
          } else if (c == '\r' || c == '\n') {
            return refused(i, 400, "request line without an HTTP version");
          } else if (!is_vchar(c)) {
            return refused(i, 400, "invalid character in the request target");
          } else {
            scan_ = scan_state::target;
          }
          break;
        case scan_state::version:
          if (c == '\r') {
            if (const verdict v = judge_version(); v.status != 0) return refused(i, v.status, v.reason);
            scan_ = scan_state::request_line_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending the request line");
          } else if (version_len_ == sizeof version_) {
            return refused(i, 400, "malformed HTTP version");
          } else {
            version_[version_len_++] = static_cast<char>(c);
          }
          break;
        case scan_state::request_line_lf:
          if (c != '\n') return refused(i, 400, "bare CR ending the request line");
          scan_ = scan_state::field_start;
          break;

        case scan_state::field_start:
          if (c == '\r') {
            scan_ = scan_state::section_lf;
          } else if (c == ' ' || c == '\t') {
            return refused(i, 400, "field line starting with whitespace (obs-fold)");
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending a field section");
          } else if (!is_tchar(c)) {
            return refused(i, 400, "invalid character in a field name");
          } else if (++field_count_ > limits_.max_header_count) {
            return refused(i, 431,
                           trailers_ ? "more trailer fields than the limit" : "more header fields than the limit");
          } else {
            scan_ = scan_state::field_name;
          }
          break;
        case scan_state::field_name:
          if (c == ':') {
            scan_ = scan_state::field_value;
          } else if (c == ' ' || c == '\t') {
            // `Content-Length : 5` is an unknown field named "content-length " to 2.9.4.
            return refused(i, 400, "whitespace in a field name or before its colon");
          } else if (!is_tchar(c)) {
            return refused(i, 400,
                           c == '\r' || c == '\n' ? "field line without a colon" : "invalid character in a field name");
          }
          break;
        case scan_state::field_value:
          if (c == '\r') {
            scan_ = scan_state::field_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending a field line");
          } else if (!is_field_byte(c)) {
            return refused(i, 400, "control character in a field value");
          }
          break;
        case scan_state::field_lf:
          if (c != '\n') return refused(i, 400, "bare CR in a field line");
          scan_ = scan_state::field_start;
          break;
        case scan_state::section_lf:
          if (c != '\n') return refused(i, 400, "CR not followed by LF at the end of a field section");
          scan_ = scan_state::done;
          return {i + 1, stop::boundary, {}};

        case scan_state::chunk_size: {
          if (const int v = hex_value(c); v >= 0) {
            if (chunk_digits_ == max_chunk_size_digits) return refused(i, 400, "chunk size has too many digits");
            chunk_size_ = chunk_size_ * 16 + static_cast<unsigned>(v);
            ++chunk_digits_;
            break;
          }
          if (chunk_digits_ == 0) return refused(i, 400, "invalid chunk size");
          if (c != '\r' && c != ';' && c != ' ' && c != '\t')
            return refused(i, 400, c == '\n' ? "bare LF after a chunk size" : "invalid character after a chunk size");
          // The size is known here, before any of its data: refuse the whole chunk rather
          // than read up to the limit first. body_declared_ <= max_body always holds.
          if (chunk_size_ > limits_.max_body - body_declared_)
            return refused(i, 413, "chunked body larger than the limit");
          body_declared_ += chunk_size_;
          scan_ = c == '\r' ? scan_state::chunk_size_lf : c == ';' ? scan_state::chunk_ext : scan_state::chunk_ws;
          if (scan_ != scan_state::chunk_size_lf && ++chunk_extension_bytes_ > max_chunk_extension_bytes)
            return refused(i, 413, "chunk extensions larger than the limit");
          break;
        }
        case scan_state::chunk_ws:
          if (c == ';') {
            scan_ = scan_state::chunk_ext;
          } else if (c != ' ' && c != '\t') {
            // 2.9.4 takes anything after a space as an extension ("5 garbage").
            return refused(i, 400, "invalid chunk extension");
          }
          break;
        case scan_state::chunk_ext:
          if (c == '\r') {
            scan_ = scan_state::chunk_size_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF in a chunk extension");
          } else if (!is_field_byte(c)) {
            return refused(i, 400, "control character in a chunk extension");
          }
          break;
        case scan_state::chunk_size_lf:
          if (c != '\n') return refused(i, 400, "bare CR in a chunk-size line");
          if (chunk_size_ == 0) {
            trailers_ = true;
            section_bytes_ = field_count_ = 0;
            scan_ = scan_state::field_start;
          } else {
            chunk_left_ = chunk_size_;
            scan_ = scan_state::chunk_data;
          }
          chunk_size_ = 0;
          chunk_digits_ = 0;
          break;
        case scan_state::chunk_data: {
          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, size - i));
          chunk_left_ -= n;
          i += n - 1;
          if (chunk_left_ == 0) scan_ = scan_state::chunk_data_cr;
          break;
        }
        case scan_state::chunk_data_cr:
          if (c != '\r') return refused(i, 400, "chunk data not followed by CRLF");
          scan_ = scan_state::chunk_data_lf;
          break;
        case scan_state::chunk_data_lf:
          if (c != '\n') return refused(i, 400, "chunk data not followed by CRLF");
          scan_ = scan_state::chunk_size;
          break;

        case scan_state::done:
          return refused(i, 400, disagreement);
      }
    }
    return {size, stop::more, {}};
  }

  // ---- C parser callbacks ------------------------------------------------------------

  static impl& of(http_parser* p) noexcept { return *static_cast<impl*>(p->data); }

  static const http_parser_settings& settings() noexcept {
    static const http_parser_settings s = [] {
      http_parser_settings v;
      http_parser_settings_init(&v);
      v.on_message_begin = &impl::on_message_begin;
      v.on_url = &impl::on_url;
      v.on_header_field = &impl::on_header_field;
      v.on_header_value = &impl::on_header_value;
      v.on_headers_complete = &impl::on_headers_complete;
      v.on_body = &impl::on_body;
      v.on_message_complete = &impl::on_message_complete;
      return v;
    }();
    return s;
  }

  static int on_message_begin(http_parser* p) {
    impl& self = of(p);
    // The scan only lets a second message's bytes through after take(); anything else
    // means the two no longer agree on where messages start.
    if (self.phase_ == phase::head && !self.headers_parsed_) return 0;
    self.refuse(400, disagreement);
    return 1;
  }

  static int on_url(http_parser* p, const char* at, std::size_t length) {
    impl& self = of(p);
    // The scan bounds the whole request line already; this keeps the target bounded even
    // if the two ever disagree about where the line ends.
    if (self.request_.target.size() + length > self.limits_.max_request_line) {
      self.refuse(414, "request line longer than the limit");
      return 1;
    }
    self.request_.target.append(at, length);
    return 0;
  }

  static int on_header_field(http_parser* p, const char* at, std::size_t length) {
    impl& self = of(p);
    // Pieces of one name may arrive in several calls; a name after a value starts a field.
    if (self.value_open_ && !self.close_field()) return 1;
    self.field_open_ = true;
    for (std::size_t i = 0; i < length; ++i) {
      const char c = at[i];
      self.field_name_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    return 0;
  }

  static int on_header_value(http_parser* p, const char* at, std::size_t length) {
    impl& self = of(p);
    if (!self.value_open_) {
      self.value_open_ = true;
      // Framing fields in trailers: an intermediary that merges trailers into the header
      // section would re-frame on them.
      if (self.phase_ == phase::chunked_body &&
          (self.field_name_ == "content-length" || self.field_name_ == "transfer-encoding")) {
        self.refuse(400, "framing field in the trailer section");
        return 1;
      }
    }
    self.field_value_.append(at, length);
    return 0;
  }

  /// Moves the pending field into the request (trailers are dropped).
  bool close_field() {
    if (!field_open_) return true;
    if (phase_ == phase::head) {
      if (request_.headers.size() == limits_.max_header_count) return refuse(431, "more header fields than the limit");
      request_.headers.push_back({std::move(field_name_), std::string(trim_ows(field_value_))});
    }
    field_name_.clear();
    field_value_.clear();
    field_open_ = value_open_ = false;
    return true;
  }

  static int on_headers_complete(http_parser* p) {
    impl& self = of(p);
    // Any value other than 0, 1, 2 is an error to 2.9.4 (1 and 2 mean "no body").
    if (!self.close_field() || !self.judge_headers()) return -1;
    self.headers_parsed_ = true;
    http_parser_pause(p, 1);
    return 0;
  }

  /// The header-section rules the C parser does not apply (see the file comment); fills
  /// the request line into `request_`.
  bool judge_headers() {
    request& r = request_;
    r.method = http_method_str(static_cast<http_method>(parser_.method));
    r.version_major = parser_.http_major;
    r.version_minor = parser_.http_minor;
    // The scan refused other versions already; kept in case the two ever disagree.
    if (r.version_major != 1 || r.version_minor > 1) return refuse(505, "HTTP version not supported");
    if (parser_.method == HTTP_CONNECT) return refuse(501, "CONNECT is not implemented");

    const std::size_t hosts = r.count("host");
    if (hosts > 1) return refuse(400, "more than one Host field");
    if (hosts == 0 && r.version_minor == 1) return refuse(400, "HTTP/1.1 request without Host");

    const std::size_t lengths = r.count("content-length");
    const std::size_t encodings = r.count("transfer-encoding");
    if (lengths > 1) return refuse(400, "more than one Content-Length field");
    if (encodings > 0) {
      if (encodings > 1) return refuse(400, "more than one Transfer-Encoding field");
      if (r.version_minor == 0) return refuse(400, "Transfer-Encoding in an HTTP/1.0 request");
      if (lengths > 0) return refuse(400, "both Content-Length and Transfer-Encoding");
      if (const verdict v = judge_transfer_encoding(*r.find("transfer-encoding")); v.status != 0)
        return refuse(v.status, v.reason);
      // 2.9.4 tolerates SP after `chunked` but not HTAB: it then frames the body as
      // unknown, and we cannot de-chunk what it does not. Refused rather than guessed.
      if ((parser_.flags & F_CHUNKED) == 0)
        return refuse(400, "Transfer-Encoding the C parser does not read as chunked");
      chunked_ = true;
    } else if (lengths == 1) {
      const std::string& text = *r.find("content-length");
      std::uint64_t value = 0;
      const char* const last = text.data() + text.size();
      const auto [end, ec] = std::from_chars(text.data(), last, value);
      // from_chars takes no sign, so all digits is what is left to check.
      if (text.empty() || ec != std::errc{} || end != last) return refuse(400, "invalid Content-Length");
      content_length_ = value;
      if (parser_.content_length != value) return refuse(400, disagreement);
      if (value > limits_.max_body) return refuse(413, "body larger than the limit");
    } else if ((parser_.flags & F_CHUNKED) != 0) {
      return refuse(400, disagreement);
    }
    r.keep_alive = http_should_keep_alive(&parser_) != 0;
    return true;
  }

  static int on_body(http_parser* p, const char* at, std::size_t length) {
    impl& self = of(p);
    // Both framings are bounded before this (Content-Length at the headers, chunk sizes
    // by the scan); this holds the limit even if they were not.
    if (length > self.limits_.max_body - self.request_.body.size()) {
      self.refuse(413, "body larger than the limit");
      return 1;
    }
    self.request_.body.append(at, length);
    return 0;
  }

  static int on_message_complete(http_parser* p) {
    impl& self = of(p);
    if (!self.close_field()) return 1;
    if (!self.headers_parsed_) {
      self.refuse(400, disagreement);
      return 1;
    }
    self.complete_ = true;
    http_parser_pause(p, 1);
    return 0;
  }

  static constexpr std::string_view disagreement = "the framing scan and the C parser disagree on the message boundary";

  parser_limits limits_;
  http_parser parser_{};
  request request_;

  phase phase_ = phase::head;
  scan_state scan_ = scan_state::line_start;
  std::size_t line_bytes_ = 0;     // request line so far, empty lines before it included
  std::size_t section_bytes_ = 0;  // header (or trailer) block so far
  std::size_t field_count_ = 0;
  char version_[8]{};
  std::size_t version_len_ = 0;
  std::uint64_t chunk_size_ = 0;
  std::size_t chunk_digits_ = 0;
  std::uint64_t chunk_left_ = 0;
  std::uint64_t body_declared_ = 0;  // sum of chunk sizes read so far
  std::size_t chunk_extension_bytes_ = 0;
  bool trailers_ = false;

  std::string field_name_;
  std::string field_value_;
  bool field_open_ = false;
  bool value_open_ = false;

  bool headers_parsed_ = false;  // on_headers_complete accepted this message's headers
  bool headers_edge_ = false;    // ... during the last feed()
  bool chunked_ = false;
  bool complete_ = false;
  bool started_ = false;
  bool closed_ = false;
  std::optional<std::uint64_t> content_length_;

  bool failed_ = false;
  int status_ = 0;
  std::string_view reason_;
};

request_parser::request_parser(parser_limits limits) : impl_(std::make_unique<impl>(limits)) {}

request_parser::~request_parser() = default;

std::size_t request_parser::feed(const char* data, std::size_t size) { return impl_->feed(data, size); }

// True only after the feed() that read the end of the header block, until the next
// feed() or take(): the caller acts on it once (arm the body deadline, answer
// `Expect: 100-continue`), not on every body chunk. False once failed.
bool request_parser::headers_complete() const noexcept { return impl_->headers_edge_ && !impl_->failed_; }

const request& request_parser::current() const noexcept { return impl_->request_; }

std::optional<std::uint64_t> request_parser::content_length() const noexcept { return impl_->content_length_; }

bool request_parser::complete() const noexcept { return impl_->complete_ && !impl_->failed_; }

request request_parser::take() {
  if (!complete()) return {};
  return impl_->take();
}

bool request_parser::failed() const noexcept { return impl_->failed_; }

int request_parser::error_status() const noexcept { return impl_->status_; }

std::string_view request_parser::error_reason() const noexcept { return impl_->reason_; }

bool request_parser::idle() const noexcept { return !impl_->started_ && !impl_->complete_ && !impl_->failed_; }

}  // namespace droid::http::detail
