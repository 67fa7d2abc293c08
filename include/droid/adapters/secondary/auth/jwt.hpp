// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::auth::make_jwt_verifier`: the `token_verifier` for JWT access tokens (RFC 9068)
/// signed with RS256, ES256 or EdDSA, checked against a JSON Web Key Set read from a file
/// or fetched over HTTPS.
///
/// Secondary adapter. What it checks and why, and how keys rotate, is in
/// docs/security.md#verifying-access-tokens.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <droid/adapters/secondary/auth/token_verifier.hpp>

namespace droid::auth {

/// How a JWT verifier is configured.
///
/// Why `issuer` and `audience` are required: a token from another authorization server,
/// or one issued for another resource server and replayed here, verifies with a valid
/// signature; only these two comparisons tell it apart.
struct jwt_options {
  /// The authorization server's issuer identifier; `iss` must equal it exactly.
  std::string issuer{};
  /// This server's resource identifier (its canonical URL, as in the `resource`
  /// parameter of RFC 8707). `aud` (a string or an array) must contain it, or `resource`
  /// must equal it. Empty is a configuration error: a verifier that accepted any
  /// audience would accept tokens meant for other servers.
  std::string audience{};
  /// A JSON Web Key Set on disk, read once at construction. Exactly one of `jwks_file`
  /// and `jwks_url` is set.
  std::string jwks_file{};
  /// Where the authorization server publishes its key set (its `jwks_uri`). `https://`,
  /// or `http://` for a loopback host only (a sidecar, a test).
  std::string jwks_url{};
  /// Extra trusted certificates (PEM) for `jwks_url`, besides the system trust store.
  std::string ca_file{};
  /// Clock skew tolerated on `exp`, `nbf` and `iat`.
  std::chrono::seconds leeway{30};
  /// The shortest time between two fetches of `jwks_url`: a flood of tokens naming
  /// unknown key ids must not become a flood of requests to the authorization server.
  std::chrono::milliseconds min_refresh_interval{std::chrono::seconds(60)};
  /// Longer tokens are refused before any decoding.
  std::size_t max_token_bytes = 8 * 1024;
  /// The whole fetch of `jwks_url`: connecting, the TLS handshake, the request and the
  /// answer. A DNS lookup is bounded by the system resolver's own timeout instead, since
  /// Asio cannot abandon one that is under way.
  std::chrono::milliseconds fetch_timeout{std::chrono::seconds(5)};
  /// A key set response with a longer body is refused.
  std::size_t max_jwks_bytes = 1024 * 1024;
};

/// A verifier for JWT access tokens, safe to call from every shard at once.
///
/// Throws `std::invalid_argument`, naming the problem, when `opts` is not a usable
/// configuration: no issuer or audience, neither or both key sources, a `jwks_file` that
/// cannot be read or holds no usable key, a `jwks_url` that is not `https://` (or
/// `http://` on loopback), an unreadable `ca_file`.
[[nodiscard]] std::shared_ptr<token_verifier> make_jwt_verifier(jwt_options opts);

}  // namespace droid::auth
