// SPDX-License-Identifier: BSL-1.0
/// @file
/// HTTPS on the HTTP listener: a TLS client is served; plain HTTP on the TLS port and a
/// stalled handshake are closed within the header deadline; TLS 1.1 is refused; ALPN
/// names http/1.1; a reload swaps the certificate for new connections and keeps live ones;
/// bad files are start-up errors (docs/http.md#https).
#include <droid/adapters/primary/transport/http/http.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/ssl.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <doctest/doctest.h>

#include <droid/application/server/server.hpp>

#include "http_client.hpp"

using namespace std::chrono_literals;
using asio::ip::tcp;

namespace {

const std::string initialize_body =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

/// A scratch directory with a CA and server certificates for 127.0.0.1, made with the
/// openssl command line as an operator would.
struct certificates {
  std::filesystem::path dir;

  certificates() {
    char pattern[] = "/tmp/droid-tls-XXXXXX";
    REQUIRE(::mkdtemp(pattern));
    dir = pattern;
    issue("ca", "");
    issue("server", "ca");
    issue("renewed", "ca");
  }
  ~certificates() { std::filesystem::remove_all(dir); }

  [[nodiscard]] std::string file(const std::string& name) const { return (dir / name).string(); }

  /// A P-256 key and a certificate named `name` for 127.0.0.1, signed by `ca` (or by
  /// itself, as a CA, when `ca` is empty).
  void issue(const std::string& name, const std::string& ca) const {
    const std::string d = dir.string() + "/";
    std::string cmd = "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + d + name +
                      ".key -out " + d + name + ".csr -subj /CN=" + name + " 2>/dev/null && ";
    if (ca.empty()) {
      cmd += "openssl x509 -req -in " + d + name + ".csr -signkey " + d + name + ".key -out " + d + name +
             ".pem -days 2 -extfile <(printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=keyCertSign') 2>/dev/null";
    } else {
      cmd += "openssl x509 -req -in " + d + name + ".csr -CA " + d + ca + ".pem -CAkey " + d + ca +
             ".key -CAcreateserial -out " + d + name + ".pem -days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1') "
             "2>/dev/null";
    }
    REQUIRE(std::system(("bash -c \"" + cmd + "\"").c_str()) == 0);
  }
};

/// A TLS listener on an ephemeral loopback port, run on a thread of its own.
struct tls_fixture {
  droid::server srv{droid::server_info{.name = "tls-test", .version = "1"}};
  std::unique_ptr<droid::http::listener> listener;
  std::thread runner;

  explicit tls_fixture(const certificates& certs, droid::http::options opts = {}) {
    opts.tls_certificate_chain = certs.file("server.pem");
    opts.tls_private_key = certs.file("server.key");
    opts.threads = 2;
    // One JSON document per answer keeps this client simple; the TypeScript SDK's peer
    // test reads event streams over TLS.
    opts.reply = droid::http::streaming::json;
    listener = std::make_unique<droid::http::listener>(srv, opts);
    runner = std::thread([this] { listener->run(); });
  }
  ~tls_fixture() {
    listener->stop();
    runner.join();
  }
};

/// A blocking TLS client that trusts `ca_file` and checks the name 127.0.0.1.
struct tls_client {
  asio::io_context io;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  asio::ssl::stream<tcp::socket> stream{io, ctx};

