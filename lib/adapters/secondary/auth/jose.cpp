// SPDX-License-Identifier: BSL-1.0
#include "jose.hpp"

#include <array>
#include <cstdint>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

namespace droid::auth::detail {

namespace {

/// The value of a base64url character, or -1: a table so that decoding is one lookup per
/// character and any byte outside the alphabet ('=', '+', '/', whitespace) is refused.
constexpr std::array<std::int8_t, 256> base64url_table = [] {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 26; ++i) {
    t[static_cast<std::size_t>('A' + i)] = static_cast<std::int8_t>(i);
    t[static_cast<std::size_t>('a' + i)] = static_cast<std::int8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) t[static_cast<std::size_t>('0' + i)] = static_cast<std::int8_t>(52 + i);
  t[static_cast<std::size_t>('-')] = 62;
  t[static_cast<std::size_t>('_')] = 63;
  return t;
}();

struct pkey_ctx_free {
  void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
struct md_ctx_free {
  void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
struct bld_free {
  void operator()(OSSL_PARAM_BLD* p) const noexcept { OSSL_PARAM_BLD_free(p); }
};
struct params_free {
  void operator()(OSSL_PARAM* p) const noexcept { OSSL_PARAM_free(p); }
};
struct bn_free {
  void operator()(BIGNUM* p) const noexcept { BN_free(p); }
};
struct sig_free {
  void operator()(ECDSA_SIG* p) const noexcept { ECDSA_SIG_free(p); }
};

std::shared_ptr<EVP_PKEY> own(EVP_PKEY* p) { return {p, EVP_PKEY_free}; }

/// A string member of a JWK, or empty when absent or not a string.
std::string_view member(const boost::json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (!v || !v->is_string()) return {};
  return v->get_string();
}

/// Decodes a base64url member that must be there; false when absent or invalid.
bool b64_member(const boost::json::object& o, std::string_view name, std::string& out) {
  const std::string_view text = member(o, name);
  return !text.empty() && base64url_decode(text, out);
}

/// Builds a public key of `type_name` from `params`; null when OpenSSL refuses them.
EVP_PKEY* from_params(const char* type_name, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, params_free> params(OSSL_PARAM_BLD_to_param(bld));
  std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type_name, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
    return nullptr;
  return key;
}

std::shared_ptr<EVP_PKEY> rsa_key(const boost::json::object& o) {
  std::string n, e;
  if (!b64_member(o, "n", n) || !b64_member(o, "e", e)) return nullptr;
  std::unique_ptr<BIGNUM, bn_free> bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                                                  static_cast<int>(n.size()), nullptr));
  std::unique_ptr<BIGNUM, bn_free> bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                                                  static_cast<int>(e.size()), nullptr));
  std::unique_ptr<OSSL_PARAM_BLD, bld_free> bld(OSSL_PARAM_BLD_new());
  if (!bn_n || !bn_e || !bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1)
    return nullptr;
  auto key = own(from_params("RSA", bld.get()));
  // Under 2048 bits RSA is within reach of a determined attacker (NIST SP 800-131A); a
  // key set that still carries such a key gets it ignored, not trusted.
  if (!key || EVP_PKEY_get_bits(key.get()) < 2048) return nullptr;
  return key;
}

std::shared_ptr<EVP_PKEY> ec_key(const boost::json::object& o) {
  if (member(o, "crv") != "P-256") return nullptr;
  std::string x, y;
  if (!b64_member(o, "x", x) || !b64_member(o, "y", y) || x.size() != 32 || y.size() != 32) return nullptr;
  std::string point(1, '\x04');  // uncompressed SEC 1 encoding
  point.append(x).append(y);
  std::unique_ptr<OSSL_PARAM_BLD, bld_free> bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
    return nullptr;
  auto key = own(from_params("EC", bld.get()));
  if (!key) return nullptr;
  // A point off the curve is the invalid-curve attack's way in; OpenSSL checks it here.
  std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) return nullptr;
  return key;
}

std::shared_ptr<EVP_PKEY> ed25519_key(const boost::json::object& o) {
  if (member(o, "crv") != "Ed25519") return nullptr;
  std::string x;
  if (!b64_member(o, "x", x) || x.size() != 32) return nullptr;
  return own(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                         reinterpret_cast<const unsigned char*>(x.data()), x.size()));
}

