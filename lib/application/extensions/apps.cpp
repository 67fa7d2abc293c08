// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP Apps (apps.hpp): views as `ui://` resources with their `_meta.ui`, the tool link,
/// and what the client says it renders.
#include <droid/application/extensions/apps.hpp>

#include <memory>
#include <stdexcept>
#include <utility>

#include <boost/json/array.hpp>

namespace droid::apps {
namespace {

constexpr std::string_view scheme = "ui://";

boost::json::array strings(const std::vector<std::string>& list) {
  boost::json::array a;
  for (const std::string& s : list) a.emplace_back(s);
  return a;
}

/// The view's `_meta.ui` object, with only what the author set.
boost::json::object ui_meta(const view& v) {
  boost::json::object ui;
  boost::json::object csp;
  const auto put = [&](std::string_view key, const std::vector<std::string>& list) {
    if (!list.empty()) csp[key] = strings(list);
  };
  put("connectDomains", v.csp.connect_domains);
  put("resourceDomains", v.csp.resource_domains);
  put("frameDomains", v.csp.frame_domains);
  put("baseUriDomains", v.csp.base_uri_domains);
  if (!csp.empty()) ui["csp"] = std::move(csp);
  boost::json::object asked;
  if (v.permissions.camera) asked["camera"] = boost::json::object{};
  if (v.permissions.microphone) asked["microphone"] = boost::json::object{};
  if (v.permissions.geolocation) asked["geolocation"] = boost::json::object{};
  if (v.permissions.clipboard_write) asked["clipboardWrite"] = boost::json::object{};
  if (!asked.empty()) ui["permissions"] = std::move(asked);
  if (!v.domain.empty()) ui["domain"] = v.domain;
  if (v.prefers_border) ui["prefersBorder"] = *v.prefers_border;
  return ui;
}

}  // namespace

boost::json::object tool_meta(std::string_view resource_uri, visibility who) {
  if (!resource_uri.starts_with(scheme))
    throw std::invalid_argument("droid: an app tool's view must be a ui:// resource, not \"" +
                                std::string(resource_uri) + "\"");
  boost::json::object ui{{"resourceUri", resource_uri}};
  switch (who) {
    case visibility::app_only: ui["visibility"] = boost::json::array{"app"}; break;
    case visibility::model_only: ui["visibility"] = boost::json::array{"model"}; break;
    case visibility::model_and_app: break;
  }
  return boost::json::object{{"ui", std::move(ui)}};
}

void add_view(server& srv, view v) {
  if (!v.uri.starts_with(scheme) || v.uri.size() == scheme.size())
    throw std::invalid_argument("droid: an app's view must be a ui:// resource, not \"" + v.uri + "\"");
  if (v.name.empty()) throw std::invalid_argument("droid: the view " + v.uri + " needs a name");
  if (v.html.empty()) throw std::invalid_argument("droid: the view " + v.uri + " has no HTML document");
  boost::json::object meta;
  if (boost::json::object ui = ui_meta(v); !ui.empty()) meta["ui"] = std::move(ui);
  // The extension has no server settings; declaring it tells a host the server has views.
  srv.extension(std::string(extension_name));
  auto html = std::make_shared<const std::string>(std::move(v.html));
  const std::string uri = v.uri;
  srv.resource(resource_info{.uri = std::move(v.uri),
                             .name = std::move(v.name),
                             .description = std::move(v.description),
                             .mime_type = std::string(mime_type),
                             .meta = meta},
               [html, uri, meta](tool_context&) -> task<resource_contents> {
                 resource_contents c = resource_contents::text_of(uri, *html, mime_type);
                 c.meta = meta;
                 co_return c;
               });
}

bool client_renders_apps(const peer_info& peer) noexcept {
  const boost::json::object* settings = peer.extension(extension_name);
  if (!settings) return false;
  const auto* types = settings->if_contains("mimeTypes");
  if (!types || !types->is_array()) return false;
  for (const boost::json::value& t : types->as_array())
    if (t.is_string() && t.as_string() == mime_type) return true;
  return false;
}

}  // namespace droid::apps
