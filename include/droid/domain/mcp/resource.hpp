// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP resources: descriptors for `resources/list` and `resources/templates/list`, and
/// the contents `resources/read` returns.
///
/// Domain layer: plain values; the handlers that produce contents live in the
/// application layer (`server::resource`).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include <droid/domain/mcp/tool.hpp>

namespace droid {

/// Who may keep a cached result (MCP 2026-07-28 `cacheScope`).
enum class cache_scope : std::uint8_t {
  public_,   ///< the same for every caller: shared caches may serve it to anyone
  private_,  ///< per caller: a cache must not share it across authorization contexts
};

/// A freshness hint a 2026-07-28 client reads from a list or read result (`ttlMs`,
/// `cacheScope`). Why the server author sets it: only they know how often a list or a
/// resource changes; a client told nothing must refetch every time.
struct cache_hint {
  /// How long the client may consider the result fresh; 0 means "refetch each time".
  std::chrono::milliseconds ttl{0};
  cache_scope scope = cache_scope::public_;  ///< who may keep it
};

/// A concrete resource: what `resources/list` says about it.
struct resource_info {
  std::string uri{};  ///< what `resources/read` names
  std::string name{};  ///< a short name, required by MCP
  std::string title{};  ///< a display name; omitted when empty
  std::string description{};  ///< omitted when empty
  std::string mime_type{};  ///< `mimeType`; omitted when empty
  /// Size in bytes, when known (lets a client decide before reading).
  std::optional<std::int64_t> size{};
  /// MCP annotations (`audience`, `priority`, `lastModified`), verbatim.
  boost::json::object annotations{};
  std::vector<icon> icons{};  ///< `icons`, omitted when empty
  /// The cache hint of this resource's `resources/read` result (2026-07-28 clients);
  /// none: the server's `server_options::cache.reads`.
  std::optional<cache_hint> cache{};
  /// `_meta`, verbatim: what a client or an extension reads beside MCP's own fields (an
  /// MCP App's `ui` link, say). Keys with a reserved prefix are refused at registration
  /// (`is_reserved_meta_key`); omitted when empty, and for clients before 2025-06-18.
  boost::json::object meta{};
};

/// A family of resources named by an RFC 6570 template (levels 1 and 2).
struct resource_template_info {
  std::string uri_template{};  ///< `uriTemplate`, e.g. `file:///{+path}`
  std::string name{};  ///< a short name, required by MCP
  std::string title{};  ///< a display name; omitted when empty
  std::string description{};  ///< omitted when empty
  std::string mime_type{};  ///< `mimeType` of the resources it names; omitted when empty
  boost::json::object annotations{};  ///< MCP annotations, verbatim
  std::vector<icon> icons{};  ///< `icons`, omitted when empty
  /// The cache hint of a `resources/read` of a URI this template matches; none: the
  /// server's `server_options::cache.reads`.
  std::optional<cache_hint> cache{};
  /// `_meta`, verbatim: what a client or an extension reads beside MCP's own fields (an
  /// MCP App's `ui` link, say). Keys with a reserved prefix are refused at registration
  /// (`is_reserved_meta_key`); omitted when empty, and for clients before 2025-06-18.
  boost::json::object meta{};
};

/// One item of a `resources/read` result: text or a binary blob.
struct resource_contents {
  std::string uri{};  ///< the URI read
  std::string mime_type{};  ///< `mimeType`; omitted when empty
  std::optional<std::string> text{};  ///< the text, for text contents
  /// Base64 of the bytes (see `blob_of`).
  std::optional<std::string> blob{};
  /// `_meta` of this item, verbatim (an MCP App's `ui` settings, say); a reserved key
  /// fails the read. Omitted when empty, and for clients before 2025-06-18.
  boost::json::object meta{};

  /// Text contents.
  [[nodiscard]] static resource_contents text_of(std::string_view uri, std::string_view text,
                                                 std::string_view mime_type = "text/plain");
  /// Binary contents; `bytes` are raw and are base64-encoded here.
  [[nodiscard]] static resource_contents blob_of(std::string_view uri, std::string_view bytes,
                                                 std::string_view mime_type = "application/octet-stream");
};

/// The resource's `resources/list` entry.
[[nodiscard]] boost::json::object to_json(const resource_info& info);
/// The template's `resources/templates/list` entry.
[[nodiscard]] boost::json::object to_json(const resource_template_info& info);
/// One entry of a `ReadResourceResult`'s `contents`.
[[nodiscard]] boost::json::object to_json(const resource_contents& contents);

}  // namespace droid
