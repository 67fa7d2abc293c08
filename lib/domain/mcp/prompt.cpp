// SPDX-License-Identifier: BSL-1.0
/// @file
/// Prompts as MCP JSON.
#include <droid/domain/mcp/prompt.hpp>

#include <boost/json/array.hpp>

namespace droid {

boost::json::object to_json(const prompt_info& info) {
  boost::json::object o{{"name", info.name}};
  if (!info.title.empty()) o["title"] = info.title;
  o["description"] = info.description;
  if (!info.arguments.empty()) {
    boost::json::array args;
    for (const prompt_argument& a : info.arguments) {
      boost::json::object arg{{"name", a.name}};
      if (!a.title.empty()) arg["title"] = a.title;
      if (!a.description.empty()) arg["description"] = a.description;
      arg["required"] = a.required;
      args.push_back(std::move(arg));
    }
    o["arguments"] = std::move(args);
  }
  if (!info.icons.empty()) o["icons"] = to_json(info.icons);
  if (!info.meta.empty()) o["_meta"] = info.meta;
  return o;
}

boost::json::object to_json(const prompt_result& result) {
  boost::json::object o;
  // First: a 2026 result's own `_meta` is merged with the server's where it leads.
  if (!result.meta.empty()) o["_meta"] = result.meta;
  if (!result.description.empty()) o["description"] = result.description;
  boost::json::array messages;
  for (const prompt_message& m : result.messages)
    messages.push_back(boost::json::object{{"role", m.role}, {"content", m.block.json()}});
  o["messages"] = std::move(messages);
  return o;
}

}  // namespace droid
