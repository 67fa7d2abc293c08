// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JSON-RPC envelope decoder and `json_node`: the only translation unit that
/// includes simdjson.
///
/// ## Why one On-Demand walk over the whole document
/// On-Demand parses lazily: members nobody reads are skipped by bracket counting, not
/// validated. A decoder that only read `id` and `method` would answer a ping whose
/// `params` is broken JSON. So the envelope is read *while* every value is walked once:
/// numbers parsed, literals checked, depth bounded. The walk also yields the raw span of
/// `params` (start token to the next structural character), which is what travels on.
///
/// ## Why string values are not unescaped during the walk
/// A lone surrogate escape (`"\ud800"`) is valid JSON grammar. Rejecting it here would
/// make it a -32700 for the whole message; leaving it to the typed decoder makes it an
/// invalid-params answer for the one field that holds it (docs/reliability.md, 2.25
/// and decision 7).
/// Their escapes are still checked (`"\q"` is not JSON at all), by a scan that costs about
/// a memchr per string. Envelope strings (`jsonrpc`, `method`, string ids) are unescaped
/// and must be valid.
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <vector>

// g++ 12 at -O3 reports "dangling pointer to an unnamed temporary" inside simdjson's
// inlined string handling (simdjson 3.0.1); the pointers are into the parser's own
// buffers. Silenced for this translation unit only, until Debian's simdjson or g++ moves.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <simdjson.h>

namespace droid::ir {

namespace od = simdjson::ondemand;

struct message_builder {
  static message& set(message& m, std::string&& text) {
    m.f_->text = std::move(text);
    m.f_->text_size = m.f_->text.size();
    return m;
  }
  /// For a message decoded from its tree: the spans' kinds are set, their places are not.
  static void unlocated(message& m) {
    message::fields& f = *m.f_;
    f.located = f.params.kind == json_kind::absent && f.result.kind == json_kind::absent &&
                 f.error_data.kind == json_kind::absent;
  }
  static void set_tree(message& m, std::uint64_t ticket) { m.f_->tree = ticket; }
  static std::uint64_t tree_of(const message& m) { return m.f_->tree; }
  static message::span span_of(const message& m, std::string_view v, json_kind kind) {
    return {static_cast<std::uint32_t>(v.data() - m.f_->text.data()), static_cast<std::uint32_t>(v.size()), kind};
  }
  static void fill(message& m, message_kind kind, std::optional<request_id>&& id, std::string&& method,
                   message::span params, message::span result, message::span error_data, std::int64_t code,
                   std::string&& error_message) {
    message::fields& f = *m.f_;
    f.kind = kind;
    if (id) f.id = std::move(*id);
    f.method = std::move(method);
    f.params = params;
    f.result = result;
    f.error_data = error_data;
    f.error_code = code;
    f.error_message = std::move(error_message);
  }
};

namespace {

/// Thrown nowhere: the walk returns simdjson error codes, mapped once at the top.
using simdjson::error_code;

json_kind kind_of(od::json_type t) {
  switch (t) {
    case od::json_type::array: return json_kind::array;
    case od::json_type::object: return json_kind::object;
    case od::json_type::number: return json_kind::number;
    case od::json_type::string: return json_kind::string;
    case od::json_type::boolean: return json_kind::boolean;
    case od::json_type::null: return json_kind::null;
  }
  return json_kind::absent;
}

json_kind kind_of(simdjson::dom::element_type t) {
  using simdjson::dom::element_type;
  switch (t) {
    case element_type::ARRAY: return json_kind::array;
    case element_type::OBJECT: return json_kind::object;
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return json_kind::number;
    case element_type::STRING: return json_kind::string;
    case element_type::BOOL: return json_kind::boolean;
    case element_type::NULL_VALUE: return json_kind::null;
  }
  return json_kind::absent;
}

/// Trims JSON whitespace from the end of a raw span (the walk's end position is the next
/// structural character, so the whitespace before it belongs to no value).
std::string_view trim_end(const char* begin, const char* end) {
  while (end > begin && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r' || end[-1] == '\t')) --end;
  return {begin, static_cast<std::size_t>(end - begin)};
}

/// Whether every escape between `p` and `end` (a string's content, quotes excluded) is one
/// JSON allows. On-Demand's raw strings skip this, and an escape is the one thing stage 1
/// cannot check: it only finds where strings end. Lone surrogates are valid grammar and
/// pass (see the file comment).
///
/// Why memchr: most strings hold no backslash at all, and glibc's memchr crosses them
/// many bytes per step.
bool escapes_valid(const char* p, const char* end) noexcept {
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); };
  // Stage 1 found the closing quote unescaped, so an escape never starts at `end - 1`, and
  // a short `\u` escape meets that quote, which is no hex digit, before reading past it.
  while (p < end && (p = static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(end - p))))) {
    switch (p[1]) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': p += 2; break;
      case 'u':
        if (!hex(p[2]) || !hex(p[3]) || !hex(p[4]) || !hex(p[5])) return false;
        p += 6;
        break;
      default: return false;
    }
  }
  return true;
}

