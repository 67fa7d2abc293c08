// SPDX-License-Identifier: BSL-1.0
#include "jwks_fetch.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <system_error>

#include <asio/connect.hpp>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl/error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <droid/application/use_task.hpp>

namespace droid::auth::detail {

namespace {

using asio::ip::tcp;

/// The status line and headers of an answer may take this much; a server that sends more
/// is not a key set endpoint.
constexpr std::size_t max_head_bytes = 16 * 1024;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_ip_literal(const std::string& host) {
  std::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

bool is_loopback(const std::string& host) {
  if (iequals(host, "localhost")) return true;
  std::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

/// Everything one fetch owns, shared with the timer's handler so that a timeout that
/// fires as the fetch ends finds either a live connection or nothing.
struct connection {
  connection(const asio::any_io_executor& ex, asio::ssl::context& ctx) : resolver(ex), stream(ex, ctx), timer(ex) {}
  tcp::resolver resolver;
  asio::ssl::stream<tcp::socket> stream;
  asio::steady_timer timer;
  bool timed_out = false;
};

/// Decodes a chunked body (RFC 9112 section 7.1) from `in` into `out`: 1 when it is
/// complete, 0 when more is needed, -1 when it is malformed or decodes to more than
/// `max` bytes.
int decode_chunked(std::string_view in, std::string& out, std::size_t max) {
  out.clear();
  std::size_t pos = 0;
  for (;;) {
    const std::size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return in.size() - pos > 1024 ? -1 : 0;
    std::size_t size = 0, digits = 0;
    for (std::size_t i = pos; i < eol && in[i] != ';'; ++i, ++digits) {
      const char c = in[i];
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0 || digits >= 8) return -1;
      size = size * 16 + static_cast<std::size_t>(v);
    }
    if (digits == 0) return -1;
    pos = eol + 2;
    if (size == 0) {
      for (;;) {  // trailer fields, up to the empty line
        const std::size_t end = in.find("\r\n", pos);
        if (end == std::string_view::npos) return 0;
        if (end == pos) return 1;
        pos = end + 2;
      }
    }
    if (out.size() + size > max) return -1;
    if (in.size() - pos < size + 2) return 0;
    out.append(in.substr(pos, size));
    if (in.substr(pos + size, 2) != "\r\n") return -1;
    pos += size + 2;
  }
}

/// How the body of an answer ends.
enum class framing { length, chunked, close };

/// A failed fetch and its reason, built by appending (g++ 12 at -O3 warns falsely on
/// `"literal" + std::string`).
template <class... Parts>
fetch_result failure(const Parts&... parts) {
  fetch_result r;
  (r.error.append(std::string_view(parts)), ...);
  return r;
}

}  // namespace

std::optional<fetch_target> parse_jwks_url(std::string_view url, std::string& error) {
  fetch_target t;
  std::string_view rest;
  if (url.size() > 8 && iequals(url.substr(0, 8), "https://")) {
    rest = url.substr(8);
  } else if (url.size() > 7 && iequals(url.substr(0, 7), "http://")) {
    t.tls = false;
    rest = url.substr(7);
  } else {
    error = "jwks_url must start with https://";
    return std::nullopt;
  }
  rest = rest.substr(0, rest.find('#'));
  const std::size_t path_at = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_at);
  t.target = path_at == std::string_view::npos ? "/" : std::string(rest.substr(path_at));
  if (t.target.front() == '?') t.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) {
    error = "jwks_url must not carry user information";
    return std::nullopt;
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "jwks_url has an unterminated IPv6 literal";
      return std::nullopt;
    }
    t.host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      error = "jwks_url has a malformed authority";
      return std::nullopt;
    }
    if (!after.empty()) port = after.substr(1);
  } else {
    const std::size_t colon = authority.find(':');
    t.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (t.host.empty()) {
    error = "jwks_url has no host";
    return std::nullopt;
  }
  if (!port.empty()) {
    unsigned long n = 0;
    for (const char c : port) {
      if (c < '0' || c > '9' || n > 65535) {
        error = "jwks_url has a malformed port";
        return std::nullopt;
      }
      n = n * 10 + static_cast<unsigned long>(c - '0');
    }
    if (n == 0 || n > 65535) {
      error = "jwks_url has a malformed port";
      return std::nullopt;
    }
    t.port = port;
  } else {
    t.port = t.tls ? "443" : "80";
  }
  if (!t.tls && !is_loopback(t.host)) {
    error = "jwks_url must be https:// (http:// is allowed for a loopback host only)";
    return std::nullopt;
  }
  return t;
}

