// SPDX-License-Identifier: BSL-1.0
/// @file
/// The naming rules extensions live by: extension identifiers, `_meta` keys an author may
/// set, and the method names MCP itself owns.
///
/// Domain layer. MCP grows through extensions (SEP-2133): a server declares one by an
/// identifier such as `io.modelcontextprotocol/ui`, and an author may attach `_meta` to
/// what the server lists and returns. Both share a namespace with the protocol itself,
/// so the rules that keep an author's names from colliding with MCP's live here, once.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace droid {

/// True when `name` is an extension identifier: a vendor prefix of dot-separated labels
/// (letters, digits and hyphens; each starting with a letter and not ending with a
/// hyphen), a slash, and a name of letters, digits, hyphens, underscores and dots that
/// starts and ends with a letter or digit (`io.modelcontextprotocol/ui`, `com.example/search`).
[[nodiscard]] bool is_valid_extension_name(std::string_view name) noexcept;

/// True when `key` is a `_meta` key MCP reserves for itself: its prefix (the part before
/// the last `/`) has a label `modelcontextprotocol` or `mcp`, as in
/// `io.modelcontextprotocol/serverInfo` or `dev.mcp/x`. Why authors may not set them: the
/// framework writes some of these keys itself (a 2026 result's server identity, a task's
/// link), and a client trusts them to mean what MCP says.
[[nodiscard]] bool is_reserved_meta_key(std::string_view key) noexcept;

/// Throws `std::invalid_argument` naming `owner` (say `tool "search"`) when `meta` has a
/// reserved key (see `is_reserved_meta_key`).
void check_author_meta(const boost::json::object& meta, std::string_view owner);

/// True when MCP defines `method` itself (as a request or a notification, in either
/// direction, in any revision this server speaks): an author's custom method may not take
/// such a name, or it would shadow the protocol's or be shadowed by it.
[[nodiscard]] bool is_protocol_method(std::string_view method) noexcept;

}  // namespace droid
