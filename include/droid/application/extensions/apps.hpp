// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): a tool's result shown as an
/// interactive HTML view that the host renders in a sandboxed iframe.
///
/// Application layer, built on the generic extension mechanism alone. A server registers
/// each view once (`droid::apps::add_view`: a `ui://` resource of type
/// `text/html;profile=mcp-app`, with its `_meta.ui` security settings) and links a tool to
/// it through the tool's `_meta` (`droid::apps::tool_meta`). A host that renders apps
/// reads the view, shows the tool's result in it, and lets the view call the server's
/// tools; a host that does not shows the tool's text content, so every app tool keeps
/// answering with text as well.
///
///     droid::apps::add_view(server, {.uri = "ui://weather/view", .name = "weather", .html = page});
///     server.tool(droid::tool_info{.name = "weather", .description = "...",
///                                  .meta = droid::apps::tool_meta("ui://weather/view")}, handler);
///
/// See docs/apps.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/server.hpp>

namespace droid::apps {

/// The extension's identifier.
inline constexpr std::string_view extension_name = "io.modelcontextprotocol/ui";
/// The type of an app's HTML document, as its resource carries it.
inline constexpr std::string_view mime_type = "text/html;profile=mcp-app";

/// The origins a view may reach, which the host turns into its Content-Security-Policy.
/// Empty lists are the secure defaults: no connections, no outside scripts or images,
/// no nested frames, the view's own base URI.
struct content_policy {
  std::vector<std::string> connect_domains{};   ///< `connectDomains`: fetch, XHR, WebSocket
  std::vector<std::string> resource_domains{};  ///< `resourceDomains`: scripts, styles, images, fonts, media
  std::vector<std::string> frame_domains{};     ///< `frameDomains`: nested iframes
  std::vector<std::string> base_uri_domains{};  ///< `baseUriDomains`: the document's base URI
};

/// Browser features a view asks the host for (the iframe's `allow` attribute). A host may
/// refuse any of them; a view must work without.
struct permission_set {
  bool camera = false;           ///< `camera`
  bool microphone = false;       ///< `microphone`
  bool geolocation = false;      ///< `geolocation`
  bool clipboard_write = false;  ///< `clipboardWrite`
};

/// One view: an HTML document served as a `ui://` resource.
struct view {
  std::string uri{};          ///< must start with `ui://`
  std::string name{};         ///< the resource's name
  std::string description{};  ///< omitted when empty
  std::string html{};         ///< the whole HTML5 document
  content_policy csp{};       ///< `_meta.ui.csp`, omitted when every list is empty
  permission_set permissions{};  ///< `_meta.ui.permissions`, omitted when none is asked for
  /// `_meta.ui.domain`: a dedicated origin for the view, in the host's own format
  /// (hosts document it); omitted when empty.
  std::string domain{};
  /// `_meta.ui.prefersBorder`: whether the host draws a border and background around the
  /// view; none leaves it to the host (hosts differ, so saying it is recommended).
  std::optional<bool> prefers_border{};
};

/// Who may call a tool linked to a view.
enum class visibility : std::uint8_t {
  model_and_app,  ///< the agent and the view (the default)
  app_only,       ///< only the view: hosts keep it out of the agent's tool list
  model_only,     ///< only the agent: hosts refuse the view's calls to it
};

/// The `_meta` of a tool linked to view `resource_uri` (`{"ui":{"resourceUri":...}}`, with
/// `visibility` unless it is the default), for `tool_info::meta`. Errors:
/// `std::invalid_argument` for a URI that does not start with `ui://`.
[[nodiscard]] boost::json::object tool_meta(std::string_view resource_uri,
                                            visibility who = visibility::model_and_app);

/// Serves `v`: declares the extension, and registers the view as a resource of type
/// `text/html;profile=mcp-app` whose `_meta.ui` (CSP, permissions, domain, border) is on
/// its `resources/list` entry and on its `resources/read` contents. Errors:
/// `std::invalid_argument` for a URI that does not start with `ui://`, an empty name or
/// document, and what registering the resource throws (a URI taken).
void add_view(server& srv, view v);

/// True when the client renders apps: it declared the extension with
/// `text/html;profile=mcp-app` among its `mimeTypes` (in `initialize` for a 2025 session,
/// in the request's `_meta` in 2026-07-28). A tool may answer such a client differently,
/// but must answer every client with text.
[[nodiscard]] bool client_renders_apps(const peer_info& peer) noexcept;

}  // namespace droid::apps
