// SPDX-License-Identifier: BSL-1.0
/// @file
/// Host, Origin, media type and session id checks.
#include "request_rules.hpp"

#include <sys/random.h>

#include <cctype>
#include <cerrno>
#include <system_error>

namespace droid::http::detail {
namespace {

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool all_digits(std::string_view s) noexcept {
  if (s.empty() || s.size() > 5) return false;
  for (const char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Splits "name[:port]" / "[v6][:port]" into the name; false when malformed.
bool host_name(std::string_view host, std::string_view& name) noexcept {
  if (host.empty()) return false;
  std::string_view port;
  if (host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
      if (!all_digits(port)) return false;
    }
    return true;
  }
  const auto colon = host.find(':');
  name = host.substr(0, colon);
  if (colon != std::string_view::npos) {
    port = host.substr(colon + 1);
    if (!all_digits(port)) return false;
  }
  return !name.empty();
}

}  // namespace

bool is_loopback_host(std::string_view host) noexcept {
  std::string_view name;
  if (!host_name(host, name)) return false;
  return iequals(name, "localhost") || name == "127.0.0.1" || name == "[::1]";
}

bool host_allowed(std::string_view host, bool local_is_loopback, const std::vector<std::string>& allowed) noexcept {
  std::string_view name;
  const bool well_formed = host_name(host, name);
  for (const std::string& a : allowed)
    if (well_formed && (iequals(name, a) || iequals(host, a))) return true;
  if (local_is_loopback) return is_loopback_host(host);
  return allowed.empty() && well_formed;
}

bool origin_allowed(const std::string_view* origin, const std::vector<std::string>& allowed) noexcept {
  if (!origin) return true;
  const std::string_view o = *origin;
  for (const std::string& a : allowed)
    if (iequals(o, a)) return true;
  std::string_view rest;
  if (o.size() > 7 && iequals(o.substr(0, 7), "http://")) {
    rest = o.substr(7);
  } else if (o.size() > 8 && iequals(o.substr(0, 8), "https://")) {
    rest = o.substr(8);
  } else {
    return false;  // "null", "about:blank", "not a url", other schemes
  }
  // An origin is scheme://host[:port] and nothing else: a path means it is not one.
  if (rest.find_first_of("/?#@ ") != std::string_view::npos) return false;
  return is_loopback_host(rest);
}

bool media_type_is(std::string_view content_type, std::string_view type) noexcept {
  return iequals(trim(content_type.substr(0, content_type.find(';'))), type);
}

bool accepts(std::string_view accept, std::string_view type) noexcept {
  // What the official SDK clients send, and so nearly every request: taken whole before
  // the ranges are read (reading it cost an event-stream POST about 170 instructions of
  // its 23,000, for the two types it is asked about).
  if (accept == "application/json, text/event-stream")
    return type == "application/json" || type == "text/event-stream";
  const std::string_view major = type.substr(0, type.find('/'));
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::string_view params;
    if (const auto semi = range.find(';'); semi != std::string_view::npos) {
      params = range.substr(semi);
      range = range.substr(0, semi);
    }
    range = trim(range);
    const bool matches = range == "*/*" || iequals(range, type) ||
                         (range.size() == major.size() + 2 && iequals(range.substr(0, major.size()), major) &&
                          range.substr(major.size()) == "/*");
    if (!matches) continue;
    // q=0 means "not acceptable".
    const auto q = params.find("q=");
    if (q != std::string_view::npos) {
      std::string_view v = trim(params.substr(q + 2));
      v = v.substr(0, v.find(';'));
      v = trim(v);
      bool zero = !v.empty();
      for (const char c : v)
        if (c != '0' && c != '.') zero = false;
      if (zero) continue;
    }
    return true;
  }
  return false;
}

std::string new_session_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string id;
  id.reserve(22);
  unsigned buffer = 0;
  int bits = 0;
  for (const unsigned char b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      id += alphabet[(buffer >> bits) & 63];
    }
  }
  if (bits > 0) id += alphabet[(buffer << (6 - bits)) & 63];
  return id;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  // Clients send media types and schemes in the case they are compared against: one
  // comparison of the bytes settles those, and the letter-by-letter fold below (about 200
  // instructions for "application/json", twice a request) runs only on a difference.
  if (a == b) return true;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::optional<std::string_view> query_param(std::string_view target, std::string_view name) noexcept {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  std::optional<std::string_view> found;
  while (true) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) found = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (amp == std::string_view::npos) return found;
    rest.remove_prefix(amp + 1);
  }
}

bool valid_session_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128) return false;
  // Every byte looked at, with no early exit: the compiler makes this a vector loop (a
  // session's every request checks its id; the loop that stopped at the first bad byte
  // cost about 160 instructions of each).
  bool bad = false;
  for (const char c : id) bad |= static_cast<unsigned char>(static_cast<unsigned char>(c) - 0x21) > 0x7E - 0x21;
  return !bad;
}

std::string cors_headers(std::string_view origin) {
  std::string out = "Access-Control-Allow-Origin: ";
  out += origin;
  out += "\r\nVary: Origin\r\nAccess-Control-Expose-Headers: Mcp-Session-Id, MCP-Protocol-Version, "
         "WWW-Authenticate, Retry-After\r\n";
  return out;
}

namespace {

/// A comma-separated list of header names (RFC 9110 tokens), as a preflight may ask for.
bool is_header_name_list(std::string_view list) noexcept {
  bool any = false, in_name = false;
  for (const char ch : list) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ',' || c == ' ' || c == '\t') {
      in_name = false;
      continue;
    }
    const bool token = std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
    if (!token) return false;
    any = in_name = true;
  }
  return any && list.size() <= 1024;
}

}  // namespace

std::string preflight_headers(std::string_view allow, const std::string_view* requested) {
  std::string out = "Access-Control-Allow-Methods: ";
  out += allow;
  out += "\r\nAccess-Control-Allow-Headers: ";
  if (requested && is_header_name_list(*requested)) {
    out += *requested;
  } else {
    out += "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, "
           "Mcp-Name";
  }
  out += "\r\nAccess-Control-Max-Age: 600\r\n";
  return out;
}

}  // namespace droid::http::detail