/// Walks one value completely, validating everything On-Demand would otherwise skip.
/// Recursion is bounded by `max_depth`, so hostile nesting cannot exhaust the stack.
error_code walk(od::value v, std::uint32_t depth) {
  if (depth > max_depth) return simdjson::DEPTH_ERROR;
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  switch (t) {
    case od::json_type::object: {
      od::object o;
      if (auto e = v.get_object().get(o)) return e;
      for (auto field_result : o) {
        od::field f;
        if (auto e = std::move(field_result).get(f)) return e;
        // Keys are compared by the envelope check and by decoders, so they must unescape.
        std::string_view key;
        if (auto e = f.unescaped_key().get(key)) return e;
        if (auto e = walk(f.value(), depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array a;
      if (auto e = v.get_array().get(a)) return e;
      for (auto element : a) {
        od::value ev;
        if (auto e = std::move(element).get(ev)) return e;
        if (auto e = walk(ev, depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      od::number n;
      return v.get_number().get(n);
    }
    case od::json_type::string: {
      // The token runs from the opening quote to the next structural character.
      const std::string_view token = v.raw_json_token();
      od::raw_json_string s;
      if (auto e = v.get_raw_json_string().get(s)) return e;
      const std::string_view quoted = trim_end(token.data(), token.data() + token.size());
      if (quoted.size() < 2 || !escapes_valid(quoted.data() + 1, quoted.data() + quoted.size() - 1))
        return simdjson::STRING_ERROR;
      return simdjson::SUCCESS;
    }
    case od::json_type::boolean: {
      bool b;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (auto e = v.is_null().get(is_null)) return e;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

/// The id as MCP allows it (integer or string), or nothing when it is of another kind.
/// Why `1.0` is refused: MCP says integer, TS would silently treat it as 1, and echoing
/// `1` for `1.0` or `1.0` for `1` both surprise someone (docs/reliability.md, decision 7).
std::optional<request_id> read_id(od::value v, bool& valid) {
  valid = false;
  od::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    valid = true;
    return request_id(std::string(s));
  }
  if (t == od::json_type::number) {
    od::number_type nt;
    if (v.get_number_type().get(nt) || nt != od::number_type::signed_integer) return std::nullopt;
    std::int64_t n;
    if (v.get_int64().get(n)) return std::nullopt;
    valid = true;
    return request_id(n);
  }
  return std::nullopt;
}

rejection parse_failure(error_code e) {
  rejection r;
  r.code = errc::parse_error;
  r.message = std::string("Parse error: ") + simdjson::error_message(e);
  return r;
}

rejection invalid(std::string text, std::optional<request_id> id = std::nullopt) {
  rejection r;
  r.code = errc::invalid_request;
  r.message = std::move(text);
  r.id = std::move(id);
  return r;
}

/// True when nothing but whitespace follows the root value. simdjson 3.0 has no
/// `document::at_end`; its iterator reports "out of bounds" exactly there.
bool at_end(od::document& doc) {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

od::parser& thread_parser() {
  // One parser per thread: it keeps its buffers between messages, so steady-state
  // decoding allocates nothing, and shards never share it.
  thread_local od::parser parser;
  return parser;
}

}  // namespace

static_assert(decode_padding >= simdjson::SIMDJSON_PADDING, "transports reserve too little for the parser");

namespace {

/// What an envelope says, gathered during one pass over the root object and judged after
/// it, because a parse error anywhere in the document outranks every shape complaint.
/// Both decoders below fill it; `judge` alone turns it into a message or a rejection, so
/// the two cannot disagree about shapes.
struct envelope {
  bool dup = false;
  bool seen_jsonrpc = false, seen_id = false, seen_method = false, seen_params = false, seen_result = false,
       seen_error = false;
  bool jsonrpc_ok = false, id_valid = false, method_ok = false, error_ok = false;
  std::optional<request_id> id;
  std::string method;
  message::span params, result, error_data;
  std::int64_t error_code_value = 0;
  std::string error_message;
};

decoded judge(message&& m, envelope& e) {
  // The id is echoed only when it is one MCP allows (docs/reliability.md, 2.4).
  std::optional<request_id> echo = e.id_valid ? e.id : std::nullopt;
  if (e.dup) return invalid("Invalid Request: duplicate member in the JSON-RPC envelope");
  if (!e.seen_jsonrpc || !e.jsonrpc_ok) return invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"", echo);

  if (e.seen_method) {
    if (!e.method_ok) return invalid("Invalid Request: \"method\" must be a string");
    if (e.seen_id && !e.id_valid) return invalid("Invalid Request: \"id\" must be an integer or a string");
    if (e.seen_result || e.seen_error)
      return invalid("Invalid Request: a request cannot carry a result or an error", echo);
    message_builder::fill(m, e.seen_id ? message_kind::request : message_kind::notification, std::move(e.id),
                          std::move(e.method), e.params, {}, {}, 0, {});
    return decoded(std::in_place_index<0>, std::move(m));
  }

  // No method: a response, or nothing at all.
  if (e.seen_id && e.id_valid && (e.seen_result != e.seen_error)) {
    if (e.seen_error && !e.error_ok) {
      rejection r = invalid("malformed error response: error needs an integer code and a string message", echo);
      r.answer = false;
      return r;
    }
    message_builder::fill(m, e.seen_result ? message_kind::response : message_kind::error, std::move(e.id), {}, {},
                          e.result, e.error_data, e.error_code_value, std::move(e.error_message));
    return decoded(std::in_place_index<0>, std::move(m));
  }
  if (e.seen_result || e.seen_error) {
    // A malformed answer (both members, or a bad id) is dropped: answering an answer
    // could loop between two peers that both do so (docs/reliability.md, 2.17).
    rejection r = invalid("malformed response: it needs a valid id and exactly one of result or error", echo);
    r.answer = false;
    return r;
  }
  return invalid("Invalid Request: a message needs a \"method\" (request or notification) or a result", echo);
}

/// The decoder that settles every message: one On-Demand walk over the whole document
/// (see the file comment). It keeps the members' text as spans and builds no tree.
decoded decode_walking(message&& m) {
  const std::string_view buffer = m.text();
  const char* base = buffer.data();
  const std::size_t size = buffer.size();

  od::document doc;
  if (auto e = thread_parser()
                   .iterate(simdjson::padded_string_view(base, size, size + simdjson::SIMDJSON_PADDING))
                   .get(doc)) {
    return parse_failure(e);
  }

  od::json_type root_type;
  if (auto e = doc.type().get(root_type)) return parse_failure(e);

  if (root_type != od::json_type::object) {
    // Validate first: `[1,}` is a parse error, not a batch.
    if (root_type == od::json_type::array) {
      od::value root;
      if (auto e = doc.get_value().get(root)) return parse_failure(e);
      if (auto e = walk(root, 1)) return parse_failure(e);
      if (!at_end(doc)) return parse_failure(simdjson::TRAILING_CONTENT);
      return invalid("Invalid Request: batches are not supported (MCP removed JSON-RPC batching in 2025-06-18)");
    }
    // A scalar document: check it is a valid scalar, then refuse its shape.
    error_code e = simdjson::SUCCESS;
    switch (root_type) {
      case od::json_type::number: { od::number n; e = doc.get_number().get(n); break; }
      case od::json_type::string: { std::string_view s; e = doc.get_string().get(s); break; }
      case od::json_type::boolean: { bool b; e = doc.get_bool().get(b); break; }
      default: { bool n = false; e = doc.is_null().get(n); if (!e && !n) e = simdjson::N_ATOM_ERROR; break; }
    }
    if (e) return parse_failure(e);
    if (!at_end(doc)) return parse_failure(simdjson::TRAILING_CONTENT);
    return invalid("Invalid Request: a JSON-RPC message must be an object");
  }

  od::object root;
  if (auto e = doc.get_object().get(root)) return parse_failure(e);

  envelope env;
  auto capture = [&](od::value v, od::json_type t, message::span& out) -> error_code {
    const std::string_view token = v.raw_json_token();
    const char* start = token.data();
    if (auto e = walk(v, 2)) return e;
    const char* end = nullptr;
    // simdjson 3.0's `get_number` parses without advancing, so after a number the
    // location is still its start; a scalar is one token, which ends where the next begins.
    if (t == od::json_type::number) {
      end = start + token.size();
    } else if (auto e = doc.current_location().get(end)) {
      return e;
    }
    out = message_builder::span_of(m, trim_end(start, end), kind_of(t));
    return simdjson::SUCCESS;
  };

  for (auto field_result : root) {
    od::field f;
    if (auto e = std::move(field_result).get(f)) return parse_failure(e);
    std::string_view key;
    if (auto e = f.unescaped_key().get(key)) return parse_failure(e);
    od::value v = f.value();
    od::json_type t;
    if (auto e = v.type().get(t)) return parse_failure(e);

    // Exact, case-sensitive matches only: "Method" and "method\u0000" are unknown members
    // (docs/reliability.md, 2.21, 2.22), so they are walked and otherwise ignored.
    if (key == "jsonrpc") {
      env.dup |= env.seen_jsonrpc;
      env.seen_jsonrpc = true;
      std::string_view s;
      if (t == od::json_type::string) {
        if (v.get_string().get(s)) return parse_failure(simdjson::STRING_ERROR);
        env.jsonrpc_ok = (s == "2.0");
      } else if (auto e = walk(v, 2)) {
        return parse_failure(e);
      }
    } else if (key == "id") {
      env.dup |= env.seen_id;
      env.seen_id = true;
      if (t == od::json_type::number || t == od::json_type::string) {
        // Validate the number fully first: an overflowing one is a parse error.
        if (t == od::json_type::number) {
          od::number n;
          if (auto e = v.get_number().get(n)) return parse_failure(e);
        }
        env.id = read_id(v, env.id_valid);
        if (t == od::json_type::string && !env.id_valid) return parse_failure(simdjson::STRING_ERROR);
      } else if (auto e = walk(v, 2)) {
        return parse_failure(e);
      }
    } else if (key == "method") {
      env.dup |= env.seen_method;
      env.seen_method = true;
      if (t == od::json_type::string) {
        std::string_view s;
        if (auto e = v.get_string().get(s)) return parse_failure(e);
        env.method.assign(s);
        env.method_ok = true;
      } else if (auto e = walk(v, 2)) {
        return parse_failure(e);
      }
    } else if (key == "params") {
      env.dup |= env.seen_params;
      env.seen_params = true;
      if (auto e = capture(v, t, env.params)) return parse_failure(e);
    } else if (key == "result") {
      env.dup |= env.seen_result;
      env.seen_result = true;
      if (auto e = capture(v, t, env.result)) return parse_failure(e);
    } else if (key == "error") {
      env.dup |= env.seen_error;
      env.seen_error = true;
      if (t != od::json_type::object) {
        if (auto e = walk(v, 2)) return parse_failure(e);
        continue;
      }
      od::object eo;
      if (auto e = v.get_object().get(eo)) return parse_failure(e);
      bool has_code = false, has_message = false;
      for (auto ef_result : eo) {
        od::field ef;
        if (auto e = std::move(ef_result).get(ef)) return parse_failure(e);
        std::string_view ek;
        if (auto e = ef.unescaped_key().get(ek)) return parse_failure(e);
        od::value ev = ef.value();
        od::json_type et;
        if (auto e = ev.type().get(et)) return parse_failure(e);
        if (ek == "code" && et == od::json_type::number) {
          od::number n;
          if (auto e = ev.get_number().get(n)) return parse_failure(e);
          if (n.is_int64()) {
            env.error_code_value = n.get_int64();
            has_code = true;
          }
        } else if (ek == "message" && et == od::json_type::string) {
          std::string_view s;
          if (auto e = ev.get_string().get(s)) return parse_failure(e);
          env.error_message.assign(s);
          has_message = true;
        } else if (ek == "data") {
          if (auto e = capture(ev, et, env.error_data)) return parse_failure(e);
        } else if (auto e = walk(ev, 3)) {
          return parse_failure(e);
        }
      }
      env.error_ok = has_code && has_message;
    } else if (auto e = walk(v, 2)) {
      // Unknown members are ignored (docs/reliability.md, 2.30) but still validated.
      return parse_failure(e);
    }
  }
  if (!at_end(doc)) return parse_failure(simdjson::TRAILING_CONTENT);
  return judge(std::move(m), env);
}

// ---- the tree --------------------------------------------------------------------------
//
// Most messages are requests whose params a handler reads as a tree right after decoding.
// The walk above validates the params and a handler's parse then reads them a second
// time: about 1,000 instructions of a 25,000-instruction request (2,000 for a 2026-07-28
// one, whose params carry its _meta), docs/benchmarks.md. So the decoder first parses the
// message into a tree, judges the envelope from it, and keeps the tree for `visit_params`:
// one parse per message. The walk stays the judge of everything the tree does not accept
// as plainly valid (errors, lone surrogates, exotic numbers, extreme depth): those take
// the walk afterwards, and answer exactly as before.

/// Messages up to this size are parsed into the tree; larger ones take the walk. The
/// tree's buffers grow to the largest message parsed into them and stay (about 14 bytes
/// per byte of text), so the bound is what each thread keeps: about 1 MB.
constexpr std::size_t tree_limit = 64 * 1024;

/// The tree of the last message this thread decoded, and the ticket that names it.
///
/// Why tickets and not pointers: a message carries its ticket wherever it goes; only on
/// this thread, and only until this thread's next decode, does the ticket still name this
/// tree. A ticket is unique in the process (a thread number in its high bits), so a
/// message that moved to another thread can never mistake that thread's tree for its own.
struct decoded_tree {
  simdjson::dom::parser parser;
  simdjson::dom::element params;
  std::uint64_t ticket = 0;  ///< names the tree now in `parser`; 0 while none is usable
  std::uint64_t last = 0;    ///< the last ticket this thread issued
  std::uint32_t readers = 0;  ///< visits under way: the tree must not be reparsed under them
  bool usable = false;  ///< the parser's first allocation succeeded

  decoded_tree() {
    static std::atomic<std::uint64_t> threads{0};
    last = (threads.fetch_add(1, std::memory_order_relaxed) + 1) << 40;
    // Depth: the walk allows 128 levels counting scalars, the tree counts containers; two
    // fewer keeps every tree it accepts within what the walk accepts (the rest walk).
    usable = !parser.allocate(4096, max_depth - 2);
  }
};

decoded_tree& thread_tree() {
  thread_local decoded_tree tree;
  return tree;
}

/// Decodes `m` from a tree, or says it cannot (nothing), and the walk decides instead.
/// Declines everything that is not a plainly valid object with plain integer ids and
/// codes, so that only messages the walk would accept in the same way are decided here.
std::optional<decoded> decode_from_tree(message& m, decoded_tree& t) {
  t.ticket = 0;  // the parse below overwrites whatever tree was there
  const std::string_view text = m.text();
  namespace dom = simdjson::dom;
  dom::element root;
  // In place: `decode` reserved the parser's padding after the text.
  if (t.parser.parse(text.data(), text.size(), false).get(root)) return std::nullopt;
  dom::object object;
  if (root.get_object().get(object)) return std::nullopt;

  envelope env;
  dom::element params;
  for (const dom::key_value_pair member : object) {
    const std::string_view key = member.key;
    const dom::element v = member.value;
    const dom::element_type type = v.type();
    if (key == "jsonrpc") {
      env.dup |= env.seen_jsonrpc;
      env.seen_jsonrpc = true;
      std::string_view s;
      env.jsonrpc_ok = !v.get_string().get(s) && s == "2.0";
    } else if (key == "id") {
      env.dup |= env.seen_id;
      env.seen_id = true;
      if (type == dom::element_type::INT64) {
        std::int64_t n = 0;
        if (v.get_int64().get(n)) return std::nullopt;
        env.id = request_id(n);
        env.id_valid = true;
      } else if (type == dom::element_type::STRING) {
        std::string_view s;
        if (v.get_string().get(s)) return std::nullopt;
        env.id = request_id(std::string(s));
        env.id_valid = true;
      } else if (type == dom::element_type::UINT64 || type == dom::element_type::DOUBLE) {
        return std::nullopt;  // how a number is classed is the walk's to say
      }
    } else if (key == "method") {
      env.dup |= env.seen_method;
      env.seen_method = true;
      std::string_view s;
      if (!v.get_string().get(s)) {
        env.method.assign(s);
        env.method_ok = true;
      }
    } else if (key == "params") {
      env.dup |= env.seen_params;
      env.seen_params = true;
      env.params.kind = kind_of(type);
      params = v;
    } else if (key == "result") {
      env.dup |= env.seen_result;
      env.seen_result = true;
      env.result.kind = kind_of(type);
    } else if (key == "error") {
      env.dup |= env.seen_error;
      env.seen_error = true;
      dom::object eo;
      if (v.get_object().get(eo)) continue;
      bool has_code = false, has_message = false;
      for (const dom::key_value_pair em : eo) {
        const dom::element_type et = em.value.type();
        if (em.key == "code" && kind_of(et) == json_kind::number) {
          // How a number is classed is the walk's to say, unless it is a plain int64.
          std::int64_t n = 0;
          if (et != dom::element_type::INT64 || em.value.get_int64().get(n)) return std::nullopt;
          env.error_code_value = n;
          has_code = true;
        } else if (em.key == "message" && et == dom::element_type::STRING) {
          std::string_view s;
          if (em.value.get_string().get(s)) return std::nullopt;
          env.error_message.assign(s);
          has_message = true;
        } else if (em.key == "data") {
          env.error_data.kind = kind_of(et);
        }
      }
      env.error_ok = has_code && has_message;
    }
  }
  decoded d = judge(std::move(m), env);
  if (auto* out = std::get_if<message>(&d)) {
    message_builder::unlocated(*out);
    if (env.seen_params && out->kind() != message_kind::response && out->kind() != message_kind::error) {
      t.params = params;
      t.ticket = ++t.last;
      message_builder::set_tree(*out, t.ticket);
    }
  }
  return d;
}

/// Decodes `text` from its tree when `use_tree` allows and the tree accepts it, otherwise
/// by the walk.
decoded decode_text(std::string&& text, bool use_tree) {
  const std::size_t size = text.size();
  if (size > std::numeric_limits<std::uint32_t>::max()) return invalid("message too large");
  // simdjson reads up to SIMDJSON_PADDING bytes past the end; reserving them here (once,
  // usually within the transport's existing capacity) avoids a padded copy.
  text.reserve(size + simdjson::SIMDJSON_PADDING);
  message m;
  message_builder::set(m, std::move(text));
  if (use_tree && size <= tree_limit) {
    decoded_tree& t = thread_tree();
    // A decode inside a visit of the tree (a request served from a handler that is still
    // reading its params) must leave that tree alone: it walks.
    if (t.usable && t.readers == 0)
      if (std::optional<decoded> d = decode_from_tree(m, t)) return std::move(*d);
  }
  return decode_walking(std::move(m));
}

}  // namespace

decoded decode(std::string text) { return decode_text(std::move(text), true); }

namespace detail {
decoded decode_by_walking(std::string text) { return decode_text(std::move(text), false); }
}  // namespace detail

void message::locate(fields& f) noexcept {
  // Only a message decoded from its tree gets here, so the text is valid JSON: an
  // On-Demand pass that skips containers by their brackets finds every span exactly.
  f.located = true;
  // A copy of a message has no room after its text; the parser needs it.
  f.text.reserve(f.text_size + simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (thread_parser()
          .iterate(simdjson::padded_string_view(f.text.data(), f.text_size, f.text_size + simdjson::SIMDJSON_PADDING))
          .get(doc))
    return;
  const auto span_of = [&](od::value v, span& out) {
    // Only the members the message kept: a response's `params`, a request's `result`,
    // are in the text but not in the message (the walk keeps no span for them either).
    if (out.kind == json_kind::absent) return;
    std::string_view raw;
    od::json_type t;
    if (v.type().get(t)) return;
    if (t == od::json_type::object) {
      od::object o;
      if (v.get_object().get(o) || o.raw_json().get(raw)) return;
    } else if (t == od::json_type::array) {
      od::array a;
      if (v.get_array().get(a) || a.raw_json().get(raw)) return;
    } else {
      raw = v.raw_json_token();
    }
    raw = trim_end(raw.data(), raw.data() + raw.size());
    out.offset = static_cast<std::uint32_t>(raw.data() - f.text.data());
    out.size = static_cast<std::uint32_t>(raw.size());
  };
  od::object root;
  if (doc.get_object().get(root)) return;
  for (auto field_result : root) {
    od::field fl;
    std::string_view key;
    if (std::move(field_result).get(fl) || fl.unescaped_key().get(key)) return;
    if (key == "params") {
      span_of(fl.value(), f.params);
    } else if (key == "result") {
      span_of(fl.value(), f.result);
    } else if (key == "error") {
      od::object eo;
      if (fl.value().get_object().get(eo)) continue;
      for (auto ef_result : eo) {
        od::field ef;
        std::string_view ek;
        if (std::move(ef_result).get(ef) || ef.unescaped_key().get(ek)) return;
        if (ek == "data") span_of(ef.value(), f.error_data);
      }
    }
  }
}

// ---- json_node -------------------------------------------------------------------------

struct json_node_access {
  static simdjson::dom::element get(const json_node& n) noexcept {
    simdjson::dom::element e;
    std::memcpy(static_cast<void*>(&e), n.bytes_, sizeof e);
    return e;
  }
  static json_node make(const simdjson::dom::element& e) noexcept {
    json_node n;
    std::memcpy(n.bytes_, static_cast<const void*>(&e), sizeof e);
    return n;
  }
};

static_assert(sizeof(simdjson::dom::element) <= 16, "json_node storage must hold a dom::element");
static_assert(std::is_trivially_copyable_v<simdjson::dom::element>, "json_node copies dom::element bytes");

json_node::type json_node::kind() const noexcept {
  switch (json_node_access::get(*this).type()) {
    case simdjson::dom::element_type::ARRAY: return type::array;
    case simdjson::dom::element_type::OBJECT: return type::object;
    case simdjson::dom::element_type::INT64: return type::integer;
    case simdjson::dom::element_type::UINT64: return type::unsigned_integer;
    case simdjson::dom::element_type::DOUBLE: return type::floating;
    case simdjson::dom::element_type::STRING: return type::string;
    case simdjson::dom::element_type::BOOL: return type::boolean;
    case simdjson::dom::element_type::NULL_VALUE: return type::null;
  }
  return type::null;
}

// Every accessor below uses `.get(out)` rather than `value_unsafe()`: g++ 12 at -O3 sees
// the unused half of simdjson's result pair and warns "may be used uninitialized".
bool json_node::boolean() const noexcept {
  bool b = false;
  if (json_node_access::get(*this).get_bool().get(b)) return b;
  return b;
}
std::int64_t json_node::integer() const noexcept {
  std::int64_t n = 0;
  if (json_node_access::get(*this).get_int64().get(n)) return n;
  return n;
}
std::uint64_t json_node::unsigned_integer() const noexcept {
  std::uint64_t n = 0;
  if (json_node_access::get(*this).get_uint64().get(n)) return n;
  return n;
}
double json_node::number() const noexcept {
  const auto e = json_node_access::get(*this);
  switch (e.type()) {
    case simdjson::dom::element_type::INT64: return static_cast<double>(integer());
    case simdjson::dom::element_type::UINT64: return static_cast<double>(unsigned_integer());
    default: {
      double d = 0;
      if (e.get_double().get(d)) return 0;
      return d;
    }
  }
}
std::string_view json_node::string() const noexcept {
  std::string_view s;
  if (json_node_access::get(*this).get_string().get(s)) return s;
  return s;
}
std::size_t json_node::size() const noexcept {
  const auto e = json_node_access::get(*this);
  simdjson::dom::array a;
  if (!e.get_array().get(a)) return a.size();
  simdjson::dom::object o;
  if (!e.get_object().get(o)) return o.size();
  return 0;
}
bool json_node::find(std::string_view key, json_node& out) const noexcept {
  simdjson::dom::object o;
  if (json_node_access::get(*this).get_object().get(o)) return false;
  for (const simdjson::dom::key_value_pair member : o) {
    if (member.key == key) {
      out = json_node_access::make(member.value);
      return true;
    }
  }
  return false;
}
std::string_view json_node::kind_name() const noexcept {
  switch (kind()) {
    case type::null: return "null";
    case type::boolean: return "a boolean";
    case type::integer:
    case type::unsigned_integer: return "an integer";
    case type::floating: return "a number";
    case type::string: return "a string";
    case type::array: return "an array";
    case type::object: return "an object";
  }
  return "a value";
}
void json_node::each_element(void (*fn)(void*, const json_node&), void* ctx) const {
  simdjson::dom::array a;
  if (json_node_access::get(*this).get_array().get(a)) return;
  for (const simdjson::dom::element x : a) fn(ctx, json_node_access::make(x));
}
void json_node::each_member(void (*fn)(void*, std::string_view, const json_node&), void* ctx) const {
  simdjson::dom::object o;
  if (json_node_access::get(*this).get_object().get(o)) return;
  for (const simdjson::dom::key_value_pair member : o) fn(ctx, member.key, json_node_access::make(member.value));
}

std::optional<std::string> string_member(const raw_json& params, std::string_view key) {
  if (params.kind != json_kind::object) return std::nullopt;
  std::optional<std::string> out;
  (void)visit_json(params.text, [&](const json_node& p) {
    json_node v;
    if (p.find(key, v) && v.kind() == json_node::type::string) out = std::string(v.string());
  });
  return out;
}

namespace {

/// The parser for a visit at the current nesting depth, and the depth's bookkeeping.
///
/// Why per depth: a nested visit (a decoder that decodes, a request served from inside the
/// callback that read its params) gets a parser of its own, so it cannot overwrite the
/// tape its caller is still reading. Parsers are kept per depth: a parser made per nested
/// call would allocate its buffers every time, and serving a request from inside a visit
/// makes nesting the common case.
struct visit_depth {
  static simdjson::dom::parser& parser() {
    if (depth() == parsers().size()) parsers().push_back(std::make_unique<simdjson::dom::parser>(1u << 26));
    return *parsers()[depth()];
  }
  static std::vector<std::unique_ptr<simdjson::dom::parser>>& parsers() {
    thread_local std::vector<std::unique_ptr<simdjson::dom::parser>> p;
    return p;
  }
  static std::size_t& depth() {
    thread_local std::size_t d = 0;
    return d;
  }
};

/// Parses `text` with the current depth's parser; the error (and `detail`) when it does
/// not parse. It copies the text into its own padded buffer: the views we get are not
/// padded.
std::error_code parse_at_depth(std::string_view text, simdjson::dom::element& root, std::string_view* detail) {
  if (auto e = visit_depth::parser().parse(text.data(), text.size(), true).get(root)) {
    if (detail) *detail = simdjson::error_message(e);
    return make_error_code(errc::invalid_params);
  }
  return {};
}

/// Calls `visit` with `node`, holding the current depth's parser for the duration.
void visit_at_depth(const simdjson::dom::element& node, void (*visit)(void*, const json_node&), void* ctx) {
  ++visit_depth::depth();
  struct leave {
    ~leave() { --visit_depth::depth(); }
  } guard;
  visit(ctx, json_node_access::make(node));
}

}  // namespace

std::error_code visit_json(std::string_view text, void (*visit)(void*, const json_node&), void* ctx,
                           std::string_view* detail) {
  simdjson::dom::element root;
  if (auto ec = parse_at_depth(text, root, detail)) return ec;
  visit_at_depth(root, visit, ctx);
  return {};
}

std::error_code visit_params(const message& m, void (*visit)(void*, const json_node&), void* ctx,
                             std::string_view* detail) {
  if (m.params_kind() == json_kind::absent) {
    if (detail) *detail = "the request has no params";
    return make_error_code(errc::invalid_params);
  }
  const std::uint64_t ticket = message_builder::tree_of(m);
  if (ticket == 0) return visit_json(m.params().text, visit, ctx, detail);
  decoded_tree& t = thread_tree();
  if (t.ticket == ticket) {
    // The tree the decoder built is still this thread's last: no parse at all.
    ++t.readers;
    struct leave {
      std::uint32_t& r;
      ~leave() { --r; }
    } guard{t.readers};
    visit(ctx, json_node_access::make(t.params));
    return {};
  }
  // The message moved to another thread, or this one decoded another since: its whole
  // text parses again (it did once, into a tree), without first finding where params is.
  simdjson::dom::element root, params;
  if (auto ec = parse_at_depth(m.text(), root, detail)) return ec;
  if (root.at_key("params").get(params)) {
    if (detail) *detail = "the request has no params";
    return make_error_code(errc::invalid_params);
  }
  visit_at_depth(params, visit, ctx);
  return {};
}

}  // namespace droid::ir
