// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::tool_info`: what `tools/list` says about a tool.
///
/// Domain layer: plain descriptors, no handlers (those live in the application layer).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace droid {

/// MCP tool annotations: hints a client may show or use for confirmation prompts.
/// Unset hints are omitted, so the client applies the spec's defaults.
struct tool_annotations {
  std::optional<bool> read_only_hint{};  ///< `readOnlyHint`: the tool changes nothing
  std::optional<bool> destructive_hint{};  ///< `destructiveHint`: changes may destroy data
  std::optional<bool> idempotent_hint{};  ///< `idempotentHint`: calling again changes nothing more
  std::optional<bool> open_world_hint{};  ///< `openWorldHint`: the tool reaches outside systems
};

/// An icon for a tool, prompt, resource or the server (MCP 2025-11-25).
struct icon {
  std::string src{};  ///< a URI (https: or data:)
  std::string mime_type{};  ///< `mimeType`, or empty
  std::vector<std::string> sizes{};  ///< sizes such as "48x48", or empty
  std::string theme{};  ///< "light", "dark" or empty
};

/// Whether a tool may run as a task: a long-running call that answers at once with a
/// task id and that the client then polls (`tasks/get`), instead of holding the request
/// open. Listed as `execution.taskSupport` to 2025-11-25 clients.
enum class task_support : std::uint8_t {
  forbidden,  ///< never a task (the default)
  optional,   ///< a task when the client accepts tasks, a plain call otherwise
  required,   ///< only as a task: a client that does not accept tasks is refused
};

/// When a task-supporting tool becomes a task.
enum class task_start : std::uint8_t {
  /// Before it runs: the client gets the task at once.
  at_once,
  /// When the tool calls `co_await ctx.continue_as_task()`. Why: a tool may first ask
  /// the client something within the request (a 2026-07-28 `input_required` round), and
  /// only then go on as a task. A 2025 client that asked for a task gets it at once.
  when_asked,
};

/// Everything `tools/list` reports about one tool.
///
/// Why schemas are optional here: typed tools fill them from their C++ types at
/// registration; a tool with raw JSON arguments may supply them or get `{"type":"object"}`.
struct tool_info {
  std::string name{};  ///< what `tools/call` names; see `is_valid_tool_name`
  std::string title{};  ///< a display name; omitted when empty
  std::string description{};  ///< for the model: what the tool does
  tool_annotations annotations{};  ///< hints for the client
  std::vector<icon> icons{};  ///< `icons`, omitted when empty
  std::optional<boost::json::object> input_schema{};  ///< `inputSchema`; none: `{"type":"object"}`
  std::optional<boost::json::object> output_schema{};  ///< `outputSchema`; omitted when none
  /// Client capabilities the tool cannot work without (top-level names: "sampling",
  /// "elicitation", "roots"). A 2026-07-28 request that did not declare them is refused
  /// before the tool runs, with -32021 naming them. Not part of the listing.
  std::vector<std::string> required_capabilities{};
  /// OAuth scopes a caller must hold, all of them, to call the tool (docs/security.md).
  /// Enforced where the transport authenticates callers (HTTP with `http::options::auth`):
  /// a call without them is answered 403 with `insufficient_scope` naming them, so the
  /// client can ask its user for more. Not part of the listing.
  std::vector<std::string> required_scopes{};
  /// Whether it may run as a task (docs/tasks.md), and when it becomes one.
  task_support tasks = task_support::forbidden;
  task_start start = task_start::at_once;  ///< see `task_start`
  /// `_meta`, verbatim: what a client or an extension reads beside MCP's own fields (an
  /// MCP App's `ui` link, say). Keys with a reserved prefix are refused at registration
  /// (`is_reserved_meta_key`); omitted when empty, and for clients before 2025-06-18.
  boost::json::object meta{};
};

/// The value as `execution.taskSupport` writes it.
[[nodiscard]] std::string_view to_string(task_support s) noexcept;

/// True when `name` follows MCP 2025-11-25's tool name rule: 1 to 128 characters from
/// `[A-Za-z0-9._-]`. Why enforced: clients (and the conformance suite) reject tools
/// whose names break it, and they reject the whole list, not just the one tool.
[[nodiscard]] bool is_valid_tool_name(std::string_view name) noexcept;

/// The tool's `tools/list` entry.
[[nodiscard]] boost::json::object to_json(const tool_info& info);

/// The `icons` array of an MCP descriptor.
[[nodiscard]] boost::json::array to_json(const std::vector<icon>& icons);

}  // namespace droid
