// SPDX-License-Identifier: BSL-1.0
/// @file
/// The decoder's tree (lib/domain/ir/decode.cpp): `decode` parses a message into a tree
/// once and `visit_params` reads the params from it. What must hold: the tree decides
/// exactly what the walk decides (the walk is the reference, `detail::decode_by_walking`),
/// the params' text is found where the walk finds it, and a tree that is gone (another
/// decode, another thread, a copy) is never read.
#include <droid/domain/ir/codec.hpp>

#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <doctest/doctest.h>

#include <droid/domain/ir/json_node.hpp>

using droid::ir::decode;
using droid::ir::decoded;
using droid::ir::errc;
using droid::ir::json_kind;
using droid::ir::json_node;
using droid::ir::message;
using droid::ir::rejection;

namespace {

/// Everything a decoder decided, in one string: kind, id, method, every member's kind and
/// text, or the rejection's code, sentence, id and whether it is answered.
std::string verdict(const decoded& d) {
  if (const auto* r = std::get_if<rejection>(&d)) {
    std::string s = "rejected " + std::to_string(static_cast<int>(r->code)) + " " + r->message;
    if (r->id) s += " id " + r->id->to_json();
    return s + (r->answer ? " answered" : " dropped");
  }
  const message& m = std::get<message>(d);
  std::string s = "kind " + std::to_string(static_cast<int>(m.kind())) + " id " + m.id().to_json() + " method " +
                  m.method();
  s += " params " + std::to_string(static_cast<int>(m.params().kind)) + " " + std::string(m.params().text);
  s += " result " + std::to_string(static_cast<int>(m.result().kind)) + " " + std::string(m.result().text);
  s += " code " + std::to_string(m.error_code()) + " " + m.error_message();
  s += " data " + std::to_string(static_cast<int>(m.error_data().kind)) + " " + std::string(m.error_data().text);
  return s;
}

/// A tree written out canonically, to compare two trees of the same text.
void write(const json_node& n, std::string& out) {
  switch (n.kind()) {
    case json_node::type::object:
      out += '{';
      n.for_each_member([&](std::string_view k, const json_node& v) {
        out.append(k).push_back(':');
        write(v, out);
        out += ',';
      });
      out += '}';
      break;
    case json_node::type::array:
      out += '[';
      n.for_each_element([&](const json_node& v) {
        write(v, out);
        out += ',';
      });
      out += ']';
      break;
    case json_node::type::string: out.append("s:").append(n.string()); break;
    case json_node::type::integer: out += std::to_string(n.integer()); break;
    case json_node::type::unsigned_integer: out += std::to_string(n.unsigned_integer()); break;
    case json_node::type::floating: out += "f" + std::to_string(n.number()); break;
    case json_node::type::boolean: out += n.boolean() ? "true" : "false"; break;
    case json_node::type::null: out += "null"; break;
  }
}

std::string params_tree(const message& m) {
  std::string out;
  const auto ec = droid::ir::visit_params(m, [&](const json_node& n) { write(n, out); });
  return ec ? "error" : out;
}

std::string text_tree(std::string_view text) {
  std::string out;
  const auto ec = droid::ir::visit_json(text, [&](const json_node& n) { write(n, out); });
  return ec ? "error" : out;
}

message request(std::string text) { return std::get<message>(decode(std::move(text))); }

std::string nested(int depth) {
  return R"({"jsonrpc":"2.0","id":1,"method":"ping","params":)" + std::string(depth, '[') + "1" +
         std::string(depth, ']') + "}";
}

}  // namespace

