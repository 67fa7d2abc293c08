// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JOSE pieces the JWT verifier is built from: strict base64url, JSON Web Keys turned
/// into OpenSSL keys, and JWS signature checks for RS256, ES256 and EdDSA.
///
/// Private to lib/adapters/secondary/auth; the only place besides sealed_state.cpp and
/// the TLS code that includes OpenSSL.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/types.h>

namespace droid::auth::detail {

/// Decodes unpadded base64url (RFC 7515 section 2) into `out`. False on any character
/// outside the alphabet, on padding, on an impossible length, or on non-zero unused bits:
/// two spellings of one token must not both verify.
[[nodiscard]] bool base64url_decode(std::string_view in, std::string& out);

/// The key types the verifier accepts, one per accepted algorithm, so that a key can
/// never verify under an algorithm of another family (RS256 with an EC key, HS256 with an
/// RSA key's bytes).
enum class key_type { rsa, ec_p256, ed25519 };

/// The key type an algorithm `alg` (a JWS header's) needs; nothing for any algorithm
/// that is refused (`none`, HS256, RS384, ...).
[[nodiscard]] std::optional<key_type> key_type_for_alg(std::string_view alg) noexcept;

/// One usable verification key of a key set.
struct jwk {
  std::string kid{};  ///< empty when the key set gave none
  key_type type = key_type::rsa;
  /// Shared, not unique: snapshots of the key set are copied between threads, and
  /// OpenSSL allows concurrent verifications with one public key.
  std::shared_ptr<EVP_PKEY> pkey{};
};

/// An immutable set of keys, as parsed from one JWKS document.
///
/// Why immutable: every shard verifies against it at once; a refresh builds a new set and
/// swaps the pointer, so no verification ever sees a half-updated set.
struct key_set {
  std::vector<jwk> keys{};
};

/// Parses a JWKS document (`{"keys": [...]}`). Keys that are not for signatures, of
/// unknown types or curves, too weak (RSA under 2048 bits), with an `alg` that disagrees
/// with their type, or malformed are skipped. Returns null and sets `error` when the
/// document is not a key set or has no usable key.
[[nodiscard]] std::shared_ptr<const key_set> parse_jwks(std::string_view text, std::string& error);

/// True when `signature` (the decoded third segment) is a valid signature of
/// `signing_input` (the first two segments and their dot) by `key`, under the algorithm
/// of `key.type`. An ES256 signature must be the 64-byte r||s form.
[[nodiscard]] bool verify_signature(const jwk& key, std::string_view signing_input, std::string_view signature);

}  // namespace droid::auth::detail
