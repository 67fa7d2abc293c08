// SPDX-License-Identifier: BSL-1.0
/// @file
/// Extension identifiers, reserved `_meta` keys and the protocol's own method names.
#include <droid/domain/mcp/extension.hpp>

#include <stdexcept>

namespace droid {
namespace {

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_alnum(char c) noexcept { return is_alpha(c) || is_digit(c); }

/// A DNS-style label: a letter first, then letters, digits or hyphens, not ending in one.
bool is_label(std::string_view label) noexcept {
  if (label.empty() || !is_alpha(label.front()) || label.back() == '-') return false;
  for (const char c : label)
    if (!is_alnum(c) && c != '-') return false;
  return true;
}

}  // namespace

bool is_valid_extension_name(std::string_view name) noexcept {
  const std::size_t slash = name.find('/');
  if (slash == std::string_view::npos || name.size() > 256) return false;
  std::string_view prefix = name.substr(0, slash);
  const std::string_view rest = name.substr(slash + 1);
  if (prefix.empty()) return false;
  while (true) {
    const std::size_t dot = prefix.find('.');
    if (!is_label(prefix.substr(0, dot))) return false;
    if (dot == std::string_view::npos) break;
    prefix.remove_prefix(dot + 1);
  }
  if (rest.empty() || !is_alnum(rest.front()) || !is_alnum(rest.back())) return false;
  for (const char c : rest)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool is_reserved_meta_key(std::string_view key) noexcept {
  const std::size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return false;
  std::string_view prefix = key.substr(0, slash);
  while (!prefix.empty()) {
    const std::size_t dot = prefix.find('.');
    const std::string_view label = prefix.substr(0, dot);
    if (label == "modelcontextprotocol" || label == "mcp") return true;
    if (dot == std::string_view::npos) break;
    prefix.remove_prefix(dot + 1);
  }
  return false;
}

void check_author_meta(const boost::json::object& meta, std::string_view owner) {
  for (const auto& member : meta)
    if (is_reserved_meta_key(member.key()))
      throw std::invalid_argument("droid: " + std::string(owner) + " sets the _meta key \"" +
                                  std::string(member.key()) +
                                  "\", whose prefix MCP reserves for itself (a label modelcontextprotocol or mcp)");
}

bool is_protocol_method(std::string_view method) noexcept {
  static constexpr std::string_view names[] = {
      // requests
      "initialize", "ping", "server/discover", "subscriptions/listen", "tools/list", "tools/call",
      "resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
      "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
      "tasks/get", "tasks/cancel", "tasks/update", "tasks/result", "tasks/list", "sampling/createMessage",
      "elicitation/create", "roots/list",
      // notifications
      "notifications/initialized", "notifications/cancelled", "notifications/progress", "notifications/message",
      "notifications/resources/updated", "notifications/resources/list_changed",
      "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/roots/list_changed",
      "notifications/elicitation/complete", "notifications/tasks/status", "notifications/subscriptions/acknowledged",
  };
  for (const std::string_view n : names)
    if (n == method) return true;
  return false;
}

}  // namespace droid
