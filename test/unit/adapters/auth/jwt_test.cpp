// SPDX-License-Identifier: BSL-1.0
/// @file
/// The JWT verifier against real OpenSSL: keys made here (RSA 2048, P-256, Ed25519),
/// tokens signed here, every refusal with its exact `token_error`; and the JWKS URL
/// against an HTTPS server run inside the test (first fetch, rotation, the refresh rate
/// limit, coalesced fetches, failures, the size cap, http:// on loopback).
#include <droid/adapters/secondary/auth/jwt.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/ssl.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <doctest/doctest.h>

#include <droid/application/spawn.hpp>

using namespace std::chrono_literals;
using droid::auth::token_error;
using asio::ip::tcp;

namespace {

const std::string issuer = "https://auth.example.com";
const std::string audience = "https://mcp.example.com/mcp";

struct pkey_free {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

std::string b64url(std::string_view bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(alphabet[(v >> s) & 63]);
  }
  if (bytes.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
  } else if (bytes.size() - i == 2) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8;
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(alphabet[(v >> 6) & 63]);
  }
  return out;
}

std::string bn_bytes(EVP_PKEY* k, const char* name, int pad = 0) {
  BIGNUM* bn = nullptr;
  REQUIRE(EVP_PKEY_get_bn_param(k, name, &bn) == 1);
  std::string out(static_cast<std::size_t>(pad ? pad : BN_num_bytes(bn)), '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
  BN_free(bn);
  return out;
}

/// A signing key made here and how it appears in a JWKS.
struct test_key {
  std::string alg;
  std::string kid;
  std::shared_ptr<EVP_PKEY> key;

  [[nodiscard]] boost::json::object jwk() const {
    boost::json::object o;
    if (!kid.empty()) o["kid"] = kid;
    o["use"] = "sig";
    if (alg == "RS256") {
      o["kty"] = "RSA";
      o["n"] = b64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_N));
      o["e"] = b64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_E));
    } else if (alg == "ES256") {
      o["kty"] = "EC";
      o["crv"] = "P-256";
      o["x"] = b64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_EC_PUB_X, 32));
      o["y"] = b64url(bn_bytes(key.get(), OSSL_PKEY_PARAM_EC_PUB_Y, 32));
    } else {
      o["kty"] = "OKP";
      o["crv"] = "Ed25519";
      std::string raw(32, '\0');
      std::size_t len = raw.size();
      REQUIRE(EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(raw.data()), &len) == 1);
      o["x"] = b64url(raw);
    }
    return o;
  }

  /// The JWS signature of `input` by this key, in JWS form (r||s for ES256).
  [[nodiscard]] std::string sign(std::string_view input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const EVP_MD* md = alg == "EdDSA" ? nullptr : EVP_sha256();
    REQUIRE(EVP_DigestSignInit(ctx, nullptr, md, nullptr, key.get()) == 1);
    std::size_t len = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    REQUIRE(EVP_DigestSign(ctx, nullptr, &len, data, input.size()) == 1);
    std::string sig(len, '\0');
    REQUIRE(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, data, input.size()) == 1);
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    if (alg != "ES256") return sig;
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    REQUIRE(es);
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(es);
    return raw;
  }
};

test_key make_key(const std::string& alg, const std::string& kid, unsigned rsa_bits = 2048) {
  EVP_PKEY* k = nullptr;
  if (alg == "RS256") k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(rsa_bits));
  else if (alg == "ES256") k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  else k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  REQUIRE(k);
  return test_key{alg, kid, std::shared_ptr<EVP_PKEY>(k, EVP_PKEY_free)};
}

/// The keys every case shares, made once: RSA key generation is the slow part.
struct keys {
  test_key rsa = make_key("RS256", "rsa-1");
  test_key rsa_other = make_key("RS256", "rsa-1");  // another key under the same kid
  test_key ec = make_key("ES256", "ec-1");
  test_key ed = make_key("EdDSA", "ed-1");
  test_key rotated = make_key("ES256", "ec-2");
};
const keys& k() {
  static const keys all;
  return all;
}

