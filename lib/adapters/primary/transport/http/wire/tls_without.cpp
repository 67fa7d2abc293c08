// SPDX-License-Identifier: BSL-1.0
// HTTPS in a build without TLS (-Dtls=disabled, or libssl not found with the default
// `auto`): the listener links no libssl, and one given certificate files refuses to start
// with a reason rather than quietly serving plain HTTP where HTTPS was asked for.
#include <stdexcept>

#include "tls.hpp"

namespace droid::http::detail {

/// Never made here; complete so that the deleter below is well-formed.
struct tls_session {};

std::shared_ptr<asio::ssl::context> make_tls_context(const std::string& /*chain_file*/,
                                                     const std::string& /*key_file*/) {
  throw std::invalid_argument(
      "http::options::tls_certificate_chain: this build of protocol_droid has no TLS (configured with -Dtls=disabled, "
      "or without libssl); serve HTTPS from a proxy in front, or rebuild with -Dtls=enabled");
}

void tls_session_deleter::operator()(tls_session* s) const noexcept { delete s; }

tls_session_ptr make_tls_session(asio::ip::tcp::socket& /*socket*/, std::shared_ptr<asio::ssl::context> /*context*/) {
  return tls_session_ptr(new tls_session);
}

task<std::error_code> tls_handshake(tls_session& /*s*/) { co_return std::make_error_code(std::errc::not_supported); }

task<std::pair<std::error_code, std::size_t>> tls_read_some(tls_session& /*s*/, asio::mutable_buffer /*to*/) {
  co_return std::pair{std::make_error_code(std::errc::not_supported), std::size_t{0}};
}

task<std::pair<std::error_code, std::size_t>> tls_write_some(tls_session& /*s*/, asio::const_buffer /*from*/) {
  co_return std::pair{std::make_error_code(std::errc::not_supported), std::size_t{0}};
}

}  // namespace droid::http::detail
