// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::peer_info`: what the client told us about itself, read per request.
///
/// Application layer. In the 2025 protocol era this comes once, from `initialize`; in the
/// 2026-07-28 era each request carries it in `_meta`. Handlers read it through this one
/// type either way, so a tool never asks which era it is serving (DESIGN.md).
#pragma once

#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace droid {

/// The client's protocol version, identity and declared capabilities.
struct peer_info {
  /// The negotiated protocol version, e.g. "2025-11-25".
  std::string protocol_version{};
  /// `clientInfo` as sent (`name`, `version`, maybe `title`).
  boost::json::object client_info{};
  /// `capabilities` as sent (`sampling`, `elicitation`, `roots`, ...).
  boost::json::object capabilities{};

  /// True when the client declared the top-level capability `name`.
  [[nodiscard]] bool has_capability(std::string_view name) const noexcept {
    return capabilities.contains(name);
  }
};

}  // namespace droid
