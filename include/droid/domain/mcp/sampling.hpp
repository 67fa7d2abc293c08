// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a tool asks the client for: sampling requests and results, and roots.
///
/// Domain layer: the MCP shapes of `sampling/createMessage` and `roots/list`, spelled
/// once here so a tool never writes `"maxTokens"` by hand and gets it wrong. The
/// `tool_context` helpers (`sample`, `list_roots`) send them through the exchange.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace droid {

/// One message of a sampling conversation.
struct sampling_message {
  std::string role = "user";  ///< "user" or "assistant"
  /// A content block (`{"type":"text","text":...}`, image, audio), or since 2025-11-25
  /// an array of them (tool use and tool results included).
  boost::json::value content{};

  /// A user message with one text block.
  [[nodiscard]] static sampling_message user_text(std::string_view text);
};

/// The client's model selection hints (MCP `modelPreferences`).
struct model_preferences {
  std::vector<std::string> hints{};  ///< model names or families, most preferred first
  std::optional<double> cost_priority{};  ///< 0 to 1: how much cost matters
  std::optional<double> speed_priority{};  ///< 0 to 1: how much latency matters
  std::optional<double> intelligence_priority{};  ///< 0 to 1: how much capability matters
};

/// The params of `sampling/createMessage`.
struct sampling_request {
  std::vector<sampling_message> messages{};  ///< the conversation so far
  std::int64_t max_tokens = 1000;  ///< `maxTokens`
  std::string system_prompt{};  ///< `systemPrompt`; omitted when empty
  std::optional<model_preferences> preferences{};  ///< `modelPreferences`
  std::vector<std::string> stop_sequences{};  ///< `stopSequences`; omitted when empty
  std::optional<double> temperature{};  ///< omitted when unset
  /// Tools the model may call (2025-11-25; the client must declare `sampling.tools`).
  boost::json::array tools{};
  /// `toolChoice`, e.g. `{"mode":"auto"}` (2025-11-25), sent when not empty.
  boost::json::object tool_choice{};
  boost::json::object metadata{};  ///< `metadata`, passed through to the client; omitted when empty
};

/// The request as MCP params.
[[nodiscard]] boost::json::object to_json(const sampling_request& request);

/// What the client's model produced.
struct sampling_result {
  std::string role{};  ///< "assistant", normally
  /// A content block, or an array of them (2025-11-25).
  boost::json::value content{};
  std::string model{};  ///< the model the client used
  std::string stop_reason{};  ///< `stopReason` (`endTurn`, `maxTokens`, ...), or empty

  /// The concatenated text of the text blocks in `content`.
  [[nodiscard]] std::string text() const;
};

/// Reads a `CreateMessageResult`; false (with `error` set) when it is not one.
[[nodiscard]] bool from_json(const boost::json::value& v, sampling_result& out, std::string& error);

/// A root the client exposes (a directory or other base URI the server may work in).
struct root {
  std::string uri{};  ///< the root, a `file://` URI or another base URI
  std::string name{};  ///< a display name, or empty
};

/// Reads a `ListRootsResult`; false (with `error` set) when it is not one.
[[nodiscard]] bool from_json(const boost::json::value& v, std::vector<root>& out, std::string& error);

}  // namespace droid
