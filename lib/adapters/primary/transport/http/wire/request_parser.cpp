// SPDX-License-Identifier: BSL-1.0
/// @file
/// `request_parser`: HTTP/1.1 request framing with our limits and smuggling rules, in one
/// strict RFC 9112 pass over the bytes.
///
/// Primary adapter, private. One automaton reads the request line, the field lines, the
/// body (by Content-Length or de-chunked) and the trailers, and makes every decision
/// listed below at the first byte that settles it.
///
/// ## Why our own parser and not libhttp-parser or llhttp
/// - **Strictness.** Debian's libhttp-parser 2.9.4 is built with `HTTP_PARSER_STRICT=0`,
///   and measured on Debian 12 it accepts: a header section ended by `\r\n\r` plus any
///   byte; chunk data followed by any two bytes instead of CRLF; a bare LF inside a chunk
///   extension; `5 garbage` as a chunk-size line; obs-fold; whitespace between a field name
///   and its colon (as part of the *name*, so `Content-Length : 5` is an unknown field to
///   it); bare-LF line endings, also in trailers; two spaces in the request line; bytes
///   >= 0x80 in the target; `HTTP/0.9` request lines. Each one is a place where a front
///   proxy that frames strictly sees a different message boundary than we do, which is
///   request smuggling (docs/reliability.md, B3). Using such a parser safely takes a
///   strict scan in front of it.
/// - **One opinion about where a message ends.** A scan in front of a library parser is
///   two parsers over the same bytes, and every place they could disagree (end of the
///   header section, Content-Length, chunk boundaries, CONNECT) is one more smuggling
///   surface that needs a check of its own. A single pass has nothing to agree with.
/// - **Cost.** On the request the HTTP benchmark sends (a ~110-byte JSON POST with six
///   fields, bench/http/parse_bench.cpp, callgrind), a strict scan followed by
///   libhttp-parser, with a string per name and value, spent about 18,200 instructions per
///   request in `feed()`, 30% of the server's user-space work for a tools/call. This pass
///   spends about 2,900 (3,400 with `take()` and freeing the request): one copy of the
///   header section and three allocations per request, none per field.
///
/// ## One automaton, two speeds
/// The byte loop in `scan` is the definition: one state, one byte, one decision. Most of a
/// header section is long runs (target, names, values), which it reads with word-at-a-time
/// tests within the current limit's budget. And when a whole request line or field line of
/// the ordinary shape is already in the buffer, `request_line_at_once` and
/// `field_lines_at_once` read it in one step, committing only what the byte loop would
/// have accepted with the same counts and offsets; anything else (a partial line, a limit,
/// an odd byte) is left to the byte loop. A test feeds seeded mutations of valid requests
/// whole and byte by byte, which compares the two speeds on every rule.
///
/// ## Why offsets first, views at the end of the header section
/// Bytes arrive split anywhere, and the caller may discard what `feed()` used, so the
/// header section is appended to the request's own storage at the end of every `feed()`.
/// That storage can still grow (and move) while the section is incomplete, so the scan
/// records offsets; the `string_view`s are made once, when the section is complete and the
/// storage is final. Names are lower-cased in that copy, in place.
///
/// ## Byte-split invariance
/// Every decision is made at one byte, from the automaton's state and that byte alone
/// (limits included), and `feed()` consumes exactly the bytes before a refused one. So the
/// verdict and the status do not depend on how the bytes were split across `feed()` calls;
/// otherwise a peer could pick the split that gets through. The tests cut every fixture at
/// every offset to hold this.
///
/// ## Decisions (status in brackets)
/// - Bare LF and bare CR as line endings anywhere outside body data [400]: RFC 9112 §2.2
///   allows a recipient to accept a bare LF, but a proxy in front that does not would
///   frame differently; no MCP client sends one.
/// - Line folding, whitespace before the first field line or before a colon [400]
///   (RFC 9112 §5.1, §5.2, §2.2); NUL, CR, LF, DEL or another control byte in a value
///   [400]; a target byte outside VCHAR [400]; more than one SP between request-line
///   parts [400]; a request line without `HTTP/x.y` (HTTP/0.9) [400].
/// - The target is origin-form (`/…`), absolute-form (`scheme://…`) or asterisk-form
///   (`*`), else [400] (RFC 9112 §3.2, §3: "SHOULD respond with a 400"). Absolute-form is
///   kept as sent (a server MUST accept it, §3.2.2); the connection layer reads it.
/// - Methods: a token without lower-case letters, else [400]. Methods are case-sensitive
///   (RFC 9110 §9.1), so `post` is not `POST`, and a peer sending it is confused or probing
///   proxies that upper-case methods. Any other method is framed like GET or POST; which
///   ones are served is the connection's business (405 with `Allow`).
/// - `CONNECT` [501], at the space that ends the method: after a 2xx it turns the
///   connection into a tunnel (RFC 9110 §9.3.6), so a proxy in front frames what follows
///   its header section differently from a request; we implement no tunnel.
/// - `HTTP/d.d` other than 1.0 and 1.1 [505], decided as soon as the request line ends;
///   any other version shape [400].
/// - Host: HTTP/1.1 with none, or any request with two [400] (RFC 9112 §3.2). The value
///   is not judged here: the rebinding allowlist answers 403 for it (A1).
/// - `Upgrade` is ignored (RFC 9110 §7.8 allows that): the request is framed as an
///   ordinary one and parsing goes on after it.
/// - Content-Length: two fields even if equal, a list, a sign, anything but digits
///   [400]; over `max_body` [413] before any body byte is read.
/// - Transfer-Encoding: with Content-Length, twice, or on HTTP/1.0 [400]; `chunked`
///   missing, not last, or twice [400] (RFC 9112 §6.3: the length cannot be determined);
///   `chunked` last behind any other coding, e.g. `gzip, chunked` [501] (we implement
///   none). Trailing SP (`chunked `) is not part of the value (RFC 9110 §5.5): accepted.
/// - A tab after the value of either framing field, or right after a chunk size [400].
///   It is OWS (BWS for the chunk size) and legal, but `chunked\t` is a known obfuscation
///   probe and parsers disagree on all three (http-parser 2.9 does not de-chunk the first
///   and refuses the others), so a proxy in front may not frame them as we would. No
///   client sends them.
/// - Chunked bodies: a size of more than 16 hex digits (whatever the leading zeros) or of
///   2^63 or more [400] (a signed 64-bit size, which most parsers use, overflows there: the
///   message is malformed, not merely too large); the declared sizes summing over
///   `max_body` [413], decided when a size line is read, so no data beyond the limit is
///   consumed; chunk-extension bytes over 16 KiB per message [413] (unbounded, they hold a
///   connection while sending nothing; Node caps them the same way after CVE-2024-22019).
///   Extensions are otherwise ignored.
/// - Trailers are checked like header fields (limits included: over them [431]) and
///   dropped; a trailer named Content-Length or Transfer-Encoding [400] (RFC 9110 §6.5.1),
///   since an intermediary that merges trailers would reframe on it.
/// - Empty lines before a request line are skipped (RFC 9112 §2.2) but count towards the
///   request-line limit, so CRLFs alone cannot hold a connection in the header phase.
/// - Keep-alive: HTTP/1.1 unless a Connection token is `close`; HTTP/1.0 only with a
///   `keep-alive` token and no `close` (RFC 9112 §9.3, §9.6; a 1.0 request naming both
///   closes, the reading that cannot leave a connection open the client meant to end).
///   After a request that does not keep alive, nothing more is parsed: bytes pipelined
///   past the end of the conversation must never run (B5).
#include "request_parser.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <droid/domain/ir/codec.hpp>

