// SPDX-License-Identifier: BSL-1.0
/// @file
/// JSON-RPC encoders: envelopes written by hand around pre-serialised payloads.
///
/// Why by hand and not through a `boost::json::object`: the payload (a result, params) is
/// already text by the time the envelope is written, and wrapping it in a DOM only to
/// serialise it again would copy every byte twice.
#include <droid/domain/ir/codec.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace droid::ir {

namespace {

/// Whether any of the eight bytes of `w` needs an escape: a control character, `"` or `\`.
///
/// Why eight at a time: tool results are mostly text that needs no escape at all, and
/// testing a word per step (the "has a byte less than n / equal to c" tricks) costs about
/// as much as testing one byte did. A word that may need one is re-read byte by byte.
constexpr bool needs_escape(std::uint64_t w) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
  const std::uint64_t below_space = (w - ones * 0x20) & ~w & highs;
  return (below_space | has_zero(w ^ (ones * '"')) | has_zero(w ^ (ones * '\\'))) != 0;
}

/// How many bytes at `s[i]` (a byte of 0x80 or above) form one UTF-8 character, or, as a
/// negative number, how many form the maximal ill-formed subpart that Unicode (section 3.9,
/// "U+FFFD substitution of maximal subparts") replaces with one U+FFFD. Strict: no
/// overlongs, no surrogates, nothing above U+10FFFF, as JSON text requires.
int utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto lead = static_cast<unsigned char>(s[i]);
  int len = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k < len; ++k) {
    if (i + static_cast<std::size_t>(k) >= s.size()) return -k;
    const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if (c < low || c > high) return -k;
    low = 0x80;
    high = 0xBF;
  }
  return len;
}

}  // namespace

bool is_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int len = utf8_sequence(s, i);
    if (len <= 0) return false;
    i += static_cast<std::size_t>(len);
  }
  return true;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  static constexpr std::uint64_t highs = 0x8080808080808080ULL;
  out.push_back('"');
  std::size_t run = 0;  // start of the current run of bytes written as they are
  std::size_t i = 0;
  while (i < s.size()) {
    // A short tail is padded with spaces, which need no escape, so it is one test too.
    // A word with a byte of 0x80 or above is re-read too: JSON text must be UTF-8, and
    // whatever a handler hands over (a decoded URI, a file's bytes) may not be.
    const std::size_t take = std::min<std::size_t>(8, s.size() - i);
    std::uint64_t w = 0x2020202020202020ULL;
    std::memcpy(&w, s.data() + i, take);
    if (!needs_escape(w) && (w & highs) == 0) {
      i += take;
      continue;
    }
    // A character may run past the word; the outer loop then resumes after it.
    for (const std::size_t end = i + take; i < end;) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) {
        const int len = utf8_sequence(s, i);
        if (len > 0) {
          i += static_cast<std::size_t>(len);
          continue;
        }
        out.append(s.data() + run, i - run);
        out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        i += static_cast<std::size_t>(-len);
        run = i;
        continue;
      }
      if (c >= 0x20 && c != '"' && c != '\\') {
        ++i;
        continue;
      }
      out.append(s.data() + run, i - run);
      run = ++i;
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: {
          const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
          out.append(esc, 6);
        }
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void request_id::append_json(std::string& out) const {
  if (is_integer()) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, integer());
    out.append(buf, end);
  } else {
    append_json_string(out, string());
  }
}

void append_json(std::string& out, const boost::json::value& v) {
  char buf[32];
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; return;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case boost::json::kind::int64: {
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_int64());
      out.append(buf, end);
      return;
    }
    case boost::json::kind::uint64: {
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_uint64());
      out.append(buf, end);
      return;
    }
    case boost::json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";
        return;
      }
      // The shortest form of an integral double is its digits (`20`), but simdjson-based
      // readers, ours included, refuse an integer outside [-2^63, 2^64): such a double is
      // written with an exponent (`1.8446744073709552e+19`), which every reader takes.
      const bool beyond_integers = d >= 0x1p64 || d < -0x1p63;
      auto [end, ec] = beyond_integers ? std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific)
                                       : std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, end);
      return;
    }
    case boost::json::kind::string: {
      const boost::json::string& s = v.get_string();
      append_json_string(out, std::string_view(s.data(), s.size()));
      return;
    }
    case boost::json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const boost::json::value& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        append_json(out, e);
      }
      out.push_back(']');
      return;
    }
    case boost::json::kind::object: append_json(out, v.get_object()); return;
  }
}

void append_json(std::string& out, const boost::json::object& o) {
  out.push_back('{');
  bool first = true;
  for (const auto& member : o) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, std::string_view(member.key().data(), member.key().size()));
    out.push_back(':');
    append_json(out, member.value());
  }
  out.push_back('}');
}

std::string to_json_text(const boost::json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

void append_result_head(std::string& out, const request_id& id) {
  out += R"({"jsonrpc":"2.0","id":)";
  id.append_json(out);
  out += R"(,"result":)";
}

void append_result(std::string& out, const request_id& id, std::string_view result_json) {
  append_result_head(out, id);
  out += result_json;
  out.push_back('}');
}

void append_error(std::string& out, const std::optional<request_id>& id, std::int64_t code,
                  std::string_view message, std::string_view data_json) {
  out += R"({"jsonrpc":"2.0","id":)";
  if (id) {
    id->append_json(out);
  } else {
    out += "null";
  }
  out += R"(,"error":{"code":)";
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, code);
  out.append(buf, end);
  out += R"(,"message":)";
  append_json_string(out, message);
  if (!data_json.empty()) {
    out += R"(,"data":)";
    out += data_json;
  }
  out += "}}";
}

void append_request(std::string& out, const request_id& id, std::string_view method, std::string_view params_json) {
  out += R"({"jsonrpc":"2.0","id":)";
  id.append_json(out);
  out += R"(,"method":)";
  append_json_string(out, method);
  if (!params_json.empty()) {
    out += R"(,"params":)";
    out += params_json;
  }
  out.push_back('}');
}

void append_notification(std::string& out, std::string_view method, std::string_view params_json) {
  out += R"({"jsonrpc":"2.0","method":)";
  append_json_string(out, method);
  if (!params_json.empty()) {
    out += R"(,"params":)";
    out += params_json;
  }
  out.push_back('}');
}

}  // namespace droid::ir
