// SPDX-License-Identifier: BSL-1.0
/// @file
/// `state_sealer`: AES-256-GCM through OpenSSL's EVP interface, keys from HKDF-SHA256.
///
///     secret --HKDF-SHA256(info)--> key (32) --SHA-256, first 4 bytes--> key id
///
///     seal:  plaintext --AES-256-GCM(key, random nonce, aad = version | key id)--> ciphertext | tag
///            token = base64url(version | key id | nonce | ciphertext | tag)
///     open:  length limit -> base64url -> version -> key id -> decrypt and check the tag
///
/// ## Why a key id at all
/// Without it `open` would have to try every key during a rotation, and could not tell a
/// token of a retired or foreign key (`unknown_key`: a restarted server, worth a clear
/// error) from a forged one (`tampered`). Four bytes can collide between two secrets, so
/// every key with a matching id is tried.
///
/// ## Why a context per call
/// An EVP_CIPHER_CTX holds the key schedule and the GCM state of one operation; sharing
/// one between threads would mix two messages. Making one costs an allocation, small
/// beside the base64 and the JSON around every token.
///
/// ## Errors from OpenSSL
/// OpenSSL records its failures in a per-thread queue that a later TLS call would read as
/// its own, so every failure reported here clears it, and so does `open` after a tag that
/// did not match.
#include "sealed_state.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <memory>
#include <stdexcept>
#include <utility>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <droid/domain/mcp/content.hpp>

