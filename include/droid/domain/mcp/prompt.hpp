// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP prompts: what `prompts/list` says about a prompt, and what `prompts/get` returns.
///
/// Domain layer: plain values; handlers live in the application layer (`server::prompt`).
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include <droid/domain/mcp/content.hpp>
#include <droid/domain/mcp/tool.hpp>

namespace droid {

/// One argument a prompt takes (prompt arguments are strings).
struct prompt_argument {
  std::string name{};  ///< the key in `prompts/get`'s `arguments`
  std::string title{};  ///< a display name; omitted when empty
  std::string description{};  ///< omitted when empty
  bool required = false;  ///< a `prompts/get` without it is refused
};

/// Everything `prompts/list` reports about one prompt.
struct prompt_info {
  std::string name{};  ///< what `prompts/get` names
  std::string title{};  ///< a display name; omitted when empty
  std::string description{};  ///< omitted when empty
  std::vector<prompt_argument> arguments{};  ///< the arguments it takes, in order
  std::vector<icon> icons{};  ///< `icons`, omitted when empty
  /// `_meta`, verbatim: what a client or an extension reads beside MCP's own fields (an
  /// MCP App's `ui` link, say). Keys with a reserved prefix are refused at registration
  /// (`is_reserved_meta_key`); omitted when empty, and for clients before 2025-06-18.
  boost::json::object meta{};
};

/// One message of a prompt: a role and one content block (text, image, audio, an
/// embedded resource or a resource link).
struct prompt_message {
  std::string role = "user";  ///< "user" or "assistant"
  content block = content::text("");  ///< the message's one block

  /// A message from the user.
  [[nodiscard]] static prompt_message user(content c) { return prompt_message{"user", std::move(c)}; }
  /// A message from the assistant.
  [[nodiscard]] static prompt_message assistant(content c) { return prompt_message{"assistant", std::move(c)}; }
};

/// What `prompts/get` returns.
struct prompt_result {
  std::string description{};  ///< omitted when empty
  std::vector<prompt_message> messages{};  ///< the messages, in order
  /// The result's `_meta`, verbatim; a reserved key fails the `prompts/get`.
  boost::json::object meta{};
};

/// The prompt's `prompts/list` entry.
[[nodiscard]] boost::json::object to_json(const prompt_info& info);
/// The `GetPromptResult` object.
[[nodiscard]] boost::json::object to_json(const prompt_result& result);

}  // namespace droid