namespace droid::http::detail {

namespace {

/// Digits beyond this in one chunk size are refused: 16 hex digits hold any uint64, so
/// no overflow arithmetic is needed and leading zeros cannot stretch the line forever.
constexpr std::size_t max_chunk_size_digits = 16;

/// The largest chunk size that is not malformed: most parsers hold the size in a signed
/// 64-bit integer, and one that overflows there is read differently by them than by us,
/// so a larger size is refused as malformed (400) rather than as merely too large (413).
constexpr std::uint64_t max_chunk_size = (std::uint64_t{1} << 63) - 1;

/// Chunk-extension bytes allowed per message.
constexpr std::size_t max_chunk_extension_bytes = 16 * 1024;

/// Body bytes reserved up front for a Content-Length body: the whole of a small one (one
/// allocation), but never a declared size a slow client has not sent (memory per
/// connection follows what arrived; docs/reliability.md, B7).
constexpr std::size_t body_reserve_limit = 16 * 1024;

/// Byte classes: what the byte loop looks up, one table load per byte, instead of a chain
/// of comparisons per rule.
enum byte_class : unsigned char {
  tchar = 1,         // RFC 9110 §5.6.2 token character
  vchar = 2,         // visible ASCII, what a target may hold
  field_byte = 4,    // field-vchar / SP / HTAB, obs-text included (RFC 9110 §5.5)
  method_byte = 8,   // tchar that is not a lower-case letter
  scheme_byte = 16,  // ALPHA / DIGIT / "+" / "-" / "." (RFC 3986 §3.1, after the first)
};

constexpr std::array<unsigned char, 256> byte_classes = [] {
  std::array<unsigned char, 256> t{};
  for (unsigned c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    const bool symbol = c == '!' || c == '#' || c == '$' || c == '%' || c == '&' || c == '\'' || c == '*' ||
                        c == '+' || c == '-' || c == '.' || c == '^' || c == '_' || c == '`' || c == '|' || c == '~';
    unsigned char v = 0;
    if (alpha || digit || symbol) v |= tchar;
    if ((alpha || digit || symbol) && !(c >= 'a' && c <= 'z')) v |= method_byte;
    if (c > 0x20 && c < 0x7f) v |= vchar;
    if (c == '\t' || (c >= 0x20 && c != 0x7f)) v |= field_byte;
    if (alpha || digit || c == '+' || c == '-' || c == '.') v |= scheme_byte;
    t[c] = v;
  }
  return t;
}();

constexpr bool is(unsigned char c, byte_class k) noexcept { return (byte_classes[c] & k) != 0; }

constexpr char to_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

/// Eight bytes at a time (SWAR): `ones * b` repeats byte `b` in every lane.
constexpr std::uint64_t ones = 0x0101010101010101u;
constexpr std::uint64_t high_bits = ones * 0x80;

/// Marks (high bit) the lanes of `x` whose byte is below `n` (n <= 0x21 here). The borrow
/// of a marked lane can mark the lane above it too, so only the lowest mark is exact:
/// callers use "any" and "lowest", nothing else.
constexpr std::uint64_t has_less(std::uint64_t x, std::uint64_t n) noexcept { return (x - ones * n) & ~x & high_bits; }

/// The lanes of eight field-value bytes that are not plain value bytes: below SP (a tab
/// included, which the byte loop then accepts) or DEL. obs-text passes.
constexpr std::uint64_t value_misfits(std::uint64_t x) noexcept {
  return has_less(x, 0x20) | has_less(x ^ (ones * 0x7f), 1);
}

/// The lanes of eight bytes that are not VCHAR: below `!`, DEL, or above 0x7f.
constexpr std::uint64_t vchar_misfits(std::uint64_t x) noexcept {
  return has_less(x, 0x21) | has_less(x ^ (ones * 0x7f), 1) | (x & high_bits);
}

#if defined(__SSE2__)
/// A bit per byte of the sixteen at `p` that is not plainly of class `k` (bit i: byte i):
/// for values, below SP (a tab included, which the table then accepts) or DEL, obs-text
/// passing; for targets, outside VCHAR; for names, anything but a letter, a digit or
/// `-` (the table then judges the rarer token bytes). SSE2 compares are signed, so bytes
/// from 0x80 are negative: they fail every `greater than` below, as a target's or a
/// name's must.
template <byte_class k>
unsigned block_misfits(const unsigned char* p) noexcept {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const auto at_least = [&x](char c) { return _mm_cmpgt_epi8(x, _mm_set1_epi8(static_cast<char>(c - 1))); };
  const auto below = [&x](char c) { return _mm_cmplt_epi8(x, _mm_set1_epi8(c)); };
  __m128i fits;
  if constexpr (k == field_byte) {
    // Unsigned x >= SP: the larger of x and SP is x.
    const __m128i from_space = _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x20)), x);
    fits = _mm_andnot_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(0x7f)), from_space);
  } else if constexpr (k == vchar) {
    fits = _mm_and_si128(at_least(0x21), below(0x7f));
  } else {
    static_assert(k == tchar);
    const __m128i folded = _mm_or_si128(x, _mm_set1_epi8(0x20));  // 'A'-'Z' onto 'a'-'z'
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                         _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
    const __m128i digit = _mm_and_si128(at_least('0'), below('9' + 1));
    fits = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(x, _mm_set1_epi8('-')));
  }
  return ~static_cast<unsigned>(_mm_movemask_epi8(fits)) & 0xffffu;
}
#endif

