// SPDX-License-Identifier: BSL-1.0
/// @file
/// The gate in front of the MCP paths: bearer tokens (the server as an OAuth 2.1
/// resource server), Protected Resource Metadata, and the per-caller request limit.
///
///     listener::impl::handle: path, Host/Origin, CORS preflight
///          |-- metadata path --> auth_gate::serve_metadata (public: no token)
///          \-- MCP path -------> auth_gate::admit (401 / 400 / 503) --> take_slot (429)
///                                     --> endpoints, with the caller (its principal and origin)
///
/// Primary adapter, private. Why one place: every endpoint (Streamable HTTP, the legacy
/// transport) must refuse the same tokens with the same challenge, and a check added in
/// one endpoint but forgotten in another is how resource servers get bypassed.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/request_id.hpp>

#include "adapters/primary/transport/http/wire/keyed_limits.hpp"
#include "adapters/primary/transport/http/wire/proxy_trust.hpp"

namespace droid::http::detail {

class connection;
struct request;

/// The slots one request holds: its principal's (when authenticated) and its address's
/// (always: K principals from one address must not get K times its share). Shared by
/// the request's handler and the stream that answers it, so that the slots are given
/// back when the work ends, not when the client hangs up.
struct request_slots {
  keyed_limits::slot principal;
  keyed_limits::slot address;
};

/// Who a request on an MCP path comes from, as the gate admitted it.
struct caller {
  /// What the tool that serves the request may read (`tool_context::origin()`).
  std::shared_ptr<const request_origin> origin;
  /// `principal::key()`, or empty without authentication: what sessions, request state
  /// and tasks are bound to.
  std::string principal;
  /// Whose share of the server's limits this request uses: "p" and the principal's key
  /// when authenticated, "a" and the client's address otherwise (the remote address, or
  /// behind a trusted proxy the one it forwarded).
  std::string tenant;
  /// The request's slots (`auth_gate::take_slot`); null before it. Taken (moved out) by
  /// the endpoint that starts the request, so that the request's end gives them back, not
  /// the handler's after the answer is written: a client that sends its next request as
  /// soon as it has read an answer must find the slot free, also when that request is
  /// served on another shard at once (every shard accepts its own connections). Hence
  /// `mutable`: the handlers see the caller as const in every other respect.
  mutable std::shared_ptr<request_slots> slots;
};

/// The authorization front of the MCP paths.
///
/// Affinity: `admit` and the replies run on the connection's shard; the token cache is
/// per shard (indexed by the shard's index), so no lock guards it.
class auth_gate {
 public:
  /// Throws `std::invalid_argument` for settings that cannot protect anything (no
  /// authorization server, a resource that is no URL).
  explicit auth_gate(const options& opts);

  /// Token protection is on.
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  /// Fills in what depends on the bound listener: one token cache per shard, and the
  /// resource identifier when `authorization::resource` is empty. Called once, before
  /// serving.
  void prepare(std::size_t shards, const std::string& listener_url);

  /// True for the path that serves this resource's Protected Resource Metadata (RFC
  /// 9728's path-aware one), when protection is on.
  [[nodiscard]] bool is_metadata_path(std::string_view path) const noexcept;
  /// Answers a request on a metadata path (GET, HEAD, a CORS preflight; 405 otherwise).
  task<bool> serve_metadata(connection& c, request& req);

  /// Authenticates a request on an MCP path. Admitted: `who` is filled and nothing is
  /// returned. Refused: the answer (401, 400 or 503 with its challenge) is written and
  /// whether the connection may carry another request is returned. Also run on a
  /// request's head alone, before its body is read (`listener::impl::screen`).
  task<std::optional<bool>> admit(connection& c, const request& req, caller& who);
  /// What `admit` does when protection is off (`enabled()` false): fills in `who`'s
  /// origin, refuses nothing. Why apart: `admit` is a coroutine, and a server without
  /// authentication would pay a frame per request for a call that never suspends.
  void admit_unprotected(connection& c, const request& req, caller& who) const {
    who.origin = origin_of(c, req, nullptr);
  }
  /// Takes `who`'s request slots (into `who.slots`) and names its tenant. Refused: the
  /// name of the option whose limit is reached (429 is the caller's to write, with
  /// `refuse_busy`); nullptr when admitted.
  [[nodiscard]] const char* take_slot(connection& c, caller& who);
  /// Writes 429 with Retry-After and a JSON-RPC error naming `limit`, for the request in
  /// `req`'s body (its id, when the body is one request).
  task<bool> refuse_busy(connection& c, const request& req, std::string_view limit);

  /// True when `who` is authenticated and lacks a scope of `needed` (never without
  /// authentication: scopes are enforced only where callers are known).
  [[nodiscard]] static bool lacks_scopes(const caller& who, const std::vector<std::string>& needed) noexcept;
  /// Writes 403 `insufficient_scope` for request `id`. The challenge's scope is what
  /// `who` holds already plus what `what` needs: a client that asks its authorization
  /// server for exactly that keeps the scopes its other calls use.
  task<bool> refuse_scope(connection& c, const caller& who, const std::optional<ir::request_id>& id,
                          std::string_view what, const std::vector<std::string>& needed);

 private:
  /// The `WWW-Authenticate` header line (with CRLF) for an error (empty: none given).
  [[nodiscard]] std::string challenge(std::string_view error, std::string_view description,
                                      std::string_view scope) const;
  task<bool> refuse(connection& c, int status, std::string_view error, std::string_view description);
  void set_resource(const std::string& url);
  [[nodiscard]] std::shared_ptr<const request_origin> origin_of(connection& c, const request& req,
                                                                std::shared_ptr<const principal> who) const;

  /// Verified tokens of one shard, by the token's SHA-256; cleared whole when full (a
  /// cache that forgets at random costs a signature check, never a wrong answer).
  struct token_cache {
    std::unordered_map<std::string, std::shared_ptr<const principal>> entries;
  };

  const options& opts_;
  bool enabled_ = false;
  std::string resource_;
  std::string metadata_url_;
  /// The well-known paths: RFC 9728's path-aware one for `resource_`, and the root one.
  std::string metadata_path_;
  std::string metadata_body_;
  std::vector<token_cache> caches_;
  keyed_limits limits_;
  /// `options::trusted_proxies`: whose `X-Forwarded-For` names the client.
  proxy_trust proxies_;
};

}  // namespace droid::http::detail
