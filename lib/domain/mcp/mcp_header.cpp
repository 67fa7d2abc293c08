// SPDX-License-Identifier: BSL-1.0
/// @file
/// Reading `x-mcp-header` parameters out of an input schema, and the SEP-2243 rules.
///
/// ## Why a list of subschema keywords and not "every object below"
/// The walk must look inside every place a JSON Schema can hold another schema, or an
/// annotation under, say, `anyOf` would be ignored instead of refused. It must not look
/// inside data: `default`, `const`, `enum` and `examples` hold instances, and an instance
/// may well have a member called `x-mcp-header`. Naming the keywords that hold schemas
/// (JSON Schema 2020-12, plus `definitions`, `dependencies` and array `items` of the
/// drafts before it) is the one way to tell the two apart.
#include <droid/domain/mcp/mcp_header.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

namespace droid {
namespace {

/// Keywords whose value is one schema (or, for `items` in older drafts, an array of them).
constexpr std::array<std::string_view, 12> single_schema_keywords{
    "additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems", "contains",
    "propertyNames",        "not",                   "if",    "then",            "else",             "contentSchema"};
/// Keywords whose value is an array of schemas.
constexpr std::array<std::string_view, 4> schema_array_keywords{"prefixItems", "allOf", "anyOf", "oneOf"};
/// Keywords whose value maps names to schemas (`properties` is handled on its own, since
/// it is the one that keeps a parameter reachable).
constexpr std::array<std::string_view, 5> schema_map_keywords{"patternProperties", "$defs", "definitions",
                                                              "dependentSchemas", "dependencies"};

template <std::size_t N>
bool is_one_of(std::string_view key, const std::array<std::string_view, N>& keys) noexcept {
  for (const std::string_view k : keys)
    if (k == key) return true;
  return false;
}

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

/// `name` as a JSON Pointer reference token (RFC 6901: `~` is `~0`, `/` is `~1`).
void append_pointer_token(std::string& pointer, std::string_view name) {
  pointer += '/';
  for (const char c : name) {
    if (c == '~')
      pointer += "~0";
    else if (c == '/')
      pointer += "~1";
    else
      pointer += c;
  }
}

std::string dotted(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& key : path) {
    if (!out.empty()) out += '.';
    out += key;
  }
  return out;
}

class walker {
 public:
  explicit walker(std::string_view tool) : tool_(tool) {}

  /// Visits the schema `v` found at JSON Pointer `pointer`. `reach` is the key path from
  /// the root when only `properties` led here, and null once anything else did.
  void schema(const boost::json::value& v, std::string& pointer, const std::vector<std::string>* reach) {
    // `true`, `false` and malformed subschemas hold no annotation.
    if (const boost::json::object* s = v.if_object()) schema(*s, pointer, reach);
  }

  void schema(const boost::json::object& s, std::string& pointer, const std::vector<std::string>* reach) {
    if (const boost::json::value* h = s.if_contains("x-mcp-header")) annotation(s, *h, pointer, reach);
    const std::size_t size = pointer.size();
    for (const auto& [key_text, value] : s) {
      const std::string_view key(key_text.data(), key_text.size());
      if (key == "properties") {
        const boost::json::object* props = value.if_object();
        if (!props) continue;
        for (const auto& [name_text, sub] : *props) {
          const std::string_view name(name_text.data(), name_text.size());
          pointer += "/properties";
          append_pointer_token(pointer, name);
          if (reach) {
            std::vector<std::string> child = *reach;
            child.emplace_back(name);
            schema(sub, pointer, &child);
          } else {
            schema(sub, pointer, nullptr);
          }
          pointer.resize(size);
        }
      } else if (is_one_of(key, schema_map_keywords)) {
        const boost::json::object* map = value.if_object();
        if (!map) continue;
        for (const auto& [name_text, sub] : *map) {
          append_pointer_token(pointer, key);
          append_pointer_token(pointer, std::string_view(name_text.data(), name_text.size()));
          schema(sub, pointer, nullptr);
          pointer.resize(size);
        }
      } else if (is_one_of(key, single_schema_keywords) || is_one_of(key, schema_array_keywords)) {
        if (const boost::json::array* list = value.if_array()) {
          for (std::size_t i = 0; i < list->size(); ++i) {
            append_pointer_token(pointer, key);
            append_pointer_token(pointer, std::to_string(i));
            schema((*list)[i], pointer, nullptr);
            pointer.resize(size);
          }
        } else {
          append_pointer_token(pointer, key);
          schema(value, pointer, nullptr);
          pointer.resize(size);
        }
      }
    }
  }

