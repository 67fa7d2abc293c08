// SPDX-License-Identifier: BSL-1.0
/// @file
/// Content block factories and the `CallToolResult` serialiser.
#include <droid/domain/mcp/content.hpp>

#include <mutex>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/extension.hpp>

namespace droid {

content content::text(std::string_view text) { return content(text_only{}, text); }

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
  if (text_only_) {
    (void)json();
    text_only_ = false;
    text_ = std::string();
  }
  json_["annotations"] = std::move(annotations);
  return *this;
}

const boost::json::object& content::json() const noexcept {
  if (text_only_ && !built_.load(std::memory_order_acquire)) {
    // One lock for every block: first calls are rare (the engine serialises text blocks
    // without them), and a block-sized mutex would make content immovable.
    static std::mutex building;
    const std::lock_guard lock(building);
    if (!built_.load(std::memory_order_relaxed)) {
      json_ = boost::json::object{{"type", "text"}, {"text", text_}};
      built_.store(true, std::memory_order_release);
    }
  }
  return json_;
}

void content::append_json(std::string& out) const {
  if (text_only_) {
    out += R"({"type":"text","text":)";
    ir::append_json_string(out, text_);
    out.push_back('}');
    return;
  }
  ir::append_json(out, json_);
}

content::content(const content& other)
    : text_(other.text_), json_(other.text_only_ ? boost::json::object() : other.json_), text_only_(other.text_only_) {}

// Moving needs the source to itself (nothing else may be using it), so its object,
// built or not, comes along, and plain loads and stores suffice.
content::content(content&& other) noexcept
    : text_(std::move(other.text_)),
      json_(std::move(other.json_)),
      text_only_(other.text_only_),
      built_(other.built_.load(std::memory_order_relaxed)) {
  other.built_.store(false, std::memory_order_relaxed);
}

content& content::operator=(const content& other) {
  if (this != &other) *this = content(other);
  return *this;
}

content& content::operator=(content&& other) noexcept {
  if (this == &other) return *this;
  text_ = std::move(other.text_);
  // Every block's object uses the default storage, so this move cannot fall back to a
  // throwing copy.
  json_ = std::move(other.json_);
  text_only_ = other.text_only_;
  built_.store(other.built_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  other.built_.store(false, std::memory_order_relaxed);
  return *this;
}

namespace {

/// RFC 4648 base64 in `alphabet`, with `=` padding or without. One encoder for the
/// standard alphabet (content payloads) and the URL-safe one (sealed tokens).
std::string encode_base64(std::string_view bytes, const char* alphabet, bool pad) {
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
    if (rest == 2) out += alphabet[(n >> 6) & 63];
    if (pad) out.append(rest == 2 ? 1 : 2, '=');
  }
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  return encode_base64(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true);
}

std::string base64url_encode(std::string_view bytes) {
  return encode_base64(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false);
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
  std::string out;
  out.reserve(json_size_hint());
  append_json(out);
  return out;
}

// Written by hand around the blocks rather than as a `boost::json::object` holding copies
// of them: that deep copy was most of the cost of answering a small tools/call.
void tool_result::append_json(std::string& out) const { append_json(out, protocol_revision::v2026_07_28, {}); }

tool_result& tool_result::meta(boost::json::object value) {
  check_author_meta(value, "a tool result");
  meta_ = std::move(value);
  return *this;
}

void tool_result::append_json(std::string& out, protocol_revision revision, std::string_view leading_members) const {
  out += '{';
  // The author's keys, each as `"k":v,`, into an open `_meta` object.
  const auto own_meta = [&] {
    for (const auto& member : meta_) {
      ir::append_json_string(out, member.key());
      out += ':';
      ir::append_json(out, member.value());
      out += ',';
    }
    out.pop_back();
  };
  constexpr std::string_view meta_member = R"("_meta":{)";
  bool merged = false;
  if (!leading_members.empty()) {
    if (!meta_.empty() && leading_members.ends_with('}') && leading_members.find(meta_member) != std::string_view::npos) {
      out += leading_members.substr(0, leading_members.size() - 1);
      out += ',';
      own_meta();
      out += '}';
      merged = true;
    } else {
      out += leading_members;
    }
    out += ',';
  }
  if (!meta_.empty() && !merged) {
    out += meta_member;
    own_meta();
    out += "},";
  }
  out += R"("content":[)";
  bool first = true;
  for (const content& c : content_) {
    if (!first) out.push_back(',');
    first = false;
    c.append_json(out);
  }
  out.push_back(']');
  if (structured_ && has(revision, wire_feature::structured_content)) {
    out += R"(,"structuredContent":)";
    ir::append_json(out, *structured_);
  }
  if (is_error_) out += R"(,"isError":true)";
  out.push_back('}');
}

namespace {

/// Bytes of `v` as compact JSON, counting strings unescaped and numbers at their widest.
std::size_t json_size(const boost::json::value& v) noexcept;

std::size_t json_size(const boost::json::object& o) noexcept {
  std::size_t n = 2;
  for (const auto& member : o) n += member.key().size() + 4 + json_size(member.value());
  return n;
}

std::size_t json_size(const boost::json::value& v) noexcept {
  switch (v.kind()) {
    case boost::json::kind::string: return v.get_string().size() + 2;
    case boost::json::kind::object: return json_size(v.get_object());
    case boost::json::kind::array: {
      std::size_t n = 2;
      for (const boost::json::value& e : v.get_array()) n += json_size(e) + 1;
      return n;
    }
    case boost::json::kind::null:
    case boost::json::kind::bool_: return 5;
    default: return 24;
  }
}

}  // namespace

std::size_t content::json_size_hint() const noexcept {
  // `{"type":"text","text":` and `}` around the text.
  return text_only_ ? text_.size() + 25 : json_size(json_);
}

std::size_t tool_result::json_size_hint() const noexcept {
  std::size_t n = 32;  // the envelope: {"content":[...],"isError":true}
  for (const content& c : content_) n += c.json_size_hint() + 1;
  if (structured_) n += 22 + json_size(*structured_);
  if (!meta_.empty()) n += 10 + json_size(meta_);
  return n;
}

}  // namespace droid