/// `w` with its ASCII capitals lower-cased, for lanes below 0x80 (field names are
/// tokens): adding to such a lane cannot carry into the next one, so the high bit of each
/// lane tells `>= 'A'` and `> 'Z'` apart, and `0x80 >> 2` is the case bit.
template <typename Word>
constexpr Word lower_word(Word w) noexcept {
  constexpr Word lanes = static_cast<Word>(ones);
  const Word at_least_a = static_cast<Word>(w + lanes * (0x80 - 'A'));
  const Word above_z = static_cast<Word>(w + lanes * (0x7f - 'Z'));
  return static_cast<Word>(w | ((at_least_a & ~above_z & static_cast<Word>(high_bits)) >> 2));
}

template <typename Word>
void lower_at(char* p) noexcept {
  Word w{};
  std::memcpy(&w, p, sizeof w);
  w = lower_word(w);
  std::memcpy(p, &w, sizeof w);
}

/// Lower-cases the ASCII letters of a field name in place, a word at a time; the last
/// word may overlap the one before it, which is harmless since lower-casing is idempotent.
void lower_ascii(char* p, std::size_t n) noexcept {
  if (n >= 8) {
    for (std::size_t k = 0; k + 8 <= n; k += 8) lower_at<std::uint64_t>(p + k);
    if (n % 8 != 0) lower_at<std::uint64_t>(p + n - 8);
  } else if (n >= 4) {
    lower_at<std::uint32_t>(p);
    lower_at<std::uint32_t>(p + n - 4);
  } else {
    for (std::size_t k = 0; k < n; ++k) p[k] = to_lower(p[k]);
  }
}

constexpr bool is_alpha(unsigned char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

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
  return a.size() == lower.size() &&
         std::equal(a.begin(), a.end(), lower.begin(), [](char x, char y) { return to_lower(x) == y; });
}

/// A refusal: the status to answer and a phrase for logs. `status == 0` means none.
struct verdict {
  int status = 0;
  std::string_view reason;
};

/// True when the whitespace after a field value (OWS, not part of it) holds a tab. See the
/// file comment: legal, but parsers disagree on it in the two fields that frame a body.
bool ends_in_tab(std::string_view raw) noexcept {
  const std::size_t last = raw.find_last_not_of(" \t");
  return raw.find('\t', last == std::string_view::npos ? 0 : last) != std::string_view::npos;
}

/// Judges a Transfer-Encoding value (one field; two are refused before this), as received
/// apart from leading OWS.
verdict judge_transfer_encoding(std::string_view raw) noexcept {
  std::string_view value = raw;
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
  if (ends_in_tab(raw)) return {400, "Transfer-Encoding chunked followed by a tab"};
  return {};
}

/// What a Connection field says about keeping the connection open.
struct connection_tokens {
  bool close = false;
  bool keep_alive = false;
};

/// Notes the `close` and `keep-alive` tokens of one Connection field (a comma-separated
/// list, RFC 9110 §7.6.1); a request may carry several such fields.
void read_connection(std::string_view value, connection_tokens& out) noexcept {
  for (;;) {
    const std::size_t comma = value.find(',');
    const std::string_view token = trim_ows(value.substr(0, comma));
    if (iequals(token, "close")) out.close = true;
    if (iequals(token, "keep-alive")) out.keep_alive = true;
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

request::request(request&& other) noexcept
    : method(std::exchange(other.method, {})),
      target(std::exchange(other.target, {})),
      authority(std::exchange(other.authority, {})),
      version_major(other.version_major),
      version_minor(other.version_minor),
      headers(std::move(other.headers)),
      body(std::move(other.body)),
      keep_alive(other.keep_alive),
      head_(std::move(other.head_)),
      known_(other.known_),
      repeated_(other.repeated_),
      indexed_(std::exchange(other.indexed_, false)) {
  other.headers.clear();
  other.body.clear();
}

request& request::operator=(request&& other) noexcept {
  if (this != &other) {
    // The storage moves with its buffer (a vector's move never copies elements), so the
    // views taken from `other` stay valid here.
    head_ = std::move(other.head_);
    method = std::exchange(other.method, {});
    target = std::exchange(other.target, {});
    authority = std::exchange(other.authority, {});
    version_major = other.version_major;
    version_minor = other.version_minor;
    headers = std::move(other.headers);
    body = std::move(other.body);
    keep_alive = other.keep_alive;
    known_ = other.known_;
    repeated_ = other.repeated_;
    indexed_ = std::exchange(other.indexed_, false);
    other.head_.clear();
    other.headers.clear();
    other.body.clear();
  }
  return *this;
}

const std::string_view* request::find_any(std::string_view lower_name) const noexcept {
  for (const header_field& f : headers)
    if (f.name == lower_name) return &f.value;
  return nullptr;
}

std::size_t request::count_any(std::string_view lower_name) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(headers.begin(), headers.end(), [&](const header_field& f) { return f.name == lower_name; }));
}

