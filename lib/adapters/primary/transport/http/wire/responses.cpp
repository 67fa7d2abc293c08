// SPDX-License-Identifier: BSL-1.0
#include "responses.hpp"

#include <charconv>
#include <optional>

#include <droid/domain/ir/codec.hpp>

namespace droid::http::detail {

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

const char* reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

void write_response(std::string& out, int status, std::string_view content_type, std::string_view body, bool close,
                    std::string_view extra_headers, bool head_only) {
  out.clear();
  out.reserve(160 + extra_headers.size() + body.size());
  if (status == 200 && content_type == "application/json") {
    // Nearly every answer: the status line and type in one append.
    out += "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
  } else {
    out += "HTTP/1.1 ";
    char digits[8];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, status).ptr);
    out += ' ';
    out += reason_phrase(status);
    out += "\r\n";
    if (!content_type.empty()) {
      out += "Content-Type: ";
      out += content_type;
      out += "\r\n";
    }
  }
  char length[48] = "Content-Length: ";
  constexpr std::size_t prefix = sizeof "Content-Length: " - 1;
  char* end = std::to_chars(length + prefix, length + sizeof length - 2, body.size()).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(length, end);
  if (close) out += "Connection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  if (!head_only) out += body;
}

void append_chunk_head(std::string& out, std::size_t size) {
  char hex[16];
  const auto [end, ec] = std::to_chars(hex, hex + sizeof hex, size, 16);
  out.append(hex, end);
  out += "\r\n";
}

void append_chunk(std::string& out, std::string_view data) {
  append_chunk_head(out, data.size());
  out += data;
  out += "\r\n";
}

std::string rpc_error_body(ir::errc code, std::string_view message) {
  std::string body;
  ir::append_error(body, std::nullopt, static_cast<std::int64_t>(code), message);
  return body;
}

std::string rpc_error_body(const ir::request_id& id, ir::errc code, std::string_view message, std::string_view data) {
  std::string body;
  ir::append_error(body, id, static_cast<std::int64_t>(code), message, data);
  return body;
}

}  // namespace droid::http::detail
