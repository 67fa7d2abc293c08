// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: the JSON-RPC envelope decoder `ir::decode` (lib/domain/ir/decode.cpp)
/// and the encoders beside it (include/droid/domain/ir/codec.hpp).
///
/// Oracles:
/// - Round trip: a message that decodes is re-encoded with the encoder of its kind, and
///   that text decodes to the same message (kind, id, method, params, result, error code,
///   message and data). A decoder and an encoder that disagree about an escape or an id
///   would echo an id the peer never sent, or route an answer to the wrong waiter.
/// - The answer to a rejection, written the way a session writes it, is itself a valid
///   JSON-RPC error message: the server never answers bad input with bad output.
/// - Deciding twice gives the same answer: the decoder reuses one parser per thread, and
///   nothing of one message may leak into the next.
/// - `ir::string_member` and `ir::visit_json` over a decoded `params` never fail on text
///   the decoder validated, except for a lone surrogate (docs/reliability.md, 2.25).
/// - The decoder's tree decides as its walk does: `decode` parses most messages into a
///   tree and judges them from it, and the walk (`detail::decode_by_walking`) must reach
///   the same verdict, member texts included. `ir::visit_params` (which reads the tree)
///   and `ir::visit_json` over the params' text see the same values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/message.hpp>

#include "fuzz_support.hpp"