/// The parser's state: the automaton, the offsets of what it has recorded so far, and the
/// request being assembled.
///
/// Invariants: once `failed_`, no byte is consumed again; `complete_` means a whole
/// request waits in `request_` and nothing is consumed until `take()`; offsets in
/// `fields_` index `request_.head_`. Affinity: the connection that owns it. Lifetime:
/// owned by `request_parser` through a `unique_ptr`.
struct request_parser::impl {
  /// Where the message is, as far as `feed()` is concerned.
  enum class phase : unsigned char { head, identity_body, chunked_body, done };

  /// Where the automaton is. The order matters: the request-line states come first and
  /// the field-section states form one run, so the limit counters test a range.
  enum class state : unsigned char {
    line_start,       // empty lines or the first byte of the method
    leading_lf,       // LF of an empty line before the request line
    method,
    target_start,     // the first byte decides the form
    target_asterisk,  // `*`, which must be all of it
    target_scheme,    // absolute-form: the scheme
    target_colon,     // absolute-form: the first `/` after `scheme:`
    target_slash,     // absolute-form: the second `/`
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
  };

  /// How far `scan` got and why it stopped there.
  struct scan_result {
    enum class stop : unsigned char {
      more,      // every byte used, the section or message goes on
      boundary,  // the LF ending the header section, or the trailers, was the last byte used
      refused,   // `end` is the offending byte, not used
    };
    std::size_t end = 0;
    stop how = stop::more;
    verdict refusal{};
  };

  /// Where one header field lies in `request_.head_`: the name, and the value as received
  /// between the colon and the CR (trimmed when the views are made).
  struct field_span {
    std::size_t name_begin;
    std::size_t name_end;
    std::size_t value_begin;
    std::size_t value_end;
  };

  explicit impl(parser_limits limits) : limits_(limits) {
    // Reused for every request on the connection: the offsets cost no allocation per
    // request once a connection has seen its largest header section.
    fields_.reserve(16);
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
    // pipelined past the end of the conversation: it must never run (B5).
    closed_ = !out.keep_alive;
    request_ = request{};
    fields_.clear();
    phase_ = phase::head;
    state_ = state::line_start;
    line_bytes_ = section_bytes_ = field_count_ = 0;
    version_len_ = method_len_ = trailer_name_len_ = 0;
    chunk_size_ = chunk_left_ = body_declared_ = body_left_ = 0;
    chunk_digits_ = chunk_extension_bytes_ = 0;
    trailers_ = chunked_ = false;
    headers_edge_ = complete_ = started_ = false;
    content_length_.reset();
    return out;
  }

  // ---- the three phases --------------------------------------------------------------

