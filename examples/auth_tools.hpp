// SPDX-License-Identifier: BSL-1.0
/// @file
/// everything-server as an OAuth 2.1 resource server (`--auth-issuer`, `--auth-audience`,
/// `--auth-jwks`): the JWT verifier, the listener's protection, and two tools that show
/// what a tool sees of its caller (`whoami`) and how a tool asks for a scope
/// (`admin_reset`, which needs `admin`). docs/security.md walks through it.
#pragma once

#include <string>
#include <vector>

#include <droid/droid.hpp>

/// What the command line said about authorization.
struct auth_flags {
  std::string issuer;    ///< `--auth-issuer URL`: the authorization server's issuer
  std::string audience;  ///< `--auth-audience URL`: this server's resource identifier
  std::string jwks;      ///< `--auth-jwks FILE|URL`: the key set, on disk or at a URL
  std::string jwks_ca;   ///< `--auth-jwks-ca FILE`: extra CA certificates for a JWKS URL
  std::vector<std::string> scopes{"mcp:read", "admin"};  ///< listed in the metadata
  [[nodiscard]] bool any() const { return !issuer.empty() || !audience.empty() || !jwks.empty(); }
};

/// Turns protection on in `http` (throws `std::invalid_argument` naming what is
/// missing or wrong) and registers `whoami` and `admin_reset` on `server`.
void configure_auth(droid::server& server, droid::http::options& http, const auth_flags& flags);
