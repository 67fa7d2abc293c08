// SPDX-License-Identifier: BSL-1.0
/// @file
/// Tool descriptors as `tools/list` entries, and the tool name rule.
#include <droid/domain/mcp/tool.hpp>

#include <boost/json/array.hpp>

namespace droid {

bool is_valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 128) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

boost::json::array to_json(const std::vector<icon>& icons) {
  boost::json::array a;
  for (const icon& i : icons) {
    boost::json::object o{{"src", i.src}};
    if (!i.mime_type.empty()) o["mimeType"] = i.mime_type;
    if (!i.sizes.empty()) {
      boost::json::array sizes;
      for (const std::string& s : i.sizes) sizes.emplace_back(s);
      o["sizes"] = std::move(sizes);
    }
    if (!i.theme.empty()) o["theme"] = i.theme;
    a.push_back(std::move(o));
  }
  return a;
}

boost::json::object to_json(const tool_info& info) {
  boost::json::object o{{"name", info.name}};
  if (!info.title.empty()) o["title"] = info.title;
  o["description"] = info.description;
  o["inputSchema"] = info.input_schema ? *info.input_schema : boost::json::object{{"type", "object"}};
  if (info.output_schema) o["outputSchema"] = *info.output_schema;
  const tool_annotations& a = info.annotations;
  if (a.read_only_hint || a.destructive_hint || a.idempotent_hint || a.open_world_hint || !info.title.empty()) {
    boost::json::object ann;
    if (!info.title.empty()) ann["title"] = info.title;
    if (a.read_only_hint) ann["readOnlyHint"] = *a.read_only_hint;
    if (a.destructive_hint) ann["destructiveHint"] = *a.destructive_hint;
    if (a.idempotent_hint) ann["idempotentHint"] = *a.idempotent_hint;
    if (a.open_world_hint) ann["openWorldHint"] = *a.open_world_hint;
    o["annotations"] = std::move(ann);
  }
  if (!info.icons.empty()) o["icons"] = to_json(info.icons);
  if (info.tasks != task_support::forbidden)
    o["execution"] = boost::json::object{{"taskSupport", to_string(info.tasks)}};
  if (!info.meta.empty()) o["_meta"] = info.meta;
  return o;
}

std::string_view to_string(task_support s) noexcept {
  switch (s) {
    case task_support::optional: return "optional";
    case task_support::required: return "required";
    case task_support::forbidden: break;
  }
  return "forbidden";
}

}  // namespace droid
