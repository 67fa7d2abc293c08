// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::peer_info`: what the client told us about itself, read per request.
///
/// Application layer. In the 2025 protocol era this comes once, from `initialize`; in the
/// 2026-07-28 era each request carries it in `_meta`. Handlers read it through this one
/// type either way, so a tool never asks which era it is serving
/// (docs/architecture.md#two-protocol-eras).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include <droid/application/server/request_origin.hpp>

#include <droid/domain/mcp/revision.hpp>

namespace droid {

/// MCP log levels (RFC 5424 severities), least severe first.
enum class log_level : std::uint8_t { debug, info, notice, warning, error, critical, alert, emergency };

/// The level's MCP name ("debug", ..., "emergency").
[[nodiscard]] std::string_view to_string(log_level level) noexcept;
/// Parses an MCP level name; false for anything else.
[[nodiscard]] bool parse_log_level(std::string_view name, log_level& out) noexcept;

/// The client's protocol version, identity and declared capabilities.
///
/// Filled from `initialize` for a 2025 session (and kept for the session), or from one
/// request's `_meta` for a 2026-07-28 request (and gone with it).
struct peer_info {
  /// The negotiated (2025) or requested (2026) protocol version, e.g. "2025-11-25".
  std::string protocol_version{};
  /// `protocol_version` as a revision: what shapes the output this client is sent.
  protocol_revision revision = protocol_revision::v2025_11_25;
  /// `clientInfo` as sent (`name`, `version`, maybe `title`).
  boost::json::object client_info{};
  /// `capabilities` as sent (`sampling`, `elicitation`, `roots`, ...).
  boost::json::object capabilities{};
  /// The least severe level the client wants log messages for (`logging/setLevel` in a
  /// session, `io.modelcontextprotocol/logLevel` in a 2026 request's `_meta`); none until
  /// it asks, and then nothing is sent.
  std::optional<log_level> min_log_level{};
  /// Who the transport authenticated the request as (`principal::key()`; empty: no
  /// authentication). What the request creates is bound to it: a 2026-07-28
  /// `requestState` and a task, so another principal cannot present them.
  std::string principal{};
  /// Where a request with a view of its own (2026-07-28, stateless HTTP) came from; null
  /// for a 2025 session's view, whose requests each bring theirs (`session::receive`).
  std::shared_ptr<const request_origin> origin{};

  /// True when the client declared the top-level capability `name`.
  [[nodiscard]] bool has_capability(std::string_view name) const noexcept {
    return capabilities.contains(name);
  }
  /// True when the client declared the extension `name` (`capabilities.extensions`, as
  /// 2026-07-28 negotiates extensions such as `io.modelcontextprotocol/tasks`).
  [[nodiscard]] bool has_extension(std::string_view name) const noexcept {
    const auto* ext = capabilities.if_contains("extensions");
    return ext && ext->is_object() && ext->as_object().contains(name);
  }
  /// The settings the client declared for extension `name` (`capabilities.extensions`,
  /// from `initialize` in a 2025 session or the request's `_meta` in 2026-07-28), or
  /// null when it did not declare it. Why settings and not a yes or no: an extension may
  /// let a client say what it accepts (MCP Apps' `mimeTypes`, say).
  [[nodiscard]] const boost::json::object* extension(std::string_view name) const noexcept {
    const auto* ext = capabilities.if_contains("extensions");
    if (!ext || !ext->is_object()) return nullptr;
    const auto* settings = ext->as_object().if_contains(name);
    return settings && settings->is_object() ? &settings->as_object() : nullptr;
  }
  /// True when this is a stateless (2026-07-28) request rather than a 2025 session.
  [[nodiscard]] bool is_modern() const noexcept { return droid::is_modern(revision); }
};

}  // namespace droid
