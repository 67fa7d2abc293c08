// SPDX-License-Identifier: BSL-1.0
/// @file
/// The gate in front of the MCP paths (auth_gate.hpp): RFC 6750 bearer tokens, RFC 9728
/// Protected Resource Metadata, and the per-caller request limit.
#include "auth_gate.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <openssl/sha.h>

#include <droid/adapters/secondary/auth/token_verifier.hpp>
#include <droid/domain/ir/codec.hpp>

#include "request_rules.hpp"
#include "adapters/primary/transport/http/connection.hpp"
#include "adapters/primary/transport/http/wire/responses.hpp"

namespace droid::http::detail {

namespace {

constexpr std::string_view well_known = "/.well-known/oauth-protected-resource";

/// True when `c` may stand in a quoted-string of a challenge as it is: RFC 6750 allows
/// printable ASCII but `"` and `\` in `error_description`; anything else is replaced, so
/// no text of ours (or of a verifier's) can break the header apart.
bool quotable(char c) noexcept { return c >= 0x20 && c <= 0x7E && c != '"' && c != '\\'; }

void append_quoted(std::string& out, std::string_view name, std::string_view value) {
  if (out.back() != ' ') out += ", ";
  out += name;
  out += "=\"";
  for (const char c : value) out += quotable(c) ? c : '\'';
  out += '"';
}

/// The token cache's key for `token`: its SHA-256. Why a hash: a cache that held tokens
/// would keep every recent caller's credential in memory for as long as the token lives;
/// why a cryptographic one: a forged token whose key collided with a cached one would be
/// taken for it.
std::string cache_key(std::string_view token) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

}  // namespace

auth_gate::auth_gate(const options& opts)
    : opts_(opts), enabled_(opts.auth.verifier != nullptr), proxies_(opts.trusted_proxies) {
  if (!enabled_) return;
  if (opts.auth.authorization_servers.empty())
    throw std::invalid_argument(
        "http::options::auth: authorization_servers is empty; clients must learn where to get tokens");
  if (!opts.auth.resource.empty()) set_resource(opts.auth.resource);
}

void auth_gate::prepare(std::size_t shards, const std::string& listener_url) {
  caches_.resize(shards);
  if (enabled_ && resource_.empty()) set_resource(listener_url);
}

void auth_gate::set_resource(const std::string& url) {
  // scheme://authority/path, with no query or fragment (RFC 8707 §2).
  const std::size_t scheme_end = url.find("://");
  const std::string_view scheme = std::string_view(url).substr(0, scheme_end);
  if (scheme_end == std::string::npos || (scheme != "https" && scheme != "http") ||
      url.find_first_of("?#") != std::string::npos)
    throw std::invalid_argument("http::options::auth: resource must be an http(s) URL with no query or fragment: " +
                                url);
  const std::size_t path_start = url.find('/', scheme_end + 3);
  std::string path = path_start == std::string::npos ? std::string() : url.substr(path_start);
  if (path == "/") path.clear();
  resource_ = url;
  metadata_path_ = std::string(well_known) + path;
  metadata_url_ = url.substr(0, path_start) + metadata_path_;

  boost::json::object meta;
  meta["resource"] = resource_;
  boost::json::array servers;
  for (const std::string& s : opts_.auth.authorization_servers) servers.emplace_back(s);
  meta["authorization_servers"] = std::move(servers);
  if (!opts_.auth.scopes_supported.empty()) {
    boost::json::array scopes;
    for (const std::string& s : opts_.auth.scopes_supported) scopes.emplace_back(s);
    meta["scopes_supported"] = std::move(scopes);
  }
  meta["bearer_methods_supported"] = boost::json::array{"header"};
  if (!opts_.auth.resource_name.empty()) meta["resource_name"] = opts_.auth.resource_name;
  if (!opts_.auth.resource_documentation.empty()) meta["resource_documentation"] = opts_.auth.resource_documentation;
  metadata_body_ = boost::json::serialize(meta);
}

bool auth_gate::is_metadata_path(std::string_view path) const noexcept {
  // Only the resource's own metadata path. RFC 9728 §3.3: the document fetched from a
  // well-known URL must name the resource that URL was built from, so the root document
  // would have to name `https://host` alone, which is not this resource; a client that
  // checks (as the RFC tells it to) would refuse ours there. The 401's
  // `resource_metadata` names the right path, which is where MCP clients look first.
  return enabled_ && path == metadata_path_;
}

task<bool> auth_gate::serve_metadata(connection& c, request& req) {
  // Public and the same for everyone: any page may read it (a browser client finds its
  // authorization server here before it has a token), and caches may keep it an hour.
  constexpr std::string_view cors = "Access-Control-Allow-Origin: *\r\n";
  if (req.method == "OPTIONS") {
    std::string extra(cors);
    extra += "Access-Control-Allow-Methods: GET\r\nAccess-Control-Max-Age: 600\r\nAllow: GET, HEAD\r\n";
    co_return co_await c.reply(204, {}, {}, false, extra);
  }
  if (req.method != "GET" && req.method != "HEAD")
    co_return co_await c.reply(405, "text/plain", "method not allowed\n", false, "Allow: GET, HEAD\r\n");
  std::string extra(cors);
  extra += "Cache-Control: public, max-age=3600\r\n";
  co_return co_await c.reply(200, "application/json", metadata_body_, false, extra);
}

std::string auth_gate::challenge(std::string_view error, std::string_view description, std::string_view scope) const {
  std::string out = "WWW-Authenticate: Bearer ";
  if (!error.empty()) append_quoted(out, "error", error);
  if (!description.empty()) append_quoted(out, "error_description", description);
  append_quoted(out, "resource_metadata", metadata_url_);
  if (!scope.empty()) append_quoted(out, "scope", scope);
  out += "\r\n";
  return out;
}

task<bool> auth_gate::refuse(connection& c, int status, std::string_view error, std::string_view description) {
  // RFC 6750 §3: a request with no credentials gets the challenge without an error
  // code, and the scopes every request needs tell the client what to ask for.
  const std::string scope = error.empty() ? joined(opts_.auth.required_scopes) : std::string();
  const std::string extra = challenge(error, description, scope);
  std::string text = status == 401 ? "Unauthorized: " : "Bad Request: ";
  text += description.empty() ? std::string_view("a bearer token is required (Authorization: Bearer ...)")
                              : description;
  const std::string body = rpc_error_body(ir::errc::invalid_request, text);
  co_return co_await c.reply(status, "application/json", body, false, extra);
}

std::shared_ptr<const request_origin> auth_gate::origin_of(connection& c, const request& req,
                                                           std::shared_ptr<const principal> who) const {
  // Without headers to copy, an origin is the same for every request of a connection
  // and a principal (the token cache hands out one principal per token): made once,
  // not per request.
  // Behind a trusted proxy each request may come from another client: not cached either.
  std::optional<std::string> forwarded = proxies_.forwarded_client(c.remote_address(), req);
  const bool cacheable = opts_.forwarded_headers.empty() && !forwarded;
  if (cacheable && c.last_origin && c.last_origin->principal == who) return c.last_origin;
  auto o = std::make_shared<request_origin>();
  o->principal = std::move(who);
  o->remote_address = forwarded ? std::move(*forwarded) : c.remote_address();
  for (const std::string& name : opts_.forwarded_headers) {
    constexpr std::size_t max_value = 1024;
    for (const header_field& h : req.headers)
      if (h.name == name) o->headers.emplace_back(name, std::string(h.value.substr(0, max_value)));
  }
  if (cacheable) c.last_origin = o;
  return o;
}

task<std::optional<bool>> auth_gate::admit(connection& c, const request& req, caller& who) {
  if (!enabled_) {
    admit_unprotected(c, req, who);
    co_return std::nullopt;
  }
  // RFC 6750 §2.3 allows a query parameter; the MCP specification forbids it: a URL ends
  // up in logs and browser history, and a token there is a token leaked.
  if (query_param(req.target, "access_token"))
    co_return co_await refuse(c, 400, "invalid_request",
                              "access tokens are accepted in the Authorization header only, never in the URL");
  if (req.count("authorization") > 1)
    co_return co_await refuse(c, 400, "invalid_request", "more than one Authorization header");
  const std::string_view* header = req.find("authorization");
  if (!header) co_return co_await refuse(c, 401, {}, {});
  std::string_view value = *header;
  const std::size_t space = value.find(' ');
  // Another scheme (Basic, say) is no bearer credential: the plain challenge says which
  // scheme this server takes.
  if (space == std::string_view::npos || !iequals(value.substr(0, space), "Bearer")) {
    if (iequals(value, "Bearer")) co_return co_await refuse(c, 400, "invalid_request", "the bearer token is empty");
    co_return co_await refuse(c, 401, {}, {});
  }
  value.remove_prefix(space);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) co_return co_await refuse(c, 400, "invalid_request", "the bearer token is empty");

