// SPDX-License-Identifier: BSL-1.0
/// @file
/// Decoding bytes into `ir::message` and encoding JSON-RPC messages into text.
///
/// Domain layer. The decoder is the one place simdjson is used for envelopes; its rules
/// (docs/reliability.md#json-rpc-input) are written next to the code in
/// lib/domain/ir/decode.cpp.
/// The encoders append to a caller's buffer so a transport can frame several messages
/// into one write without intermediate strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/json/fwd.hpp>

#include <droid/domain/ir/message.hpp>

namespace droid::ir {

class json_node;

/// The deepest nesting the decoder accepts; deeper input is a parse error.
///
/// Why a bound: our own walkers recurse, and a peer sending 100,000 `[` must get -32700,
/// not a stack overflow (docs/reliability.md, 2.23).
inline constexpr std::uint32_t max_depth = 128;

/// Bytes a transport should leave free after a message's text, in its capacity, before
/// handing it to `decode`. With them the parser reads the message in place; without them
/// `decode` reallocates and copies the message once. (The parser reads a few bytes past
/// the end at once; lib/domain/ir/decode.cpp checks this against what it needs.)
inline constexpr std::size_t decode_padding = 64;

/// Either a message or the reason there is none.
using decoded = std::variant<message, rejection>;

/// Decodes one JSON-RPC message, taking ownership of its bytes.
///
/// The whole document is validated before anything is classified, because simdjson's
/// On-Demand API validates lazily: without the full walk, `{"id":1,"method":"ping",
/// "params":{"x":[1,}}` would be answered as a ping (docs/reliability.md, 2.2).
/// Errors (as `rejection`): `parse_error` for invalid JSON, invalid UTF-8 or excessive
/// depth; `invalid_request` for batches, scalars, a wrong `jsonrpc`, a bad id or
/// method, duplicate envelope keys, or a shape that is none of the four kinds.
/// Malformed responses are rejected with `answer == false`.
[[nodiscard]] decoded decode(std::string text);

namespace detail {
/// `decode` without its tree: every message takes the walk that decides whatever the
/// tree declines. For the fuzz harness, which holds the two to the same verdicts.
[[nodiscard]] decoded decode_by_walking(std::string text);
}  // namespace detail

/// Appends `{"jsonrpc":"2.0","id":<id>,"result":<result_json>}`.
void append_result(std::string& out, const request_id& id, std::string_view result_json);

/// Appends `{"jsonrpc":"2.0","id":<id>,"result":`; the caller then writes the result and
/// the closing `}`.
///
/// Why a half: a result written straight behind its envelope (a tool result serialised
/// into the response text) is built once in one buffer, instead of as a string that
/// `append_result` then copies.
void append_result_head(std::string& out, const request_id& id);

/// Appends a JSON-RPC error response; an empty `id` is written as `null`.
/// `data_json`, when not empty, must be one JSON value and becomes `error.data`.
void append_error(std::string& out, const std::optional<request_id>& id, std::int64_t code,
                  std::string_view message, std::string_view data_json = {});

/// Appends a request (`params_json` may be empty to omit params).
void append_request(std::string& out, const request_id& id, std::string_view method,
                    std::string_view params_json);

/// Appends a notification (`params_json` may be empty to omit params).
void append_notification(std::string& out, std::string_view method, std::string_view params_json);

/// True when `s` is UTF-8 as JSON text must be (no overlongs, no surrogates, nothing
/// above U+10FFFF): exactly the bytes `append_json_string` writes unchanged. Why public:
/// content that must reach the client byte for byte (a skill file checked against its
/// digest) goes as text only when this holds, and as base64 otherwise.
[[nodiscard]] bool is_utf8(std::string_view s) noexcept;

/// Appends `v` as compact JSON.
///
/// Why not `boost::json::serialize`: Boost 1.81 writes every double in exponent form
/// (`2E1` for 20), which is valid but reads badly in every tool result a person looks
/// at; this writes the shortest round-trip form (`20`, `3.5`), and non-finite numbers,
/// which JSON cannot carry, as `null`.
void append_json(std::string& out, const boost::json::value& v);
/// The same for an object, which would otherwise have to be copied into a `value` first.
void append_json(std::string& out, const boost::json::object& o);

/// `v` as compact JSON text (see `append_json`).
[[nodiscard]] std::string to_json_text(const boost::json::value& v);

/// Parses JSON text into a `boost::json::value` with every number exact: a double is the
/// nearest one to what the text says. False when the text does not parse.
///
/// Why not `boost::json::parse`: Boost 1.81 parses a long mantissa approximately (one
/// unit in the last place off), so a value sealed into a 2026 request's state and read
/// back, or a tool's params re-serialised with trace context, changed its numbers (found
/// by the sealed_state fuzzer). This goes through the same parser as every message.
[[nodiscard]] bool parse_exact(std::string_view text, boost::json::value& out);

/// Sets `out` to the value `node` holds, numbers as parsed. Why one function: a tool
/// argument of type `boost::json::value` (schema.hpp) and `parse_exact` convert the same
/// way, and two copies had drifted (one built arrays on the side and copied them in).
void assign_value(const json_node& node, boost::json::value& out);

}  // namespace droid::ir
