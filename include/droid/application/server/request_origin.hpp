// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::request_origin`: what the transport knows about where one request came from,
/// for the tool that serves it.
///
/// Application layer, free of I/O. HTTP makes one per request that has something to say
/// (an authenticated principal, the peer's address, the headers the server chose to
/// pass on); stdio makes none. A tool reads it through `tool_context::origin()` and
/// `tool_context::principal()`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <droid/application/server/principal.hpp>

namespace droid {

/// Where a request came from.
///
/// Why per request and not per session: in a 2025 session every POST carries its own
/// token (refreshed, with other scopes) and may come from another address; a tool must
/// see the request it serves, not the one that opened the session.
/// Why bounded: only headers the server named (`http::options::forwarded_headers`)
/// are copied, each as sent, so a client cannot make every request carry kilobytes of
/// headers into every tool's context.
struct request_origin {
  /// The authenticated caller; null when the transport authenticates nobody.
  std::shared_ptr<const droid::principal> principal{};
  /// The client's IP address as text ("127.0.0.1", "::1"): the peer's, or behind a proxy
  /// named in `http::options::trusted_proxies`, the address it forwarded. Empty when
  /// unknown (stdio).
  std::string remote_address{};
  /// Selected request headers, names in lower case, in the order they came.
  std::vector<std::pair<std::string, std::string>> headers{};

  /// The first header `name` (lower case), or null.
  [[nodiscard]] const std::string* header(std::string_view name) const noexcept {
    for (const auto& [k, v] : headers)
      if (k == name) return &v;
    return nullptr;
  }
};

}  // namespace droid
