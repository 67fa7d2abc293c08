// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::peer_info`: what the client told us about itself, read per request.
///
/// Application layer. In the 2025 protocol era this comes once, from `initialize`; in the
/// 2026-07-28 era each request carries it in `_meta`. Handlers read it through this one
/// type either way, so a tool never asks which era it is serving (DESIGN.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace droid {

/// MCP log levels (RFC 5424 severities), least severe first.
enum class log_level : std::uint8_t { debug, info, notice, warning, error, critical, alert, emergency };

/// The level's MCP name ("debug", ..., "emergency").
[[nodiscard]] std::string_view to_string(log_level level) noexcept;
/// Parses an MCP level name; false for anything else.
[[nodiscard]] bool parse_log_level(std::string_view name, log_level& out) noexcept;

/// The client's protocol version, identity and declared capabilities.
struct peer_info {
  /// The negotiated protocol version, e.g. "2025-11-25".
  std::string protocol_version{};
  /// `clientInfo` as sent (`name`, `version`, maybe `title`).
  boost::json::object client_info{};
  /// `capabilities` as sent (`sampling`, `elicitation`, `roots`, ...).
  boost::json::object capabilities{};
  /// The least severe level the client wants log messages for (`logging/setLevel`);
  /// none until it asks, and then nothing is sent.
  std::optional<log_level> min_log_level{};

  /// True when the client declared the top-level capability `name`.
  [[nodiscard]] bool has_capability(std::string_view name) const noexcept {
    return capabilities.contains(name);
  }
};

}  // namespace droid
