// SPDX-License-Identifier: BSL-1.0
/// @file
/// `state_sealer`: the requestState a client echoes back opens only if it is, byte for
/// byte, a token this server sealed with a key it still holds. Every edit an attacker can
/// make to a token (any byte of it, its length, its alphabet) must be refused, and with
/// the reason that lets the server answer it correctly.
///
/// The format test opens a token with OpenSSL directly, following the layout documented
/// in sealed_state.hpp: replicas running different builds must keep opening each other's
/// tokens, and the associated data and key derivation cannot be observed any other way.
#include "application/era2026/sealed_state.hpp"

#include <atomic>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

namespace {

using droid::detail::open_failure;
using droid::detail::state_sealer;

constexpr std::size_t no_limit = std::size_t(1) << 30;
constexpr std::size_t header_bytes = 5;  // version and key id

// Distinct secrets of the minimum length and longer, as a deployment would configure.
const std::string secret_old = "old secret, exactly thirty-two b";
const std::string secret_new = "new secret, which is longer than thirty-two bytes";

// The tests' own base64url, independent of the sealer's, so a bug shared by the
// sealer's encoder and decoder cannot hide itself.
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string decode(std::string_view s) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (const char c : s) {
    const auto v = alphabet.find(c);
    REQUIRE(v != std::string_view::npos);
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

std::string encode(std::string_view s) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (const char c : s) {
    acc = (acc << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += alphabet[(acc << (6 - bits)) & 63];
  return out;
}

// Opens and insists it fails, returning why.
open_failure refusal(const state_sealer& s, std::string_view token, std::size_t limit = no_limit) {
  open_failure why{};
  const std::optional<std::string> opened = s.open(token, limit, why);
  CHECK_FALSE(opened.has_value());
  return why;
}

std::string opened(const state_sealer& s, std::string_view token) {
  open_failure why{};
  std::optional<std::string> out = s.open(token, no_limit, why);
  REQUIRE_MESSAGE(out.has_value(), droid::detail::describe(why));
  return *out;
}

}  // namespace

TEST_SUITE("application/sealed_state") {
  TEST_CASE("the token follows the documented format (HKDF key, key id, AAD), opened by hand") {
    const state_sealer s({secret_new});
    const std::string plaintext = "opened without the sealer";
    const std::string raw = decode(s.seal(plaintext));
    REQUIRE(raw.size() == header_bytes + 12 + plaintext.size() + 16);
    CHECK(raw[0] == '\x01');

    // key = HKDF-SHA256(secret, no salt, info)
    unsigned char key[32];
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
    REQUIRE(kdf != nullptr);
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
    char digest[] = "SHA256";
    std::string secret = secret_new;
    std::string info = "protocol_droid requestState v1";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, secret.data(), secret.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
        OSSL_PARAM_construct_end(),
    };
    REQUIRE(EVP_KDF_derive(kctx, key, sizeof key, params) == 1);
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);

    // key id = SHA-256(key)[0..4)
    unsigned char sha[32];
    unsigned int sha_len = 0;
    REQUIRE(EVP_Digest(key, sizeof key, sha, &sha_len, EVP_sha256(), nullptr) == 1);
    CHECK(raw.substr(1, 4) == std::string(reinterpret_cast<const char*>(sha), 4));

    // AES-256-GCM, nonce after the header, AAD = version | key id, tag last.
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
    const std::size_t n = plaintext.size();
    std::string out(n, '\0');
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    int len = 0;
    REQUIRE(EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key, bytes + header_bytes) == 1);
    REQUIRE(EVP_DecryptUpdate(ctx, nullptr, &len, bytes, static_cast<int>(header_bytes)) == 1);
    REQUIRE(EVP_DecryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &len, bytes + header_bytes + 12,
                              static_cast<int>(n)) == 1);
    std::string tag = raw.substr(header_bytes + 12 + n);
    REQUIRE(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag.data()) == 1);
    CHECK(EVP_DecryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + n, &len) == 1);
    EVP_CIPHER_CTX_free(ctx);
    CHECK(out == plaintext);
  }

  TEST_CASE("seal then open gives the plaintext back, empty and 100 KB, in a URL-safe token") {
    const state_sealer s({secret_old});
    CHECK(opened(s, s.seal("")).empty());

    std::string big(100 * 1024, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + i / 256) & 0xFF);
    const std::string token = s.seal(big);
    CHECK(token.find_first_not_of(alphabet) == std::string::npos);
    CHECK(decode(token).size() == header_bytes + 12 + big.size() + 16);
    CHECK(opened(s, token) == big);
  }

  TEST_CASE("two seals of the same plaintext differ (a fresh nonce each time)") {
    const state_sealer s({secret_old});
    const std::string a = s.seal("same state");
    const std::string b = s.seal("same state");
    CHECK(a != b);
    // The nonce, not only the ciphertext, differs.
    CHECK(decode(a).substr(header_bytes, 12) != decode(b).substr(header_bytes, 12));
    CHECK(opened(s, a) == "same state");
    CHECK(opened(s, b) == "same state");
  }

  TEST_CASE("flipping any single byte of the token never opens it") {
    const state_sealer s({secret_old});
    const std::string raw = decode(s.seal(R"({"step":2,"tool":"book_flight"})"));
    for (std::size_t i = 0; i < raw.size(); ++i) {
      for (const unsigned char mask : {0x01, 0x80, 0xFF}) {
        CAPTURE(i);
        CAPTURE(static_cast<int>(mask));
        std::string edited = raw;
        edited[i] = static_cast<char>(static_cast<unsigned char>(edited[i]) ^ mask);
        const open_failure why = refusal(s, encode(edited));
        if (i == 0)
          CHECK(why == open_failure::malformed);  // the version byte
        else if (i < header_bytes)
          CHECK(why == open_failure::unknown_key);  // the key id
        else
          CHECK(why == open_failure::tampered);  // nonce, ciphertext, tag
      }
    }
  }

  TEST_CASE("a token with text appended does not open") {
    const state_sealer s({secret_old});
    for (const std::string_view plaintext : {"", "a", "ab", "abc"}) {
      CAPTURE(plaintext);
      const open_failure why = refusal(s, s.seal(plaintext) + "-TAMPERED");
      CHECK((why == open_failure::malformed || why == open_failure::tampered));
    }
  }

  TEST_CASE("every truncation of a token is refused") {
    const state_sealer s({secret_old});
    const std::string token = s.seal("resume here");
    for (std::size_t n = 0; n < token.size(); ++n) {
      CAPTURE(n);
      const open_failure why = refusal(s, token.substr(0, n));
      CHECK((why == open_failure::malformed || why == open_failure::tampered));
    }
    // Shorter than version, key id, nonce and tag together: malformed, not even tried.
    const std::string raw = decode(token);
    CHECK(refusal(s, encode(raw.substr(0, header_bytes + 12 + 15))) == open_failure::malformed);
    // Exactly that long: a well-formed token of an empty plaintext whose tag is wrong.
    CHECK(refusal(s, encode(raw.substr(0, header_bytes + 12 + 16))) == open_failure::tampered);
  }

  TEST_CASE("characters outside base64url, padding and an empty token are malformed") {
    const state_sealer s({secret_old});
    const std::string token = s.seal("x");
    for (const char bad : {'+', '/', '=', ' ', '.', '\n', '\0', '\xff'}) {
      CAPTURE(static_cast<int>(bad));
      std::string edited = token;
      edited[edited.size() / 2] = bad;
      CHECK(refusal(s, edited) == open_failure::malformed);
      CHECK(refusal(s, token + bad) == open_failure::malformed);
    }
    CHECK(refusal(s, token + "==") == open_failure::malformed);
    CHECK(refusal(s, "") == open_failure::malformed);
  }

  TEST_CASE("a second spelling of the same bytes is refused (unused low bits set)") {
    const state_sealer s({secret_old});
    // 34 decoded bytes: the last character carries 4 unused bits.
    const std::string token = s.seal("y");
    REQUIRE(decode(token).size() % 3 == 1);
    std::string edited = token;
    edited.back() = alphabet[alphabet.find(edited.back()) | 1];
    REQUIRE(decode(edited) == decode(token));
    CHECK(refusal(s, edited) == open_failure::malformed);
  }

  TEST_CASE("a token longer than the limit is oversized, checked before decoding") {
    const state_sealer s({secret_old});
    const std::string token = s.seal("some state");
    CHECK(refusal(s, token, token.size() - 1) == open_failure::oversized);
    open_failure why{};
    CHECK(s.open(token, token.size(), why) == "some state");
    // Not base64 at all, yet oversized: the length is checked first.
    CHECK(refusal(s, std::string(4097, '!'), 4096) == open_failure::oversized);
  }

  TEST_CASE("key rotation: {new, old} opens old tokens and seals with new") {
    const state_sealer old_only({secret_old});
    const state_sealer rotated({secret_new, secret_old});
    const state_sealer new_only({secret_new});

    CHECK(opened(rotated, old_only.seal("before rotation")) == "before rotation");

    const std::string token = rotated.seal("after rotation");
    CHECK(opened(new_only, token) == "after rotation");
    CHECK(opened(rotated, token) == "after rotation");
    CHECK(refusal(old_only, token) == open_failure::unknown_key);
    // Once the old secret is retired, its tokens are unknown, not tampered.
    CHECK(refusal(new_only, old_only.seal("stale")) == open_failure::unknown_key);
  }

  TEST_CASE("two default sealers (two processes) cannot open each other's tokens") {
    const state_sealer a;
    const state_sealer b;
    CHECK(opened(a, a.seal("mine")) == "mine");
    CHECK(refusal(b, a.seal("mine")) == open_failure::unknown_key);
    CHECK(refusal(a, b.seal("theirs")) == open_failure::unknown_key);
  }

  TEST_CASE("the same secret gives the same key in another sealer (another replica)") {
    const state_sealer a({secret_new});
    const state_sealer b({secret_new});
    CHECK(opened(b, a.seal("shared")) == "shared");
  }

  TEST_CASE("secrets shorter than 32 bytes are refused") {
    CHECK_THROWS_AS(state_sealer({std::string(31, 'k')}), std::invalid_argument);
    CHECK_THROWS_AS(state_sealer({secret_new, std::string(31, 'k')}), std::invalid_argument);
    CHECK_THROWS_AS(state_sealer({std::string()}), std::invalid_argument);
    CHECK_NOTHROW(state_sealer({std::string(32, 'k')}));
  }

  TEST_CASE("describe gives a distinct sentence for each failure") {
    const std::vector<std::string_view> all = {
        droid::detail::describe(open_failure::malformed), droid::detail::describe(open_failure::oversized),
        droid::detail::describe(open_failure::unknown_key), droid::detail::describe(open_failure::tampered)};
    for (std::size_t i = 0; i < all.size(); ++i) {
      CHECK_FALSE(all[i].empty());
      for (std::size_t j = 0; j < i; ++j) CHECK(all[i] != all[j]);
    }
  }

  TEST_CASE("seal and open from 4 threads at once all round-trip") {
    const state_sealer s({secret_new, secret_old});
    const state_sealer old_only({secret_old});
    const std::string old_token = old_only.seal("old");
    constexpr int threads = 4;
    constexpr int iterations = 2000;
    std::atomic<int> failures{0};
    std::atomic<int> done{0};
    {
      std::vector<std::jthread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          open_failure why{};
          for (int i = 0; i < iterations; ++i) {
            const std::string plaintext = "thread " + std::to_string(t) + " iteration " + std::to_string(i);
            const std::optional<std::string> back = s.open(s.seal(plaintext), no_limit, why);
            if (back != plaintext) failures.fetch_add(1);
            if (s.open(old_token, no_limit, why) != "old") failures.fetch_add(1);
            if (s.open(old_token + "A", no_limit, why).has_value()) failures.fetch_add(1);
            done.fetch_add(1);
          }
        });
      }
    }
    CHECK(failures.load() == 0);
    CHECK(done.load() == threads * iterations);
  }
}
