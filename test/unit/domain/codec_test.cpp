// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JSON-RPC decoder and encoders against docs/reliability.md#json-rpc-input.
#include <droid/domain/ir/codec.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/domain/ir/json_node.hpp>

using droid::ir::decode;
using droid::ir::errc;
using droid::ir::json_kind;
using droid::ir::message;
using droid::ir::message_kind;
using droid::ir::rejection;
using droid::ir::request_id;

namespace {

message accepted(const std::string& text) {
  auto d = decode(text);
  if (auto* r = std::get_if<rejection>(&d)) FAIL("rejected: ", r->message, " for ", text);
  return std::get<message>(std::move(d));
}

rejection refused(const std::string& text) {
  auto d = decode(text);
  if (std::holds_alternative<message>(d)) FAIL("accepted: ", text);
  return std::get<rejection>(std::move(d));
}

}  // namespace

TEST_SUITE("domain/ir/decode") {
  TEST_CASE("a request keeps its id, method and params exactly") {
    const message m = accepted(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}})");
    CHECK(m.kind() == message_kind::request);
    CHECK(m.id() == request_id(7));
    CHECK(m.method() == "tools/call");
    CHECK(m.params().kind == json_kind::object);
    CHECK(m.params().text == R"({"name":"x","arguments":{"a":[1,2]}})");
  }

  TEST_CASE("params text survives moving the message") {
    // Views are offsets, so a moved message (short strings live inline) cannot dangle.
    message m = accepted(R"({"jsonrpc":"2.0","method":"a","params":{}})");
    message moved = std::move(m);
    CHECK(moved.params().text == "{}");
    CHECK(moved.kind() == message_kind::notification);
  }

  TEST_CASE("whitespace around params is not part of its text") {
    const message m = accepted("{ \"jsonrpc\" : \"2.0\" , \"id\" : \"a\" , \"method\" : \"m\" , \"params\" : [ 1 ] \n }");
    CHECK(m.params().text == "[ 1 ]");
    CHECK(m.id() == request_id(std::string("a")));
  }

  TEST_CASE("ids are echoed exactly at the int64 bounds and as escaped strings (2.8)") {
    for (std::int64_t n : {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                           std::int64_t{0}, std::int64_t{-1}}) {
      const std::string id = std::to_string(n);
      const message m = accepted(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
      CHECK(m.id().to_json() == id);
    }
    const message s = accepted(R"({"jsonrpc":"2.0","id":"a\u0000b\"c","method":"ping"})");
    CHECK(s.id().string() == std::string("a\0b\"c", 5));
    CHECK(boost::json::parse(s.id().to_json()) == boost::json::value(boost::json::string_view("a\0b\"c", 5)));
  }

  TEST_CASE("7 and \"7\" are different ids") {
    CHECK_FALSE(request_id(7) == request_id(std::string("7")));
    CHECK(std::hash<request_id>{}(request_id(7)) != std::hash<request_id>{}(request_id(std::string("7"))));
  }

  TEST_CASE("invalid JSON is a parse error with a null id (2.1)") {
    const rejection r = refused(R"({"jsonrpc":"2.0",)");
    CHECK(r.code == errc::parse_error);
    CHECK_FALSE(r.id);
    CHECK(r.answer);
  }

  TEST_CASE("invalid JSON inside an unvisited member is still a parse error (2.2)") {
    // The On-Demand pitfall: a lazy parser would answer this ping.
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[1,}})").code == errc::parse_error);
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","extra":[tru]})").code == errc::parse_error);
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","extra":01})").code == errc::parse_error);
  }

  TEST_CASE("an invalid escape in any string value is a parse error, wherever the string is") {
    for (const char* bad : {R"(\q)", R"(\x41)", R"(\u12)", R"(\u12G4)", R"(\U0041)", R"(a\\\')"}) {
      CAPTURE(bad);
      const std::string s = std::string("\"") + bad + "\"";
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)" + s + "}}").code == errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1,)" + s + "]}").code == errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":)" + s + "}").code == errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","extra":{"a":[)" + s + "]}}").code == errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"result":{"x":)" + s + "}}").code == errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":)" + s + "}}").code ==
            errc::parse_error);
      CHECK(refused(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":)" + s + "}}").code ==
            errc::parse_error);
      CHECK(refused(R"({"jsonrpc":)" + s + R"(,"id":1,"method":"ping"})").code == errc::parse_error);
      CHECK(refused(R"([)" + s + "]").code == errc::parse_error);
    }
    // Raw control characters, which stage 1 catches, stay refused as well.
    CHECK(refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"a\tb\"}}").code ==
          errc::parse_error);
    // Every valid escape still passes, at the start, the end and back to back.
    const std::string params =
        R"({"x":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00","y":"a\\","z":"\\\"","w":"\u0041 " ,"v":[""]})";
    CHECK(accepted(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":)" + params + "}").params().text == params);
  }

  TEST_CASE("number params, results and error data keep their text and re-encode") {
    for (const char* number : {"5", "-1.5e3", "0", "18446744073709551615", "1e300"}) {
      CAPTURE(number);
      const std::string n = number;
      const message p = accepted(R"({"jsonrpc":"2.0","id":1,"method":"m","params":)" + n + " }");
      CHECK(p.params().kind == json_kind::number);
      CHECK(p.params().text == n);
      const message r = accepted(R"({"jsonrpc":"2.0","id":1,"result":)" + n + "}");
      CHECK(r.result().kind == json_kind::number);
      CHECK(r.result().text == n);
      const message e = accepted(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":)" + n + "\n}}");
      CHECK(e.error_data().text == n);

      std::string out;
      droid::ir::append_result(out, r.id(), r.result().text);
      CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":)" + n + "}");
      CHECK(accepted(out).result().text == n);
      out.clear();
      droid::ir::append_error(out, e.id(), e.error_code(), e.error_message(), e.error_data().text);
      CHECK(accepted(out).error_data().text == n);
    }
    // The other scalars were already whole; they stay so.
    CHECK(accepted(R"({"jsonrpc":"2.0","id":1,"result":true})").result().text == "true");
    CHECK(accepted(R"({"jsonrpc":"2.0","id":1,"result":null})").result().text == "null");
    CHECK(accepted(R"({"jsonrpc":"2.0","id":1,"result":"s"})").result().text == R"("s")");
  }

  TEST_CASE("trailing content after the message is a parse error") {
    CHECK(refused(R"({"jsonrpc":"2.0","method":"ping"} {})").code == errc::parse_error);
  }

  TEST_CASE("scalar documents are invalid requests (2.3)") {
    for (const char* text : {"42", "\"x\"", "null", "true"}) {
      CAPTURE(text);
      const rejection r = refused(text);
      CHECK(r.code == errc::invalid_request);
      CHECK_FALSE(r.id);
    }
  }

  TEST_CASE("a missing or wrong jsonrpc is refused, echoing a valid id (2.4)") {
    rejection r = refused(R"({"id":5,"method":"ping"})");
    CHECK(r.code == errc::invalid_request);
    REQUIRE(r.id);
    CHECK(*r.id == request_id(5));
    r = refused(R"({"jsonrpc":"1.0","id":"k","method":"ping"})");
    CHECK(r.code == errc::invalid_request);
    CHECK(*r.id == request_id(std::string("k")));
    r = refused(R"({"jsonrpc":"1.0","id":1.5,"method":"ping"})");
    CHECK_FALSE(r.id);
  }

  TEST_CASE("a method that is not a string is refused with a null id (2.5)") {
    const rejection r = refused(R"({"jsonrpc":"2.0","id":1,"method":5})");
    CHECK(r.code == errc::invalid_request);
    CHECK_FALSE(r.id);
  }

  TEST_CASE("ids that are null, fractional, 1.0, boolean, objects or arrays are refused (2.6, 2.7)") {
    for (const char* id : {"null", "1.5", "1.0", "true", "{}", "[1]"}) {
      CAPTURE(id);
      const rejection r = refused(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}");
      CHECK(r.code == errc::invalid_request);
      CHECK_FALSE(r.id);
    }
  }

  TEST_CASE("ids beyond int64 are refused and never rounded (2.9)") {
    for (const char* id : {"9223372036854775808", "18446744073709551616", "1e308", "1e400"}) {
      CAPTURE(id);
      const rejection r = refused(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}");
      CHECK((r.code == errc::invalid_request || r.code == errc::parse_error));
      CHECK_FALSE(r.id);
    }
  }

  TEST_CASE("batches are refused as one invalid request (2.18, 2.19)") {
    for (const char* text : {"[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "[1,2,3]"}) {
      CAPTURE(text);
      const rejection r = refused(text);
      CHECK(r.code == errc::invalid_request);
      CHECK_FALSE(r.id);
      CHECK(r.message.find("batch") != std::string::npos);
    }
    // ...but a broken batch is a parse error first.
    CHECK(refused("[1,}").code == errc::parse_error);
  }

  TEST_CASE("member names match case-sensitively and exactly (2.21, 2.22)") {
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"Method":"ping"})").code == errc::invalid_request);
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"METHOD":"ping"})").code == errc::invalid_request);
    // "method\u0000" is an unknown member, not a second "method".
    const message n = accepted(R"({"jsonrpc":"2.0","ID":1,"method":"ping","id":2,"method\u0000":"x"})");
    CHECK(n.method() == "ping");
    CHECK(n.id() == request_id(2));
    const message m = accepted(R"({"jsonrpc":"2.0","ID":1,"method":"ping"})");
    CHECK(m.kind() == message_kind::notification);  // "ID" is not "id"
  }

  TEST_CASE("duplicate envelope keys are refused (2.22, decision 8)") {
    // simdjson is first-wins, JavaScript last-wins: accepting either is an inspection bypass.
    for (const char* text : {R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"})",
                             R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})",
                             R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{},"params":{}})",
                             R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"})"}) {
      CAPTURE(text);
      CHECK(refused(text).code == errc::invalid_request);
    }
  }

  TEST_CASE("nesting beyond the depth limit is a parse error, even very deep (2.23)") {
    const std::string deep129 =
        R"({"jsonrpc":"2.0","id":1,"method":"ping","params":)" + std::string(128, '[') + std::string(128, ']') + "}";
    CHECK(refused(deep129).code == errc::parse_error);
    const std::string deep_ok =
        R"({"jsonrpc":"2.0","id":1,"method":"ping","params":)" + std::string(100, '[') + std::string(100, ']') + "}";
    CHECK(accepted(deep_ok).params().kind == json_kind::array);
    const std::string hostile = std::string(100000, '[') + std::string(100000, ']');
    CHECK(refused(hostile).code == errc::parse_error);
  }

  TEST_CASE("invalid UTF-8, overlong encodings and a BOM are parse errors (2.24)") {
    CHECK(refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").code == errc::parse_error);
    CHECK(refused("{\"jsonrpc\":\"2.0\",\"method\":\"\xc0\xaf\"}").code == errc::parse_error);
    CHECK(refused("\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}").code == errc::parse_error);
  }

  TEST_CASE("a lone surrogate in params passes the envelope and fails where it is read (2.25)") {
    const message m = accepted(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}})");
    std::string_view detail;
    bool visited = false;
    const auto ec = droid::ir::visit_json(m.params().text, [&](const droid::ir::json_node&) { visited = true; }, &detail);
    CHECK(ec == errc::invalid_params);
    CHECK_FALSE(visited);
    CHECK_FALSE(detail.empty());
  }

  TEST_CASE("notifications, responses and errors are told apart") {
    CHECK(accepted(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").kind() == message_kind::notification);
    const message r = accepted(R"({"jsonrpc":"2.0","id":1099511627776,"result":{"ok":true}})");
    CHECK(r.kind() == message_kind::response);
    CHECK(r.result().text == R"({"ok":true})");
    const message e = accepted(R"({"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no \"way\"","data":[1]}})");
    CHECK(e.kind() == message_kind::error);
    CHECK(e.error_code() == -1);
    CHECK(e.error_message() == "no \"way\"");
    CHECK(e.error_data().text == "[1]");
  }

  TEST_CASE("a response with both result and error is dropped without an answer (2.17)") {
    const rejection r = refused(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}})");
    CHECK_FALSE(r.answer);
    CHECK_FALSE(refused(R"({"jsonrpc":"2.0","id":1,"error":{"code":"x"}})").answer);
  }

  TEST_CASE("a request carrying a result is refused") {
    CHECK(refused(R"({"jsonrpc":"2.0","id":1,"method":"ping","result":{}})").code == errc::invalid_request);
  }

  TEST_CASE("an object with neither method nor result is an invalid request") {
    const rejection r = refused(R"({"jsonrpc":"2.0","id":3})");
    CHECK(r.code == errc::invalid_request);
    CHECK(*r.id == request_id(3));
    CHECK(r.answer);
  }

  TEST_CASE("unknown top-level members are ignored (2.30)") {
    const message m = accepted(R"({"jsonrpc":"2.0","id":1,"method":"ping","x-extra":{"deep":[null,1e5]}})");
    CHECK(m.method() == "ping");
  }

  TEST_CASE("an escaped method name is unescaped") {
    CHECK(accepted(R"({"jsonrpc":"2.0","id":1,"method":"tools\/list"})").method() == "tools/list");
  }
}

