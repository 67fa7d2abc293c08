// SPDX-License-Identifier: BSL-1.0
/// @file
/// Reading a 2026-07-28 request's `_meta`, in the order the checks must happen.
///
/// ## Why this order
/// A malformed request (no `_meta`, no version) is refused before its version is judged,
/// because there is nothing to judge; a header that disagrees with the body is refused
/// before the version is, because which of the two to believe is the question (the
/// official suite sends header 2026-07-28 with `_meta` "v999.0.0" and expects -32020, and
/// both "v999.0.0" and expects -32022); the method is judged only for a version we
/// speak, and a tool's needs only for a method we serve.
#include <droid/application/server/modern_request.hpp>

#include <memory>
#include <optional>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/revision.hpp>

#include "application/engine/dispatcher.hpp"
#include "application/catalog/server_core.hpp"
#include "application/tasks/task_engine.hpp"

namespace droid {
namespace {

constexpr std::string_view version_key = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view capabilities_key = "io.modelcontextprotocol/clientCapabilities";
constexpr std::string_view log_level_key = "io.modelcontextprotocol/logLevel";

request_refusal invalid(std::string message) {
  return request_refusal{ir::errc::invalid_params, std::move(message), {}, 400};
}

}  // namespace

bool is_modern_only(std::string_view method) noexcept {
  return method == "server/discover" || method == "subscriptions/listen";
}

bool names_modern_version(const ir::json_node& params) noexcept {
  ir::json_node meta, version;
  return params.find("_meta", meta) && meta.find(version_key, version);
}

bool may_name_version(ir::raw_json params) noexcept {
  return params.kind == ir::json_kind::object && params.text.find(version_key) != std::string_view::npos;
}

bool may_name_version(const ir::message& msg) noexcept {
  return msg.params_kind() == ir::json_kind::object && msg.text().find(version_key) != std::string_view::npos;
}

namespace {

/// The part of the era rule that needs no params: nothing when only they can tell.
std::optional<bool> era_without_params(const ir::message& msg, const std::string_view* header_version) {
  if (!msg.is_request()) return false;
  if (header_version && is_modern_version(*header_version) && msg.method() != "initialize") return true;
  if (is_modern_only(msg.method())) return true;
  return std::nullopt;
}

}  // namespace

bool is_modern_request(const ir::message& msg, const std::string_view* header_version,
                       const ir::json_node* params) noexcept {
  if (const std::optional<bool> settled = era_without_params(msg, header_version)) return *settled;
  return params && names_modern_version(*params);
}

bool is_modern_request(const ir::message& msg, const std::string_view* header_version) {
  if (const std::optional<bool> settled = era_without_params(msg, header_version)) return *settled;
  if (!may_name_version(msg)) return false;
  // The key's text is there; whether it is really `_meta`'s (and not, say, inside a tool
  // argument) takes the params' tree (the decoder's, when it is still there).
  bool found = false;
  (void)ir::visit_params(msg, [&](const ir::json_node& p) { found = names_modern_version(p); });
  return found;
}

request_refusal unsupported_version(std::string_view requested) {
  boost::json::array supported;
  for (const std::string_view v : modern_versions) supported.emplace_back(v);
  for (const std::string_view v : legacy_versions) supported.emplace_back(v);
  std::string data = R"({"supported":)";
  ir::append_json(data, boost::json::value(std::move(supported)));
  data += R"(,"requested":)";
  ir::append_json_string(data, requested);
  data += '}';
  return request_refusal{ir::errc::unsupported_protocol_version,
                         "Unsupported protocol version: " + std::string(requested) +
                             " (this server speaks 2026-07-28 per request, and 2025-11-25 through 2024-11-05 "
                             "after initialize)",
                         std::move(data), 400};
}

std::optional<request_refusal> admit_modern(const server& srv, const ir::message& msg,
                                            std::optional<std::string_view> header_version, peer_info& peer) {
  if (msg.params_kind() != ir::json_kind::object)
    return admit_modern(srv, msg.method(), nullptr, header_version, peer);
  std::optional<request_refusal> refused;
  (void)ir::visit_params(msg, [&](const ir::json_node& p) {
    refused = admit_modern(srv, msg.method(), &p, header_version, peer);
  });
  return refused;
}

namespace {

/// What both `admit_modern`s over parsed params do. `known`: the caller's lookup of the
/// tool `params.name` names (a null pointer: no such tool), or nothing when the caller
/// made none (then it is looked up here).
std::optional<request_refusal> admit_parsed(const server& srv, std::string_view method, const ir::json_node* params,
                                            std::optional<std::string_view> header_version, peer_info& peer,
                                            std::optional<const detail::tool_entry*> known);

}  // namespace

std::optional<request_refusal> admit_modern(const server& srv, std::string_view method, const ir::json_node* params,
                                            std::optional<std::string_view> header_version, peer_info& peer) {
  return admit_parsed(srv, method, params, header_version, peer, std::nullopt);
}

std::optional<request_refusal> admit_modern(const server& srv, std::string_view method, const ir::json_node* params,
                                            std::optional<std::string_view> header_version, peer_info& peer,
                                            const detail::tool_entry* tool) {
  return admit_parsed(srv, method, params, header_version, peer, tool);
}

namespace {

std::optional<request_refusal> admit_parsed(const server& srv, std::string_view method, const ir::json_node* params,
                                            std::optional<std::string_view> header_version, peer_info& peer,
                                            std::optional<const detail::tool_entry*> known) {
  if (!params || params->kind() != ir::json_node::type::object)
    return invalid("Invalid params: a 2026-07-28 request carries params._meta with " + std::string(version_key) +
                   " and " + std::string(capabilities_key));

  const ir::json_node& p = *params;
  ir::json_node meta;
  if (!p.find("_meta", meta) || meta.kind() != ir::json_node::type::object)
    return invalid("Invalid params: params._meta is required in MCP 2026-07-28 (with " + std::string(version_key) +
                   " and " + std::string(capabilities_key) + ")");
  // One walk over _meta's members rather than a search per key: these keys are long and
  // share their first 24 characters, and a request pays for this every time.
  std::optional<ir::json_node> v, caps, info, level;
  meta.for_each_member([&](std::string_view key, const ir::json_node& value) {
    constexpr std::string_view prefix = "io.modelcontextprotocol/";
    if (!key.starts_with(prefix)) return;
    key.remove_prefix(prefix.size());
    if (key == "protocolVersion") v = value;
    else if (key == "clientCapabilities") caps = value;
    else if (key == "clientInfo") info = value;
    else if (key == "logLevel") level = value;
  });
  if (!v || v->kind() != ir::json_node::type::string)
    return invalid("Invalid params: _meta." + std::string(version_key) + " must be a string");
  std::string version(v->string());
  if (!caps || caps->kind() != ir::json_node::type::object)
    return invalid("Invalid params: _meta." + std::string(capabilities_key) + " must be an object");
  std::string error;
  // `{}` (a client that declares nothing) is what peer_info holds already.
  if (caps->size() > 0) {
    boost::json::value decoded;
    if (decode(*caps, decoded, error)) peer.capabilities = std::move(decoded.as_object());
  }
  // clientInfo is a SHOULD: absent or malformed, the request is still served.
  if (info && info->kind() == ir::json_node::type::object) {
    boost::json::value decoded;
    if (decode(*info, decoded, error)) peer.client_info = std::move(decoded.as_object());
  }
  if (level) {
    log_level parsed{};
    if (level->kind() != ir::json_node::type::string || !parse_log_level(level->string(), parsed))
      return invalid("Invalid params: _meta." + std::string(log_level_key) +
                     " must be one of debug, info, notice, warning, error, critical, alert, emergency");
    peer.min_log_level = parsed;
  }
  // The tool a tools/call names: the caller's lookup, or one here.
  std::shared_ptr<const detail::tool_entry> looked_up;
  const detail::tool_entry* tool = nullptr;
  if (method == "tools/call") {
    if (known) {
      tool = *known;
    } else if (ir::json_node name; p.find("name", name) && name.kind() == ir::json_node::type::string) {
      looked_up = detail::core(srv).find_tool(name.string());
      tool = looked_up.get();
    }
  }

  if (header_version && *header_version != version)
    return request_refusal{ir::errc::header_mismatch,
                           "Header mismatch: the MCP-Protocol-Version header '" + std::string(*header_version) +
                               "' does not match _meta " + std::string(version_key) + " '" + version + "'",
                           {}, 400};
  const std::optional<protocol_revision> revision = parse_revision(version);
  if (!revision || !is_modern(*revision)) return unsupported_version(version);
  peer.protocol_version = std::move(version);
  peer.revision = *revision;

  if (!detail::dispatcher::serves(srv, method, *revision))
    return request_refusal{ir::errc::method_not_found,
                           "Method not found: " + std::string(method) +
                               (method == "initialize" ? " (MCP 2026-07-28 has no initialize: call "
                                                               "server/discover, or send each request with its _meta)"
                                                             : std::string()),
                           {}, 404};

  // The task methods, and a tool that runs only as a task, need the tasks extension.
  const auto tasks_refusal = [&](std::string what) {
    std::string data = detail::missing_extension_data(tasks_extension);
    return request_refusal{ir::errc::missing_client_capability,
                           "Missing required client capability: " + what + " needs the " +
                               std::string(tasks_extension) + " extension, which this request's _meta." +
                               std::string(capabilities_key) + " does not declare",
                           std::move(data), 400};
  };
  if (detail::dispatcher::is_task_method(method) && !peer.has_extension(tasks_extension))
    return tasks_refusal(std::string(method));

  // A custom method of an extension the request did not declare (a built-in method's
  // name is told apart first, so tools/call pays one comparison for this).
  if (auto custom = detail::dispatcher::custom_method(srv, method);
      custom && !custom->options.extension.empty() && !peer.has_extension(custom->options.extension)) {
    const std::string& ext = custom->options.extension;
    std::string data = detail::missing_extension_data(ext);
    return request_refusal{ir::errc::missing_client_capability,
                           "Missing required client capability: " + std::string(method) + " needs the " + ext +
                               " extension, which this request's _meta." + std::string(capabilities_key) +
                               " does not declare",
                           std::move(data), 400};
  }

  if (tool) {
    const std::string& tool_name = tool->info.name;
    if (tool->info.tasks == task_support::required && !peer.has_extension(tasks_extension))
      return tasks_refusal("tool " + tool_name + " runs only as a task, so it");
    boost::json::object missing;
    for (const std::string& cap : tool->info.required_capabilities)
      if (!peer.has_capability(cap)) missing[cap] = boost::json::object{};
    if (!missing.empty()) {
      std::string names;
      for (const auto& [k, v] : missing) names += (names.empty() ? "" : ", ") + std::string(k);
      std::string data = R"({"requiredCapabilities":)";
      ir::append_json(data, missing);
      data += '}';
      return request_refusal{ir::errc::missing_client_capability,
                             "Missing required client capability: tool " + tool_name + " needs " +
                                 names +
                                 ", which this request's _meta." + std::string(capabilities_key) +
                                 " does not declare",
                             std::move(data), 400};
    }
  }
  return std::nullopt;
}

}  // namespace

}  // namespace droid