  std::shared_ptr<const principal> verified;
  token_cache* cache = opts_.auth.token_cache > 0 ? &caches_[c.home().index] : nullptr;
  const auto now = std::chrono::system_clock::now();
  std::string key;
  if (cache) {
    key = cache_key(value);
    if (auto it = cache->entries.find(key); it != cache->entries.end()) {
      if (it->second->expires_at > now) verified = it->second;
      else cache->entries.erase(it);
    }
  }
  if (!verified) {
    std::string token(value);
    auth::verification v = co_await opts_.auth.verifier->verify(token, c.executor());
    if (!v.who) {
      if (v.error == auth::token_error::unavailable) {
        // Our side cannot decide (the key set is unreachable): the client's token may be
        // fine, so it is told to come back rather than to throw the token away.
        std::string text = "Service Unavailable: the token cannot be verified now";
        if (!v.description.empty()) text.append(" (").append(v.description).append(")");
        co_return co_await c.reply(503, "application/json", rpc_error_body(ir::errc::internal_error, text), false,
                                   "Retry-After: 5\r\n");
      }
      const std::string description =
          v.description.empty() ? std::string(auth::to_string(v.error)) : std::move(v.description);
      co_return co_await refuse(c, 401, "invalid_token", description);
    }
    verified = std::move(v.who);
    if (cache && verified->expires_at > now) {
      if (cache->entries.size() >= opts_.auth.token_cache) cache->entries.clear();
      cache->entries.emplace(std::move(key), verified);
    }
  }
  who.principal = verified->key();
  who.origin = origin_of(c, req, std::move(verified));
  if (lacks_scopes(who, opts_.auth.required_scopes))
    co_return co_await refuse_scope(c, who, std::nullopt, "this server", opts_.auth.required_scopes);
  co_return std::nullopt;
}

