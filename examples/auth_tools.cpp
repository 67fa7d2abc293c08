// SPDX-License-Identifier: BSL-1.0
/// @file
/// everything-server's authorization (auth_tools.hpp).
#include "auth_tools.hpp"

#include <stdexcept>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <droid/adapters/secondary/auth/jwt.hpp>

void configure_auth(droid::server& server, droid::http::options& http, const auth_flags& flags) {
  if (flags.issuer.empty() || flags.audience.empty() || flags.jwks.empty())
    throw std::invalid_argument("--auth-issuer, --auth-audience and --auth-jwks go together");
  droid::auth::jwt_options jwt;
  jwt.issuer = flags.issuer;
  // The same identifier for the verifier (which tokens are for us) and the metadata
  // (what clients ask their authorization server a token for).
  jwt.audience = flags.audience;
  if (flags.jwks.starts_with("https://") || flags.jwks.starts_with("http://")) jwt.jwks_url = flags.jwks;
  else jwt.jwks_file = flags.jwks;
  jwt.ca_file = flags.jwks_ca;
  http.auth.verifier = droid::auth::make_jwt_verifier(std::move(jwt));
  http.auth.resource = flags.audience;
  http.auth.authorization_servers = {flags.issuer};
  http.auth.scopes_supported = flags.scopes;
  // Any use of the server needs mcp:read; admin_reset alone needs admin, so a client
  // steps up to it only when it calls that tool.
  http.auth.required_scopes = {"mcp:read"};
  http.auth.resource_name = "protocol_droid everything server";

  server.tool("whoami", "Says who the caller is: the token's subject, issuer, client and scopes",
              [](droid::tool_context& ctx) -> droid::task<std::string> {
                const droid::principal* p = ctx.principal();
                if (!p) co_return "nobody: this server authenticates no one";
                boost::json::object out;
                out["subject"] = p->subject;
                out["issuer"] = p->issuer;
                if (!p->client_id.empty()) out["client_id"] = p->client_id;
                boost::json::array scopes;
                for (const std::string& s : p->scopes) scopes.emplace_back(s);
                out["scopes"] = std::move(scopes);
                if (const droid::request_origin* o = ctx.origin()) out["remote_address"] = o->remote_address;
                co_return boost::json::serialize(out);
              });
  droid::tool_info reset;
  reset.name = "admin_reset";
  reset.description = "Pretends to reset the server's state; needs the scope admin";
  reset.required_scopes = {"admin"};
  server.tool(std::move(reset), [](droid::tool_context& ctx) -> droid::task<std::string> {
    // Null when the server authenticates nobody: a tool never assumes a principal.
    const droid::principal* p = ctx.principal();
    co_return "reset by " + (p ? p->subject : std::string("nobody"));
  });
}