  std::size_t feed_head(const char* data, std::size_t size) {
    const std::size_t base = request_.head_.size();
    const scan_result scanned = scan(data, size, base);
    if (scanned.how == scan_result::stop::refused) {
      refuse(scanned.refusal.status, scanned.refusal.reason);
      return scanned.end;
    }
    // One copy of what was used: the section is complete in one read for any ordinary
    // request, so this is the request's only allocation for its header bytes.
    std::vector<char>& head = request_.head_;
    head.insert(head.end(), data, data + scanned.end);
    if (scanned.how == scan_result::stop::more) return scanned.end;

    // The final LF is where the header rules apply; a refusal there leaves it unused, as
    // any refused byte is.
    if (!judge_head()) return scanned.end - 1;
    headers_edge_ = true;
    if (chunked_) {
      phase_ = phase::chunked_body;
      state_ = state::chunk_size;
    } else if (body_left_ > 0) {
      phase_ = phase::identity_body;
      // With the decoder's padding, a body that fits is decoded in place, not copied.
      request_.body.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, body_reserve_limit)) +
                            ir::decode_padding);
    } else {
      phase_ = phase::done;
      complete_ = true;
    }
    return scanned.end;
  }

  std::size_t feed_identity(const char* data, std::size_t size) {
    // Nothing to judge: body data is opaque and the Content-Length was checked.
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, size));
    request_.body.append(data, n);
    body_left_ -= n;
    if (body_left_ == 0) {
      phase_ = phase::done;
      complete_ = true;
    }
    return n;
  }

  std::size_t feed_chunked(const char* data, std::size_t size) {
    const scan_result scanned = scan(data, size, 0);
    if (scanned.how == scan_result::stop::refused) {
      refuse(scanned.refusal.status, scanned.refusal.reason);
    } else if (scanned.how == scan_result::stop::boundary) {
      phase_ = phase::done;
      complete_ = true;
    }
    return scanned.end;
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

  // ---- the header section, once complete ---------------------------------------------

  /// Makes the request's views and applies the rules that need the whole section (Host,
  /// Content-Length, Transfer-Encoding, Connection). False (and failed) on a refusal.
  bool judge_head() {
    request& r = request_;
    char* const head = r.head_.data();
    const auto view = [head](std::size_t begin, std::size_t end) {
      return std::string_view(head + begin, end - begin);
    };
    r.method = view(method_begin_, method_end_);
    r.target = view(target_begin_, target_end_);
    r.authority = {};
    if (!r.target.empty() && r.target.front() != '/' && r.target.front() != '*') {
      // Absolute-form (the request line's states let only `scheme://…` through here):
      // the authority runs to the first `/`, `?` or `#`, the rest is the origin-form
      // target, and an empty path is `/` (RFC 9112 §3.2.2, RFC 3986 §3.3).
      std::string_view rest = r.target.substr(r.target.find("://") + 3);
      const std::size_t end = std::min(rest.find_first_of("/?#"), rest.size());
      r.authority = rest.substr(0, end);
      rest.remove_prefix(end);
      if (r.authority.empty()) return refuse(400, "absolute-form request target without a host");
      r.target = rest.empty() || rest.front() != '/' ? std::string_view("/") : rest;
    }
    r.version_major = static_cast<unsigned>(version_[5] - '0');
    r.version_minor = static_cast<unsigned>(version_[7] - '0');

    std::size_t hosts = 0;
    std::size_t lengths = 0;
    std::size_t encodings = 0;
    std::string_view length_value;
    std::string_view length_raw;
    std::string_view encoding_raw;
    connection_tokens connection;
    r.headers.reserve(fields_.size());
    r.known_ = {};
    r.repeated_ = 0;
    r.indexed_ = fields_.size() <= 255;
    for (const field_span& f : fields_) {
      lower_ascii(head + f.name_begin, f.name_end - f.name_begin);
      const std::string_view name = view(f.name_begin, f.name_end);
      std::size_t begin = f.value_begin;
      std::size_t end = f.value_end;
      while (begin < end && is_ows(head[begin])) ++begin;
      const std::string_view raw = view(begin, end);
      while (end > begin && is_ows(head[end - 1])) --end;
      const std::string_view value = view(begin, end);
      r.headers.push_back({name, value});
      // One pass classifies the fields the framing depends on; the lengths tell them apart
      // before any comparison of bytes.
      switch (name.size()) {
        case 4:
          if (name == "host") ++hosts;
          break;
        case 10:
          if (name == "connection") read_connection(value, connection);
          break;
        case 14:
          if (name == "content-length") {
            ++lengths;
            length_value = value;
            length_raw = raw;
          }
          break;
        case 17:
          if (name == "transfer-encoding") {
            ++encodings;
            encoding_raw = raw;
          }
          break;
        default:
          break;
      }
      // The same pass indexes the fields the transport reads on every request.
      if (const int slot = request::known_slot(name); slot >= 0 && r.indexed_) {
        std::uint8_t& at = r.known_[static_cast<std::size_t>(slot)];
        if (at == 0) at = static_cast<std::uint8_t>(r.headers.size());
        else r.repeated_ = static_cast<std::uint16_t>(r.repeated_ | (1u << slot));
      }
    }

    if (hosts > 1) return refuse(400, "more than one Host field");
    if (hosts == 0 && r.version_minor == 1) return refuse(400, "HTTP/1.1 request without Host");
    if (lengths > 1) return refuse(400, "more than one Content-Length field");
    if (encodings > 0) {
      if (encodings > 1) return refuse(400, "more than one Transfer-Encoding field");
      if (r.version_minor == 0) return refuse(400, "Transfer-Encoding in an HTTP/1.0 request");
      if (lengths > 0) return refuse(400, "both Content-Length and Transfer-Encoding");
      if (const verdict v = judge_transfer_encoding(encoding_raw); v.status != 0) return refuse(v.status, v.reason);
      chunked_ = true;
    } else if (lengths == 1) {
      std::uint64_t value = 0;
      const char* const last = length_value.data() + length_value.size();
      const auto [end, ec] = std::from_chars(length_value.data(), last, value);
      // from_chars takes no sign, so all digits is what is left to check.
      if (length_value.empty() || ec != std::errc{} || end != last) return refuse(400, "invalid Content-Length");
      // Only whitespace after the value can hold the tab (the usual value has none).
      if (length_raw.size() != length_value.size() && ends_in_tab(length_raw))
        return refuse(400, "Content-Length followed by a tab");
      content_length_ = value;
      if (value > limits_.max_body) return refuse(413, "body larger than the limit");
      body_left_ = value;
    }
    r.keep_alive = !connection.close && (r.version_minor == 1 || connection.keep_alive);
    return true;
  }

  // ---- the automaton -----------------------------------------------------------------

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

  /// The refusal for byte `c` where a request target's form does not allow it.
  static scan_result refused_in_target(std::size_t offset, unsigned char c) {
    if (c == '\r' || c == '\n') return refused(offset, 400, "request line without an HTTP version");
    if (!is(c, vchar)) return refused(offset, 400, "invalid character in the request target");
    return refused(offset, 400, "request target not in origin, absolute or asterisk form");
  }

  /// Reads `data` from the current state. Stops after the LF that ends the header or
  /// trailer section (`boundary`), at the first byte RFC 9112 or a limit does not allow
  /// (`refused`, `end` is that byte), or at the end of `data` (`more`). `base` is where
  /// `data[0]` will land in `request_.head_` (header section only). Chunk data is
  /// appended to the body by length, without looking at it.
  ///
  /// Every byte outside a run is counted against its limit *before* it is judged, so an
  /// oversized line is refused while it is still arriving, never after it was buffered
  /// whole. The runs (target, field name, field value) are an unrolled form of the same
  /// rule: they stop where the budget ends, and the next byte is counted and refused as
  /// it would have been. The request line is method SP target SP version (its CR is not
  /// counted, empty lines before it are); the header block is every field line with its
  /// CRLF plus the final CRLF.
  scan_result scan(const char* data, std::size_t size, std::size_t base) {
    using stop = scan_result::stop;
    std::size_t i = 0;
    while (i < size) {
      // Whole lines of the ordinary shape first; the byte loop below decides the rest.
      if (state_ == state::field_start && !trailers_) {
        i = field_lines_at_once(data, i, size, base);
        if (i == size) break;
      } else if (state_ == state::line_start) {
        i = request_line_at_once(data, i, size, base);
        if (i == size) break;
      }
      const auto c = static_cast<unsigned char>(data[i]);
      if (state_ <= state::version) {
        if (!(state_ == state::version && c == '\r') && ++line_bytes_ > limits_.max_request_line)
          return refused(i, 414, "request line longer than the limit");
      } else if (state_ >= state::field_start && state_ <= state::section_lf) {
        if (++section_bytes_ > limits_.max_header_bytes)
          return refused(i, 431,
                         trailers_ ? "trailer section larger than the limit" : "header section larger than the limit");
      } else if (state_ == state::chunk_ws || state_ == state::chunk_ext) {
        if (++chunk_extension_bytes_ > max_chunk_extension_bytes)
          return refused(i, 413, "chunk extensions larger than the limit");
      }

      switch (state_) {
        case state::line_start:
          if (c == '\r') {
            state_ = state::leading_lf;
          } else if (is(c, method_byte)) {
            method_begin_ = base + i;
            method_prefix_[0] = static_cast<char>(c);
            method_len_ = 1;
            state_ = state::method;
          } else {
            return refused(i, 400, c == '\n' ? "bare LF before the request line" : "invalid character in the method");
          }
          break;
        case state::leading_lf:
          if (c != '\n') return refused(i, 400, "bare CR before the request line");
          state_ = state::line_start;
          break;
        case state::method:
          if (c == ' ') {
            if (method_len_ == 7 && std::memcmp(method_prefix_, "CONNECT", 7) == 0)
              return refused(i, 501, "CONNECT is not implemented");
            method_end_ = base + i;
            state_ = state::target_start;
          } else if (!is(c, method_byte)) {
            return refused(i, 400, "invalid character in the method");
          } else if (method_len_ < sizeof method_prefix_) {
            method_prefix_[method_len_++] = static_cast<char>(c);
          } else {
            method_len_ = sizeof method_prefix_ + 1;  // longer than any method we compare with
          }
          break;

        case state::target_start:
          target_begin_ = base + i;
          if (c == '/') {
            state_ = state::target;
          } else if (c == '*') {
            state_ = state::target_asterisk;
          } else if (is_alpha(c)) {
            state_ = state::target_scheme;
          } else {
            return refused_in_target(i, c);
          }
          break;
        case state::target_asterisk:
          if (c != ' ') return refused_in_target(i, c);
          target_end_ = base + i;
          state_ = state::version;
          version_len_ = 0;
          break;
        case state::target_scheme:
          if (c == ':') {
            state_ = state::target_colon;
          } else if (!is(c, scheme_byte)) {
            return refused_in_target(i, c);
          }
          break;
        case state::target_colon:
        case state::target_slash:
          if (c != '/') return refused_in_target(i, c);
          state_ = state_ == state::target_colon ? state::target_slash : state::target;
          break;
        case state::target:
          if (c == ' ') {
            target_end_ = base + i;
            state_ = state::version;
            version_len_ = 0;
          } else if (!is(c, vchar)) {
            return refused_in_target(i, c);
          } else {
            // The run of target bytes, within what is left of the request-line budget.
            i = skip_run<vchar>(data, i, size, limits_.max_request_line - line_bytes_, line_bytes_);
          }
          break;
        case state::version:
          if (c == '\r') {
            if (const verdict v = judge_version(); v.status != 0) return refused(i, v.status, v.reason);
            state_ = state::request_line_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending the request line");
          } else if (version_len_ == sizeof version_) {
            return refused(i, 400, "malformed HTTP version");
          } else {
            version_[version_len_++] = static_cast<char>(c);
          }
          break;
        case state::request_line_lf:
          if (c != '\n') return refused(i, 400, "bare CR ending the request line");
          state_ = state::field_start;
          break;

        case state::field_start:
          if (c == '\r') {
            state_ = state::section_lf;
          } else if (c == ' ' || c == '\t') {
            return refused(i, 400, "field line starting with whitespace (obs-fold)");
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending a field section");
          } else if (!is(c, tchar)) {
            return refused(i, 400, "invalid character in a field name");
          } else if (++field_count_ > limits_.max_header_count) {
            return refused(i, 431,
                           trailers_ ? "more trailer fields than the limit" : "more header fields than the limit");
          } else {
            state_ = state::field_name;
            if (trailers_) {
              trailer_name_len_ = 0;
              note_trailer_name_byte(c);
            } else {
              field_.name_begin = base + i;
            }
          }
          break;
        case state::field_name:
          if (c == ':') {
            if (trailers_ && is_framing_trailer()) return refused(i, 400, "framing field in the trailer section");
            field_.name_end = base + i;
            field_.value_begin = field_.name_end + 1;
            state_ = state::field_value;
          } else if (c == ' ' || c == '\t') {
            // `Content-Length : 5` would be an unknown field named "content-length " to a
            // parser that keeps the space, and the framing field to one that drops it.
            return refused(i, 400, "whitespace in a field name or before its colon");
          } else if (!is(c, tchar)) {
            return refused(i, 400,
                           c == '\r' || c == '\n' ? "field line without a colon" : "invalid character in a field name");
          } else if (trailers_) {
            note_trailer_name_byte(c);
          } else {
            i = skip_run<tchar>(data, i, size, limits_.max_header_bytes - section_bytes_, section_bytes_);
          }
          break;
        case state::field_value:
          if (c == '\r') {
            if (!trailers_) {
              field_.value_end = base + i;
              fields_.push_back(field_);
            }
            state_ = state::field_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF ending a field line");
          } else if (!is(c, field_byte)) {
            return refused(i, 400, "control character in a field value");
          } else {
            i = skip_run<field_byte>(data, i, size, limits_.max_header_bytes - section_bytes_, section_bytes_);
          }
          break;
        case state::field_lf:
          if (c != '\n') return refused(i, 400, "bare CR in a field line");
          state_ = state::field_start;
          break;
        case state::section_lf:
          if (c != '\n') return refused(i, 400, "CR not followed by LF at the end of a field section");
          return {i + 1, stop::boundary, {}};

        case state::chunk_size: {
          if (const int v = hex_value(c); v >= 0) {
            if (chunk_digits_ == max_chunk_size_digits) return refused(i, 400, "chunk size has too many digits");
            if (chunk_size_ > (max_chunk_size - static_cast<unsigned>(v)) / 16)
              return refused(i, 400, "chunk size does not fit in 63 bits");
            chunk_size_ = chunk_size_ * 16 + static_cast<unsigned>(v);
            ++chunk_digits_;
            break;
          }
          if (chunk_digits_ == 0) return refused(i, 400, "invalid chunk size");
          // BWS before `;` may be SP or HTAB (RFC 9112 §7.1.1), but parsers disagree on a
          // tab right after the size (http-parser 2.9 refuses it): refused, like the tab
          // after a framing field's value.
          if (c != '\r' && c != ';' && c != ' ')
            return refused(i, 400, c == '\n' ? "bare LF after a chunk size" : "invalid character after a chunk size");
          // The size is known here, before any of its data: refuse the whole chunk rather
          // than read up to the limit first. body_declared_ <= max_body always holds.
          if (chunk_size_ > limits_.max_body - body_declared_)
            return refused(i, 413, "chunked body larger than the limit");
          body_declared_ += chunk_size_;
          state_ = c == '\r' ? state::chunk_size_lf : c == ';' ? state::chunk_ext : state::chunk_ws;
          if (state_ != state::chunk_size_lf && ++chunk_extension_bytes_ > max_chunk_extension_bytes)
            return refused(i, 413, "chunk extensions larger than the limit");
          break;
        }
        case state::chunk_ws:
          if (c == ';') {
            state_ = state::chunk_ext;
          } else if (c != ' ' && c != '\t') {
            // Lenient parsers take anything after a space as an extension ("5 garbage").
            return refused(i, 400, "invalid chunk extension");
          }
          break;
        case state::chunk_ext:
          if (c == '\r') {
            state_ = state::chunk_size_lf;
          } else if (c == '\n') {
            return refused(i, 400, "bare LF in a chunk extension");
          } else if (!is(c, field_byte)) {
            return refused(i, 400, "control character in a chunk extension");
          }
          break;
        case state::chunk_size_lf:
          if (c != '\n') return refused(i, 400, "bare CR in a chunk-size line");
          if (chunk_size_ == 0) {
            trailers_ = true;
            section_bytes_ = field_count_ = 0;
            state_ = state::field_start;
          } else {
            chunk_left_ = chunk_size_;
            state_ = state::chunk_data;
          }
          chunk_size_ = 0;
          chunk_digits_ = 0;
          break;
        case state::chunk_data: {
          const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, size - i));
          request_.body.append(data + i, n);
          chunk_left_ -= n;
          i += n - 1;
          if (chunk_left_ == 0) state_ = state::chunk_data_cr;
          break;
        }
        case state::chunk_data_cr:
          if (c != '\r') return refused(i, 400, "chunk data not followed by CRLF");
          state_ = state::chunk_data_lf;
          break;
        case state::chunk_data_lf:
          if (c != '\n') return refused(i, 400, "chunk data not followed by CRLF");
          state_ = state::chunk_size;
          break;
      }
      ++i;
    }
    return {size, stop::more, {}};
  }

  /// The end of the run of class-`k` bytes that starts at `from`, never past `stop`: the
  /// body of the hot loops, where most of a header section's bytes go.
  ///
  /// Sixteen bytes at a time where the machine has SSE2 (every x86-64 does): a test of
  /// the bytes that are plainly in the class (for names: letters, digits and `-`, what
  /// every common field name is made of) finds the first byte that is not; the table
  /// decides that one, and a byte the table accepts (a tab in a value, `_` in a name) is
  /// stepped over and the block test goes on. So a block test only ever skips bytes the
  /// table accepts, and a run ends where the byte loop would end it. Before: names were
  /// read a byte at a time (a word test of their irregular alphabet cost more than it
  /// saved), and each value's last few bytes as well; the byte loops were a third of the
  /// parser's instructions (bench/http/parse_bench.cpp under callgrind). What is left
  /// (fewer than sixteen bytes before `stop`) is tested eight at a time as a 64-bit word
  /// for values and targets, then byte by byte.
  template <byte_class k>
  static std::size_t run_end(const char* data, std::size_t from, std::size_t stop) noexcept {
    const auto* const p = reinterpret_cast<const unsigned char*>(data);
    std::size_t j = from;
#if defined(__SSE2__)
    if constexpr (k == field_byte || k == vchar || k == tchar) {
      while (stop - j >= 16) {
        const unsigned misfits = block_misfits<k>(p + j);
        if (misfits == 0) {
          j += 16;
          continue;
        }
        j += static_cast<std::size_t>(std::countr_zero(misfits));
        if (!is(p[j], k)) return j;
        ++j;
      }
    }
#endif
    if constexpr (k == field_byte || k == vchar) {
      while (stop - j >= 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, p + j, 8);
        const std::uint64_t misfits = k == field_byte ? value_misfits(w) : vchar_misfits(w);
        if (misfits == 0) {
          j += 8;
          continue;
        }
        // The lowest marked lane is exact (a false mark needs a true one below it): on a
        // little-endian machine that is the first byte the byte loop has to look at.
        if constexpr (std::endian::native == std::endian::little)
          j += static_cast<std::size_t>(std::countr_zero(misfits)) / 8;
        break;
      }
    }
    while (j < stop && is(p[j], k)) ++j;
    return j;
  }

  /// Where the run of class-`k` bytes after byte `i` ends, within `size` and a budget of
  /// `left` more counted bytes; adds the run to `counter` and returns the index of its
  /// last byte (the loop's `++i` moves past it).
  template <byte_class k>
  static std::size_t skip_run(const char* data, std::size_t i, std::size_t size, std::size_t left,
                              std::size_t& counter) noexcept {
    const std::size_t end = run_end<k>(data, i + 1, i + 1 + std::min(size - i - 1, left));
    counter += end - (i + 1);
    return end - 1;
  }

  /// Reads a whole request line of the ordinary shape, `METHOD SP /target SP HTTP/1.x
  /// CRLF`, that lies within `data` and the line budget; returns where it ends, or `i`
  /// (nothing read, no state changed) for anything else.
  ///
  /// Why: the byte loop pays a dispatch per byte for the request line's dozen structural
  /// bytes. This commits only a line that the byte loop would accept whole, with the same
  /// counts and offsets, and leaves every other shape (partial, over the limit, CONNECT,
  /// other target forms or versions, anything refused) to the byte loop, so the verdict
  /// cannot differ; the split tests compare the two on every fixture.
  std::size_t request_line_at_once(const char* data, std::size_t i, std::size_t size, std::size_t base) noexcept {
    // Counted bytes run from the method to the version; the CR is not counted.
    const std::size_t stop = i + std::min(size - i, limits_.max_request_line - line_bytes_);
    const std::size_t method_end = run_end<method_byte>(data, i, stop);
    if (method_end == i || method_end + 1 >= stop || data[method_end] != ' ' || data[method_end + 1] != '/')
      return i;
    if (method_end - i == 7 && std::memcmp(data + i, "CONNECT", 7) == 0) return i;
    const std::size_t target_begin = method_end + 1;
    const std::size_t target_end = run_end<vchar>(data, target_begin + 1, stop);
    const std::size_t version = target_end + 1;
    if (target_end >= stop || data[target_end] != ' ' || stop - version < 8 || size - version < 10) return i;
    if (std::memcmp(data + version, "HTTP/1.", 7) != 0 || (data[version + 7] != '1' && data[version + 7] != '0') ||
        data[version + 8] != '\r' || data[version + 9] != '\n')
      return i;
    method_begin_ = base + i;
    method_end_ = base + method_end;
    target_begin_ = base + target_begin;
    target_end_ = base + target_end;
    std::memcpy(version_, data + version, 8);
    version_len_ = 8;
    line_bytes_ += version + 8 - i;
    state_ = state::field_start;
    return version + 10;
  }

  /// Reads whole header field lines, `name:value CRLF`, that lie within `data` and the
  /// section budget; returns where the last one ends (`i` if none). Why, and why it cannot
  /// change a verdict: as for `request_line_at_once`, with the field count as well.
  std::size_t field_lines_at_once(const char* data, std::size_t i, std::size_t size, std::size_t base) {
    while (field_count_ < limits_.max_header_count) {
      const std::size_t stop = i + std::min(size - i, limits_.max_header_bytes - section_bytes_);
      const std::size_t colon = run_end<tchar>(data, i, stop);
      if (colon == i || colon >= stop || data[colon] != ':') break;
      const std::size_t cr = run_end<field_byte>(data, colon + 1, stop);
      if (stop - cr < 2 || data[cr] != '\r' || data[cr + 1] != '\n') break;
      fields_.push_back({base + i, base + colon, base + colon + 1, base + cr});
      ++field_count_;
      section_bytes_ += cr + 2 - i;
      i = cr + 2;
    }
    return i;
  }

  /// Keeps the first bytes of a trailer's name, lower-cased, for `is_framing_trailer`
  /// (trailers are dropped, so nothing else of them is stored).
  void note_trailer_name_byte(unsigned char c) noexcept {
    if (trailer_name_len_ < sizeof trailer_name_) trailer_name_[trailer_name_len_] = to_lower(static_cast<char>(c));
    if (trailer_name_len_ <= sizeof trailer_name_) ++trailer_name_len_;
  }

  [[nodiscard]] bool is_framing_trailer() const noexcept {
    if (trailer_name_len_ > sizeof trailer_name_) return false;
    const std::string_view name(trailer_name_, trailer_name_len_);
    return name == "content-length" || name == "transfer-encoding";
  }

  parser_limits limits_;
  request request_;
  std::vector<field_span> fields_;  // the header fields of request_, as offsets
  field_span field_{};              // the field being read

  phase phase_ = phase::head;
  state state_ = state::line_start;
  std::size_t line_bytes_ = 0;     // request line so far, empty lines before it included
  std::size_t section_bytes_ = 0;  // header (or trailer) block so far
  std::size_t field_count_ = 0;
  std::size_t method_begin_ = 0;
  std::size_t method_end_ = 0;
  std::size_t target_begin_ = 0;
  std::size_t target_end_ = 0;
  char method_prefix_[8]{};  // enough to recognise CONNECT without the stored bytes
  std::size_t method_len_ = 0;
  char version_[8]{};
  std::size_t version_len_ = 0;
  char trailer_name_[17]{};  // "transfer-encoding" is the longest name compared
  std::size_t trailer_name_len_ = 0;
  std::uint64_t chunk_size_ = 0;
  std::size_t chunk_digits_ = 0;
  std::uint64_t chunk_left_ = 0;
  std::uint64_t body_declared_ = 0;  // sum of chunk sizes read so far
  std::uint64_t body_left_ = 0;      // Content-Length bytes still to read
  std::size_t chunk_extension_bytes_ = 0;
  bool trailers_ = false;

  bool headers_edge_ = false;  // the header section ended during the last feed()
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

void request_parser::recycle(request&& served) noexcept {
  constexpr std::size_t max_head = 4096;
  constexpr std::size_t max_fields = 32;
  request& next = impl_->request_;
  if (impl_->started_ || next.head_.capacity() > 0 || served.head_.capacity() > max_head ||
      served.headers.capacity() > max_fields)
    return;
  served.head_.clear();
  served.headers.clear();
  next.head_ = std::move(served.head_);
  next.headers = std::move(served.headers);
}

bool request_parser::failed() const noexcept { return impl_->failed_; }

int request_parser::error_status() const noexcept { return impl_->status_; }

std::string_view request_parser::error_reason() const noexcept { return impl_->reason_; }

bool request_parser::idle() const noexcept { return !impl_->started_ && !impl_->complete_ && !impl_->failed_; }

}  // namespace droid::http::detail