std::string jwks(const std::vector<const test_key*>& ks) {
  boost::json::array a;
  for (const auto* key : ks) a.push_back(key->jwk());
  boost::json::object doc;
  doc["keys"] = std::move(a);
  return boost::json::serialize(doc);
}

boost::json::object good_claims() {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  boost::json::object c;
  c["iss"] = issuer;
  c["aud"] = audience;
  c["sub"] = "alice";
  c["client_id"] = "inspector";
  c["scope"] = "tools:read tools:call tools:read";
  c["iat"] = now;
  c["exp"] = now + 300;
  return c;
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A compact JWS of `header` and `claims` (raw JSON texts) signed by `key`.
std::string sign_raw(const test_key& key, const std::string& header, const std::string& claims) {
  std::string input = b64url(header);
  input.append(".").append(b64url(claims));
  const std::string sig = b64url(key.sign(input));
  input.append(".").append(sig);
  return input;
}

std::string header_for(const test_key& key) {
  boost::json::object h;
  h["alg"] = key.alg;
  h["typ"] = "at+jwt";
  if (!key.kid.empty()) h["kid"] = key.kid;
  return boost::json::serialize(h);
}

std::string token(const test_key& key, const boost::json::object& claims = good_claims()) {
  return sign_raw(key, header_for(key), boost::json::serialize(claims));
}

/// A file in a scratch directory, removed with the object.
struct temp_dir {
  std::filesystem::path dir;
  temp_dir() {
    char pattern[] = "/tmp/droid-jwt-XXXXXX";
    REQUIRE(::mkdtemp(pattern));
    dir = pattern;
  }
  ~temp_dir() { std::filesystem::remove_all(dir); }
  [[nodiscard]] std::string write(const std::string& name, const std::string& text) const {
    const auto path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

/// Runs one verification on an io_context of its own and checks it resumed there.
droid::auth::verification verify(droid::auth::token_verifier& v, const std::string& t) {
  asio::io_context ioc;
  droid::auth::verification out;
  bool done = false;
  std::thread::id resumed_on;
  droid::spawn(ioc.get_executor(), v.verify(t, ioc.get_executor()),
               [&](std::exception_ptr e, droid::auth::verification r) {
                 REQUIRE(!e);
                 out = std::move(r);
                 resumed_on = std::this_thread::get_id();
                 done = true;
               });
  ioc.run();
  REQUIRE(done);
  CHECK(resumed_on == std::this_thread::get_id());
  if (out.error == token_error::none) REQUIRE(out.who);
  else CHECK(!out.who);
  return out;
}

droid::auth::jwt_options file_options(const temp_dir& dir, const std::string& set) {
  droid::auth::jwt_options o;
  o.issuer = issuer;
  o.audience = audience;
  o.jwks_file = dir.write("jwks.json", set);
  return o;
}

/// A verifier over every key of `k()` but `rsa_other` and `rotated`, from a file.
std::shared_ptr<droid::auth::token_verifier> file_verifier(const temp_dir& dir) {
  return droid::auth::make_jwt_verifier(file_options(dir, jwks({&k().rsa, &k().ec, &k().ed})));
}

token_error error_of(droid::auth::token_verifier& v, const std::string& t) { return verify(v, t).error; }

/// A self-signed certificate for `san` (127.0.0.1 by default) and its key, as PEM files.
struct certificate {
  std::string cert_file, key_file;

  certificate(const temp_dir& dir, const std::string& name, const char* san = "IP:127.0.0.1") {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    REQUIRE(key);
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, key);
    X509_NAME* subject = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                               -1, 0);
    X509_set_issuer_name(x, subject);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
    for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, san},
                                     std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
      REQUIRE(ext);
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    REQUIRE(X509_sign(x, key, EVP_sha256()) > 0);
    cert_file = (dir.dir / (name + ".pem")).string();
    key_file = (dir.dir / (name + ".key")).string();
    FILE* f = std::fopen(cert_file.c_str(), "w");
    PEM_write_X509(f, x);
    std::fclose(f);
    f = std::fopen(key_file.c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(x);
    EVP_PKEY_free(key);
  }
};

/// A JWKS endpoint on a loopback ephemeral port, one connection at a time on a thread of
/// its own, counting the requests it answered.
struct jwks_server {
  enum class framing { length, chunked, close };

  asio::io_context ioc;
  tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  std::unique_ptr<asio::ssl::context> tls;
  std::atomic<int> requests{0};
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::string body;                    // guarded by mutex
  int status = 200;                    // guarded by mutex
  framing how = framing::length;       // guarded by mutex
  std::chrono::milliseconds delay{0};  // guarded by mutex
  std::condition_variable stopped;     // ends a delay early, so a slow server stops at once
  std::thread thread;

  explicit jwks_server(const certificate* cert) {
    if (cert) {
      tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      tls->use_certificate_chain_file(cert->cert_file);
      tls->use_private_key_file(cert->key_file, asio::ssl::context::pem);
    }
    thread = std::thread([this] { run(); });
  }
  ~jwks_server() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    stopped.notify_all();
    std::error_code ec;
    tcp::socket poke(ioc);
    poke.connect(acceptor.local_endpoint(), ec);
    thread.join();
  }

  void serve(std::string b, framing f = framing::length, int s = 200) {
    std::lock_guard lock(mutex);
    body = std::move(b);
    how = f;
    status = s;
  }

  [[nodiscard]] std::string url() const {
    std::string u = tls ? "https://127.0.0.1:" : "http://127.0.0.1:";
    u.append(std::to_string(acceptor.local_endpoint().port())).append("/.well-known/jwks.json");
    return u;
  }

  void run() {
    for (;;) {
      tcp::socket s(ioc);
      std::error_code ec;
      acceptor.accept(s, ec);
      if (stopping) return;
      if (ec) continue;
      if (tls) {
        asio::ssl::stream<tcp::socket&> stream(s, *tls);
        stream.handshake(asio::ssl::stream_base::server, ec);
        if (!ec) answer(stream);
      } else {
        answer(s);
      }
    }
  }

  template <class Stream>
  void answer(Stream& stream) {
    asio::streambuf in;
    std::error_code ec;
    asio::read_until(stream, in, "\r\n\r\n", ec);
    if (ec) return;
    ++requests;
    std::string b;
    framing f;
    int st;
    {
      std::unique_lock lock(mutex);
      b = body;
      f = how;
      st = status;
      if (stopped.wait_for(lock, delay, [this] { return stopping.load(); })) return;
    }
    std::string out = "HTTP/1.1 ";
    out.append(std::to_string(st)).append(" X\r\nContent-Type: application/json\r\nConnection: close\r\n");
    if (f == framing::length) {
      out.append("Content-Length: ").append(std::to_string(b.size())).append("\r\n\r\n").append(b);
    } else if (f == framing::chunked) {
      out.append("Transfer-Encoding: chunked\r\n\r\n");
      const std::size_t half = b.size() / 2;
      char size[32];
      std::snprintf(size, sizeof size, "%zx;ext=1\r\n", half);
      out.append(size).append(b.substr(0, half)).append("\r\n");
      std::snprintf(size, sizeof size, "%zX\r\n", b.size() - half);
      out.append(size).append(b.substr(half)).append("\r\n0\r\n\r\n");
    } else {
      out.append("\r\n").append(b);
    }
    asio::write(stream, asio::buffer(out), ec);
    if constexpr (requires { stream.shutdown(ec); }) stream.shutdown(ec);
  }
};