namespace droid::detail {

namespace {

// The token format. A new format gets a new version byte, and `open` refuses versions it
// does not know rather than guessing.
constexpr unsigned char format_version = 1;
constexpr std::size_t key_bytes = 32;  // AES-256
constexpr std::size_t key_id_bytes = 4;
constexpr std::size_t nonce_bytes = 12;  // the GCM nonce size that needs no extra hashing
constexpr std::size_t tag_bytes = 16;
constexpr std::size_t header_bytes = 1 + key_id_bytes;  // also the associated data
constexpr std::size_t min_token_bytes = header_bytes + nonce_bytes + tag_bytes;
constexpr std::size_t min_secret_bytes = 32;

// Binds the derived keys to this use: the same secret configured for something else
// (a session cookie, a later token format) yields unrelated keys.
constexpr std::string_view hkdf_info = "protocol_droid requestState v1";

using key_id = std::array<unsigned char, key_id_bytes>;

[[noreturn]] void fail(const char* what) {
  ERR_clear_error();
  throw std::runtime_error(std::string("state_sealer: OpenSSL failed in ") + what);
}

const unsigned char* uchars(std::string_view s) noexcept { return reinterpret_cast<const unsigned char*>(s.data()); }
unsigned char* uchars(std::string& s) noexcept { return reinterpret_cast<unsigned char*>(s.data()); }

struct cipher_ctx_free {
  void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};
using cipher_ctx = std::unique_ptr<EVP_CIPHER_CTX, cipher_ctx_free>;

cipher_ctx new_cipher_ctx() {
  cipher_ctx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) fail("EVP_CIPHER_CTX_new");
  return ctx;
}

struct kdf_free {
  void operator()(EVP_KDF* k) const noexcept { EVP_KDF_free(k); }
  void operator()(EVP_KDF_CTX* k) const noexcept { EVP_KDF_CTX_free(k); }
};

// EVP_*Update take an int length; a plaintext beyond INT_MAX bytes is fed in pieces
// rather than truncated by the conversion.
template <class Update>
void update_in_pieces(EVP_CIPHER_CTX* ctx, Update update, unsigned char* out, const unsigned char* in, std::size_t n,
                      const char* what) {
  constexpr std::size_t piece = INT_MAX / 2;
  while (n > 0) {
    const int len = static_cast<int>(std::min(n, piece));
    int written = 0;
    if (update(ctx, out, &written, in, len) != 1 || written != len) fail(what);
    out += len;
    in += len;
    n -= static_cast<std::size_t>(len);
  }
}

// ---- base64url without padding (RFC 4648 section 5) -------------------------------------

int b64url_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// Strict: no padding, no whitespace, and the unused low bits of the last character must
// be zero. Then exactly one string decodes to given bytes, so the token the server
// accepts is the token it issued, character for character.
std::optional<std::string> b64url_decode(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  unsigned acc = 0;
  int bits = 0;
  for (const char c : in) {
    const int v = b64url_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if ((acc & ((1U << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace

// The derived key and its id. The destructor wipes the key, so a destroyed sealer leaves
// no key material behind in freed memory.
struct state_sealer::key {
  key_id id{};
  std::array<unsigned char, key_bytes> bytes{};

  key() = default;
  key(const key&) = default;
  key& operator=(const key&) = default;
  ~key() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

namespace {

// Writes straight into the sealer's key, so no copy of it is left on the stack.
void derive_key(std::string_view secret, std::array<unsigned char, key_bytes>& out) {
  const std::unique_ptr<EVP_KDF, kdf_free> kdf(EVP_KDF_fetch(nullptr, OSSL_KDF_NAME_HKDF, nullptr));
  if (!kdf) fail("EVP_KDF_fetch(HKDF)");
  const std::unique_ptr<EVP_KDF_CTX, kdf_free> ctx(EVP_KDF_CTX_new(kdf.get()));
  if (!ctx) fail("EVP_KDF_CTX_new");
  // OSSL_PARAM takes non-const pointers; HKDF only reads these.
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(secret.data()), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(hkdf_info.data()), hkdf_info.size()),
      OSSL_PARAM_construct_end(),
  };
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) != 1) fail("EVP_KDF_derive(HKDF)");
}

// Wipes the secrets however the constructor leaves, thrown out of or not: once the keys
// are derived nothing needs them, and a secret left in freed memory can be read back.
class secrets_wiper {
 public:
  explicit secrets_wiper(std::vector<std::string>& secrets) noexcept : secrets_(secrets) {}
  secrets_wiper(const secrets_wiper&) = delete;
  secrets_wiper& operator=(const secrets_wiper&) = delete;
  ~secrets_wiper() {
    for (std::string& s : secrets_) OPENSSL_cleanse(s.data(), s.size());
  }

 private:
  std::vector<std::string>& secrets_;
};

key_id id_of(const std::array<unsigned char, key_bytes>& k) {
  std::array<unsigned char, 32> digest{};
  unsigned int len = 0;
  if (EVP_Digest(k.data(), k.size(), digest.data(), &len, EVP_sha256(), nullptr) != 1 || len != digest.size())
    fail("EVP_Digest(SHA-256)");
  key_id id{};
  std::copy_n(digest.begin(), id.size(), id.begin());
  OPENSSL_cleanse(digest.data(), digest.size());
  return id;
}

}  // namespace

std::string_view describe(open_failure why) noexcept {
  switch (why) {
    case open_failure::malformed:
      return "requestState is not a state this server issued.";
    case open_failure::oversized:
      return "requestState is too long.";
    case open_failure::unknown_key:
      return "requestState was issued by another server or before a restart; start the request again.";
    case open_failure::tampered:
      return "requestState was modified.";
  }
  return "requestState was refused.";
}

state_sealer::state_sealer(std::vector<std::string> secrets) {
  const secrets_wiper wiper(secrets);
  // Check them all before deriving any, so a bad list fails whole and fast.
  for (const std::string& s : secrets)
    if (s.size() < min_secret_bytes)
      throw std::invalid_argument("state_sealer: every secret must be at least 32 bytes");
  if (secrets.empty()) {
    std::string random(min_secret_bytes, '\0');
    if (RAND_bytes(uchars(random), static_cast<int>(random.size())) != 1) fail("RAND_bytes");
    secrets.push_back(std::move(random));
  }
  keys_.reserve(secrets.size());
  for (std::string& s : secrets) {
    key& k = keys_.emplace_back();
    derive_key(s, k.bytes);
    k.id = id_of(k.bytes);
  }
}

state_sealer::~state_sealer() = default;
state_sealer::state_sealer(state_sealer&&) noexcept = default;
state_sealer& state_sealer::operator=(state_sealer&&) noexcept = default;

std::string state_sealer::seal(std::string_view plaintext) const {
  if (keys_.empty()) throw std::logic_error("state_sealer: seal on a moved-from sealer");
  const key& k = keys_.front();

  std::string raw(min_token_bytes + plaintext.size(), '\0');
  unsigned char* const header = uchars(raw);
  unsigned char* const nonce = header + header_bytes;
  unsigned char* const ciphertext = nonce + nonce_bytes;
  unsigned char* const tag = ciphertext + plaintext.size();
  header[0] = format_version;
  std::copy(k.id.begin(), k.id.end(), header + 1);
  if (RAND_bytes(nonce, static_cast<int>(nonce_bytes)) != 1) fail("RAND_bytes");

  const cipher_ctx ctx = new_cipher_ctx();
  int len = 0;
  if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k.bytes.data(), nonce) != 1)
    fail("EVP_EncryptInit_ex");
  if (EVP_EncryptUpdate(ctx.get(), nullptr, &len, header, static_cast<int>(header_bytes)) != 1)
    fail("EVP_EncryptUpdate(aad)");
  update_in_pieces(ctx.get(), EVP_EncryptUpdate, ciphertext, uchars(plaintext), plaintext.size(), "EVP_EncryptUpdate");
  if (EVP_EncryptFinal_ex(ctx.get(), tag, &len) != 1 || len != 0) fail("EVP_EncryptFinal_ex");
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag_bytes), tag) != 1)
    fail("EVP_CTRL_GCM_GET_TAG");
  return base64url_encode(raw);
}