  tls_client(std::uint16_t port, const std::string& ca_file, bool offer_alpn = true) {
    ctx.load_verify_file(ca_file);
    stream.set_verify_mode(asio::ssl::verify_peer);
    stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
    if (offer_alpn) {
      static const unsigned char protos[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
      SSL_set_alpn_protos(stream.native_handle(), protos, sizeof protos);
    }
    stream.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    stream.handshake(asio::ssl::stream_base::client);
  }

  [[nodiscard]] std::string alpn() {
    const unsigned char* p = nullptr;
    unsigned int n = 0;
    SSL_get0_alpn_selected(stream.native_handle(), &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  [[nodiscard]] std::string peer_name() {
    X509* cert = SSL_get1_peer_certificate(stream.native_handle());
    REQUIRE(cert);
    char name[256];
    X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof name);
    X509_free(cert);
    return name;
  }
  /// Sends one request and reads its response head and body (Content-Length only).
  std::string exchange(const std::string& request) {
    asio::write(stream, asio::buffer(request));
    asio::streambuf buf;
    asio::read_until(stream, buf, "\r\n\r\n");
    std::string text{asio::buffers_begin(buf.data()), asio::buffers_end(buf.data())};
    const auto head_end = text.find("\r\n\r\n") + 4;
    const auto at = text.find("Content-Length: ");
    const std::size_t length = std::stoul(text.substr(at + 16));
    std::error_code ec;
    while (text.size() < head_end + length && !ec) {
      char more[4096];
      const std::size_t n = stream.read_some(asio::buffer(more), ec);
      text.append(more, n);
    }
    return text;
  }
};

}  // namespace

TEST_SUITE("adapters/http") {
  TEST_CASE("https: a TLS client is served, verified against the CA, with ALPN http/1.1") {
    certificates certs;
    tls_fixture f(certs);
    CHECK(f.listener->url().rfind("https://127.0.0.1:", 0) == 0);
    tls_client c(f.listener->port(), certs.file("ca.pem"));
    CHECK(c.alpn() == "http/1.1");
    const std::string r = c.exchange(droid::test::mcp_post(initialize_body));
    CHECK(r.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(r.find("Mcp-Session-Id: ") != std::string::npos);
    CHECK(r.find("\"protocolVersion\":\"2025-11-25\"") != std::string::npos);
  }

  TEST_CASE("https: plain HTTP on the TLS port and a stalled handshake are closed within the header deadline") {
    certificates certs;
    droid::http::options o;
    o.header_timeout = 300ms;
    tls_fixture f(certs, o);
    {
      droid::test::raw_connection plain(f.listener->port());
      plain.send(droid::test::mcp_post(initialize_body));
      const auto start = std::chrono::steady_clock::now();
      CHECK(plain.closed_by_peer());
      CHECK(std::chrono::steady_clock::now() - start < 2s);
    }
    {
      droid::test::raw_connection stalled(f.listener->port());
      stalled.send("\x16\x03\x01");  // the first bytes of a ClientHello, then nothing
      const auto start = std::chrono::steady_clock::now();
      CHECK(stalled.closed_by_peer());
      const auto took = std::chrono::steady_clock::now() - start;
      CHECK(took >= 250ms);
      CHECK(took < 3s);
    }
    // The listener is unharmed.
    tls_client c(f.listener->port(), certs.file("ca.pem"));
    CHECK(c.exchange(droid::test::mcp_post(initialize_body)).rfind("HTTP/1.1 200", 0) == 0);
    CHECK(f.listener->sessions() == 1);
  }

  TEST_CASE("https: TLS 1.1 is refused") {
    certificates certs;
    tls_fixture f(certs);
    asio::io_context io;
    asio::ssl::context ctx{asio::ssl::context::tls_client};
    SSL_CTX_set_security_level(ctx.native_handle(), 0);  // let OpenSSL 3 offer 1.1 at all
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_1_VERSION);
    SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_1_VERSION);
    asio::ssl::stream<tcp::socket> s(io, ctx);
    s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.listener->port()));
    std::error_code ec;
    s.handshake(asio::ssl::stream_base::client, ec);
    CHECK(ec);
  }

  TEST_CASE("https: TLS 1.2 offers forward-secret AEAD suites only (RFC 9325 §4.2)") {
    // The test certificate is EC (P-256), so the ECDSA suites are the ones that can be
    // chosen; the refused ones are refused by the server's list, not by the key.
    certificates certs;
    tls_fixture f(certs);
    const auto handshake = [&](const char* suite) {
      asio::io_context io;
      asio::ssl::context ctx{asio::ssl::context::tls_client};
      SSL_CTX_set_security_level(ctx.native_handle(), 0);  // let OpenSSL 3 offer SHA-1 suites at all
      SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
      REQUIRE(SSL_CTX_set_cipher_list(ctx.native_handle(), suite) == 1);
      asio::ssl::stream<tcp::socket> s(io, ctx);
      s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), f.listener->port()));
      std::error_code ec;
      s.handshake(asio::ssl::stream_base::client, ec);
      return !ec;
    };
    CHECK(handshake("ECDHE-ECDSA-AES128-GCM-SHA256"));
    CHECK(handshake("ECDHE-ECDSA-AES256-GCM-SHA384"));
    CHECK(handshake("ECDHE-ECDSA-CHACHA20-POLY1305"));
    CHECK_FALSE(handshake("ECDHE-ECDSA-AES128-SHA"));     // CBC with SHA-1
    CHECK_FALSE(handshake("ECDHE-ECDSA-AES128-SHA256"));  // CBC
    CHECK_FALSE(handshake("AES128-GCM-SHA256"));          // static RSA key exchange
    CHECK_FALSE(handshake("AES128-SHA"));
  }

  TEST_CASE("https: reload_tls gives new connections the renewed certificate and keeps live ones") {
    certificates certs;
    tls_fixture f(certs);
    tls_client before(f.listener->port(), certs.file("ca.pem"));
    CHECK(before.peer_name() == "/CN=server");
    std::filesystem::copy_file(certs.file("renewed.pem"), certs.file("server.pem"),
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(certs.file("renewed.key"), certs.file("server.key"),
                               std::filesystem::copy_options::overwrite_existing);
    f.listener->reload_tls();
    tls_client after(f.listener->port(), certs.file("ca.pem"));
    CHECK(after.peer_name() == "/CN=renewed");
    // The connection made before the reload still carries requests.
    CHECK(before.exchange(droid::test::mcp_post(initialize_body)).rfind("HTTP/1.1 200", 0) == 0);
    CHECK(after.exchange(droid::test::mcp_post(initialize_body)).rfind("HTTP/1.1 200", 0) == 0);
    // A bad reload is refused and the current certificate kept.
    std::ofstream(certs.file("server.key")) << "not a key\n";
    CHECK_THROWS_AS(f.listener->reload_tls(), std::runtime_error);
    tls_client still(f.listener->port(), certs.file("ca.pem"));
    CHECK(still.peer_name() == "/CN=renewed");
  }

  TEST_CASE("https: missing, unreadable or mismatched files are start-up errors") {
    certificates certs;
    droid::server srv{droid::server_info{.name = "tls-test", .version = "1"}};
    droid::http::options o;
    o.tls_certificate_chain = certs.file("server.pem");
    CHECK_THROWS_AS(droid::http::listener(srv, o), std::invalid_argument);  // no key
    o.tls_private_key = certs.file("absent.key");
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("absent.key"), std::runtime_error);
    o.tls_private_key = certs.file("renewed.key");  // another certificate's key
    CHECK_THROWS_WITH_AS(droid::http::listener(srv, o), doctest::Contains("mismatch"), std::runtime_error);
    droid::http::options plain;
    droid::http::listener l(srv, plain);
    CHECK_THROWS_AS(l.reload_tls(), std::logic_error);
  }
}