const char* auth_gate::take_slot(connection& c, caller& who) {
  // The origin's address: the client's, also behind a trusted proxy (`admit` made it).
  const std::string& remote = who.origin ? who.origin->remote_address : c.remote_address();
  who.slots = std::make_shared<request_slots>();
  if (!who.principal.empty() &&
      !limits_.acquire("p" + who.principal, opts_.max_requests_per_principal, who.slots->principal))
    return "max_requests_per_principal";
  // The connection's own address (not one a trusted proxy forwarded, which changes from
  // one request to the next) is held by the connection: no lookup per request.
  const bool own = remote == c.remote_address();
  if (own && !c.address_requests) c.address_requests = limits_.hold("a" + remote);
  std::string forwarded = own ? std::string() : "a" + remote;
  const std::string& address = own ? c.address_requests.key() : forwarded;
  who.tenant = who.principal.empty() ? address : "p" + who.principal;
  const bool taken = own ? limits_.acquire(c.address_requests, opts_.max_requests_per_address, who.slots->address)
                         : limits_.acquire(std::move(forwarded), opts_.max_requests_per_address, who.slots->address);
  return taken ? nullptr : "max_requests_per_address";
}

task<bool> auth_gate::refuse_busy(connection& c, const request& req, std::string_view limit) {
  std::string text = "Too Many Requests: this client has as many requests in progress as it may "
                     "(http::options::";
  text.append(limit).append("); requests that run on after their client hung up count until they end");
  // Only on refusal is the body looked at here: its id, so that the client can tell which
  // request was refused.
  std::optional<ir::request_id> id;
  if (req.method == "POST") {
    auto decoded = ir::decode(std::string(req.body));
    if (auto* msg = std::get_if<ir::message>(&decoded); msg && msg->is_request()) id = msg->id();
  }
  const std::string body = id ? rpc_error_body(*id, ir::errc::invalid_request, text)
                              : rpc_error_body(ir::errc::invalid_request, text);
  co_return co_await c.reply(429, "application/json", body, false, "Retry-After: 1\r\n");
}

bool auth_gate::lacks_scopes(const caller& who, const std::vector<std::string>& needed) noexcept {
  const principal* p = who.origin ? who.origin->principal.get() : nullptr;
  return p && !p->has_scopes(needed);
}

task<bool> auth_gate::refuse_scope(connection& c, const caller& who, const std::optional<ir::request_id>& id,
                                   std::string_view what, const std::vector<std::string>& needed) {
  std::vector<std::string> wanted;
  if (const principal* p = who.origin ? who.origin->principal.get() : nullptr) wanted = p->scopes;
  for (const std::string& s : needed)
    if (std::find(wanted.begin(), wanted.end(), s) == wanted.end()) wanted.push_back(s);
  std::string text = "Forbidden: ";
  text.append(what).append(" requires the scope(s) ").append(joined(needed));
  const std::string extra = challenge("insufficient_scope", text, joined(wanted));
  const std::string body =
      id ? rpc_error_body(*id, ir::errc::invalid_request, text) : rpc_error_body(ir::errc::invalid_request, text);
  co_return co_await c.reply(403, "application/json", body, false, extra);
}

}  // namespace droid::http::detail
