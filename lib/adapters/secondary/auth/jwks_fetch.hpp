// SPDX-License-Identifier: BSL-1.0
/// @file
/// One HTTP(S) GET of a JSON Web Key Set, with a time limit and a size limit: the only
/// HTTP client in the library, and only as much of one as a key set needs.
///
/// Secondary adapter, private. In a build configured with `-Dtls=disabled` (which links no
/// libssl) jwks_without_tls.cpp defines these instead, and a `jwks_url` is refused when
/// the verifier is made: the key set must then be given on disk (`jwt_options::jwks_file`).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <asio/any_io_executor.hpp>

#include <droid/application/task.hpp>

namespace asio::ssl {
class context;
}

namespace droid::auth::detail {

/// Where a key set is fetched from, as parsed from `jwt_options::jwks_url`.
struct fetch_target {
  bool tls = true;
  std::string host{};    ///< without brackets for an IPv6 literal
  std::string port{};    ///< "443" or "80" when the URL gave none
  std::string target{};  ///< the path and query, "/" when the URL gave none
};

/// Parses `url`: `https://host[:port][/path]`, or `http://` when the host is loopback
/// (127.0.0.0/8, ::1, localhost). Nothing, with `error` set, for anything else: a key
/// set fetched in clear over a network could be swapped for the attacker's.
[[nodiscard]] std::optional<fetch_target> parse_jwks_url(std::string_view url, std::string& error);

/// A TLS client context that verifies peers against the system trust store and
/// `ca_file` (when not empty). Throws std::invalid_argument when `ca_file` cannot be read.
[[nodiscard]] std::shared_ptr<asio::ssl::context> make_client_tls_context(const std::string& ca_file);

/// What a fetch gave: the body of a 200 answer, or why there is none.
struct fetch_result {
  bool ok = false;
  std::string body{};
  std::string error{};
};

/// GETs `target` on `executor`, all of it after the DNS lookup within `timeout` (Asio
/// delivers a cancelled lookup only when the resolver returns); a body over `max_body`
/// bytes, or a status other than 200, is a failure.
[[nodiscard]] task<fetch_result> fetch_jwks(asio::any_io_executor executor, fetch_target target,
                                            std::shared_ptr<asio::ssl::context> tls,
                                            std::chrono::milliseconds timeout, std::size_t max_body);

}  // namespace droid::auth::detail
