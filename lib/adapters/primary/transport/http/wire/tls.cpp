// SPDX-License-Identifier: BSL-1.0
#include "tls.hpp"

#include <stdexcept>
#include <tuple>

#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>

#include <droid/application/use_task.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace droid::http::detail {

namespace {

/// ALPN: the only protocol this server speaks is HTTP/1.1. A client that offers it gets
/// it; one that offers only others (h2) gets no ALPN answer rather than a failed
/// handshake, and speaks HTTP/1.1 or leaves.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                  unsigned int in_len, void*) {
  static const unsigned char http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_len, http11, sizeof http11, in, in_len) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

[[noreturn]] void fail(const std::string& what, const std::string& file, const std::error_code& ec) {
  throw std::runtime_error("TLS: cannot " + what + " " + file + ": " + ec.message());
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_tls_context(const std::string& chain_file, const std::string& key_file) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  std::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  SSL_CTX* native = ctx->native_handle();
  // TLS 1.0 and 1.1 are broken and deprecated (RFC 8996); the options above say so to
  // older OpenSSL too, this says it to OpenSSL 3 in its own terms.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  // TLS 1.2 suites: forward-secret key exchange (ECDHE) and AEAD ciphers only, as RFC 9325
  // §4.2 recommends. OpenSSL's default list also offers static-RSA key exchange (a stolen
  // key decrypts every recorded session) and CBC with SHA-1 (the padding-oracle family).
  // Every TLS 1.2 client of this decade has one of these. TLS 1.3's suites (set apart by
  // OpenSSL) are all of this kind already.
  constexpr const char* tls12_suites =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  if (SSL_CTX_set_cipher_list(native, tls12_suites) != 1) {
    ERR_clear_error();
    throw std::runtime_error("TLS: this OpenSSL offers none of the forward-secret AEAD suites of TLS 1.2");
  }
  // Session tickets would need a key shared by every instance behind a balancer and
  // rotated; full handshakes are cheap enough for MCP's long-lived connections.
  SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
  SSL_CTX_set_alpn_select_cb(native, select_http11, nullptr);
  if (ctx->use_certificate_chain_file(chain_file, ec); ec) fail("read the certificate chain", chain_file, ec);
  if (ctx->use_private_key_file(key_file, asio::ssl::context::pem, ec); ec) fail("read the private key", key_file, ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    throw std::runtime_error("TLS: the private key " + key_file + " does not match the certificate in " + chain_file);
  }
  return ctx;
}

struct tls_session {
  tls_session(asio::ip::tcp::socket& socket, std::shared_ptr<asio::ssl::context> c)
      : context(std::move(c)), stream(socket, *context) {}
  std::shared_ptr<asio::ssl::context> context;
  asio::ssl::stream<asio::ip::tcp::socket&> stream;
};

void tls_session_deleter::operator()(tls_session* s) const noexcept { delete s; }

tls_session_ptr make_tls_session(asio::ip::tcp::socket& socket, std::shared_ptr<asio::ssl::context> context) {
  return tls_session_ptr(new tls_session(socket, std::move(context)));
}

task<std::error_code> tls_handshake(tls_session& s) {
  co_return co_await s.stream.async_handshake(asio::ssl::stream_base::server, use_task);
}

task<std::pair<std::error_code, std::size_t>> tls_read_some(tls_session& s, asio::mutable_buffer to) {
  std::pair<std::error_code, std::size_t> done;
  std::tie(done.first, done.second) = co_await s.stream.async_read_some(to, use_task);
  co_return done;
}

task<std::pair<std::error_code, std::size_t>> tls_write_some(tls_session& s, asio::const_buffer from) {
  std::pair<std::error_code, std::size_t> done;
  std::tie(done.first, done.second) = co_await s.stream.async_write_some(from, use_task);
  co_return done;
}

}  // namespace droid::http::detail
