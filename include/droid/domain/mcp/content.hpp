// SPDX-License-Identifier: BSL-1.0
/// @file
/// MCP content blocks and `droid::tool_result`, the value a tool returns.
///
/// Domain layer. Content blocks are built as Boost.JSON objects because that is the value
/// type users already build results with; the factories below only spell the MCP field
/// names right, so a user never writes `"mimeType"` by hand and gets it wrong.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <droid/domain/mcp/revision.hpp>

namespace droid {

/// One MCP content block (text, image, audio, resource link, embedded resource).
///
/// Why a type and not a bare `boost::json::object`: the factories are the place where
/// MCP's field names and required members live; a block built here is valid by
/// construction.
class content {
 public:
  /// `{"type":"text","text":...}`
  [[nodiscard]] static content text(std::string_view text);
  /// `{"type":"image","data":<base64>,"mimeType":...}`; `base64_data` must already be base64.
  [[nodiscard]] static content image(std::string_view base64_data, std::string_view mime_type);
  /// `{"type":"audio","data":<base64>,"mimeType":...}`
  [[nodiscard]] static content audio(std::string_view base64_data, std::string_view mime_type);
  /// `{"type":"resource_link","uri":...,"name":...}` plus optional description and mimeType.
  [[nodiscard]] static content resource_link(std::string_view uri, std::string_view name,
                                             std::string_view description = {}, std::string_view mime_type = {});
  /// An embedded text resource: `{"type":"resource","resource":{"uri","mimeType","text"}}`.
  [[nodiscard]] static content embedded_text(std::string_view uri, std::string_view text,
                                             std::string_view mime_type = "text/plain");
  /// An embedded binary resource: `{"type":"resource","resource":{"uri","mimeType","blob"}}`.
  [[nodiscard]] static content embedded_blob(std::string_view uri, std::string_view base64_blob,
                                             std::string_view mime_type);

  /// Attaches MCP annotations (`audience`, `priority`, `lastModified`) verbatim.
  content& annotate(boost::json::object annotations);

  /// The block as a JSON object. A text block builds it on the first call (see below);
  /// running out of memory there terminates, as the `noexcept` this always had says.
  [[nodiscard]] const boost::json::object& json() const noexcept;
  /// Appends the block as compact JSON: the text `ir::append_json(out, json())` writes,
  /// without building the object of a text block.
  void append_json(std::string& out) const;
  /// About how many bytes `append_json` writes (never fewer when nothing needs escaping).
  [[nodiscard]] std::size_t json_size_hint() const noexcept;

  /// Copies `other`.
  content(const content& other);
  /// Takes `other`'s block.
  content(content&& other) noexcept;
  /// Copies `other`.
  content& operator=(const content& other);
  /// Takes `other`'s block.
  content& operator=(content&& other) noexcept;
  ~content() = default;

 private:
  struct text_only {};
  explicit content(boost::json::object o) : json_(std::move(o)) {}
  content(text_only, std::string_view text) : text_(text), text_only_(true) {}

  // ## Why a text block keeps only its text until asked for its object
  // Most tools answer with one text block. As a Boost.JSON object it costs three
  // allocations (the table and each key), their frees, and a walk to serialise it; as
  // its text it is one string that the engine escapes straight into the response. So
  // `text()` stores the text, and `json()` builds the object on first use. Building
  // happens under a lock, so concurrent first calls on a shared const block are as
  // safe as any const member function; copies never read another block's object while
  // it may be being built (they copy the text, and build their own when asked).
  std::string text_;
  mutable boost::json::object json_;
  bool text_only_ = false;
  /// `json_` holds the object of a text-only block (published with release).
  mutable std::atomic<bool> built_{false};
};

/// Standard base64 (RFC 4648, with padding), for image, audio and blob payloads.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// URL-safe base64 without padding (RFC 4648 section 5), for tokens that travel in JSON
/// strings and URLs unescaped.
[[nodiscard]] std::string base64url_encode(std::string_view bytes);

/// The outcome of one `tools/call`: content blocks, optional structured content, and
/// whether it is a tool execution error.
///
/// Why errors are results and not exceptions or JSON-RPC errors: MCP (2025-11-25,
/// SEP-1303) wants a failing tool reported *to the model* as `isError: true` content, so
/// the model can read the reason and retry; a JSON-RPC error is shown to the client only.
class tool_result {
 public:
  tool_result() = default;

  /// A result with one text block.
  [[nodiscard]] static tool_result text(std::string_view text);
  /// A tool execution error whose one text block is `message`.
  [[nodiscard]] static tool_result error(std::string_view message);

  /// Appends a content block.
  tool_result& add(content block);
  /// Sets `structuredContent` (must be a JSON object per MCP).
  tool_result& structured(boost::json::object value);
  /// Marks the result as a tool execution error.
  tool_result& set_error(bool is_error = true) noexcept;
  /// Sets the result's `_meta` (what a client or an extension reads beside the content).
  /// Errors: `std::invalid_argument` for a key whose prefix MCP reserves
  /// (`is_reserved_meta_key`); thrown in a tool, it becomes the call's `isError` result.
  tool_result& meta(boost::json::object value);

  /// True when the result is a tool execution error (`isError`).
  [[nodiscard]] bool is_error() const noexcept { return is_error_; }
  /// The content blocks, in order.
  [[nodiscard]] const std::vector<content>& blocks() const noexcept { return content_; }
  /// `structuredContent`, when set.
  [[nodiscard]] const std::optional<boost::json::object>& structured_content() const noexcept { return structured_; }
  /// `_meta`, empty when not set.
  [[nodiscard]] const boost::json::object& meta() const noexcept { return meta_; }

  /// The `CallToolResult` JSON text.
  [[nodiscard]] std::string to_json() const;
  /// Appends the same text to `out`. Why: the engine writes a result straight behind its
  /// JSON-RPC envelope, in the buffer that becomes the response, with no copy between.
  void append_json(std::string& out) const;
  /// The same shaped for a client of `revision` (no `structuredContent` before
  /// 2025-06-18), with `leading_members` (already-serialised `"k":v` pairs, or empty)
  /// written first inside the object. When those end with a `_meta` member (a 2026
  /// result's server identity), the result's own `_meta` keys are written into it: JSON
  /// allows the key once.
  void append_json(std::string& out, protocol_revision revision, std::string_view leading_members) const;
  /// About how many bytes `append_json` will write (never fewer when nothing needs
  /// escaping), so a caller can reserve its buffer once instead of growing it again and again.
  [[nodiscard]] std::size_t json_size_hint() const noexcept;

 private:
  std::vector<content> content_;
  std::optional<boost::json::object> structured_;
  boost::json::object meta_;
  bool is_error_ = false;
};

}  // namespace droid
