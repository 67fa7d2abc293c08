// SPDX-License-Identifier: BSL-1.0
/// @file
/// HTTP/1.1 request framing against docs/reliability.md, B1, B3, B4 and B5, sans-io:
/// bytes go in as a connection would receive them (whole, a byte at a time, or cut at
/// every offset), requests or an error status come out.
#include "adapters/primary/transport/http/wire/request_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

using droid::http::detail::parser_limits;
using droid::http::detail::request;
using droid::http::detail::request_parser;

namespace {

/// A string literal with its embedded NULs kept.
template <std::size_t N>
std::string lit(const char (&s)[N]) {
  return std::string(s, N - 1);
}

/// One line per part of a request, so two requests compare with a readable diff.
std::string describe(const request& r) {
  std::string s = std::string(r.method) + ' ' + std::string(r.target) + " HTTP/" + std::to_string(r.version_major) +
                  '.' + std::to_string(r.version_minor) + (r.keep_alive ? " keep-alive\n" : " close\n");
  for (const auto& h : r.headers) s.append(h.name).append(": ").append(h.value) += '\n';
  return s + "body[" + std::to_string(r.body.size()) + "]: " + r.body;
}

struct run_result {
  std::vector<std::string> requests;  // described
  bool failed = false;
  int status = 0;
  std::size_t consumed = 0;
};

/// Feeds `bytes` the way the connection loop does: `arrivals` are the offsets at which
/// more bytes have been received (ascending, the last is the size); everything received
/// and not yet used is offered, complete requests are taken, a failure stops the run.
run_result drive(std::string_view bytes, const std::vector<std::size_t>& arrivals, parser_limits limits = {}) {
  request_parser p(limits);
  run_result r;
  std::size_t start = 0;
  for (const std::size_t received : arrivals) {
    while (start < received && !p.failed()) {
      const std::size_t used = p.feed(bytes.data() + start, received - start);
      start += used;
      if (p.complete()) {
        r.requests.push_back(describe(p.take()));
      } else if (used == 0) {
        break;
      }
    }
    if (p.failed()) break;
  }
  r.failed = p.failed();
  r.status = p.error_status();
  r.consumed = start;
  if (r.failed) {
    // The stream is out of sync: whatever is left must never be parsed.
    CHECK_FALSE(p.complete());
    if (start < bytes.size()) CHECK(p.feed(bytes.data() + start, bytes.size() - start) == 0);
    CHECK_FALSE(p.error_reason().empty());
  }
  return r;
}

run_result whole(std::string_view bytes, parser_limits limits = {}) { return drive(bytes, {bytes.size()}, limits); }

run_result bytewise(std::string_view bytes) {
  std::vector<std::size_t> arrivals;
  for (std::size_t i = 1; i <= bytes.size(); ++i) arrivals.push_back(i);
  return drive(bytes, arrivals);
}

run_result split_at(std::string_view bytes, std::size_t cut) { return drive(bytes, {cut, bytes.size()}); }

/// A request line of exactly `total` bytes (method SP target SP version).
std::string request_line(std::size_t total) {
  return "GET /" + std::string(total - 14, 'a') + " HTTP/1.1";
}

/// A chunked body of `total` bytes in chunks of at most `chunk`, with the last chunk.
std::string chunked_body(std::size_t total, std::size_t chunk) {
  std::string out;
  char size[32];
  for (std::size_t left = total; left > 0;) {
    const std::size_t n = left < chunk ? left : chunk;
    out.append(size, static_cast<std::size_t>(std::snprintf(size, sizeof size, "%zx\r\n", n)));
    out.append(n, 'x');
    out += "\r\n";
    left -= n;
  }
  return out + "0\r\n\r\n";
}

const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";

/// A B3 fixture: bytes that must be refused with `status`, a smuggled request after them.
struct fixture {
  const char* name;
  std::string raw;
  int status;
};

std::vector<fixture> smuggling_corpus() {
  const std::string post = "POST /mcp HTTP/1.1\r\nHost: a\r\n";
  const std::string chunked = post + "Transfer-Encoding: chunked\r\n\r\n";
  return {
      // Content-Length and Transfer-Encoding together, either order.
      {"CL then TE", post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"TE then CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400},
      // Content-Length shapes.
      {"duplicate CL 1 and 2", post + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"duplicate CL, equal", post + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nab", 400},
      {"CL list 5, 5", post + "Content-Length: 5, 5\r\n\r\nhello", 400},
      {"CL +5", post + "Content-Length: +5\r\n\r\nhello", 400},
      {"CL -1", post + "Content-Length: -1\r\n\r\nhello", 400},
      {"CL 0x5", post + "Content-Length: 0x5\r\n\r\nhello", 400},
      {"CL with an inner space", post + "Content-Length: 1 0\r\n\r\n0123456789", 400},
      {"CL empty", post + "Content-Length: \r\n\r\n", 400},
      {"CL 1e21", post + "Content-Length: 1e21\r\n\r\nhello", 400},
      {"CL 99999999999999999999 overflows", post + "Content-Length: 99999999999999999999\r\n\r\nhello", 400},
      {"CL with a trailing letter", post + "Content-Length: 5a\r\n\r\nhello", 400},
      {"CL followed by a tab", post + "Content-Length: 5\t\r\n\r\nhello", 400},
      // Transfer-Encoding shapes.
      {"TE chunked, identity", post + "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400},
      {"TE identity", post + "Transfer-Encoding: identity\r\n\r\nhello", 400},
      {"TE gzip without chunked", post + "Transfer-Encoding: gzip\r\n\r\nhello", 400},
      {"TE xchunked", post + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked, chunked", post + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400},
      {"TE with an empty element", post + "Transfer-Encoding: , chunked\r\n\r\n0\r\n\r\n", 400},
      {"TE repeated in two fields",
       post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      // OWS, but parsers disagree on it (http-parser 2.9 does not de-chunk it; it does with SP).
      {"TE chunked followed by a tab", post + "Transfer-Encoding: chunked\t\r\n\r\n0\r\n\r\n", 400},
      {"TE chunked followed by a space and a tab", post + "Transfer-Encoding: chunked \t\r\n\r\n0\r\n\r\n", 400},
      {"TE gzip, chunked is an unknown coding", post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
      {"TE on HTTP/1.0", "POST /mcp HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"TE by obs-fold", post + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 400},
      // Field-line shapes lenient parsers (http-parser 2.9 among them) accept.
      {"obs-fold with a tab", "GET /mcp HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
      {"space before the colon", post + "Content-Length : 5\r\n\r\nhello", 400},
      {"tab before the colon", post + "Transfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n", 400},
      {"whitespace before the first field line", "GET /mcp HTTP/1.1\r\n Host: a\r\n\r\n", 400},
      {"field line without a colon", "GET /mcp HTTP/1.1\r\nHost a\r\n\r\n", 400},
      {"empty field name", "GET /mcp HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", 400},
      {"non-token field name", "GET /mcp HTTP/1.1\r\nHost: a\r\nX@Y: b\r\n\r\n", 400},
      // Line endings.
      {"LF-only line endings", "GET /mcp HTTP/1.1\nHost: a\n\n", 400},
      {"LF-only field line", "GET /mcp HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400},
      {"LF-only header end", "GET /mcp HTTP/1.1\r\nHost: a\r\n\n", 400},
      {"CR-only line endings", "GET /mcp HTTP/1.1\rHost: a\r\r", 400},
      {"CRLF CR X header end", "GET /mcp HTTP/1.1\r\nHost: a\r\n\rX", 400},
      {"bare LF before the request line", "\nGET /mcp HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      // Bytes inside values.
      {"NUL in a value", lit("GET /mcp HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"), 400},
      {"CR in a value", "GET /mcp HTTP/1.1\r\nHost: a\r\nX: a\rb: c\r\n\r\n", 400},
      {"LF in a value", "GET /mcp HTTP/1.1\r\nHost: a\r\nX: a\nb: c\r\n\r\n", 400},
      {"DEL in a value", "GET /mcp HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400},
      // Chunk framing.
      {"chunk size overflow fffffffffffffffff", chunked + "fffffffffffffffff\r\nx\r\n0\r\n\r\n", 400},
      {"chunk size ffffffffffffffff", chunked + "ffffffffffffffff\r\nx\r\n0\r\n\r\n", 400},
      {"chunk size with 17 digits of leading zeros", chunked + "00000000000000005\r\nhello\r\n0\r\n\r\n", 400},
      {"chunk size 0x5", chunked + "0x5\r\nhello\r\n0\r\n\r\n", 400},
      {"negative chunk size", chunked + "-5\r\nhello\r\n0\r\n\r\n", 400},
      {"chunk size followed by garbage", chunked + "5 garbage\r\nhello\r\n0\r\n\r\n", 400},
      {"tab after a chunk size", chunked + "5\t;a\r\nhello\r\n0\r\n\r\n", 400},
      {"chunk extension with a bare CR", chunked + "5;a\rb\r\nhello\r\n0\r\n\r\n", 400},
      {"chunk extension with a bare LF", chunked + "5;a\nb\r\nhello\r\n0\r\n\r\n", 400},
      {"bare LF after a chunk size", chunked + "5\nhello\r\n0\r\n\r\n", 400},
      {"missing CRLF after chunk data", chunked + "5\r\nhelloXY0\r\n\r\n", 400},
      {"bare CR after chunk data", chunked + "5\r\nhello\rX0\r\n\r\n", 400},
      {"chunk data longer than its size", chunked + "3\r\nhello\r\n0\r\n\r\n", 400},
      {"bare LF ending the trailers", chunked + "5\r\nhello\r\n0\r\n\n", 400},
      {"Content-Length in trailers", chunked + "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n", 400},
      {"Content-Length in trailers, upper case", chunked + "5\r\nhello\r\n0\r\nCONTENT-LENGTH: 5\r\n\r\n", 400},
      {"CR in a trailer value", chunked + "5\r\nhello\r\n0\r\nX: a\rb\r\n\r\n", 400},
      {"Transfer-Encoding in trailers", chunked + "5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"obs-fold in trailers", chunked + "5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n", 400},
      // Host (RFC 9112 section 3.2).
      {"HTTP/1.1 without Host", "GET /mcp HTTP/1.1\r\n\r\n", 400},
      {"two Host fields", "GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"two Host fields in HTTP/1.0", "GET /mcp HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400},
      // Request line.
      {"HTTP/2.0", "GET /mcp HTTP/2.0\r\nHost: a\r\n\r\n", 505},
      {"HTTP/1.2", "GET /mcp HTTP/1.2\r\nHost: a\r\n\r\n", 505},
      {"HTTP/1.10", "GET /mcp HTTP/1.10\r\nHost: a\r\n\r\n", 400},
      {"lower-case version", "GET /mcp http/1.1\r\nHost: a\r\n\r\n", 400},
      {"ICE instead of HTTP", "SOURCE /mcp ICE/1.0\r\nHost: a\r\n\r\n", 400},
      {"HTTP/0.9 request line", "GET /mcp\r\nHost: a\r\n\r\n", 400},
      {"lower-case method", "post /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 400},
      {"mixed-case method", "Post /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 400},
      {"NUL in the method", lit("G\0T /mcp HTTP/1.1\r\nHost: a\r\n\r\n"), 400},
      {"two spaces in the request line", "GET  /mcp HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"tab in the request line", "GET\t/mcp HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"non-ASCII byte in the target", "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"DEL in the target", "GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"space after the version", "GET /mcp HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
      // Target forms (RFC 9112 section 3.2): origin, absolute or asterisk, nothing else.
      {"target without a leading slash", "GET mcp HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"absolute-form without //", "GET http:/mcp HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"asterisk followed by more", "OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      // A CONNECT makes a tunnel of what follows its header section; we implement none.
      {"CONNECT with a body", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nContent-Length: 35\r\n\r\n", 501},
      {"CONNECT without a body", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501},
  };
}

}  // namespace

TEST_SUITE("adapters/http/request_parser") {
  TEST_CASE("a POST with Content-Length yields its request line, fields and body") {
    const std::string raw =
        "POST /mcp?sessionId=x HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: \t application/json \t\r\n"
        "X-Empty:\r\nCONTENT-LENGTH: 13\r\nAccept: a\r\naccept: b\r\n\r\n{\"jsonrpc\":1}";
    const std::size_t head = raw.find("\r\n\r\n") + 4;
    request_parser p;
    CHECK(p.idle());
    // The first feed stops at the end of the header block, whatever else is there.
    REQUIRE(p.feed(raw.data(), raw.size()) == head);
    CHECK(p.headers_complete());
    CHECK_FALSE(p.complete());
    CHECK_FALSE(p.idle());
    CHECK(p.content_length() == 13u);
    REQUIRE(p.feed(raw.data() + head, raw.size() - head) == 13);
    REQUIRE(p.complete());
    CHECK_FALSE(p.headers_complete());

    const request r = p.take();
    CHECK(r.method == "POST");
    CHECK(r.target == "/mcp?sessionId=x");
    CHECK(r.version_major == 1);
    CHECK(r.version_minor == 1);
    CHECK(r.keep_alive);
    REQUIRE(r.headers.size() == 6);
    CHECK(r.headers[1].name == "content-type");
    CHECK(r.headers[1].value == "application/json");
    CHECK(r.headers[2].name == "x-empty");
    CHECK(r.headers[2].value.empty());
    REQUIRE(r.find("content-length") != nullptr);
    CHECK(*r.find("content-length") == "13");
    CHECK(r.count("accept") == 2);
    CHECK(*r.find("accept") == "a");
    CHECK(r.find("missing") == nullptr);
    CHECK(r.count("missing") == 0);
    CHECK(r.body == "{\"jsonrpc\":1}");
    CHECK(p.idle());
    CHECK_FALSE(p.content_length().has_value());
  }

  TEST_CASE("the fields read on every request are found through the index as by a walk") {
    // Every indexed name, in any case, some twice, among others of the same lengths
    // (`x-padd` is six letters, like `accept`): the first of each is found, and a name
    // the index does not hold is still found by the walk.
    const std::string raw =
        "POST /mcp HTTP/1.1\r\nX-Padd: p\r\nHOST: h\r\nAccept: a1\r\nOrigin: o\r\nexpect: e\r\n"
        "Content-Type: c\r\nAuthorization: z\r\nLast-Event-ID: l\r\nMcp-Session-Id: s1\r\n"
        "MCP-Protocol-Version: v\r\naccept: a2\r\nmcp-session-id: s2\r\nX-Other-Name: x\r\n"
        "Mcp-Method: m\r\nMCP-NAME: n1\r\nX-Pad-Nm: q\r\nmcp-name: n2\r\nMcp-Name: n3\r\n\r\n";
    request_parser p;
    REQUIRE(p.feed(raw.data(), raw.size()) == raw.size());
    REQUIRE(p.complete());
    request taken = p.take();
    const request r(std::move(taken));  // the index moves with the request
    const std::pair<const char*, const char*> expected[] = {
        {"host", "h"}, {"accept", "a1"}, {"origin", "o"}, {"expect", "e"}, {"content-type", "c"},
        {"authorization", "z"}, {"last-event-id", "l"}, {"mcp-session-id", "s1"}, {"mcp-protocol-version", "v"},
        {"mcp-method", "m"}, {"mcp-name", "n1"}, {"x-padd", "p"}, {"x-other-name", "x"}, {"x-pad-nm", "q"}};
    for (const auto& field : expected) {
      // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
      const char* const name = field.first;
      const char* const value = field.second;
      CAPTURE(name);
      const std::string_view runtime_name = name;  // not a literal: the same answer
      REQUIRE(r.find(name) != nullptr);
      CHECK(*r.find(name) == value);
      REQUIRE(r.find(runtime_name) != nullptr);
      CHECK(*r.find(runtime_name) == value);
    }
    CHECK(r.find("cookie") == nullptr);
    CHECK(r.find("content-length") == nullptr);
    // Counts from the index agree with a walk: once, absent, and repeated (two or three).
    CHECK(r.count("host") == 1);
    CHECK(r.count("mcp-method") == 1);
    CHECK(r.count("accept") == 2);
    CHECK(r.count("mcp-session-id") == 2);
    CHECK(r.count("mcp-name") == 3);
    CHECK(r.count("cookie") == 0);
    CHECK(r.count("x-padd") == 1);

    // Absent indexed names are absent, not the previous request's.
    const std::string bare = "GET / HTTP/1.1\r\nHost: b\r\n\r\n";
    REQUIRE(p.feed(bare.data(), bare.size()) == bare.size());
    const request second = p.take();
    CHECK(*second.find("host") == "b");
    CHECK(second.find("accept") == nullptr);
    CHECK(second.find("mcp-session-id") == nullptr);
    CHECK(second.count("mcp-name") == 0);
    CHECK(second.count("accept") == 0);
    CHECK(second.count("host") == 1);
  }

  TEST_CASE("a request of more than 255 fields is looked up by the walk") {
    parser_limits limits;
    limits.max_header_count = 400;
    limits.max_header_bytes = 64 * 1024;
    std::string raw = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (int i = 0; i < 300; ++i) raw += "X-F" + std::to_string(i) + ": " + std::to_string(i) + "\r\n";
    raw += "Accept: late\r\nMcp-Session-Id: s\r\n\r\n";
    request_parser p(limits);
    REQUIRE(p.feed(raw.data(), raw.size()) == raw.size());
    REQUIRE(p.complete());
    const request r = p.take();
    REQUIRE(r.headers.size() == 303);
    REQUIRE(r.find("accept") != nullptr);
    CHECK(*r.find("accept") == "late");
    CHECK(*r.find("mcp-session-id") == "s");
    CHECK(*r.find("host") == "h");
    CHECK(r.find("origin") == nullptr);
  }

  TEST_CASE("a chunked body is de-chunked; extensions are ignored and trailers dropped") {
    const std::string raw =
        "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"
        "5;name=value\r\nhello\r\n6 ;a=\"b c\";d\r\n world\r\nA\r\n0123456789\r\n0;last\r\nX-Trailer: t\r\n\r\n";
    const run_result r = whole(raw);
    REQUIRE_FALSE(r.failed);
    REQUIRE(r.requests.size() == 1);
    CHECK(r.requests[0] ==
          "POST /mcp HTTP/1.1 keep-alive\nhost: a\ntransfer-encoding: Chunked\nbody[21]: hello world0123456789");
    CHECK(r.consumed == raw.size());

    request_parser p;
    const std::size_t head = raw.find("\r\n\r\n") + 4;
    REQUIRE(p.feed(raw.data(), raw.size()) == head);
    CHECK_FALSE(p.content_length().has_value());
  }

  TEST_CASE("two pipelined requests come out one at a time, each with its own bytes (B5)") {
    // The connection answers in order only if the parser never reads into the next one.
    const std::string first = "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
    const std::string second = "GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n";
    const std::string raw = first + second;
    request_parser p;
    std::size_t start = p.feed(raw.data(), raw.size());
    CHECK(start == first.size() - 2);
    CHECK_FALSE(p.complete());
    start += p.feed(raw.data() + start, raw.size() - start);
    CHECK(start == first.size());
    REQUIRE(p.complete());
    // Nothing is consumed while the complete request waits to be taken.
    CHECK(p.feed(raw.data() + start, raw.size() - start) == 0);
    CHECK(p.take().body == "{}");
    CHECK(p.idle());

    // A request without a body is complete in the same feed as its headers.
    CHECK(p.feed(raw.data() + start, raw.size() - start) == second.size());
    CHECK(p.headers_complete());
    REQUIRE(p.complete());
    const request r = p.take();
    CHECK(r.method == "GET");
    CHECK(r.body.empty());
  }

  TEST_CASE("a recycled request's storage carries nothing into the next request") {
    const std::string first = "POST /mcp HTTP/1.1\r\nHost: a\r\nX-Long: " + std::string(200, 'v') +
                              "\r\nMcp-Session-Id: s1\r\nContent-Length: 2\r\n\r\n{}";
    const std::string second = "GET /other HTTP/1.1\r\nHost: b\r\n\r\n";
    request_parser p;
    // The parser stops once after the header block; the second feed reads the body.
    std::size_t used = p.feed(first.data(), first.size());
    used += p.feed(first.data() + used, first.size() - used);
    REQUIRE(used == first.size());
    REQUIRE(p.complete());
    request served = p.take();
    const std::string before = describe(served);
    p.recycle(std::move(served));
    REQUIRE(p.feed(second.data(), second.size()) == second.size());
    REQUIRE(p.complete());
    const request next = p.take();
    // Exactly what a fresh parser makes of the same bytes.
    request_parser fresh;
    REQUIRE(fresh.feed(second.data(), second.size()) == second.size());
    CHECK(describe(next) == describe(fresh.take()));
    CHECK(next.find("mcp-session-id") == nullptr);
    CHECK(before.find("x-long") != std::string::npos);
  }

  TEST_CASE("storage is not recycled into a request already being parsed") {
    const std::string small = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
    request_parser p;
    REQUIRE(p.feed(small.data(), small.size()) == small.size());
    request served = p.take();
    // Half of the next request is in: its storage is in use, the served one is dropped.
    REQUIRE(p.feed(small.data(), 10) == 10);
    p.recycle(std::move(served));
    REQUIRE(p.feed(small.data() + 10, small.size() - 10) == small.size() - 10);
    REQUIRE(p.complete());
    // Had the served storage replaced the started one, the first ten bytes would be lost.
    const request r = p.take();
    CHECK(r.method == "GET");
    CHECK(r.target == "/a");
  }

  TEST_CASE("a request stream parses the same whole, byte by byte, and cut at any offset") {
    // A connection may receive any split; every state must survive a feed boundary.
    const std::string raw =
        "\r\nPOST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nX-A:  spaced  \r\n\r\nhello world"
        "POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;e=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n"
        "DELETE /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    const run_result expected = whole(raw);
    REQUIRE_FALSE(expected.failed);
    REQUIRE(expected.requests.size() == 3);
    CHECK(expected.requests[0] ==
          "POST /mcp HTTP/1.1 keep-alive\nhost: a\ncontent-length: 11\nx-a: spaced\nbody[11]: hello world");
    CHECK(expected.requests[1] ==
          "POST /mcp?x=1 HTTP/1.1 keep-alive\nhost: a\ntransfer-encoding: chunked\nbody[19]: abc0123456789abcdef");
    CHECK(expected.requests[2] == "DELETE /mcp HTTP/1.1 close\nhost: a\nconnection: close\nbody[0]: ");
    CHECK(expected.consumed == raw.size());

    const run_result one_by_one = bytewise(raw);
    CHECK(one_by_one.requests == expected.requests);
    CHECK(one_by_one.consumed == raw.size());
    for (std::size_t cut = 1; cut < raw.size(); ++cut) {
      CAPTURE(cut);
      const run_result r = split_at(raw, cut);
      CHECK_FALSE(r.failed);
      CHECK(r.requests == expected.requests);
    }
  }

  TEST_CASE("the parser stops after the header block, so Expect: 100-continue can be answered (B4)") {
    const std::string head =
        "POST /mcp HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    request_parser p;
    // Only the header block has arrived: all of it is consumed, no body byte is waited for.
    REQUIRE(p.feed(head.data(), head.size()) == head.size());
    REQUIRE(p.headers_complete());
    CHECK(p.content_length() == 5u);
    REQUIRE(p.current().find("expect") != nullptr);
    CHECK(*p.current().find("expect") == "100-continue");
    CHECK(p.current().method == "POST");
    CHECK(p.current().body.empty());
    CHECK_FALSE(p.complete());

    // headers_complete() is an edge: the next feed clears it.
    CHECK(p.feed("hel", 3) == 3);
    CHECK_FALSE(p.headers_complete());
    CHECK_FALSE(p.complete());
    CHECK(p.feed("lo", 2) == 2);
    REQUIRE(p.complete());
    CHECK(p.take().body == "hello");
  }

  TEST_CASE("a request line of exactly the limit is accepted and one byte more is 414 (B1)") {
    const parser_limits limits;
    const run_result exact = whole(request_line(limits.max_request_line) + "\r\nHost: a\r\n\r\n");
    CHECK_FALSE(exact.failed);
    CHECK(exact.requests.size() == 1);

    const run_result over = whole(request_line(limits.max_request_line + 1) + "\r\nHost: a\r\n\r\n");
    CHECK(over.failed);
    CHECK(over.status == 414);

    // Refused while the line is still arriving, not once it has been buffered whole.
    const std::string partial = request_line(limits.max_request_line + 1);
    request_parser p;
    CHECK(p.feed(partial.data(), partial.size()) <= limits.max_request_line);
    CHECK(p.failed());
    CHECK(p.error_status() == 414);

    // Empty lines before the request line count towards it.
    const run_result padded = whole("\r\n" + request_line(limits.max_request_line - 1) + "\r\nHost: a\r\n\r\n");
    CHECK(padded.failed);
    CHECK(padded.status == 414);
  }

  TEST_CASE("a header block of exactly the limit is accepted and one byte more is 431 (B1)") {
    // The block is every field line with its CRLF, plus the final CRLF.
    const parser_limits limits;
    const auto with_block = [](std::size_t total) {
      return "GET /mcp HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(total - 20, 'p') + "\r\n\r\n";
    };
    const run_result exact = whole(with_block(limits.max_header_bytes));
    CHECK_FALSE(exact.failed);
    CHECK(exact.requests.size() == 1);

    const run_result over = whole(with_block(limits.max_header_bytes + 1));
    CHECK(over.failed);
    CHECK(over.status == 431);
  }

  TEST_CASE("100 header fields are accepted and 101 are 431 (B1)") {
    const auto with_fields = [](std::size_t n) {
      std::string raw = "GET /mcp HTTP/1.1\r\nHost: a\r\n";
      for (std::size_t i = 1; i < n; ++i) raw += "X-" + std::to_string(i) + ": v\r\n";
      return raw + "\r\n";
    };
    request_parser p;
    const std::string hundred = with_fields(100);
    REQUIRE(p.feed(hundred.data(), hundred.size()) == hundred.size());
    REQUIRE(p.complete());
    CHECK(p.take().headers.size() == 100);

    const run_result over = whole(with_fields(101));
    CHECK(over.failed);
    CHECK(over.status == 431);
  }

  TEST_CASE("a Content-Length body of exactly the limit is accepted; one more is 413 before any body byte (B1)") {
    const std::size_t max = parser_limits{}.max_body;
    const auto head = [](std::size_t n) {
      return "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n";
    };
    const run_result exact = whole(head(max) + std::string(max, 'x'));
    CHECK_FALSE(exact.failed);
    REQUIRE(exact.requests.size() == 1);
    CHECK(exact.requests[0].size() > max);

    const std::string over = head(max + 1) + std::string(max + 1, 'x');
    request_parser p;
    CHECK(p.feed(over.data(), over.size()) <= head(max + 1).size());
    CHECK(p.failed());
    CHECK(p.error_status() == 413);
    CHECK(p.content_length() == max + 1);
    CHECK(p.current().body.empty());
    CHECK(p.feed(over.data(), over.size()) == 0);
  }

  TEST_CASE("a chunked body of exactly the limit is accepted; one more is 413 while it is read (B1)") {
    const std::size_t max = parser_limits{}.max_body;
    const std::string head = "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    const run_result exact = whole(head + chunked_body(max, 64 * 1024));
    CHECK_FALSE(exact.failed);
    REQUIRE(exact.requests.size() == 1);
    CHECK(exact.requests[0].find("body[" + std::to_string(max) + "]") != std::string::npos);

    const run_result over = whole(head + chunked_body(max + 1, 64 * 1024));
    CHECK(over.failed);
    CHECK(over.status == 413);
    CHECK(over.consumed <= head.size() + max + 64 * 1024);
    // One huge chunk is refused at its size line, before any of its data.
    const run_result one_chunk = whole(head + chunked_body(max + 1, max + 1));
    CHECK(one_chunk.status == 413);
    CHECK(one_chunk.consumed <= head.size() + 8);
  }

  TEST_CASE("chunk extensions and trailers are bounded too") {
    // Lenient parsers skip extensions without any bound; trailers use the header limits.
    const std::string head = "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    const run_result extension = whole(head + "1;" + std::string(16 * 1024, 'e') + "\r\nx\r\n0\r\n\r\n");
    CHECK(extension.status == 413);
    CHECK(extension.consumed <= head.size() + 16 * 1024 + 2);
    const run_result within = whole(head + "1;" + std::string(16 * 1024 - 2, 'e') + "\r\nx\r\n0\r\n\r\n");
    CHECK_FALSE(within.failed);
    CHECK(within.requests.size() == 1);

    const parser_limits limits;
    const run_result big = whole(head + "0\r\nT: " + std::string(limits.max_header_bytes, 't') + "\r\n\r\n");
    CHECK(big.status == 431);
    std::string many = head + "0\r\n";
    for (std::size_t i = 0; i <= limits.max_header_count; ++i) many += "T: v\r\n";
    CHECK(whole(many + "\r\n").status == 431);
  }

  TEST_CASE("smaller configured limits are the ones applied") {
    const parser_limits limits{64, 64, 3, 4};
    CHECK(whole("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd", limits).requests.size() == 1);
    CHECK(whole("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde", limits).status == 413);
    CHECK(whole("GET /mcp HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits).status == 431);
    CHECK(whole(request_line(65) + "\r\nHost: a\r\n\r\n", limits).status == 414);
  }

  TEST_CASE("the smuggling corpus is refused with its status and the smuggled request never runs (B3)") {
    // Each fixture is cut at every offset too: the status must not depend on the split,
    // or a peer could pick the split that gets through.
    const std::vector<fixture> corpus = smuggling_corpus();
    CHECK(corpus.size() >= 30);
    for (const fixture& f : corpus) {
      CAPTURE(f.name);
      const std::string raw = f.raw + smuggled;
      const run_result r = whole(raw);
      CHECK(r.failed);
      CHECK(r.status == f.status);
      CHECK(r.requests.empty());

      const run_result slow = bytewise(raw);
      CHECK(slow.status == f.status);
      CHECK(slow.requests.empty());
      for (std::size_t cut = 1; cut < raw.size(); ++cut) {
        const run_result s = split_at(raw, cut);
        if (s.status != f.status || !s.requests.empty()) {
          CAPTURE(cut);
          CHECK(s.status == f.status);
          CHECK(s.requests.empty());
          break;
        }
      }
    }
  }

  TEST_CASE("a failure stops the stream: the request before it runs, the one after never does (B5)") {
    const std::string good = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n";
    const std::string bad = "GET /two HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n";
    const run_result r = whole(good + bad + good);
    CHECK(r.failed);
    CHECK(r.status == 400);
    REQUIRE(r.requests.size() == 1);
    CHECK(r.requests[0].find("GET /one") == 0);
    CHECK(r.consumed < good.size() + bad.size());
  }

  TEST_CASE("error_reason() names the problem in a phrase, and is empty without one") {
    request_parser p;
    CHECK(p.error_status() == 0);
    CHECK(p.error_reason().empty());
    const std::string raw = "GET /mcp HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n";
    p.feed(raw.data(), raw.size());
    REQUIRE(p.failed());
    CHECK(p.error_reason() == "whitespace in a field name or before its colon");
    CHECK_FALSE(p.headers_complete());
    CHECK_FALSE(p.idle());
  }

  TEST_CASE("keep-alive follows the version and the Connection header (B4)") {
    const auto keep_alive = [](const std::string& raw) {
      request_parser p;
      REQUIRE(p.feed(raw.data(), raw.size()) == raw.size());
      REQUIRE(p.complete());
      return p.take().keep_alive;
    };
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.0\r\n\r\n"));
    CHECK(keep_alive("GET /mcp HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, Close\r\n\r\n"));
    CHECK(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n"));
  }

  TEST_CASE("Connection is a list: its tokens count whatever OWS and empty elements surround them") {
    // RFC 9110 sections 5.6.1 and 7.6.1. A client that wrote `,close` or `close<TAB>` asked
    // for the connection to end, and bytes after its request must not run (B5).
    const auto keep_alive = [](const std::string& raw) {
      request_parser p;
      REQUIRE(p.feed(raw.data(), raw.size()) == raw.size());
      REQUIRE(p.complete());
      return p.take().keep_alive;
    };
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: ,close\r\n\r\n"));
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\t\r\n\r\n"));
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: te\r\nConnection: close\r\n\r\n"));
    CHECK(keep_alive("GET /mcp HTTP/1.0\r\nConnection: upgrade , keep-alive\r\n\r\n"));
    // Both named: the reading that cannot keep open what the client meant to end.
    CHECK_FALSE(keep_alive("GET /mcp HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"));
  }

  TEST_CASE("a request pipelined after Connection: close is never parsed (B5)") {
    const std::string first = "GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    const run_result r = whole(first + smuggled);
    CHECK_FALSE(r.failed);
    REQUIRE(r.requests.size() == 1);
    CHECK(r.consumed == first.size());
    const run_result old = whole("GET /mcp HTTP/1.0\r\n\r\n" + smuggled);
    CHECK(old.requests.size() == 1);
  }

  TEST_CASE("an absolute-form target becomes its origin form, its authority the request's host (B4)") {
    // RFC 9112 §3.2.2: a server accepts absolute-form, and the target's authority
    // stands for the Host field, which is then ignored.
    request_parser p;
    const std::string text =
        "POST http://localhost:3000/mcp?x=1 HTTP/1.1\r\nHost: elsewhere\r\nContent-Length: 0\r\n\r\n";
    CHECK(p.feed(text.data(), text.size()) == text.size());
    REQUIRE(p.complete());
    request r = p.take();
    CHECK(r.target == "/mcp?x=1");
    CHECK(r.authority == "localhost:3000");
    REQUIRE(r.host());
    CHECK(*r.host() == "localhost:3000");
    // An empty path is `/`; no authority is a refusal.
    for (const auto& [line, target] : {std::pair{"GET http://a.example HTTP/1.1", "/"},
                                       std::pair{"GET https://a.example:8443/ HTTP/1.1", "/"}}) {
      request_parser q;
      const std::string t = std::string(line) + "\r\nHost: a\r\n\r\n";
      q.feed(t.data(), t.size());
      REQUIRE(q.complete());
      CHECK(q.take().target == target);
    }
    const run_result none = whole("GET http:///mcp HTTP/1.1\r\nHost: a\r\n\r\n");
    CHECK(none.failed);
    CHECK(none.status == 400);
    // An origin-form request names its host in Host.
    request_parser o;
    const std::string origin = "GET /mcp HTTP/1.1\r\nHost: b.example\r\n\r\n";
    o.feed(origin.data(), origin.size());
    REQUIRE(o.complete());
    request plain = o.take();
    CHECK(plain.authority.empty());
    CHECK(*plain.host() == "b.example");
  }

  TEST_CASE("HTTP/1.0 needs no Host, and empty lines before a request are skipped") {
    const run_result r = whole("\r\n\r\nGET /mcp HTTP/1.0\r\n\r\n");
    CHECK_FALSE(r.failed);
    REQUIRE(r.requests.size() == 1);
    CHECK(r.requests[0] == "GET /mcp HTTP/1.0 close\nbody[0]: ");
  }

  TEST_CASE("spaces after chunked are not part of the coding, so the next request is framed") {
    // RFC 9110 section 5.5: OWS around a field value is not part of it.
    const run_result r =
        whole("POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked  \r\n\r\n2\r\nhi\r\n0\r\n\r\n" + smuggled);
    CHECK_FALSE(r.failed);
    REQUIRE(r.requests.size() == 2);
    CHECK(r.requests[0].find("body[2]: hi") != std::string::npos);
    CHECK(r.requests[1].find("GET /smuggled") == 0);
  }

  TEST_CASE("an Upgrade request is framed as an ordinary one and parsing goes on") {
    const std::string upgrade = "GET /mcp HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    const run_result r = whole(upgrade + smuggled);
    CHECK_FALSE(r.failed);
    CHECK(r.requests.size() == 2);
  }

  TEST_CASE("any upper-case token is a method: it is framed, and the connection decides whether to serve it") {
    // Methods are case-sensitive (RFC 9110 section 9.1): lower-case ones are refused with
    // the corpus above; an unknown upper-case one frames like GET, and the connection
    // answers it 405 with Allow. Only CONNECT is refused here (501, in the corpus).
    const std::string raw = "FOO /mcp HTTP/1.1\r\nHost: a\r\n\r\nM-SEARCH * HTTP/1.1\r\nHost: a\r\n\r\n"
                            "PROPFIND http://a/mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
    const run_result r = whole(raw);
    CHECK_FALSE(r.failed);
    REQUIRE(r.requests.size() == 3);
    CHECK(r.requests[0].find("FOO /mcp HTTP/1.1") == 0);
    CHECK(r.requests[1].find("M-SEARCH * HTTP/1.1") == 0);
    CHECK(r.requests[2].find("PROPFIND /mcp HTTP/1.1") == 0);  // absolute form: its origin form
    CHECK(r.requests[2].find("body[2]: {}") != std::string::npos);
  }

  TEST_CASE("a request keeps its bytes after take(), when the caller's buffer is reused") {
    // The connection overwrites its read buffer with the next request; the views in a
    // taken request point into the request's own copy, and survive being moved.
    std::string buffer = "POST /mcp HTTP/1.1\r\nHost: a\r\nX-Case: Value\r\nContent-Length: 2\r\n\r\n{}";
    request_parser p;
    std::size_t used = p.feed(buffer.data(), buffer.size());
    used += p.feed(buffer.data() + used, buffer.size() - used);
    REQUIRE(p.complete());
    request taken = p.take();
    buffer.assign(buffer.size(), '#');
    const request r = std::move(taken);
    CHECK(r.method == "POST");
    CHECK(r.target == "/mcp");
    REQUIRE(r.find("x-case") != nullptr);
    CHECK(*r.find("x-case") == "Value");
    CHECK(r.body == "{}");
    CHECK(taken.method.empty());
    CHECK(taken.headers.empty());
  }

  TEST_CASE("mutated requests get the same verdict whole, byte by byte, and cut anywhere") {
    // A differential check of the two ways bytes are read: whole lines at once when they
    // are all there, one byte at a time otherwise. Single-byte edits of valid requests,
    // from a fixed seed, land on every rule; any verdict that depends on the split fails.
    const std::vector<std::string> seeds = {
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        "Mcp-Session-Id: 0123456789abcdef0123456789abcdef\r\nContent-Length: 17\r\n\r\n{\"jsonrpc\":\"2.0\"}",
        "\r\nPOST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;e=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n" + smuggled,
        "GET http://a/mcp HTTP/1.0\r\nConnection: keep-alive\r\nX:\t y \r\n\r\nDELETE * HTTP/1.1\r\nHost: a\r\n\r\n",
    };
    const std::string alphabet = lit("\r\n \t:;,-0aA/*H\0\x7f\x80");
    std::uint64_t state = 0x9e3779b97f4a7c15u;  // xorshift64: the same sequence everywhere
    const auto next = [&state] {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return state;
    };
    std::size_t refused = 0;
    for (int n = 0; n < 1500; ++n) {
      std::string raw = seeds[next() % seeds.size()];
      const std::size_t at = next() % raw.size();
      const char byte = alphabet[next() % alphabet.size()];
      switch (next() % 3) {
        case 0: raw[at] = byte; break;
        case 1: raw.insert(at, 1, byte); break;
        default: raw.erase(at, 1); break;
      }
      CAPTURE(raw);
      const run_result expected = whole(raw);
      const run_result slow = bytewise(raw);
      const run_result cut = split_at(raw, 1 + next() % (raw.size() - 1));
      CHECK(slow.status == expected.status);
      CHECK(slow.requests == expected.requests);
      CHECK(slow.consumed == expected.consumed);
      CHECK(cut.status == expected.status);
      CHECK(cut.requests == expected.requests);
      CHECK(cut.consumed == expected.consumed);
      if (expected.failed) ++refused;
    }
    // Both outcomes are well represented, or the check above proves little.
    CHECK(refused > 300);
    CHECK(refused < 1200);
  }

  TEST_CASE("idle() is true until a byte of a request arrives, and again after take()") {
    request_parser p;
    CHECK(p.idle());
    CHECK(p.feed("", 0) == 0);
    CHECK(p.idle());
    CHECK(p.feed("G", 1) == 1);
    CHECK_FALSE(p.idle());
    const std::string rest = "ET /mcp HTTP/1.1\r\nHost: a\r\n\r\n";
    CHECK(p.feed(rest.data(), rest.size()) == rest.size());
    CHECK_FALSE(p.idle());
    REQUIRE(p.complete());
    (void)p.take();
    CHECK(p.idle());
    // take() without a complete request changes nothing.
    CHECK(p.take().method.empty());
    CHECK(p.idle());
  }
}
