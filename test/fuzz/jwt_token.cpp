// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: the JWT access-token verifier (lib/adapters/secondary/auth/), the parser
/// an unauthenticated client reaches first on a protected server.
///
/// - Text that starts with `{` is a JSON Web Key Set: `parse_jwks` reads it or refuses it
///   with a reason, never crashes, and a set it returns has keys.
/// - Anything else is a bearer token, verified against a fixed key set (an Ed25519 and a
///   P-256 key, whose private halves are nowhere in the harness). Oracle: it is refused,
///   with a reason; a token accepted without the private key would be a forgery. Each of
///   its dot-separated segments also goes through the strict base64url decoder, which
///   must give one spelling per value: what it accepts re-encodes to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>

#include <droid/adapters/secondary/auth/jwt.hpp>
#include <droid/application/spawn.hpp>

#include "adapters/secondary/auth/jose.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr std::string_view jwks =
    R"({"keys":[{"kty":"OKP","crv":"Ed25519","kid":"ed","x":"9mruB2xRZtLe901nZu2zG-vB1EgEEhLNmuvIu18PiHE"},)"
    R"({"kty":"EC","crv":"P-256","kid":"ec","x":"0qiITcgeLJ8wx_yIP812kTN0oMq1dlL4AxewGTFuYd8",)"
    R"("y":"LANk4sFI7Lh_LLHgYICVNxDrzEnm4u82y3NbLritqUA"}]})";

/// The verifier every token is tried against, over a key set file written once.
droid::auth::token_verifier& verifier() {
  static const std::shared_ptr<droid::auth::token_verifier> v = [] {
    char path[] = "/tmp/droid-fuzz-jwks-XXXXXX";
    const int fd = mkstemp(path);
    DROID_FUZZ_CHECK(fd >= 0, "a temporary file for the key set");
    std::FILE* f = fdopen(fd, "w");
    std::fwrite(jwks.data(), 1, jwks.size(), f);
    std::fclose(f);
    droid::auth::jwt_options o;
    o.issuer = "https://as.example";
    o.audience = "https://rs.example/mcp";
    o.jwks_file = path;
    auto made = droid::auth::make_jwt_verifier(o);
    std::remove(path);  // read at construction
    return made;
  }();
  return *v;
}

std::string encode(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char ch : bytes) {
    buffer = (buffer << 8) | static_cast<unsigned char>(ch);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(buffer >> bits) & 63];
    }
  }
  if (bits > 0) out += alphabet[(buffer << (6 - bits)) & 63];
  return out;
}

void check_segments(std::string_view token) {
  while (true) {
    const std::size_t dot = token.find('.');
    const std::string_view segment = token.substr(0, dot);
    std::string decoded;
    if (droid::auth::detail::base64url_decode(segment, decoded))
      DROID_FUZZ_CHECK(encode(decoded) == segment, "base64url accepted a second spelling of a value");
    if (dot == std::string_view::npos) return;
    token.remove_prefix(dot + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = droid::fuzz::as_text(data, size);
  if (!text.empty() && text.front() == '{') {
    std::string error;
    const auto set = droid::auth::detail::parse_jwks(text, error);
    if (set) DROID_FUZZ_CHECK(!set->keys.empty(), "a key set with no key");
    else DROID_FUZZ_CHECK(!error.empty(), "a refused key set without a reason");
    return 0;
  }
  check_segments(text);
  asio::io_context io;
  bool done = false;
  droid::spawn(io.get_executor(), verifier().verify(std::string(text), io.get_executor()),
               [&](std::exception_ptr e, droid::auth::verification v) {
                 DROID_FUZZ_CHECK(!e, "verify threw");
                 DROID_FUZZ_CHECK(!v.who, "a token verified without the private key: a forgery");
                 DROID_FUZZ_CHECK(v.error != droid::auth::token_error::none, "a refusal without an error");
                 done = true;
               });
  io.run();
  DROID_FUZZ_CHECK(done, "verify never finished");
  return 0;
}
