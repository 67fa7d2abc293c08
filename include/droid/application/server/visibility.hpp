// SPDX-License-Identifier: BSL-1.0
/// @file
/// Visibility: which tools, prompts, resources and templates one caller sees.
///
/// Application layer, free of I/O. A server sets one predicate (`server::visible_if`);
/// every list a request gets is filtered by it, a call, read or prompt of an entry it
/// hides is answered as if the entry did not exist, and a 2025 session is told that a
/// list changed only when the entry that changed is one it can see.
///
///     srv.visible_if([](const droid::visibility_query& q) {
///       // Admin tools only for callers whose token carries the "admin" scope.
///       if (q.kind == droid::entry_kind::tool && q.name.starts_with("admin_"))
///         return q.caller() && q.caller()->has_scope("admin");
///       return true;
///     });
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/domain/mcp/tool.hpp>

namespace droid {

/// What a visibility predicate is asked about.
enum class entry_kind : std::uint8_t { tool, prompt, resource, resource_template };

/// One entry, and the caller who would see it.
struct visibility_query {
  entry_kind kind = entry_kind::tool;  ///< what the entry is
  /// The tool's or prompt's name, the resource's URI, or the template's text.
  std::string_view name{};
  /// The tool's description (its scopes, annotations, `_meta`) when `kind` is a tool;
  /// null otherwise.
  const tool_info* tool = nullptr;
  /// The client as the request sees it (its era, capabilities, `clientInfo`, principal).
  const peer_info* peer = nullptr;
  /// Where the request came from (its principal with scopes, its address, forwarded
  /// headers); null when the transport knows nothing (stdio), and for a 2025 session told
  /// of a change before it made any request.
  const request_origin* origin = nullptr;
  /// The authenticated caller, or null.
  [[nodiscard]] const principal* caller() const noexcept { return origin ? origin->principal.get() : nullptr; }
};

/// Decides whether the caller of `q` sees its entry. Called on the request's shard for
/// every entry a list would show and every entry a request names, so it should be quick
/// and must not call back into the server; an exception fails the request (-32603).
using visibility_predicate = std::function<bool(const visibility_query&)>;

/// Hiding by OAuth scope, as a predicate: a tool is visible to a caller holding every
/// scope in its `required_scopes` (and to every caller when the transport authenticates
/// nobody); other entries are visible.
[[nodiscard]] bool visible_with_scopes(const visibility_query& q);

}  // namespace droid
