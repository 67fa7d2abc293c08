// SPDX-License-Identifier: BSL-1.0
/// @file
/// Sampling and roots as MCP JSON.
#include <droid/domain/mcp/sampling.hpp>

#include <boost/json/string.hpp>

namespace droid {

sampling_message sampling_message::user_text(std::string_view text) {
  return sampling_message{"user", boost::json::object{{"type", "text"}, {"text", text}}};
}

boost::json::object to_json(const sampling_request& r) {
  boost::json::array messages;
  for (const sampling_message& m : r.messages) messages.push_back(boost::json::object{{"role", m.role}, {"content", m.content}});
  boost::json::object o{{"messages", std::move(messages)}, {"maxTokens", r.max_tokens}};
  if (!r.system_prompt.empty()) o["systemPrompt"] = r.system_prompt;
  if (r.preferences) {
    boost::json::object p;
    if (!r.preferences->hints.empty()) {
      boost::json::array hints;
      for (const std::string& h : r.preferences->hints) hints.push_back(boost::json::object{{"name", h}});
      p["hints"] = std::move(hints);
    }
    if (r.preferences->cost_priority) p["costPriority"] = *r.preferences->cost_priority;
    if (r.preferences->speed_priority) p["speedPriority"] = *r.preferences->speed_priority;
    if (r.preferences->intelligence_priority) p["intelligencePriority"] = *r.preferences->intelligence_priority;
    o["modelPreferences"] = std::move(p);
  }
  if (!r.stop_sequences.empty()) {
    boost::json::array stops;
    for (const std::string& s : r.stop_sequences) stops.emplace_back(s);
    o["stopSequences"] = std::move(stops);
  }
  if (r.temperature) o["temperature"] = *r.temperature;
  if (!r.tools.empty()) o["tools"] = r.tools;
  if (!r.tool_choice.empty()) o["toolChoice"] = r.tool_choice;
  if (!r.metadata.empty()) o["metadata"] = r.metadata;
  return o;
}

namespace {
std::string string_member(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}
void append_text(const boost::json::value& block, std::string& out) {
  if (!block.is_object()) return;
  const boost::json::object& b = block.get_object();
  if (string_member(b, "type") == "text") out += string_member(b, "text");
}
}  // namespace

std::string sampling_result::text() const {
  std::string out;
  if (content.is_array()) {
    for (const boost::json::value& block : content.get_array()) append_text(block, out);
  } else {
    append_text(content, out);
  }
  return out;
}

bool from_json(const boost::json::value& v, sampling_result& out, std::string& error) {
  if (!v.is_object()) return error = "a sampling result must be an object", false;
  const boost::json::object& o = v.get_object();
  const boost::json::value* content = o.if_contains("content");
  if (!content || !(content->is_object() || content->is_array()))
    return error = "a sampling result needs content (a block or an array of blocks)", false;
  out.role = string_member(o, "role");
  out.content = *content;
  out.model = string_member(o, "model");
  out.stop_reason = string_member(o, "stopReason");
  return true;
}

bool from_json(const boost::json::value& v, std::vector<root>& out, std::string& error) {
  const boost::json::value* roots = v.is_object() ? v.get_object().if_contains("roots") : nullptr;
  if (!roots || !roots->is_array()) return error = "a roots/list result needs a roots array", false;
  out.clear();
  for (const boost::json::value& r : roots->get_array()) {
    if (!r.is_object() || string_member(r.get_object(), "uri").empty())
      return error = "every root needs a uri", false;
    out.push_back(root{string_member(r.get_object(), "uri"), string_member(r.get_object(), "name")});
  }
  return true;
}

}  // namespace droid