TEST_SUITE("domain/ir/encode") {
  TEST_CASE("encoded responses parse back to the same values") {
    std::string out;
    droid::ir::append_result(out, request_id(std::string("q\"\n")), R"({"a":1})");
    auto v = boost::json::parse(out);
    CHECK(v.at("id") == boost::json::value("q\"\n"));
    CHECK(v.at("result").at("a") == 1);
    out.clear();
    droid::ir::append_error(out, std::nullopt, -32700, "bad \x01 input");
    v = boost::json::parse(out);
    CHECK(v.at("id").is_null());
    CHECK(v.at("error").at("code") == -32700);
    CHECK(v.at("error").at("message") == boost::json::value("bad \x01 input"));
  }

  TEST_CASE("strings are escaped wherever the escape falls in a word") {
    // The escaper tests eight bytes at a time: put every character that needs an escape
    // (and a few that do not: DEL, UTF-8, the bytes just above each one) at each offset
    // of strings long enough to span several words, and compare with Boost.JSON's reading.
    const std::string specials[] = {"\"", "\\", "\n", "\r", "\t", "\b", "\f", std::string(1, '\0'), "\x1f",
                                    "\x7f", "\xc3\xa9", "#", "]", "!", " "};
    for (const std::string& special : specials) {
      for (std::size_t at = 0; at < 20; ++at) {
        std::string text(19, 'a');
        text.insert(at, special);
        std::string out;
        droid::ir::append_json_string(out, text);
        CAPTURE(out);
        const boost::json::value back = boost::json::parse(out);
        REQUIRE(back.is_string());
        CHECK(std::string_view(back.get_string()) == text);
      }
    }
    std::string out;
    droid::ir::append_json_string(out, "");
    CHECK(out == "\"\"");
  }

  TEST_CASE("invalid UTF-8 is written as U+FFFD, one per maximal ill-formed subpart, at any offset") {
    // A handler may hand over any bytes (a decoded URI, a file's contents); the frame
    // must still be JSON, which the decoder would otherwise refuse.
    const std::string fffd = "\xEF\xBF\xBD";
    const std::pair<std::string, std::string> cases[] = {
        {"\xFF", fffd},
        {"\xC3", fffd},                              // cut short at the end
        {"\xC3(", fffd + "("},                       // cut short by ASCII
        {"\xE2\x82", fffd},                          // one maximal subpart, one replacement
        {"\xC0\xAF", fffd + fffd},                   // overlong: C0 never starts a character
        {"\xED\xA0\x80", fffd + fffd + fffd},        // a surrogate: ED A0 is already wrong
        {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
        {"\x80\xBF", fffd + fffd},                   // stray continuation bytes
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},    // valid four-byte UTF-8 is kept
        {"caf\xC3\xA9\n", "caf\xC3\xA9\n"},
    };
    for (const auto& [bad, fixed] : cases) {
      for (std::size_t at = 0; at < 12; ++at) {
        std::string text(11, 'a');
        text.insert(at, bad);
        std::string expected(11, 'a');
        expected.insert(at, fixed);
        std::string out;
        droid::ir::append_json_string(out, text);
        CAPTURE(out);
        const boost::json::value back = boost::json::parse(out);  // throws on invalid UTF-8
        REQUIRE(back.is_string());
        CHECK(std::string_view(back.get_string()) == expected);
      }
    }
    // Through the DOM writer too: a Boost.JSON string holds whatever bytes it was given.
    const std::string text = droid::ir::to_json_text(boost::json::object{{"k\xFF", "v\xFF"}});
    CHECK(text == "{\"k" + fffd + "\":\"v" + fffd + "\"}");
  }

  TEST_CASE("a result head, a result and a brace make the same response as append_result") {
    std::string whole, parts;
    droid::ir::append_result(whole, request_id(std::string("s")), R"({"a":1})");
    droid::ir::append_result_head(parts, request_id(std::string("s")));
    parts += R"({"a":1})";
    parts += '}';
    CHECK(parts == whole);
  }

  TEST_CASE("every double is written so that our decoder reads the same double back") {
    const double big = 0x1p64;
    for (const double d : {big, std::nextafter(big, 0.0), 1.5e19, 1e20, 1e21, 1e22, 123456789012345678901234.0, 1e300,
                           -0x1p63 - 1, -0x1p63, std::nextafter(-0x1p63, -big), -1e19, 0x1p63,
                           std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(), -0.0,
                           0.1, 20.0}) {
      const std::string text = droid::ir::to_json_text(boost::json::value(d));
      CAPTURE(text);
      const message m = accepted(R"({"jsonrpc":"2.0","id":1,"result":[)" + text + "]}");
      bool same = false;
      const auto ec = droid::ir::visit_json(m.result().text, [&](const droid::ir::json_node& n) {
        n.for_each_element([&](const droid::ir::json_node& e) { same = e.is_number() && e.number() == d; });
      });
      CHECK_FALSE(ec);
      CHECK(same);
    }
    CHECK(droid::ir::to_json_text(boost::json::value(big)) == "1.8446744073709552e+19");
    CHECK(droid::ir::to_json_text(boost::json::value(0x1p63)) == "9223372036854775808");
    CHECK(droid::ir::to_json_text(boost::json::value(-0x1p63)) == "-9223372036854775808");
  }

  TEST_CASE("numbers are written in their shortest form, non-finite as null") {
    boost::json::object o{{"a", 20.0}, {"b", 3.5}, {"c", std::numeric_limits<double>::infinity()}, {"d", -7}};
    CHECK(droid::ir::to_json_text(o) == R"({"a":20,"b":3.5,"c":null,"d":-7})");
  }
}

TEST_SUITE("domain/ir/encode") {
  TEST_CASE("is_utf8 holds exactly for the bytes append_json_string writes unchanged") {
    for (const std::string_view s : {std::string_view(""), std::string_view("plain"), std::string_view("caf\xC3\xA9"),
                                     std::string_view("\xF0\x9F\x98\x80")}) {
      CAPTURE(s);
      CHECK(droid::ir::is_utf8(s));
      std::string out;
      droid::ir::append_json_string(out, s);
      CHECK(out == "\"" + std::string(s) + "\"");
    }
    // An overlong form, a surrogate, past U+10FFFF, a lone continuation, a cut sequence:
    // each is rewritten by the encoder, so none may be sent as text.
    for (const std::string_view s : {std::string_view("\xC0\xAF"), std::string_view("\xED\xA0\x80"),
                                     std::string_view("\xF4\x90\x80\x80"), std::string_view("\x80"),
                                     std::string_view("\xE2\x82")}) {
      CAPTURE(s);
      CHECK_FALSE(droid::ir::is_utf8(s));
      std::string out;
      droid::ir::append_json_string(out, s);
      CHECK(out != "\"" + std::string(s) + "\"");
    }
  }
}
