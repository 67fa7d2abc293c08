// SPDX-License-Identifier: BSL-1.0
/// @file
/// The TLS side of the HTTP server: a server context built from PEM files with the
/// settings every connection gets (TLS 1.2 or later, ALPN `http/1.1`).
///
/// Primary adapter, private. The connection reaches OpenSSL only through this header, so
/// that a build configured with `-Dtls=disabled` links no libssl: tls_without.cpp then
/// defines these functions, and a listener given certificate files refuses to start.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>

#include <droid/application/task.hpp>

namespace asio::ssl {
class context;
}

namespace droid::http::detail {

/// A TLS server context for the certificate chain and private key in `chain_file` and
/// `key_file` (PEM). Why a fresh context per load and not one reloaded in place: a
/// reload (SIGHUP) swaps the context new connections get, while live connections keep
/// the one they were accepted with, so nothing in flight is dropped.
/// Throws `std::runtime_error` naming the file and OpenSSL's reason when a file cannot be
/// read, is not PEM, or the key does not match the certificate.
[[nodiscard]] std::shared_ptr<asio::ssl::context> make_tls_context(const std::string& chain_file,
                                                                   const std::string& key_file);

/// One connection's TLS session over its socket (defined in tls.cpp). The context is held
/// so that a reload cannot free it under a live session.
struct tls_session;
/// Frees a session; a function, not the type's destructor, because the type is complete
/// only where OpenSSL is.
struct tls_session_deleter {
  void operator()(tls_session* s) const noexcept;
};
using tls_session_ptr = std::unique_ptr<tls_session, tls_session_deleter>;

/// A server-side session for `socket` under `context` (from `make_tls_context`).
[[nodiscard]] tls_session_ptr make_tls_session(asio::ip::tcp::socket& socket, std::shared_ptr<asio::ssl::context> context);
/// The server's side of the handshake.
[[nodiscard]] task<std::error_code> tls_handshake(tls_session& s);
/// Reads some decrypted bytes into `to`.
[[nodiscard]] task<std::pair<std::error_code, std::size_t>> tls_read_some(tls_session& s, asio::mutable_buffer to);
/// Encrypts and writes some of `from`.
[[nodiscard]] task<std::pair<std::error_code, std::size_t>> tls_write_some(tls_session& s, asio::const_buffer from);

}  // namespace droid::http::detail
