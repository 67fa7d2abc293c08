// SPDX-License-Identifier: BSL-1.0
/// @file
/// Host/Origin (DNS rebinding), media types (CSRF) and session ids (docs/reliability.md,
/// A1, A2, A4, A6), sans-io.
#include "adapters/primary/transport/http/access/request_rules.hpp"

#include <array>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace droid::http::detail;

TEST_SUITE("adapters/http/checks") {
  TEST_CASE("only exact loopback names pass the Host check on a loopback socket (A1)") {
    const std::vector<std::string> none;
    for (const char* ok : {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:65535",
                           "LOCALHOST", "LocalHost:3000"}) {
      CAPTURE(ok);
      CHECK(host_allowed(ok, true, none));
    }
    for (const char* bad : {"evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "2130706433", "0x7f000001", "127.1",
                            "[0:0:0:0:0:0:0:1]", "", "user@evil", "localhost.", "localhost:", "localhost:80x",
                            "[::1", "evil.com:80", "localhost:123456", " localhost"}) {
      CAPTURE(bad);
      CHECK_FALSE(host_allowed(bad, true, none));
    }
  }

  TEST_CASE("configured hosts are allowed, and enforced on other sockets") {
    const std::vector<std::string> allowed{"mcp.example.com"};
    CHECK(host_allowed("mcp.example.com", true, allowed));
    CHECK(host_allowed("MCP.example.com:443", false, allowed));
    CHECK_FALSE(host_allowed("evil.com", false, allowed));
    // Not loopback and nothing configured: the operator exposed it on purpose.
    CHECK(host_allowed("anything.example", false, {}));
    CHECK_FALSE(host_allowed("", false, {}));
  }

  TEST_CASE("Origin: absent, loopback with any port, or configured (A2)") {
    const std::vector<std::string> allowed{"https://app.example.com"};
    CHECK(origin_allowed(nullptr, {}));
    for (const char* ok : {"http://localhost", "http://localhost:5173", "https://127.0.0.1:8443", "http://[::1]:80",
                           "https://app.example.com"}) {
      CAPTURE(ok);
      const std::string_view o = ok;
      CHECK(origin_allowed(&o, allowed));
    }
    for (const char* bad : {"null", "http://evil.com", "http://localhost.evil.com", "not a url", "about:blank",
                            "http://localhost/path", "ftp://localhost", "https://app.example.com.evil.com",
                            "http://user@localhost", "http://localhost:99x"}) {
      CAPTURE(bad);
      const std::string_view o = bad;
      CHECK_FALSE(origin_allowed(&o, allowed));
    }
  }

  TEST_CASE("only application/json passes the Content-Type check (A4)") {
    CHECK(media_type_is("application/json", "application/json"));
    CHECK(media_type_is("application/json; charset=utf-8", "application/json"));
    CHECK(media_type_is("APPLICATION/JSON", "application/json"));
    for (const char* bad : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "",
                            "application/jsonx", "application/json-seq"}) {
      CAPTURE(bad);
      CHECK_FALSE(media_type_is(bad, "application/json"));
    }
  }

  TEST_CASE("Accept ranges admit a type by name, by major/* or by */*, unless q=0") {
    CHECK(accepts("application/json, text/event-stream", "text/event-stream"));
    CHECK(accepts("application/json, text/event-stream", "application/json"));
    CHECK_FALSE(accepts("application/json, text/event-stream", "text/html"));
    CHECK(accepts("application/*", "application/json"));
    CHECK(accepts("*/*", "text/event-stream"));
    CHECK(accepts("text/html;q=0.9, application/json;q=0.8", "application/json"));
    CHECK_FALSE(accepts("application/json", "text/event-stream"));
    CHECK_FALSE(accepts("application/json;q=0", "application/json"));
    CHECK_FALSE(accepts("", "application/json"));
  }

  TEST_CASE("session ids are 128 random bits in visible ASCII, never repeated (A6)") {
    constexpr int count = 200'000;
    std::set<std::string> seen;
    std::array<int, 128> ones{};
    auto value = [](char c) -> int {
      if (c >= 'A' && c <= 'Z') return c - 'A';
      if (c >= 'a' && c <= 'z') return c - 'a' + 26;
      if (c >= '0' && c <= '9') return c - '0' + 52;
      return c == '-' ? 62 : 63;
    };
    for (int i = 0; i < count; ++i) {
      const std::string id = new_session_id();
      REQUIRE(id.size() == 22);
      REQUIRE(valid_session_id(id));
      REQUIRE(seen.insert(id).second);
      int bit = 0;
      for (const char c : id) {
        const int v = value(c);
        for (int b = 5; b >= 0 && bit < 128; --b, ++bit) ones[static_cast<std::size_t>(bit)] += (v >> b) & 1;
      }
    }
    // Each bit is 1 half the time: 0.5 +- 0.006 is 5.4 standard deviations at this count.
    for (int b = 0; b < 128; ++b) {
      CAPTURE(b);
      const double f = ones[static_cast<std::size_t>(b)] / static_cast<double>(count);
      CHECK(f > 0.494);
      CHECK(f < 0.506);
    }
  }

  TEST_CASE("presented session ids must be visible ASCII of sane length") {
    CHECK(valid_session_id("abc-DEF_123"));
    CHECK_FALSE(valid_session_id(""));
    CHECK_FALSE(valid_session_id("has space"));
    CHECK_FALSE(valid_session_id(std::string(129, 'a')));
    CHECK_FALSE(valid_session_id("tab\there"));
    CHECK_FALSE(valid_session_id("\x7f"));
    // The ends of the range, bytes above it, and a bad byte anywhere in a long id.
    CHECK(valid_session_id("!~"));
    CHECK(valid_session_id(std::string(128, '~')));
    for (const char bad : {'\x20', '\x80', '\xff', '\x00'}) {
      for (const std::size_t at : {std::size_t{0}, std::size_t{17}, std::size_t{127}}) {
        std::string id(128, 'a');
        id[at] = bad;
        CAPTURE(at);
        CHECK_FALSE(valid_session_id(id));
      }
    }
  }
}
