// SPDX-License-Identifier: BSL-1.0
// Key-set fetching in a build without TLS (-Dtls=disabled): a key set fetched in clear
// could be swapped for an attacker's, and the loopback exception alone is not worth a
// second HTTP client, so every `jwks_url` is refused when the verifier is made, with the
// way out in the message. Verification with a key set on disk (`jwt_options::jwks_file`) works
// the same in both builds.
#include "jwks_fetch.hpp"

#include <stdexcept>

namespace droid::auth::detail {

std::optional<fetch_target> parse_jwks_url(std::string_view /*url*/, std::string& error) {
  error =
      "jwks_url needs TLS, and this build of protocol_droid has none (configured with -Dtls=disabled); give the "
      "key set on disk in jwt_options::jwks_file, or rebuild with -Dtls=enabled";
  return std::nullopt;
}

std::shared_ptr<asio::ssl::context> make_client_tls_context(const std::string& /*ca_file*/) {
  throw std::invalid_argument("jwt_options::ca_file: this build of protocol_droid has no TLS (-Dtls=disabled)");
}

task<fetch_result> fetch_jwks(asio::any_io_executor /*executor*/, fetch_target /*target*/,
                              std::shared_ptr<asio::ssl::context> /*tls*/, std::chrono::milliseconds /*timeout*/,
                              std::size_t /*max_body*/) {
  co_return fetch_result{false, {}, "this build of protocol_droid has no TLS (-Dtls=disabled)"};
}

}  // namespace droid::auth::detail