  std::vector<header_param> take() { return std::move(params_); }

 private:
  [[noreturn]] void refuse(const std::string& what) const {
    throw std::invalid_argument("droid: tool \"" + std::string(tool_) + "\": " + what);
  }

  void annotation(const boost::json::object& s, const boost::json::value& h, const std::string& pointer,
                  const std::vector<std::string>* reach) {
    // Appended, not `"literal" + std::string&&`: g++ 12 at -O3 reports a false
    // -Wrestrict inside libstdc++ for that form here.
    std::string where;
    if (reach && !reach->empty()) {
      where = "`";
      where += dotted(*reach);
      where += '`';
    } else {
      where = "inputSchema";
      if (!pointer.empty()) {
        where += '#';
        where += pointer;
      }
    }
    const boost::json::string* text = h.if_string();
    if (!text) refuse("the x-mcp-header of " + where + " must be a string, the header name to mirror the value into");
    const std::string header(text->data(), text->size());
    if (header.empty())
      refuse("the x-mcp-header of " + where +
             " is empty: give the name of the header to mirror it into, e.g. \"Region\"");
    if (!is_http_token(header))
      refuse("the x-mcp-header \"" + header + "\" of " + where +
             " is not an HTTP token: use only A-Z, a-z, 0-9 and !#$%&'*+-.^_`|~, because it becomes part of the "
             "header name Mcp-Param-" +
             header);
    if (!reach)
      refuse(
          "the x-mcp-header \"" + header + "\" at " + where +
          " cannot be reached from the root of inputSchema through `properties` alone; a header can only mirror a "
          "parameter with one fixed place in the arguments (not under items, anyOf, oneOf, allOf, not, if/then/else, "
          "additionalProperties or $defs)");
    if (reach->empty())
      refuse("the root of inputSchema carries x-mcp-header \"" + header +
             "\", but the root is the arguments object; put it on one of its properties");
    header_param p;
    p.header = header;
    p.path = *reach;
    p.type = type_of(s, header, where);
    const std::string key = lowered(header);
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (lowered(params_[i].header) == key)
        refuse("the x-mcp-header \"" + header + "\" of " + where + " repeats \"" + params_[i].header + "\" of `" +
               dotted(params_[i].path) + "`; header names are compared without regard to case, so each must be unique");
    params_.push_back(std::move(p));
  }

  /// The parameter's type; refuses anything but string, integer or boolean (alone, or
  /// with "null").
  header_param_type type_of(const boost::json::object& s, const std::string& header, const std::string& where) const {
    const std::string rule = where + " has x-mcp-header \"" + header +
                             "\", but only string, integer and boolean parameters can be mirrored into a header";
    const boost::json::value* type = s.if_contains("type");
    if (!type) refuse(rule + ", and it states no \"type\"");
    std::string_view named;
    if (const boost::json::string* one = type->if_string()) {
      named = std::string_view(one->data(), one->size());
    } else if (const boost::json::array* many = type->if_array()) {
      for (const boost::json::value& t : *many) {
        const boost::json::string* name = t.if_string();
        if (!name) refuse(rule + " (its \"type\" array holds a value that is not a string)");
        const std::string_view n(name->data(), name->size());
        if (n == "null") continue;
        if (!named.empty())
          refuse(rule + " (its \"type\" allows both \"" + std::string(named) + "\" and \"" + std::string(n) + "\")");
        named = n;
      }
    }
    if (named == "string") return header_param_type::string;
    if (named == "integer") return header_param_type::integer;
    if (named == "boolean") return header_param_type::boolean;
    if (named.empty()) refuse(rule + " (its \"type\" names no such type)");
    refuse(rule + " (its type is \"" + std::string(named) + "\")");
  }

  std::string_view tool_;
  std::vector<header_param> params_;
};

}  // namespace

bool is_http_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::vector<header_param> header_params_of(std::string_view tool, const boost::json::object& input_schema) {
  walker w(tool);
  std::string pointer;
  const std::vector<std::string> root;
  w.schema(input_schema, pointer, &root);
  return w.take();
}

}  // namespace droid