std::shared_ptr<asio::ssl::context> make_client_tls_context(const std::string& ca_file) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  std::error_code ec;
  // A machine without a system store still works with an explicit ca_file.
  ctx->set_default_verify_paths(ec);
  if (!ca_file.empty()) {
    ctx->load_verify_file(ca_file, ec);
    if (ec) {
      std::string what = "ca_file ";
      what.append(ca_file).append(" cannot be read: ").append(ec.message());
      throw std::invalid_argument(what);
    }
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}

task<fetch_result> fetch_jwks(asio::any_io_executor executor, fetch_target target,
                              std::shared_ptr<asio::ssl::context> tls, std::chrono::milliseconds timeout,
                              std::size_t max_body) {
  auto c = std::make_shared<connection>(executor, *tls);
  c->timer.expires_after(timeout);
  c->timer.async_wait([weak = std::weak_ptr<connection>(c)](const std::error_code& ec) {
    if (ec) return;
    if (auto live = weak.lock()) {
      live->timed_out = true;
      live->resolver.cancel();
      std::error_code ignored;
      live->stream.next_layer().close(ignored);
    }
  });
  // Cancels the timer however the fetch ends, so its handler runs at once and lets go.
  struct disarm {
    connection& c;
    ~disarm() { c.timer.cancel(); }
  } disarm_on_exit{*c};

  auto [resolve_ec, endpoints] = co_await c->resolver.async_resolve(target.host, target.port, use_task);
  if (c->timed_out) co_return failure("timed out");
  if (resolve_ec) co_return failure("cannot resolve ", target.host, ": ", resolve_ec.message());
  auto [connect_ec, peer] = co_await asio::async_connect(c->stream.next_layer(), endpoints, use_task);
  (void)peer;
  if (c->timed_out) co_return failure("timed out");
  if (connect_ec) co_return failure("cannot connect: ", connect_ec.message());

  if (target.tls) {
    SSL* ssl = c->stream.native_handle();
    if (is_ip_literal(target.host)) {
      // An IP address is checked against the certificate's IP SANs; SNI carries names only.
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), target.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, target.host.c_str());
      SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      SSL_set1_host(ssl, target.host.c_str());
    }
    const std::error_code hs_ec = co_await c->stream.async_handshake(asio::ssl::stream_base::client, use_task);
    if (c->timed_out) co_return failure("timed out");
    if (hs_ec) co_return failure("TLS handshake failed: ", hs_ec.message());
  }

  std::string request = "GET ";
  request.append(target.target).append(" HTTP/1.1\r\nHost: ");
  if (target.host.find(':') != std::string::npos) request.append("[").append(target.host).append("]");
  else request.append(target.host);
  const bool default_port = target.port == (target.tls ? "443" : "80");
  if (!default_port) request.append(":").append(target.port);
  request.append("\r\nAccept: application/jwk-set+json, application/json\r\nConnection: close\r\n\r\n");
  std::error_code write_ec;
  std::size_t written = 0;
  if (target.tls) std::tie(write_ec, written) = co_await asio::async_write(c->stream, asio::buffer(request), use_task);
  else std::tie(write_ec, written) = co_await asio::async_write(c->stream.next_layer(), asio::buffer(request), use_task);
  if (c->timed_out) co_return failure("timed out");
  if (write_ec) co_return failure("cannot send the request: ", write_ec.message());

  std::string buf;
  std::size_t head_end = std::string::npos;  // first byte of the body
  framing how = framing::close;
  std::size_t length = 0;
  fetch_result result;
  char chunk[16 * 1024];
  for (;;) {
    std::error_code ec;
    std::size_t n = 0;
    if (target.tls) std::tie(ec, n) = co_await c->stream.async_read_some(asio::buffer(chunk), use_task);
    else std::tie(ec, n) = co_await c->stream.next_layer().async_read_some(asio::buffer(chunk), use_task);
    if (c->timed_out) co_return failure("timed out");
    buf.append(chunk, n);
    const bool eof = ec == asio::error::eof;
    if (ec && !eof) {
      // A TLS peer that closes without close_notify may have been cut short; only a body
      // whose framing says it is complete (handled below, before EOF) is trusted then.
      co_return failure("cannot read the answer: ", ec.message());
    }
    if (head_end == std::string::npos) {
      const std::size_t blank = buf.find("\r\n\r\n");
      if (blank == std::string::npos) {
        if (buf.size() > max_head_bytes) co_return failure("the answer's headers are too large");
        if (eof) co_return failure("the answer ended inside its headers");
        continue;
      }
      head_end = blank + 4;
      const std::string_view head(buf.data(), blank);
      // "HTTP/1.1 200 OK": the status is the three characters after the first space.
      if (head.size() < 12 || head.substr(0, 5) != "HTTP/" || head.find(' ') == std::string_view::npos)
        co_return failure("the answer is not HTTP");
      const std::string_view status = head.substr(head.find(' ') + 1, 3);
      if (status != "200") co_return failure("the answer's status is ", status, ", not 200");
      bool has_length = false;
      std::size_t pos = head.find("\r\n");
      while (pos != std::string_view::npos) {
        const std::size_t start = pos + 2;
        pos = head.find("\r\n", start);
        const std::string_view line = head.substr(start, pos == std::string_view::npos ? head.npos : pos - start);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = line.substr(0, colon);
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        if (iequals(name, "transfer-encoding")) {
          if (!iequals(value, "chunked")) co_return failure("the answer's transfer coding is not chunked");
          how = framing::chunked;
        } else if (iequals(name, "content-length")) {
          std::size_t v = 0;
          if (value.empty() || value.size() > 12) co_return failure("the answer's Content-Length is malformed");
          for (const char d : value) {
            if (d < '0' || d > '9') co_return failure("the answer's Content-Length is malformed");
            v = v * 10 + static_cast<std::size_t>(d - '0');
          }
          if (has_length && v != length) co_return failure("the answer has two Content-Lengths");
          has_length = true;
          length = v;
        }
      }
      // Transfer-Encoding with Content-Length is how requests are smuggled; refused.
      if (has_length && how == framing::chunked) co_return failure("the answer has both framings");
      if (has_length) {
        how = framing::length;
        if (length > max_body) co_return failure("the key set is larger than max_jwks_bytes");
      }
    }
    const std::string_view body = std::string_view(buf).substr(head_end);
    if (how == framing::length) {
      if (body.size() >= length) {
        result.body = body.substr(0, length);
        break;
      }
    } else if (how == framing::chunked) {
      const int state = decode_chunked(body, result.body, max_body);
      if (state < 0) co_return failure("the answer's chunked body is malformed or larger than max_jwks_bytes");
      if (state > 0) break;
    } else {
      if (body.size() > max_body) co_return failure("the key set is larger than max_jwks_bytes");
      if (eof) {
        result.body = body;
        break;
      }
    }
    if (eof) co_return failure("the answer ended before its body did");
  }
  std::error_code ignored;
  c->stream.next_layer().close(ignored);
  result.ok = true;
  co_return result;
}

}  // namespace droid::auth::detail
