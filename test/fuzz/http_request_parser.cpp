// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: the HTTP/1.1 request parser (lib/adapters/primary/transport/http/
/// request_parser.hpp), fed the input as one connection's bytes.
///
/// Oracle: the input fed whole, byte by byte, and cut at pseudo-random points (drawn from
/// the input, so a crash reproduces from its file) gives the same verdict: the same
/// requests, field for field, and the same error status, or the same lack of one. A
/// verdict that depends on how TCP split the bytes is a smuggling hole: a peer could pick
/// the split that gets through. Both the default limits and small ones run, so the 414,
/// 431 and 413 edges are inside the fuzzer's reach. After a failure nothing more parses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/primary/transport/http/wire/request_parser.hpp"
#include "fuzz_support.hpp"

namespace {

using droid::http::detail::parser_limits;
using droid::http::detail::request;
using droid::http::detail::request_parser;

/// Everything a request carries, in one string, so two runs compare with `==`.
std::string describe(const request& r) {
  std::string s(r.method);
  s += ' ';
  s += r.target;
  s += " HTTP/" + std::to_string(r.version_major) + '.' + std::to_string(r.version_minor);
  s += r.keep_alive ? " keep-alive\n" : " close\n";
  for (const auto& h : r.headers) {
    s.append(h.name).append(": ").append(h.value) += '\n';
    // Names are promised lower-cased: the listener looks them up that way.
    for (const char c : h.name) DROID_FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "a header name is not lower-cased");
  }
  s += "body[" + std::to_string(r.body.size()) + "]:";
  s += r.body;
  return s;
}

struct verdict {
  std::vector<std::string> requests;
  bool failed = false;
  int status = 0;
  bool operator==(const verdict&) const = default;
};

/// Feeds `bytes` as the connection loop does: `arrivals` are the offsets up to which
/// bytes have been received (ascending, the last one the size).
verdict drive(std::string_view bytes, const std::vector<std::size_t>& arrivals, const parser_limits& limits) {
  request_parser p(limits);
  verdict v;
  std::size_t start = 0;
  for (const std::size_t received : arrivals) {
    while (start < received && !p.failed()) {
      const std::size_t used = p.feed(bytes.data() + start, received - start);
      DROID_FUZZ_CHECK(used <= received - start, "feed used more than it was given");
      start += used;
      if (p.complete()) {
        v.requests.push_back(describe(p.take()));
      } else if (used == 0) {
        break;
      }
    }
    if (p.failed()) break;
  }
  v.failed = p.failed();
  v.status = p.error_status();
  if (v.failed) {
    // The stream is out of sync: nothing after a failure may be parsed.
    DROID_FUZZ_CHECK(!p.complete(), "a failed parser reports a complete request");
    if (start < bytes.size()) DROID_FUZZ_CHECK(p.feed(bytes.data() + start, bytes.size() - start) == 0,
                                               "a failed parser consumed more bytes");
    DROID_FUZZ_CHECK(!p.error_reason().empty(), "a failure without a reason");
    DROID_FUZZ_CHECK(v.status >= 400 && v.status < 600, "a failure status outside 4xx and 5xx");
  }
  return v;
}

void check_splits(std::string_view bytes, const parser_limits& limits, droid::fuzz::choices& pick) {
  const verdict whole = drive(bytes, {bytes.size()}, limits);

  std::vector<std::size_t> bytewise;
  bytewise.reserve(bytes.size());
  for (std::size_t i = 1; i <= bytes.size(); ++i) bytewise.push_back(i);
  DROID_FUZZ_CHECK(drive(bytes, bytewise, limits) == whole, "byte by byte differs from whole");

  for (int round = 0; round < 4 && bytes.size() > 1; ++round) {
    std::vector<std::size_t> cuts;
    const std::size_t pieces = 1 + pick.below(8);
    std::size_t at = 0;
    for (std::size_t i = 0; i < pieces && at < bytes.size(); ++i) {
      at += 1 + pick.below(bytes.size() - at);
      cuts.push_back(at);
    }
    if (cuts.empty() || cuts.back() != bytes.size()) cuts.push_back(bytes.size());
    DROID_FUZZ_CHECK(drive(bytes, cuts, limits) == whole, "a split differs from whole");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = droid::fuzz::as_text(data, size);
  droid::fuzz::choices pick(bytes);
  check_splits(bytes, parser_limits{}, pick);
  const parser_limits small{.max_request_line = 64, .max_header_bytes = 256, .max_header_count = 6, .max_body = 128};
  check_splits(bytes, small, pick);
  return 0;
}