droid::auth::jwt_options url_options(const jwks_server& server, const certificate* ca) {
  droid::auth::jwt_options o;
  o.issuer = issuer;
  o.audience = audience;
  o.jwks_url = server.url();
  if (ca) o.ca_file = ca->cert_file;
  o.min_refresh_interval = 0ms;
  o.fetch_timeout = 2s;
  return o;
}

}  // namespace

TEST_SUITE("auth") {
  TEST_CASE("a valid token of each algorithm gives its principal") {
    temp_dir dir;
    auto v = file_verifier(dir);
    for (const test_key* key : {&k().rsa, &k().ec, &k().ed}) {
      CAPTURE(key->alg);
      const auto r = verify(*v, token(*key));
      REQUIRE(r.error == token_error::none);
      CHECK(r.who->issuer == issuer);
      CHECK(r.who->subject == "alice");
      CHECK(r.who->client_id == "inspector");
      CHECK(r.who->scopes == std::vector<std::string>{"tools:read", "tools:call"});
      CHECK(r.who->claims.at("sub").as_string() == "alice");
      CHECK(r.who->expires_at > std::chrono::system_clock::now());
      CHECK(r.who->expires_at < std::chrono::system_clock::now() + 301s);
    }
    SUBCASE("scp as an array, azp as the client, typ JWT, at+jwt (with or without application/) or absent") {
      auto c = good_claims();
      c.erase("scope");
      c.erase("client_id");
      c["azp"] = "other-client";
      c["scp"] = boost::json::array{"a", "b", "a"};
      for (const char* typ : {"JWT", "jwt", "AT+JWT", "application/at+jwt", "Application/JWT", ""}) {
        boost::json::object h{{"alg", "EdDSA"}, {"kid", "ed-1"}};
        if (*typ) h["typ"] = typ;
        const auto r = verify(*v, sign_raw(k().ed, boost::json::serialize(h), boost::json::serialize(c)));
        REQUIRE(r.error == token_error::none);
        CHECK(r.who->scopes == std::vector<std::string>{"a", "b"});
        CHECK(r.who->client_id == "other-client");
      }
      boost::json::object h{{"alg", "EdDSA"}, {"kid", "ed-1"}, {"typ", "JOSE+JSON"}};
      CHECK(error_of(*v, sign_raw(k().ed, boost::json::serialize(h), boost::json::serialize(c))) ==
            token_error::malformed);
      h["typ"] = "application/logout+jwt";
      CHECK(error_of(*v, sign_raw(k().ed, boost::json::serialize(h), boost::json::serialize(c))) ==
            token_error::malformed);
    }
  }

  TEST_CASE("time claims: exp, its leeway, nbf and iat") {
    temp_dir dir;
    auto v = file_verifier(dir);
    auto c = good_claims();
    c["exp"] = now_s() - 120;
    CHECK(error_of(*v, token(k().ec, c)) == token_error::expired);
    c["exp"] = now_s() - 10;  // within the 30 s leeway
    CHECK(error_of(*v, token(k().ec, c)) == token_error::none);
    c = good_claims();
    c["nbf"] = now_s() + 120;
    CHECK(error_of(*v, token(k().ec, c)) == token_error::not_yet_valid);
    c = good_claims();
    c["iat"] = now_s() + 120;
    CHECK(error_of(*v, token(k().ec, c)) == token_error::not_yet_valid);
    c = good_claims();
    c.erase("exp");
    CHECK(error_of(*v, token(k().ec, c)) == token_error::malformed);
    c = good_claims();
    c["exp"] = "tomorrow";
    CHECK(error_of(*v, token(k().ec, c)) == token_error::malformed);
  }

  TEST_CASE("issuer, audience, resource and subject") {
    temp_dir dir;
    auto v = file_verifier(dir);
    auto c = good_claims();
    c["iss"] = "https://auth.example.com/";  // exact match: a trailing slash is another issuer
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_issuer);
    c.erase("iss");
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_issuer);
    c = good_claims();
    c["aud"] = "https://other.example.com/mcp";
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_audience);
    c["aud"] = boost::json::array{"https://other.example.com/mcp", audience};
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::none);
    c["aud"] = boost::json::array{"https://other.example.com/mcp"};
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_audience);
    c.erase("aud");
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_audience);
    // A `resource` claim names what was asked for, not the audience (RFC 9068 §4).
    c["resource"] = audience;
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_audience);
    c["aud"] = "https://other.example.com/mcp";
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::wrong_audience);
    c = good_claims();
    c.erase("sub");
    CHECK(error_of(*v, token(k().rsa, c)) == token_error::malformed);
  }

  TEST_CASE("signatures and algorithms") {
    temp_dir dir;
    auto v = file_verifier(dir);
    const std::string claims = boost::json::serialize(good_claims());
    SUBCASE("another key under the same kid") {
      CHECK(error_of(*v, token(k().rsa_other)) == token_error::bad_signature);
    }
    SUBCASE("a signature of other claims") {
      const std::string a = token(k().ed);
      auto c = good_claims();
      c["sub"] = "mallory";
      const std::string b = token(k().ed, c);
      const std::string spliced = b.substr(0, b.rfind('.')) + a.substr(a.rfind('.'));
      CHECK(error_of(*v, spliced) == token_error::bad_signature);
    }
    SUBCASE("alg none with an empty signature") {
      const std::string t = b64url(R"({"alg":"none","kid":"rsa-1"})") + "." + b64url(claims) + ".";
      CHECK(error_of(*v, t) == token_error::bad_signature);
    }
    SUBCASE("HS256 keyed with the RSA public key (algorithm confusion)") {
      const std::vector<std::string> secrets{std::string(k().rsa.jwk().at("n").as_string()),
                                             boost::json::serialize(k().rsa.jwk())};
      for (const std::string& secret : secrets) {
        const std::string input = b64url(R"({"alg":"HS256","kid":"rsa-1"})") + "." + b64url(claims);
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        REQUIRE(HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                     reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len));
        const std::string t = input + "." + b64url(std::string(reinterpret_cast<char*>(mac), len));
        CHECK(error_of(*v, t) == token_error::bad_signature);
      }
    }
    SUBCASE("an RS256 header on an EC key's kid, an ES256 header on an RSA key's") {
      const std::string rs_on_ec = sign_raw(k().rsa, R"({"alg":"RS256","kid":"ec-1"})", claims);
      CHECK(error_of(*v, rs_on_ec) == token_error::bad_signature);
      const std::string es_on_rsa = sign_raw(k().ec, R"({"alg":"ES256","kid":"rsa-1"})", claims);
      CHECK(error_of(*v, es_on_rsa) == token_error::bad_signature);
    }
    SUBCASE("an ES256 signature of the wrong length") {
      const std::string t = token(k().ec);
      const std::string input = t.substr(0, t.rfind('.') + 1);
      CHECK(error_of(*v, input + b64url(std::string(63, 'x'))) == token_error::bad_signature);
      CHECK(error_of(*v, input + b64url(std::string(65, 'x'))) == token_error::bad_signature);
      CHECK(error_of(*v, input) == token_error::bad_signature);
    }
    SUBCASE("crit in the header") {
      const std::string t = sign_raw(k().ec, R"({"alg":"ES256","kid":"ec-1","crit":["exp"],"exp":1})", claims);
      CHECK(error_of(*v, t) == token_error::bad_signature);
    }
    SUBCASE("other algorithms") {
      for (const char* alg : {"RS384", "PS256", "ES384", "HS512", "NONE"}) {
        std::string h = R"({"alg":")";
        h.append(alg).append(R"("})");
        CHECK(error_of(*v, sign_raw(k().rsa, h, claims)) == token_error::bad_signature);
      }
    }
  }

  TEST_CASE("key selection by kid") {
    temp_dir dir;
    auto v = file_verifier(dir);
    const std::string claims = boost::json::serialize(good_claims());
    CHECK(error_of(*v, token(k().rotated)) == token_error::unknown_key);
    // Without kid: the one key of the algorithm's type is used.
    CHECK(error_of(*v, sign_raw(k().ed, R"({"alg":"EdDSA"})", claims)) == token_error::none);
    // Two EC keys and no kid: the token cannot pick one.
    auto two_ec = droid::auth::make_jwt_verifier(file_options(dir, jwks({&k().ec, &k().rotated})));
    CHECK(error_of(*two_ec, sign_raw(k().ec, R"({"alg":"ES256"})", claims)) == token_error::unknown_key);
    CHECK(error_of(*two_ec, token(k().rotated)) == token_error::none);
  }

  TEST_CASE("the token's form") {
    temp_dir dir;
    auto v = file_verifier(dir);
    const std::string t = token(k().ed);
    CHECK(error_of(*v, "") == token_error::malformed);
    CHECK(error_of(*v, t.substr(0, t.size() / 2)) == token_error::malformed);
    CHECK(error_of(*v, t.substr(0, t.rfind('.'))) == token_error::malformed);  // 2 segments
    CHECK(error_of(*v, t + ".AAAA") == token_error::malformed);                // 4 segments
    CHECK(error_of(*v, t + "=") == token_error::malformed);
    std::string plus = t, slash = t;
    plus[plus.size() - 2] = '+';
    slash[slash.size() - 2] = '/';
    CHECK(error_of(*v, plus) == token_error::malformed);
    CHECK(error_of(*v, slash) == token_error::malformed);
    CHECK(error_of(*v, "a.b c.d") == token_error::malformed);
    auto big = good_claims();
    big["pad"] = std::string(9000, 'x');
    CHECK(error_of(*v, token(k().ed, big)) == token_error::malformed);
    const std::string claims = boost::json::serialize(good_claims());
    CHECK(error_of(*v, sign_raw(k().ed, "not json", claims)) == token_error::malformed);
    CHECK(error_of(*v, sign_raw(k().ed, R"(["alg","EdDSA"])", claims)) == token_error::malformed);
    CHECK(error_of(*v, sign_raw(k().ed, R"({"kid":"ed-1"})", claims)) == token_error::malformed);
    CHECK(error_of(*v, sign_raw(k().ed, R"({"alg":"EdDSA","kid":7})", claims)) == token_error::malformed);
    CHECK(error_of(*v, sign_raw(k().ed, header_for(k().ed), "not json")) == token_error::malformed);
    CHECK(error_of(*v, sign_raw(k().ed, header_for(k().ed), "[1,2]")) == token_error::malformed);
  }

  TEST_CASE("the key set file: skipped keys and configuration errors") {
    temp_dir dir;
    // An encryption key, a weak RSA key, an unknown curve and a disagreeing alg are
    // skipped; the usable key beside them is kept.
    boost::json::object enc = k().ec.jwk();
    enc["use"] = "enc";
    enc["kid"] = "enc";
    boost::json::object weak = make_key("RS256", "weak", 1024).jwk();
    boost::json::object p384 = k().ec.jwk();
    p384["crv"] = "P-384";
    p384["kid"] = "p384";
    boost::json::object disagreeing = k().rsa.jwk();
    disagreeing["alg"] = "ES256";
    boost::json::object off_curve = k().ec.jwk();
    off_curve["kid"] = "off";
    off_curve["y"] = off_curve["x"];
    boost::json::object doc{{"keys", boost::json::array{enc, weak, p384, disagreeing, off_curve, k().ed.jwk()}}};
    auto v = droid::auth::make_jwt_verifier(file_options(dir, boost::json::serialize(doc)));
    CHECK(error_of(*v, token(k().ed)) == token_error::none);
    CHECK(error_of(*v, token(k().rsa)) == token_error::unknown_key);
    CHECK(error_of(*v, sign_raw(k().ec, R"({"alg":"ES256","kid":"enc"})", boost::json::serialize(good_claims()))) ==
          token_error::unknown_key);

    auto throws = [](const droid::auth::jwt_options& o, const std::string& expected) {
      CAPTURE(expected);
      try {
        (void)droid::auth::make_jwt_verifier(o);
        FAIL("no exception");
      } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find(expected) != std::string::npos);
      }
    };
    const auto good = file_options(dir, jwks({&k().ec}));
    auto o = good;
    o.issuer.clear();
    throws(o, "issuer");
    o = good;
    o.audience.clear();
    throws(o, "audience");
    o = good;
    o.jwks_url = "https://auth.example.com/jwks";
    throws(o, "exactly one");
    o = good;
    o.jwks_file.clear();
    throws(o, "exactly one");
    o = good;
    o.jwks_file = (dir.dir / "missing.json").string();
    throws(o, "missing.json");
    o = file_options(dir, "{not json");
    throws(o, "not a JSON object");
    o = file_options(dir, R"({"keys":{}})");
    throws(o, "keys");
    o = file_options(dir, boost::json::serialize(boost::json::object{{"keys", boost::json::array{weak, enc}}}));
    throws(o, "no usable key");
    o = good;
    o.jwks_file.clear();
    for (const char* url : {"http://auth.example.com/jwks", "ftp://127.0.0.1/jwks", "https://", "https://u@h/",
                            "https://h:99999/", "http://10.0.0.1/jwks"}) {
      o.jwks_url = url;
      CAPTURE(url);
      throws(o, "jwks_url");
    }
    o.jwks_url = "https://auth.example.com/jwks";
    o.ca_file = (dir.dir / "no-ca.pem").string();
    throws(o, "ca_file");
    o.ca_file.clear();
    CHECK_NOTHROW((void)droid::auth::make_jwt_verifier(o));
    o.jwks_url = "http://localhost:8080/jwks";
    CHECK_NOTHROW((void)droid::auth::make_jwt_verifier(o));
    o.jwks_url = "http://[::1]:8080/jwks";
    CHECK_NOTHROW((void)droid::auth::make_jwt_verifier(o));
  }

  TEST_CASE("to_string names every error") {
    CHECK(droid::auth::to_string(token_error::wrong_audience) == "wrong audience");
    CHECK(droid::auth::to_string(token_error::unavailable) == "unavailable");
    CHECK(droid::auth::to_string(token_error::none) == "none");
  }

  TEST_CASE("JWKS over HTTPS: first fetch, each framing, rotation, a failed refresh keeps the keys") {
    temp_dir dir;
    const certificate ca(dir, "jwks-server");
    jwks_server server(&ca);
    server.serve(jwks({&k().ec, &k().rsa}));
    auto v = droid::auth::make_jwt_verifier(url_options(server, &ca));
    CHECK(server.requests == 0);  // fetched on first use
    CHECK(error_of(*v, token(k().ec)) == token_error::none);
    CHECK(error_of(*v, token(k().rsa)) == token_error::none);
    CHECK(server.requests == 1);

    // The authorization server rotates: a token with the new kid triggers a refresh.
    server.serve(jwks({&k().rotated}), jwks_server::framing::chunked);
    CHECK(error_of(*v, token(k().rotated)) == token_error::none);
    CHECK(server.requests == 2);
    CHECK(error_of(*v, token(k().rotated)) == token_error::none);
    CHECK(server.requests == 2);
    // The old kid is gone from the new set (and a refresh does not bring it back).
    CHECK(error_of(*v, token(k().ec)) == token_error::unknown_key);
    CHECK(server.requests == 3);

    // Read-to-EOF bodies work; then the server fails and the keys stay.
    server.serve(jwks({&k().rotated, &k().ed}), jwks_server::framing::close);
    CHECK(error_of(*v, token(k().ed)) == token_error::none);
    CHECK(server.requests == 4);
    server.serve("oops", jwks_server::framing::length, 500);
    CHECK(error_of(*v, token(k().rsa)) == token_error::unknown_key);
    CHECK(server.requests == 5);
    CHECK(error_of(*v, token(k().ed)) == token_error::none);
    server.serve("not a key set");
    CHECK(error_of(*v, token(k().rsa)) == token_error::unknown_key);
    CHECK(error_of(*v, token(k().rotated)) == token_error::none);
  }

  TEST_CASE("JWKS refreshes are rate limited") {
    temp_dir dir;
    const certificate ca(dir, "jwks-server");
    jwks_server server(&ca);
    server.serve(jwks({&k().ec}));
    auto o = url_options(server, &ca);
    o.min_refresh_interval = 60s;
    auto v = droid::auth::make_jwt_verifier(o);
    CHECK(error_of(*v, token(k().ec)) == token_error::none);
    test_key unknown_a = k().rotated, unknown_b = k().rotated;
    unknown_a.kid = "a";
    unknown_b.kid = "b";
    CHECK(error_of(*v, token(unknown_a)) == token_error::unknown_key);
    CHECK(error_of(*v, token(unknown_b)) == token_error::unknown_key);
    CHECK(server.requests == 1);
  }

  TEST_CASE("JWKS refresh needed by two threads at once: one fetch, each resumed on its own executor") {
    temp_dir dir;
    const certificate ca(dir, "jwks-server");
    jwks_server server(&ca);
    server.serve(jwks({&k().ec, &k().ed}));
    {
      std::lock_guard lock(server.mutex);
      server.delay = 100ms;  // both callers are surely waiting before the answer comes
    }
    auto v = droid::auth::make_jwt_verifier(url_options(server, &ca));
    std::latch start(2);
    token_error a = token_error::malformed, b = token_error::malformed;
    std::thread ta([&] {
      start.arrive_and_wait();
      a = error_of(*v, token(k().ec));
    });
    std::thread tb([&] {
      start.arrive_and_wait();
      b = error_of(*v, token(k().ed));
    });
    ta.join();
    tb.join();
    CHECK(a == token_error::none);
    CHECK(b == token_error::none);
    CHECK(server.requests == 1);
  }

  TEST_CASE("JWKS fetch failures with no keys cached are unavailable") {
    temp_dir dir;
    const certificate ca(dir, "jwks-server");
    SUBCASE("server down") {
      std::string url;
      {
        jwks_server gone(&ca);
        url = gone.url();
      }
      droid::auth::jwt_options o;
      o.issuer = issuer;
      o.audience = audience;
      o.jwks_url = url;
      o.ca_file = ca.cert_file;
      auto v = droid::auth::make_jwt_verifier(o);
      CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
    }
    SUBCASE("a certificate not signed by ca_file") {
      const certificate other(dir, "impostor");
      jwks_server server(&other);
      server.serve(jwks({&k().ec}));
      auto v = droid::auth::make_jwt_verifier(url_options(server, &ca));
      CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
      CHECK(server.requests == 0);
    }
    SUBCASE("a trusted certificate for another host") {
      const certificate elsewhere(dir, "elsewhere", "DNS:auth.example.com, IP:127.0.0.2");
      jwks_server server(&elsewhere);
      server.serve(jwks({&k().ec}));
      auto v = droid::auth::make_jwt_verifier(url_options(server, &elsewhere));
      CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
      CHECK(server.requests == 0);
    }
    SUBCASE("a status other than 200") {
      jwks_server server(&ca);
      server.serve(jwks({&k().ec}), jwks_server::framing::length, 404);
      auto v = droid::auth::make_jwt_verifier(url_options(server, &ca));
      CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
      CHECK(server.requests == 1);
    }
    SUBCASE("a body over max_jwks_bytes, in each framing") {
      jwks_server server(&ca);
      auto o = url_options(server, &ca);
      o.max_jwks_bytes = 200;
      auto v = droid::auth::make_jwt_verifier(o);
      for (auto f : {jwks_server::framing::length, jwks_server::framing::chunked, jwks_server::framing::close}) {
        server.serve(jwks({&k().ec, &k().ed}), f);
        CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
      }
      CHECK(server.requests == 3);
    }
    SUBCASE("a server slower than fetch_timeout") {
      jwks_server server(&ca);
      server.serve(jwks({&k().ec}));
      {
        std::lock_guard lock(server.mutex);
        server.delay = 10s;  // cut short when the server is destroyed
      }
      auto o = url_options(server, &ca);
      o.fetch_timeout = 100ms;
      auto v = droid::auth::make_jwt_verifier(o);
      const auto began = std::chrono::steady_clock::now();
      CHECK(error_of(*v, token(k().ec)) == token_error::unavailable);
      CHECK(std::chrono::steady_clock::now() - began < 2s);
      CHECK(server.requests == 1);
    }
  }

  TEST_CASE("JWKS over http:// on loopback") {
    jwks_server server(nullptr);
    server.serve(jwks({&k().ed}));
    auto v = droid::auth::make_jwt_verifier(url_options(server, nullptr));
    CHECK(error_of(*v, token(k().ed)) == token_error::none);
    CHECK(server.requests == 1);
  }
}
