// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::principal`: who an authenticated request comes from, as the token said.
///
/// Application layer, free of I/O. A transport that authenticates requests (HTTP with a
/// bearer token) makes one per verified token and hands it down with the request; the
/// engine binds what the request creates (a 2025 session, a 2026 `requestState`, a task)
/// to `key()`, checks a tool's scopes against `scopes`, and lets the tool read it
/// (`tool_context::principal()`). Without authentication there is none.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace droid {

/// The authenticated caller of a request.
///
/// Why a type of its own and not the token's claims: the engine needs three things from
/// any token format (a stable identity, scopes, an expiry), and a JWT, an introspection
/// answer and a test's hand-made principal must all give them the same way.
struct principal {
  /// The token's issuer (`iss`), part of the identity: two issuers may both have a
  /// subject "alice" who are not the same person.
  std::string issuer{};
  /// The token's subject (`sub`).
  std::string subject{};
  /// The OAuth client the token was issued to (`client_id` or `azp`), or empty.
  std::string client_id{};
  /// The scopes granted (`scope`, space-separated in the token), each once.
  std::vector<std::string> scopes{};
  /// Every claim of the token as it came, for a tool that needs one the fields above do
  /// not carry (a tenant, an email).
  boost::json::object claims{};
  /// When the token stops being valid (`exp`); the epoch when it gave none.
  std::chrono::system_clock::time_point expires_at{};

  /// True when `scope` was granted.
  [[nodiscard]] bool has_scope(std::string_view scope) const noexcept {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
  }
  /// True when every scope of `needed` was granted.
  [[nodiscard]] bool has_scopes(const std::vector<std::string>& needed) const noexcept {
    return std::all_of(needed.begin(), needed.end(), [this](const std::string& s) { return has_scope(s); });
  }
  /// What the engine binds sessions, request state and tasks to: issuer and subject,
  /// never the token itself (a refreshed token names the same principal).
  [[nodiscard]] std::string key() const { return issuer + '\n' + subject; }
};

}  // namespace droid
