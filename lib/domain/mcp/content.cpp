// SPDX-License-Identifier: BSL-1.0
/// @file
/// Content block factories and the `CallToolResult` serialiser.
#include <droid/domain/mcp/content.hpp>

#include <boost/json/array.hpp>

#include <droid/domain/ir/codec.hpp>

namespace droid {

content content::text(std::string_view text) {
  return content({{"type", "text"}, {"text", text}});
}

content content::image(std::string_view base64_data, std::string_view mime_type) {
  return content({{"type", "image"}, {"data", base64_data}, {"mimeType", mime_type}});
}

content content::audio(std::string_view base64_data, std::string_view mime_type) {
  return content({{"type", "audio"}, {"data", base64_data}, {"mimeType", mime_type}});
}

content content::resource_link(std::string_view uri, std::string_view name, std::string_view description,
                               std::string_view mime_type) {
  boost::json::object o{{"type", "resource_link"}, {"uri", uri}, {"name", name}};
  if (!description.empty()) o["description"] = description;
  if (!mime_type.empty()) o["mimeType"] = mime_type;
  return content(std::move(o));
}

content content::embedded_text(std::string_view uri, std::string_view text, std::string_view mime_type) {
  boost::json::object r{{"uri", uri}, {"text", text}};
  if (!mime_type.empty()) r["mimeType"] = mime_type;
  return content({{"type", "resource"}, {"resource", std::move(r)}});
}

content content::embedded_blob(std::string_view uri, std::string_view base64_blob, std::string_view mime_type) {
  boost::json::object r{{"uri", uri}, {"blob", base64_blob}};
  if (!mime_type.empty()) r["mimeType"] = mime_type;
  return content({{"type", "resource"}, {"resource", std::move(r)}});
}

content& content::annotate(boost::json::object annotations) {
  json_["annotations"] = std::move(annotations);
  return *this;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    out += alphabet[n & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += rest == 2 ? alphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

tool_result tool_result::text(std::string_view text) {
  tool_result r;
  r.add(content::text(text));
  return r;
}

tool_result tool_result::error(std::string_view message) {
  tool_result r = text(message);
  r.is_error_ = true;
  return r;
}

tool_result& tool_result::add(content block) {
  content_.push_back(std::move(block));
  return *this;
}

tool_result& tool_result::structured(boost::json::object value) {
  structured_ = std::move(value);
  return *this;
}

tool_result& tool_result::set_error(bool is_error) noexcept {
  is_error_ = is_error;
  return *this;
}

std::string tool_result::to_json() const {
  boost::json::object o;
  boost::json::array blocks;
  blocks.reserve(content_.size());
  for (const content& c : content_) blocks.push_back(c.json());
  o["content"] = std::move(blocks);
  if (structured_) o["structuredContent"] = *structured_;
  if (is_error_) o["isError"] = true;
  return ir::to_json_text(o);
}

}  // namespace droid
