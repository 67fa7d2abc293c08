// SPDX-License-Identifier: BSL-1.0
/// @file
/// Resource descriptors and contents as MCP JSON.
#include <droid/domain/mcp/resource.hpp>

#include <boost/json/array.hpp>

#include <droid/domain/mcp/content.hpp>

namespace droid {

resource_contents resource_contents::text_of(std::string_view uri, std::string_view text, std::string_view mime_type) {
  return resource_contents{std::string(uri), std::string(mime_type), std::string(text), std::nullopt};
}

resource_contents resource_contents::blob_of(std::string_view uri, std::string_view bytes, std::string_view mime_type) {
  return resource_contents{std::string(uri), std::string(mime_type), std::nullopt, base64_encode(bytes)};
}

namespace {
template <class Info>
void common(boost::json::object& o, const Info& info) {
  o["name"] = info.name;
  if (!info.title.empty()) o["title"] = info.title;
  if (!info.description.empty()) o["description"] = info.description;
  if (!info.mime_type.empty()) o["mimeType"] = info.mime_type;
  if (!info.annotations.empty()) o["annotations"] = info.annotations;
  if (!info.icons.empty()) o["icons"] = to_json(info.icons);
  if (!info.meta.empty()) o["_meta"] = info.meta;
}
}  // namespace

boost::json::object to_json(const resource_info& info) {
  boost::json::object o{{"uri", info.uri}};
  common(o, info);
  if (info.size) o["size"] = *info.size;
  return o;
}

boost::json::object to_json(const resource_template_info& info) {
  boost::json::object o{{"uriTemplate", info.uri_template}};
  common(o, info);
  return o;
}

boost::json::object to_json(const resource_contents& c) {
  boost::json::object o{{"uri", c.uri}};
  if (!c.mime_type.empty()) o["mimeType"] = c.mime_type;
  if (c.text) o["text"] = *c.text;
  if (c.blob) o["blob"] = *c.blob;
  if (!c.meta.empty()) o["_meta"] = c.meta;
  return o;
}

}  // namespace droid
