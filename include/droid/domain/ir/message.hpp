// SPDX-License-Identifier: BSL-1.0
/// @file
/// `ir::message`: one decoded JSON-RPC message, and `ir::raw_json`, validated JSON text.
///
/// Domain layer. The decoder (lib/domain/ir/decode.cpp, the only translation unit that
/// includes simdjson) turns bytes into a `message` once; everything after it reads the
/// envelope from here and the parameters as raw text, decoded straight into the type the
/// handler wants. Why not a DOM: a message copied into a tree and then into a struct is
/// two passes over every byte of the payload, and the payload is most of the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <droid/domain/errc.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid::ir {

/// The JSON type of a value, as far as envelope checks need it.
enum class json_kind : std::uint8_t { absent, null, boolean, number, string, array, object };

/// A view of JSON text that the decoder has fully validated (syntax, UTF-8, depth).
///
/// Why a distinct type and not `std::string_view`: it marks the point after which text
/// may be handed to a lazy parser without re-validation; a plain view carries no such
/// promise. Lifetime: borrows the `message` (or other owner) it came from.
struct raw_json {
  std::string_view text;  ///< the text; empty when absent
  json_kind kind = json_kind::absent;  ///< what the text holds, or `absent`

  /// True when the member was in the message.
  [[nodiscard]] bool present() const noexcept { return kind != json_kind::absent; }
};

/// What a JSON-RPC message is, decided once by the decoder.
enum class message_kind : std::uint8_t {
  request,       ///< method and id: the peer expects exactly one response.
  notification,  ///< method, no id: never answered.
  response,      ///< id and result: the answer to one of our requests.
  error,         ///< id and error: the failure of one of our requests.
};

/// One decoded JSON-RPC message that owns its bytes.
///
/// Why it owns the text: `params` and `result` are views into it, and a request is served
/// by a coroutine that outlives the read buffer; moving the message into the coroutine
/// moves the bytes with it and copies nothing.
/// Invariants: views are offsets into `text_`, so moving a message never dangles them
/// (a `std::string` with its bytes inline would).
class message {
 public:
  /// What the message is.
  [[nodiscard]] message_kind kind() const noexcept { return kind_; }
  /// True for a request (method and id).
  [[nodiscard]] bool is_request() const noexcept { return kind_ == message_kind::request; }
  /// True for a notification (method, no id).
  [[nodiscard]] bool is_notification() const noexcept { return kind_ == message_kind::notification; }
  /// True for a response or an error response.
  [[nodiscard]] bool is_response() const noexcept {
    return kind_ == message_kind::response || kind_ == message_kind::error;
  }

  /// The id; meaningful for requests, responses and errors.
  [[nodiscard]] const request_id& id() const noexcept { return id_; }
  /// The method, unescaped; empty for responses.
  [[nodiscard]] const std::string& method() const noexcept { return method_; }
  /// `params` as validated text; `present()` is false when the member was absent.
  [[nodiscard]] raw_json params() const noexcept { return view(params_); }
  /// `result` of a response.
  [[nodiscard]] raw_json result() const noexcept { return view(result_); }
  /// `error.code` of an error response.
  [[nodiscard]] std::int64_t error_code() const noexcept { return error_code_; }
  /// `error.message` of an error response, unescaped.
  [[nodiscard]] const std::string& error_message() const noexcept { return error_message_; }
  /// `error.data` of an error response, if any.
  [[nodiscard]] raw_json error_data() const noexcept { return view(error_data_); }
  /// The whole message as received (for logs and diagnostics).
  [[nodiscard]] std::string_view text() const noexcept { return {text_.data(), text_size_}; }

  /// Where a member's text sits in the message (used by the decoder that fills it).
  struct span {
    std::uint32_t offset = 0;  ///< first byte, from the start of the message
    std::uint32_t size = 0;  ///< length in bytes
    json_kind kind = json_kind::absent;  ///< what the member holds, or `absent`
  };

 private:
  friend struct message_builder;  // lib/domain/ir/decode.cpp
  [[nodiscard]] raw_json view(span s) const noexcept {
    return {std::string_view(text_.data() + s.offset, s.size), s.kind};
  }

  std::string text_;
  std::size_t text_size_ = 0;
  std::string method_;
  std::string error_message_;
  request_id id_;
  span params_;
  span result_;
  span error_data_;
  std::int64_t error_code_ = 0;
  message_kind kind_ = message_kind::notification;
};

/// Why a message could not be decoded, and what (if anything) to answer.
///
/// Why a struct and not an `error_code`: the answer needs the id when one could be
/// trusted (JSON-RPC echoes it for -32600 when it is valid) and a sentence for the peer.
struct rejection {
  errc code = errc::invalid_request;  ///< the JSON-RPC error code to answer with
  std::string message;  ///< a sentence for the peer (`error.message`)
  /// The id to answer with; empty means `id: null`.
  std::optional<request_id> id;
  /// False for malformed *responses*: JSON-RPC never answers an answer
  /// (docs/reliability.md, 2.17).
  bool answer = true;
};

}  // namespace droid::ir
