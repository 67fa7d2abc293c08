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
#include <memory>
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
/// Why everything sits behind one pointer: a request's message is moved about ten times
/// on its way from the transport to the tool (into coroutine frames, lambda captures and
/// executor handlers), and moving four strings each time cost about 1,000 instructions
/// per request (bench callgrind section); one pointer costs a few, for one allocation.
/// Invariants: views are offsets into the text, so moving a message never dangles them.
/// A moved-from message may only be destroyed or assigned to.
class message {
 public:
  /// An empty notification; the decoder fills it.
  message() : f_(std::make_unique<fields>()) {}
  /// Takes `other`'s block; `other` may then only be destroyed or assigned to.
  message(message&& other) noexcept = default;
  /// Takes `other`'s block; `other` may then only be destroyed or assigned to.
  message& operator=(message&& other) noexcept = default;
  /// A copy of `other`'s bytes and fields (the views are offsets, so they hold in it).
  message(const message& other) : f_(std::make_unique<fields>(*other.f_)) {}
  /// Replaces this message with a copy of `other`.
  message& operator=(const message& other) {
    if (this != &other) f_ = std::make_unique<fields>(*other.f_);
    return *this;
  }
  ~message() = default;

  /// What the message is.
  [[nodiscard]] message_kind kind() const noexcept { return f_->kind; }
  /// True for a request (method and id).
  [[nodiscard]] bool is_request() const noexcept { return f_->kind == message_kind::request; }
  /// True for a notification (method, no id).
  [[nodiscard]] bool is_notification() const noexcept { return f_->kind == message_kind::notification; }
  /// True for a response or an error response.
  [[nodiscard]] bool is_response() const noexcept {
    return f_->kind == message_kind::response || f_->kind == message_kind::error;
  }

  /// The id; meaningful for requests, responses and errors.
  [[nodiscard]] const request_id& id() const noexcept { return f_->id; }
  /// The method, unescaped; empty for responses.
  [[nodiscard]] const std::string& method() const noexcept { return f_->method; }
  /// `params` as validated text; `present()` is false when the member was absent.
  [[nodiscard]] raw_json params() const noexcept { return view(f_->params); }
  /// What `params` holds, or `absent`: the same as `params().kind`, without finding the
  /// text (see `fields::located`), for a caller that then visits the params' tree.
  [[nodiscard]] json_kind params_kind() const noexcept { return f_->params.kind; }
  /// `result` of a response.
  [[nodiscard]] raw_json result() const noexcept { return view(f_->result); }
  /// `error.code` of an error response.
  [[nodiscard]] std::int64_t error_code() const noexcept { return f_->error_code; }
  /// `error.message` of an error response, unescaped.
  [[nodiscard]] const std::string& error_message() const noexcept { return f_->error_message; }
  /// `error.data` of an error response, if any.
  [[nodiscard]] raw_json error_data() const noexcept { return view(f_->error_data); }
  /// The whole message as received (for logs and diagnostics).
  [[nodiscard]] std::string_view text() const noexcept { return {f_->text.data(), f_->text_size}; }

  /// Where a member's text sits in the message (used by the decoder that fills it).
  struct span {
    std::uint32_t offset = 0;  ///< first byte, from the start of the message
    std::uint32_t size = 0;  ///< length in bytes
    json_kind kind = json_kind::absent;  ///< what the member holds, or `absent`
  };

 private:
  friend struct message_builder;  // lib/domain/ir/decode.cpp
  struct fields;
  /// Finds where `params`, `result` and `error.data` sit in the text, for a message whose
  /// parse did not say (lib/domain/ir/decode.cpp).
  static void locate(fields& f) noexcept;
  /// The message's state, boxed so that a move is a pointer (see the class comment).
  struct fields {
    /// The bytes, with the parser's padding reserved after `text_size` of them.
    std::string text;
    std::size_t text_size = 0;
    std::string method;
    std::string error_message;
    request_id id;
    span params;
    span result;
    span error_data;
    std::int64_t error_code = 0;
    /// Names the parsed tree that this message's params still have on the thread that
    /// decoded it (0: none); `visit_params` reuses the tree instead of parsing again.
    std::uint64_t tree = 0;
    message_kind kind = message_kind::notification;
    /// False while the spans' kinds are known but not their offsets: the tree the decoder
    /// built says what each member holds, not where its text is, and most requests never
    /// ask for the text. The first view finds all three.
    bool located = true;
  };
  [[nodiscard]] raw_json view(const span& s) const noexcept {
    if (!f_->located) [[unlikely]]
      locate(*f_);
    return {std::string_view(f_->text.data() + s.offset, s.size), s.kind};
  }

  std::unique_ptr<fields> f_;
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