/// The usable key a JWK describes, or nothing (skipped).
std::optional<jwk> parse_jwk(const boost::json::object& o) {
  const std::string_view use = member(o, "use");
  if (o.contains("use") && use != "sig") return std::nullopt;  // an encryption key never verifies
  const std::string_view kty = member(o, "kty");
  const std::string_view alg = member(o, "alg");
  if (o.contains("alg") && alg.empty()) return std::nullopt;
  jwk k;
  if (const auto* kid = o.if_contains("kid")) {
    if (!kid->is_string()) return std::nullopt;
    k.kid = kid->get_string();
  }
  if (kty == "RSA") {
    if (!alg.empty() && alg != "RS256") return std::nullopt;
    k.type = key_type::rsa;
    k.pkey = rsa_key(o);
  } else if (kty == "EC") {
    if (!alg.empty() && alg != "ES256") return std::nullopt;
    k.type = key_type::ec_p256;
    k.pkey = ec_key(o);
  } else if (kty == "OKP") {
    if (!alg.empty() && alg != "EdDSA" && alg != "Ed25519") return std::nullopt;
    k.type = key_type::ed25519;
    k.pkey = ed25519_key(o);
  }
  if (!k.pkey) {
    ERR_clear_error();  // OpenSSL's queue is per thread; a refused key must not leave it dirty
    return std::nullopt;
  }
  return k;
}

/// Turns a JWS ES256 signature (r||s, 32 bytes each) into the DER form OpenSSL verifies.
bool ecdsa_der(std::string_view raw, std::string& der) {
  if (raw.size() != 64) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  std::unique_ptr<ECDSA_SIG, sig_free> sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(p, 32, nullptr);
  BIGNUM* s = BN_bin2bn(p + 32, 32, nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return false;
  }
  const int n = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (n <= 0) return false;
  der.resize(static_cast<std::size_t>(n));
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  return i2d_ECDSA_SIG(sig.get(), &out) == n;
}

}  // namespace

bool base64url_decode(std::string_view in, std::string& out) {
  out.clear();
  if (in.size() % 4 == 1) return false;
  out.reserve(in.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    const std::int8_t v = base64url_table[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // What is left over must be zero bits, or "AB" and "AC" would decode alike.
  return (acc & ((1u << bits) - 1u)) == 0;
}

std::optional<key_type> key_type_for_alg(std::string_view alg) noexcept {
  if (alg == "RS256") return key_type::rsa;
  if (alg == "ES256") return key_type::ec_p256;
  if (alg == "EdDSA") return key_type::ed25519;
  return std::nullopt;
}

std::shared_ptr<const key_set> parse_jwks(std::string_view text, std::string& error) {
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec);
  if (ec || !doc.is_object()) {
    error = "the key set is not a JSON object";
    return nullptr;
  }
  const auto* keys = doc.get_object().if_contains("keys");
  if (!keys || !keys->is_array()) {
    error = "the key set has no \"keys\" array";
    return nullptr;
  }
  auto set = std::make_shared<key_set>();
  for (const auto& k : keys->get_array()) {
    if (!k.is_object()) continue;
    if (auto parsed = parse_jwk(k.get_object())) set->keys.push_back(std::move(*parsed));
  }
  if (set->keys.empty()) {
    error = "the key set has no usable key (RSA of 2048 bits or more, EC P-256 or Ed25519, for signatures)";
    return nullptr;
  }
  return set;
}

bool verify_signature(const jwk& key, std::string_view signing_input, std::string_view signature) {
  std::string der;
  if (key.type == key_type::ec_p256) {
    if (!ecdsa_der(signature, der)) return false;
    signature = der;
  }
  std::unique_ptr<EVP_MD_CTX, md_ctx_free> ctx(EVP_MD_CTX_new());
  // Ed25519 hashes internally and takes no digest; the other two use SHA-256.
  const EVP_MD* md = key.type == key_type::ed25519 ? nullptr : EVP_sha256();
  const bool ok = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key.pkey.get()) == 1 &&
                  EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                                   signature.size(), reinterpret_cast<const unsigned char*>(signing_input.data()),
                                   signing_input.size()) == 1;
  if (!ok) ERR_clear_error();
  return ok;
}

}  // namespace droid::auth::detail
