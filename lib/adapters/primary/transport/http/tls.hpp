// SPDX-License-Identifier: BSL-1.0
/// @file
/// The TLS side of the HTTP server: a server context built from PEM files with the
/// settings every connection gets (TLS 1.2 or later, ALPN `http/1.1`).
///
/// Primary adapter, private.
#pragma once

#include <memory>
#include <string>

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

}  // namespace droid::http::detail