TEST_SUITE("domain/ir/decode_tree") {
  TEST_CASE("the tree decides every message exactly as the walk does") {
    std::vector<std::string> inputs = {
        R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}})",
        " \n{ \"jsonrpc\" : \"2.0\" , \"id\" : \"a\\u0062\" , \"method\" : \"m\" , \"params\" : [ 1 , {} ] \n} \t",
        R"({"jsonrpc":"2.0","method":"notifications/x","params":5})",
        R"({"jsonrpc":"2.0","method":"n","params":"text"  })",
        R"({"jsonrpc":"2.0","method":"n","params":null})",
        R"({"jsonrpc":"2.0","method":"n","params":true , "x":1})",
        R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})",
        R"({"jsonrpc":"2.0","id":1,"result":-1.5e3})",
        // Members the message's kind does not keep: their text is found by nobody.
        R"({"jsonrpc":"2.0","id":0,"result":"initialize","params":{"protocolVersion":"2025-11-25"}})",
        R"({"jsonrpc":"2.0","id":0,"method":"m","params":{},"error":{"code":1,"message":"x","data":[1]}})",
        R"({"jsonrpc":"2.0","id":0,"error":{"code":1,"message":"x","data":[1]},"params":[2],"result":3})",
        R"({"jsonrpc":"2.0","id":0,"error":{"code":1,"message":"x","data":[1]},"params":[2]})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no","data":{"a":[1]}}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no","data":"d","data":[2] }})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"no"}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-0,"message":"no"}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":18446744073709551615,"message":"no"}})",
        R"({"jsonrpc":"2.0","id":1,"error":"no"})",
        R"({"jsonrpc":"2.0","id":-0,"method":"m"})",
        R"({"jsonrpc":"2.0","id":1.0,"method":"m"})",
        R"({"jsonrpc":"2.0","id":1e2,"method":"m"})",
        R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"m"})",
        R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"})",
        R"({"jsonrpc":"2.0","id":9223372036854775808,"method":"m"})",
        R"({"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"})",
        R"({"jsonrpc":"2.0","id":null,"method":"m"})",
        R"({"jsonrpc":"2.0","id":[1],"method":"m"})",
        R"({"jsonrpc":"2.0","id":true,"result":1})",
        R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","result":1})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","method":"n"})",
        R"({"jsonrpc":"2.0","id":1,"method":7})",
        R"({"jsonrpc":2,"id":1,"method":"m"})",
        R"({"jsonrpc":"2.0 ","id":1,"method":"m"})",
        R"({"id":1,"method":"m"})",
        R"({"jsonrpc":"2.0","id":1})",
        R"({"jsonrpc":"2.0","Method":"m","method\u0000":"n"})",
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}})",
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\udc00\ud800"}})",
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud83d\ude00"}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\q"}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[1,}}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1}} x)",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":01}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e999}})",
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":tru}})",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":\"a\tb\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
        R"([{"jsonrpc":"2.0","id":1,"method":"m"}])",
        R"("just a string")",
        "",
        "   ",
        "{}",
    };
    for (int depth = 120; depth <= 132; ++depth) inputs.push_back(nested(depth));
    for (const std::string& in : inputs) {
      CAPTURE(in);
      CHECK(verdict(decode(in)) == verdict(droid::ir::detail::decode_by_walking(in)));
    }
  }

  TEST_CASE("the params read from the tree are the params of the text") {
    const std::string text =
        R"({"params":{"name":"echo","arguments":{"text":"h\u00e9llo","n":[1,-2,3.5,true,null]},"_meta":{}},)"
        R"("jsonrpc":"2.0","method":"tools/call","id":"r1"})";
    const message m = request(text);
    CHECK(params_tree(m) == text_tree(R"({"name":"echo","arguments":{"text":"h\u00e9llo","n":[1,-2,3.5,true,null]},"_meta":{}})"));
    // Twice from the same tree, and the text found afterwards is where the walk finds it.
    CHECK(params_tree(m) == text_tree(m.params().text));
    CHECK(verdict(decode(text)) == verdict(droid::ir::detail::decode_by_walking(text)));
  }

  TEST_CASE("a tree replaced by the next decode is not read: the text parses again") {
    const message first = request(R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"which":"first"}})");
    const message second = request(R"({"jsonrpc":"2.0","id":2,"method":"b","params":{"which":"second!"}})");
    CHECK(params_tree(first) == text_tree(R"({"which":"first"})"));
    CHECK(params_tree(second) == text_tree(R"({"which":"second!"})"));
  }

  TEST_CASE("on another thread the message parses its own text, whatever that thread decoded") {
    message m = request(R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"here":[1,2,3]}})");
    std::string there, theirs;
    std::thread t([&] {
      const message other = request(R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"there":0}})");
      there = params_tree(m);
      theirs = params_tree(other);
    });
    t.join();
    CHECK(there == text_tree(R"({"here":[1,2,3]})"));
    CHECK(theirs == text_tree(R"({"there":0})"));
  }

  TEST_CASE("a copy finds its own params text, with room for the parser after it") {
    const message m = request(R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"k":"v"},"x":[1]})");
    const message copy = m;  // copied before anything located the spans
    CHECK(copy.params().text == R"({"k":"v"})");
    CHECK(m.params().text == R"({"k":"v"})");
    CHECK(params_tree(copy) == text_tree(R"({"k":"v"})"));
  }

  TEST_CASE("a decode inside a visit leaves the visited tree alone") {
    const message outer = request(R"({"jsonrpc":"2.0","id":1,"method":"a","params":{"outer":[1,2]}})");
    std::string before, inner_tree, after;
    const auto ec = droid::ir::visit_params(outer, [&](const json_node& n) {
      write(n, before);
      const message inner = request(R"({"jsonrpc":"2.0","id":2,"method":"b","params":{"inner":true}})");
      inner_tree = params_tree(inner);
      write(n, after);
    });
    CHECK_FALSE(ec);
    CHECK(before == text_tree(R"({"outer":[1,2]})"));
    CHECK(after == before);
    CHECK(inner_tree == text_tree(R"({"inner":true})"));
  }

  TEST_CASE("absent params and a lone surrogate are errors, never a visit") {
    std::string_view detail;
    bool visited = false;
    const message none = request(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
    CHECK(droid::ir::visit_params(none, [&](const json_node&) { visited = true; }, &detail) == errc::invalid_params);
    const message lone = request(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}})");
    CHECK(lone.params().text == R"({"name":"\ud800"})");
    CHECK(droid::ir::visit_params(lone, [&](const json_node&) { visited = true; }, &detail) == errc::invalid_params);
    CHECK_FALSE(visited);
    CHECK_FALSE(detail.empty());
  }

  TEST_CASE("responses keep their result and error data text") {
    const message r = request(R"({"jsonrpc":"2.0","id":3,"result": {"role":"assistant"} })");
    CHECK(r.result().text == R"({"role":"assistant"})");
    CHECK(r.result().kind == json_kind::object);
    const message e = request(R"({"jsonrpc":"2.0","id":3,"error":{"data":[1, 2],"code":-1,"message":"m"}})");
    CHECK(e.error_data().text == "[1, 2]");
    CHECK(e.error_code() == -1);
  }
}