namespace {

using droid::ir::decoded;
using droid::ir::message;
using droid::ir::message_kind;
using droid::ir::rejection;

/// Everything the decoder decided about a message, in one string.
std::string describe(const message& m) {
  std::string s = std::to_string(static_cast<int>(m.kind()));
  s += '|';
  if (m.kind() != message_kind::notification) s += m.id().to_json();
  s += '|';
  droid::ir::append_json_string(s, m.method());
  s += "|p" + std::to_string(static_cast<int>(m.params().kind)) + ':';
  s += m.params().text;
  s += "|r" + std::to_string(static_cast<int>(m.result().kind)) + ':';
  s += m.result().text;
  s += "|e" + std::to_string(m.error_code()) + ':';
  droid::ir::append_json_string(s, m.error_message());
  s += "|d" + std::to_string(static_cast<int>(m.error_data().kind)) + ':';
  s += m.error_data().text;
  return s;
}

std::string describe(const rejection& r) {
  std::string s = std::to_string(static_cast<int>(r.code)) + '|' + r.message + '|';
  if (r.id) s += r.id->to_json();
  s += r.answer ? "|answer" : "|drop";
  return s;
}

std::string describe(const decoded& d) {
  if (const auto* m = std::get_if<message>(&d)) return "message " + describe(*m);
  return "rejection " + describe(std::get<rejection>(d));
}

/// A tree written out canonically, to compare the params' tree with the tree of their text.
void write_node_to(const droid::ir::json_node& n, std::string& out) {
  using t = droid::ir::json_node::type;
  switch (n.kind()) {
    case t::object:
      out += '{';
      n.for_each_member([&](std::string_view k, const droid::ir::json_node& v) {
        droid::ir::append_json_string(out, k);
        out += ':';
        write_node_to(v, out);
        out += ',';
      });
      out += '}';
      break;
    case t::array:
      out += '[';
      n.for_each_element([&](const droid::ir::json_node& v) {
        write_node_to(v, out);
        out += ',';
      });
      out += ']';
      break;
    case t::string: droid::ir::append_json_string(out, n.string()); break;
    case t::integer: out += std::to_string(n.integer()); break;
    case t::unsigned_integer: out += std::to_string(n.unsigned_integer()) + 'u'; break;
    case t::floating: out += std::to_string(n.number()) + 'f'; break;
    case t::boolean: out += n.boolean() ? "true" : "false"; break;
    case t::null: out += "null"; break;
  }
}

std::string write_node(const droid::ir::json_node& n) {
  std::string out;
  write_node_to(n, out);
  return out;
}

/// The message's text as this project's encoders would write it.
std::string reencode(const message& m) {
  std::string out;
  switch (m.kind()) {
    case message_kind::request: droid::ir::append_request(out, m.id(), m.method(), m.params().text); break;
    case message_kind::notification: droid::ir::append_notification(out, m.method(), m.params().text); break;
    case message_kind::response: droid::ir::append_result(out, m.id(), m.result().text); break;
    case message_kind::error:
      droid::ir::append_error(out, m.id(), m.error_code(), m.error_message(), m.error_data().text);
      break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(droid::fuzz::as_text(data, size));
  const decoded first = droid::ir::decode(text);
  const std::string verdict = describe(first);
  DROID_FUZZ_CHECK(describe(droid::ir::decode(text)) == verdict, "decoding twice gave two answers");
  DROID_FUZZ_CHECK(describe(droid::ir::detail::decode_by_walking(text)) == verdict,
                   "the tree and the walk decided this message differently");

  if (const auto* r = std::get_if<rejection>(&first)) {
    DROID_FUZZ_CHECK(!r->message.empty(), "a rejection without a message");
    DROID_FUZZ_CHECK(r->code == droid::ir::errc::parse_error || r->code == droid::ir::errc::invalid_request,
                     "a rejection that is neither -32700 nor -32600");
    std::string answer;
    droid::ir::append_error(answer, r->id, static_cast<std::int64_t>(r->code), r->message);
    if (r->id) {
      const decoded a = droid::ir::decode(answer);
      const auto* am = std::get_if<message>(&a);
      DROID_FUZZ_CHECK(am != nullptr, "the answer to a rejection does not decode");
      DROID_FUZZ_CHECK(am->kind() == message_kind::error, "the answer to a rejection is not an error");
      DROID_FUZZ_CHECK(am->id() == *r->id, "the rejection's id did not survive encoding");
      DROID_FUZZ_CHECK(am->error_message() == r->message, "the rejection's message did not survive encoding");
    } else {
      // `"id":null` is what a peer may not send, so our decoder refuses it as a response;
      // a general JSON parser checks the answer instead.
      boost::system::error_code ec;
      const boost::json::value v = boost::json::parse(answer, ec);
      DROID_FUZZ_CHECK(!ec && v.is_object(), "the answer to a rejection is not a JSON object");
      const auto* e = v.as_object().if_contains("error");
      DROID_FUZZ_CHECK(e && e->is_object() && e->as_object().contains("message"), "the answer carries no error");
      DROID_FUZZ_CHECK(v.as_object().at("id").is_null(), "the answer's id is not null");
    }
    return 0;
  }

  const message& m = std::get<message>(first);
  const std::string again = reencode(m);
  const decoded second = droid::ir::decode(again);
  const auto* m2 = std::get_if<message>(&second);
  DROID_FUZZ_CHECK(m2 != nullptr, "a re-encoded message does not decode");
  DROID_FUZZ_CHECK(describe(*m2) == describe(m), "a re-encoded message decodes to something else");
  // And the encoders are a fixed point from there.
  DROID_FUZZ_CHECK(reencode(*m2) == again, "encoding is not stable");

  if (m.params().present()) {
    // Decoded again, so that the tree is this message's (`m` was decoded before the
    // checks above decoded others).
    const decoded fresh = droid::ir::decode(text);
    std::string from_tree, from_text;
    const std::error_code tree_ec = droid::ir::visit_params(
        std::get<message>(fresh), [&](const droid::ir::json_node& n) { from_tree = write_node(n); });
    const std::error_code text_ec = droid::ir::visit_json(
        m.params().text, [&](const droid::ir::json_node& n) { from_text = write_node(n); });
    DROID_FUZZ_CHECK(static_cast<bool>(tree_ec) == static_cast<bool>(text_ec), "the tree and the text disagree on parsing");
    DROID_FUZZ_CHECK(from_tree == from_text, "the params' tree is not the tree of the params' text");
    const std::error_code ec = droid::ir::visit_json(m.params().text, [](const droid::ir::json_node& n) {
      // Walks the tape the typed decoders read, every node of it.
      struct walker {
        static void go(const droid::ir::json_node& v, int depth) {
          DROID_FUZZ_CHECK(depth <= static_cast<int>(droid::ir::max_depth) + 1, "params deeper than the bound");
          (void)v.kind_name();
          if (v.kind() == droid::ir::json_node::type::array) v.for_each_element([&](const droid::ir::json_node& e) { go(e, depth + 1); });
          if (v.kind() == droid::ir::json_node::type::object)
            v.for_each_member([&](std::string_view, const droid::ir::json_node& e) { go(e, depth + 1); });
        }
      };
      walker::go(n, 1);
    });
    (void)ec;
    (void)droid::ir::string_member(m.params(), "name");
  }
  return 0;
}
