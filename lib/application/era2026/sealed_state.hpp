// SPDX-License-Identifier: BSL-1.0
/// @file
/// Sealing the `requestState` of MCP 2026-07-28 multi round-trip requests.
///
/// Application layer, private. A server that needs more input returns an opaque
/// `requestState` string; the client echoes it back byte for byte on its retry, and the
/// server resumes from it without having kept anything itself. The client is untrusted,
/// so the string is sealed: encrypted (the client learns nothing of the server's
/// internals) and authenticated (a forged or edited state is refused, not resumed).
///
/// What sealing does not do: it does not stop a client from sending the same token twice,
/// or a token meant for one request with another. A caller that cares puts an expiry and
/// whatever the state is bound to (the method, the tool's name) in the plaintext and
/// checks them after `open`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace droid::detail {

/// Why a token did not open, so that the JSON-RPC error can say which kind of bad input
/// it was (a client bug, a restarted server, an attack) without saying anything secret.
enum class open_failure : std::uint8_t {
  malformed,    ///< not base64url, too short, or an unknown format version
  oversized,    ///< longer than the caller's limit; nothing was decoded
  unknown_key,  ///< sealed with a key this sealer does not hold (another process, a retired secret)
  tampered,     ///< the authentication tag does not match: edited, truncated or forged
};

/// A short sentence for the message of the JSON-RPC error that refuses the state.
[[nodiscard]] std::string_view describe(open_failure why) noexcept;

/// Seals and opens `requestState` tokens with AES-256-GCM.
///
/// Token: base64url without padding of `version (1) | key id (4) | nonce (12) |
/// ciphertext | tag (16)`; the version and key id are authenticated as associated data,
/// so neither can be changed to steer `open` to another format or key.
///
/// Why several keys: a deployment rotates its secret by putting the new one first and
/// keeping the old one until the tokens it sealed have been used, so retries in flight
/// survive the rotation. Each secret is stretched into a key with HKDF-SHA256; only the
/// derived keys are kept, and they are wiped on destruction.
/// Thread safety: `seal` and `open` may be called from any number of threads at once
/// (each call has its own cipher context); construction and assignment may not overlap
/// them.
/// Not copyable: a copy would multiply the key material in memory for no use.
class state_sealer {
 public:
  /// `secrets`: newest first, each at least 32 bytes (std::invalid_argument otherwise);
  /// the strings are wiped once the keys are derived. Empty: one random 32-byte secret
  /// made here, so a token from another process, or from before a restart, is
  /// `unknown_key`: the right default for a single process without configuration.
  /// Throws std::runtime_error if OpenSSL fails (no randomness, no HKDF).
  explicit state_sealer(std::vector<std::string> secrets = {});
  ~state_sealer();
  state_sealer(state_sealer&&) noexcept;
  state_sealer& operator=(state_sealer&&) noexcept;
  state_sealer(const state_sealer&) = delete;
  state_sealer& operator=(const state_sealer&) = delete;

  /// Seals `plaintext` with the newest key and a fresh random nonce, so sealing the same
  /// state twice gives unrelated tokens. Returns URL-safe base64 without padding, which a
  /// JSON string carries without escapes.
  /// Throws std::runtime_error if OpenSSL fails (it should not).
  [[nodiscard]] std::string seal(std::string_view plaintext) const;

  /// Opens a token made by `seal` with any of the keys. On failure returns nullopt and
  /// sets `why`; nothing of an unauthenticated plaintext is returned.
  /// `max_token_bytes`: a longer token is `oversized`, refused before any decoding, so an
  /// attacker cannot make the server decode or decrypt megabytes it will then refuse.
  /// Throws std::runtime_error only if OpenSSL itself fails (not for bad tokens).
  [[nodiscard]] std::optional<std::string> open(std::string_view token, std::size_t max_token_bytes,
                                                open_failure& why) const;

 private:
  struct key;
  std::vector<key> keys_;  // newest first; never empty except after a move
};

/// `n` bytes from OpenSSL's CSPRNG (task ids). Here because this file is the one that
/// links libcrypto. Throws `std::runtime_error` when the generator fails.
[[nodiscard]] std::string random_bytes(std::size_t n);

}  // namespace droid::detail
