// SPDX-License-Identifier: BSL-1.0
/// @file
/// Trusted proxies and the client behind them (`http::options::trusted_proxies`): the
/// address every per-address limit counts. What must hold: a peer that is not trusted
/// cannot name its own address, and entries a client wrote into X-Forwarded-For before
/// the proxy appended to it are never believed (docs/security.md, "Behind a proxy").
#include "adapters/primary/transport/http/wire/proxy_trust.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "adapters/primary/transport/http/wire/request_parser.hpp"

using droid::http::detail::proxy_trust;
using droid::http::detail::request;

namespace {

request forwarded(std::vector<std::string_view> values) {
  request r;
  for (std::string_view v : values) r.headers.push_back({"x-forwarded-for", v});
  return r;
}

}  // namespace

TEST_SUITE("adapters/http/proxy_trust") {
  TEST_CASE("addresses and networks of both families are trusted; anything else is refused at start") {
    const proxy_trust t({"10.0.0.7", "192.168.0.0/16", "fd00::/8", "::1"});
    CHECK(t.trusts("10.0.0.7"));
    CHECK_FALSE(t.trusts("10.0.0.8"));
    CHECK(t.trusts("192.168.44.1"));
    CHECK_FALSE(t.trusts("192.169.0.1"));
    CHECK(t.trusts("fd12::5"));
    CHECK(t.trusts("::1"));
    CHECK_FALSE(t.trusts("fe80::1"));
    CHECK(t.trusts("::ffff:10.0.0.7"));  // an IPv4 peer on a dual-stack socket
    CHECK_FALSE(t.trusts("not an address"));
    CHECK(proxy_trust({}).empty());
    CHECK_FALSE(proxy_trust({}).trusts("127.0.0.1"));
    for (const char* bad : {"10.0.0.0/33", "proxy.example", "10.0.0.1/", "::1/129", ""})
      CHECK_THROWS_AS(proxy_trust({bad}), std::invalid_argument);
  }

  TEST_CASE("the client is the rightmost untrusted entry; from an untrusted peer the header is ignored") {
    const proxy_trust t({"127.0.0.2", "10.0.0.0/8"});
    // Straight from a client: what it says of itself is not believed.
    CHECK(t.client_of("203.0.113.9", forwarded({"198.51.100.1"})) == "203.0.113.9");
    // Through the proxy: what the proxy appended.
    CHECK(t.client_of("127.0.0.2", forwarded({"198.51.100.1"})) == "198.51.100.1");
    // A client that sends its own X-Forwarded-For to the proxy gets it appended to: its
    // own entry is left of the one the proxy wrote, and ignored.
    CHECK(t.client_of("127.0.0.2", forwarded({"6.6.6.6, 198.51.100.1"})) == "198.51.100.1");
    // Through two trusted proxies (an outer one in 10/8): skipped from the right.
    CHECK(t.client_of("127.0.0.2", forwarded({"6.6.6.6, 198.51.100.1, 10.1.2.3"})) == "198.51.100.1");
    // Several fields are one list, in order.
    CHECK(t.client_of("127.0.0.2", forwarded({"6.6.6.6", "198.51.100.1 , 10.1.2.3"})) == "198.51.100.1");
    // No header: the proxy itself (a health check, say).
    CHECK(t.client_of("127.0.0.2", forwarded({})) == "127.0.0.2");
    // Every hop trusted: the leftmost.
    CHECK(t.client_of("127.0.0.2", forwarded({"10.9.9.9, 10.1.2.3"})) == "10.9.9.9");
    // IPv6 written as the proxy writes it, normalized.
    CHECK(t.client_of("127.0.0.2", forwarded({"2001:DB8::1"})) == "2001:db8::1");
    // Not an address (a trusted proxy wrote it): taken as written, at most 64 bytes.
    CHECK(t.client_of("127.0.0.2", forwarded({"unknown"})) == "unknown");
    const std::string long_entry(200, 'x');
    CHECK(t.client_of("127.0.0.2", forwarded({long_entry})).size() == 64);
  }
}
