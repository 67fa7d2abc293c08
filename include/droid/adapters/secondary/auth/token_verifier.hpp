// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::auth::token_verifier`: turns a bearer token into a `droid::principal`, or says
/// why it cannot.
///
/// Secondary adapter interface. The HTTP transport (`http::options::auth`) calls it for
/// every request that carries `Authorization: Bearer ...`; `make_jwt_verifier` (jwt.hpp)
/// is the implementation in the box, and a server whose authorization server issues
/// opaque tokens implements this over token introspection (RFC 7662).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <asio/any_io_executor.hpp>

#include <droid/application/server/principal.hpp>
#include <droid/application/task.hpp>

namespace droid::auth {

/// Why a token was not accepted. Every value but `unavailable` is the client's fault and
/// is answered 401 `error="invalid_token"`; `unavailable` (the keys or the introspection
/// endpoint could not be reached) is the server's and is answered 503, so a client does
/// not throw away a good token because our side had a bad minute.
enum class token_error {
  none,           ///< accepted
  malformed,      ///< not a token of the expected form (bad base64, bad JSON, too large)
  bad_signature,  ///< the signature does not verify, or the algorithm is refused (`none`)
  unknown_key,    ///< no key with the token's `kid`, even after refreshing the key set
  expired,        ///< `exp` is past (beyond the leeway)
  not_yet_valid,  ///< `nbf` or `iat` is in the future (beyond the leeway)
  wrong_issuer,   ///< `iss` is not the configured issuer
  wrong_audience, ///< neither `aud` nor `resource` names this server
  unavailable,    ///< the verifier could not decide (keys unreachable): 503, try again
};

/// What a verification concluded.
struct verification {
  /// The caller, when accepted; null otherwise.
  std::shared_ptr<const principal> who{};
  token_error error = token_error::none;  ///< why not, when `who` is null
  /// A short reason for the client (`error_description`); never the token, never a key.
  std::string description{};
};

/// Verifies bearer tokens for a resource server.
///
/// Why asynchronous: verifying may need the network (a key set fetched on an unknown
/// `kid`, an introspection request), and the shard that awaits it serves other
/// connections meanwhile.
/// Affinity: called on any shard at once, so an implementation guards what it shares
/// (the key cache); `verify` resumes its caller on `executor`.
class token_verifier {
 public:
  virtual ~token_verifier() = default;
  /// Verifies `token` (the text after `Bearer `), resuming on `executor`.
  [[nodiscard]] virtual task<verification> verify(std::string token, asio::any_io_executor executor) = 0;
};

/// The name of `e` as a short phrase ("expired", "wrong audience", ...), for logs.
[[nodiscard]] std::string_view to_string(token_error e) noexcept;

}  // namespace droid::auth
