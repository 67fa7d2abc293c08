// SPDX-License-Identifier: BSL-1.0
/// @file
/// A deliberately dumb raw-socket HTTP/1.1 client for transport tests: it sends exactly
/// the bytes a test writes (so malformed requests can be sent) and parses responses
/// strictly enough to assert on status, headers and body.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace droid::test {

/// One parsed HTTP response.
struct http_response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lower-cased
  std::string body;  ///< de-chunked

  [[nodiscard]] const std::string* header(std::string_view lower_name) const {
    for (const auto& [k, v] : headers)
      if (k == lower_name) return &v;
    return nullptr;
  }
};

/// A blocking TCP connection to 127.0.0.1:port with a receive timeout.
class raw_connection {
 public:
  /// `from`: a loopback source address (any of 127.0.0.0/8 on Linux), so that one test
  /// can be several clients as the server counts them by address; null: the kernel's
  /// choice (127.0.0.1).
  explicit raw_connection(std::uint16_t port, int timeout_ms = 5000, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    if (from) {
      sockaddr_in source{};
      source.sin_family = AF_INET;
      if (::inet_pton(AF_INET, from, &source.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
        ::close(fd_);
        throw std::runtime_error("bind");
      }
    }
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect");
  }
  ~raw_connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send");
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// Reads one response; nullopt when the peer closed (or timed out) before one arrived.
  /// `to_head`: the response to a HEAD request, which has no body whatever its
  /// Content-Length says.
  std::optional<http_response> read_response(bool to_head = false) {
    http_response r;
    std::string line;
    if (!read_line(line)) return std::nullopt;
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) return std::nullopt;
    r.status = std::stoi(line.substr(9, 3));
    for (;;) {
      if (!read_line(line)) return std::nullopt;
      if (line.empty()) break;
      const auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers.emplace_back(std::move(name), std::move(value));
    }
    if (r.status == 100) return read_response(to_head);
    if (to_head) return r;
    if (const std::string* te = r.header("transfer-encoding"); te && *te == "chunked") {
      for (;;) {
        if (!read_line(line)) return std::nullopt;
        const std::size_t size = std::stoul(line, nullptr, 16);
        if (size == 0) {
          if (!read_line(line)) return std::nullopt;
          break;
        }
        std::string piece;
        if (!read_exact(size + 2, piece)) return std::nullopt;
        r.body += piece.substr(0, size);
      }
    } else if (const std::string* cl = r.header("content-length")) {
      std::string piece;
      if (!read_exact(std::stoul(*cl), piece)) return std::nullopt;
      r.body = std::move(piece);
    }
    return r;
  }

  /// Reads the head of a streamed response and then whatever arrives until `until`
  /// appears in the raw bytes (for SSE streams that stay open).
  std::string read_until(std::string_view until) {
    while (buffer_.find(until) == std::string::npos) {
      if (!fill()) break;
    }
    const auto at = buffer_.find(until);
    const std::size_t end = at == std::string::npos ? buffer_.size() : at + until.size();
    std::string out = buffer_.substr(0, end);
    buffer_.erase(0, end);
    return out;
  }

  /// True when the server closed the connection (EOF or reset within the timeout).
  bool closed_by_peer() {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n > 0) buffer_ += c;
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  /// Waits until the server has closed the connection, without reading anything: true
  /// when its end of input (a FIN) or a reset arrived within `timeout_ms`. What is unread
  /// stays unread.
  ///
  /// Why a close can be waited on: the listener counts a connection out in its destructor
  /// and the socket closes after that, so once the close arrives `connections()` no
  /// longer counts it. A FIN arrives only behind everything the server sent, so a client
  /// whose window is full sees only a reset, which the server sends when it closes with
  /// bytes of the client's still unread (send one after the request to arrange that).
  bool hung_up(int timeout_ms = 20'000) {
    pollfd p{fd_, POLLRDHUP, 0};
    return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  bool fill() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  bool read_line(std::string& line) {
    for (;;) {
      const auto nl = buffer_.find("\r\n");
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 2);
        return true;
      }
      if (!fill()) return false;
    }
  }
  bool read_exact(std::size_t n, std::string& out) {
    while (buffer_.size() < n)
      if (!fill()) return false;
    out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

/// A POST of `body` to `path` with MCP's headers; `extra` is inserted verbatim.
inline std::string mcp_post(std::string_view body, std::string_view extra = {}, std::string_view path = "/mcp") {
  std::string r = "POST ";
  r += path;
  r += " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
       "Accept: application/json, text/event-stream\r\nContent-Length: ";
  r += std::to_string(body.size());
  r += "\r\n";
  r += extra;
  r += "\r\n";
  r += body;
  return r;
}

}  // namespace droid::test
