// SPDX-License-Identifier: BSL-1.0
/// @file
/// `detail::reply`: the engine's answer to one request, before it is framed and sent.
///
/// Application layer. Public only because middleware (`droid::middleware::response`)
/// carries one through the chain without copying it into another shape; nothing outside
/// the engine and that class should build or read one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <droid/domain/errc.hpp>

namespace droid::detail {

/// The answer to one request: a result's JSON text, a whole response already framed, or
/// a JSON-RPC error.
///
/// Why an error's texts sit behind a pointer: a reply is moved about five times between
/// the tool's `co_return` and the write (promise, awaiter, driver, completion), and three
/// strings per move cost about 400 instructions of every tools/call (docs/benchmarks.md);
/// a result moves one string and a null pointer.
struct reply {
  /// An error's texts.
  struct failure {
    std::string message;
    std::string data;  ///< JSON text of `error.data`, or empty
    /// Over HTTP, the status that carries this error instead of 200 (0: the usual one).
    /// Why: an error that refuses a request for a limit (the client's share, a full
    /// server) must reach the client as 429 or 503 with Retry-After, as the transport's
    /// own limits do, even though the engine found it after the request was accepted.
    int http_status = 0;
    /// With `http_status`: the seconds a client should wait (Retry-After; 0: one).
    int retry_after = 0;
  };

  /// The result's JSON text; or, when `framed`, the whole response message.
  std::string result;
  std::int64_t code = 0;  ///< 0 for a result
  std::unique_ptr<failure> error_text;  ///< set for an error (`code != 0`)
  /// `result` already carries the envelope (`{"jsonrpc":"2.0","id":...,"result":...}`) for
  /// the request's own id. Why: a tool result is written behind its envelope in the one
  /// buffer that is sent, instead of being built and then copied into a second one.
  bool framed = false;
  /// The result is a tool's own error (`isError`): a 2025-11-25 task that ends so is
  /// `failed`, a 2026-07-28 one `completed`.
  bool tool_error = false;

  [[nodiscard]] bool is_error() const noexcept { return code != 0; }
  /// `error.message` of an error ("" for a result).
  [[nodiscard]] const std::string& message() const noexcept { return error_text ? error_text->message : none(); }
  /// `error.data` of an error as JSON text ("" when it has none).
  [[nodiscard]] const std::string& data() const noexcept { return error_text ? error_text->data : none(); }

  [[nodiscard]] static reply ok(std::string json) { return reply{std::move(json), 0, nullptr, false, false}; }
  /// A tool's result written behind its envelope (see `framed`).
  [[nodiscard]] static reply framed_result(std::string message_text, bool tool_error) {
    return reply{std::move(message_text), 0, nullptr, true, tool_error};
  }
  [[nodiscard]] static reply response(std::string message_text) { return framed_result(std::move(message_text), false); }
  [[nodiscard]] static reply error(ir::errc c, std::string text, std::string data_json = {}) {
    return error(static_cast<std::int64_t>(c), std::move(text), std::move(data_json));
  }
  [[nodiscard]] static reply error(std::int64_t c, std::string text, std::string data_json = {}) {
    return reply{{}, c, std::make_unique<failure>(failure{std::move(text), std::move(data_json)}), false, false};
  }
  /// An error that refuses the request for a limit, carried over HTTP as `http_status`
  /// (429: the client's share, -32600 as the transport's own 429s; 503: the server is
  /// full, -32603 as its own 503s).
  [[nodiscard]] static reply over_limit(int http_status, std::string text, int retry_after = 0) {
    const ir::errc code = http_status == 429 ? ir::errc::invalid_request : ir::errc::internal_error;
    return refusal(http_status, static_cast<std::int64_t>(code), std::move(text), {}, retry_after);
  }
  /// Any error carried over HTTP as `http_status` (0: the usual 200) and Retry-After.
  [[nodiscard]] static reply refusal(int http_status, std::int64_t code, std::string text, std::string data_json = {},
                                     int retry_after = 0) {
    return reply{{}, code,
                 std::make_unique<failure>(failure{std::move(text), std::move(data_json), http_status, retry_after}),
                 false, false};
  }
  /// The HTTP status of an `over_limit` error (0 for anything else).
  [[nodiscard]] int http_status() const noexcept { return error_text ? error_text->http_status : 0; }
  /// The Retry-After seconds of an `over_limit` error (0: the transport's default).
  [[nodiscard]] int retry_after() const noexcept { return error_text ? error_text->retry_after : 0; }

 private:
  static const std::string& none() noexcept {
    static const std::string empty;
    return empty;
  }
};

}  // namespace droid::detail