std::optional<std::string> state_sealer::open(std::string_view token, std::size_t max_token_bytes,
                                              open_failure& why) const {
  if (token.size() > max_token_bytes) {
    why = open_failure::oversized;
    return std::nullopt;
  }
  std::optional<std::string> raw = b64url_decode(token);
  if (!raw || raw->size() < min_token_bytes || static_cast<unsigned char>((*raw)[0]) != format_version) {
    why = open_failure::malformed;
    return std::nullopt;
  }
  const unsigned char* const header = uchars(*raw);
  const unsigned char* const nonce = header + header_bytes;
  const unsigned char* const ciphertext = nonce + nonce_bytes;
  const std::size_t ciphertext_bytes = raw->size() - min_token_bytes;
  const unsigned char* const tag = ciphertext + ciphertext_bytes;

  why = open_failure::unknown_key;
  std::string plaintext(ciphertext_bytes, '\0');
  for (const key& k : keys_) {
    if (!std::equal(k.id.begin(), k.id.end(), header + 1)) continue;
    const cipher_ctx ctx = new_cipher_ctx();
    int len = 0;
    if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k.bytes.data(), nonce) != 1)
      fail("EVP_DecryptInit_ex");
    if (EVP_DecryptUpdate(ctx.get(), nullptr, &len, header, static_cast<int>(header_bytes)) != 1)
      fail("EVP_DecryptUpdate(aad)");
    update_in_pieces(ctx.get(), EVP_DecryptUpdate, uchars(plaintext), ciphertext, ciphertext_bytes,
                     "EVP_DecryptUpdate");
    // OpenSSL only reads the expected tag, but its signature takes void*.
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_bytes),
                            const_cast<unsigned char*>(tag)) != 1)
      fail("EVP_CTRL_GCM_SET_TAG");
    if (EVP_DecryptFinal_ex(ctx.get(), uchars(plaintext) + ciphertext_bytes, &len) == 1) return plaintext;
    why = open_failure::tampered;
  }
  // Whatever was decrypted is unauthenticated: wipe it rather than leave it in freed memory.
  OPENSSL_cleanse(plaintext.data(), plaintext.size());
  ERR_clear_error();
  return std::nullopt;
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(uchars(out), static_cast<int>(n)) != 1) fail("RAND_bytes");
  return out;
}

}  // namespace droid::detail
