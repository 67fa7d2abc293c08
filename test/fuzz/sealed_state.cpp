// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: the `requestState` sealer of 2026-07-28 multi round-trip requests
/// (lib/application/era2026/sealed_state.hpp) and the payload it seals
/// (`detail::decode_state`, lib/application/era2026/multi_round.hpp).
///
/// The first byte picks a mode, the rest is its text:
/// - 0 (and anything not listed): the text is a token a client sent. It must not open:
///   forging a token without the secret must be out of reach.
/// - 1: the text is a plaintext. It is sealed (with a secret made for this input), must
///   open to itself, and then the token is
///   tampered with (a byte flipped, truncated, extended, the last character re-spelled
///   with other padding bits) in ways drawn from the input; every tampered token must be
///   refused, with a reason and no plaintext.
/// - 2: the text is a decrypted payload. `decode_state` reads it or refuses it, never
///   crashes; what it reads re-encodes to a payload that reads back the same.
/// Oracle throughout: `open` refuses with a reason, never throws for a bad token, and the
/// size limit is checked before anything is decoded.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "application/era2026/multi_round.hpp"
#include "application/era2026/sealed_state.hpp"
#include "fuzz_support.hpp"

namespace {

using droid::detail::open_failure;
using droid::detail::state_sealer;

/// The sealer made-up tokens are tried against. It never seals anything: libFuzzer
/// watches the harness's comparisons and copies what it sees into later inputs, so a
/// token this sealer had sealed would come back as a "made-up" one that opens (a replay,
/// which sealing does not claim to stop), not a forgery. Two secrets, as during a
/// rotation; not those an earlier version of this harness sealed with, whose tokens sit
/// in the corpus as regression inputs.
const state_sealer& sealer() {
  static const state_sealer s(std::vector<std::string>{std::string(32, 'm'), std::string(40, 'q')});
  return s;
}

const state_sealer& other_sealer() {
  static const state_sealer s(std::vector<std::string>{std::string(32, 'x')});
  return s;
}

constexpr std::size_t limit = 64 * 1024;

void must_refuse(const state_sealer& by, std::string_view token, const char* what) {
  open_failure why = open_failure::malformed;
  const std::optional<std::string> opened = by.open(token, limit, why);
  DROID_FUZZ_CHECK(!opened.has_value(), what);
  DROID_FUZZ_CHECK(!droid::detail::describe(why).empty(), "a refusal without a reason");
}

void tamper(const std::string& plaintext, droid::fuzz::choices& pick) {
  // A fresh random secret per input, so that no token sealed here opens anywhere else
  // (see `sealer`).
  const state_sealer here;
  const std::string token = here.seal(plaintext);
  open_failure why = open_failure::malformed;
  const std::optional<std::string> opened = here.open(token, limit, why);
  DROID_FUZZ_CHECK(opened && *opened == plaintext, "a sealed state does not open to itself");
  DROID_FUZZ_CHECK(!other_sealer().open(token, limit, why), "a token opened with another secret");
  DROID_FUZZ_CHECK(why == open_failure::unknown_key, "another secret's token is not unknown_key");
  DROID_FUZZ_CHECK(!here.open(token, token.size() - 1, why) && why == open_failure::oversized,
                   "the size limit was not applied");

  static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (int round = 0; round < 8; ++round) {
    std::string t = token;
    switch (pick.below(5)) {
      case 0: {
        const std::size_t at = pick.below(t.size());
        t[at] = alphabet[(alphabet.find(t[at]) + 1 + pick.below(63)) % 64];
        break;
      }
      case 1: t.resize(pick.below(t.size())); break;
      case 2: t += alphabet[pick.below(64)]; break;
      case 3: t[pick.below(t.size())] = static_cast<char>(pick.below(256)); break;
      default: {
        // The last character carries padding bits when the length is not a multiple of
        // three: another character with the same high bits decodes to the same bytes.
        const std::size_t v = alphabet.find(t.back());
        t.back() = alphabet[(v & ~std::size_t{0xF}) | pick.below(16)];
        break;
      }
    }
    if (t != token) must_refuse(here, t, "a tampered token opened");
  }
}

void payload(std::string_view text) {
  droid::detail::round_state st;
  if (!droid::detail::decode_state(text, st)) return;
  const std::string again = droid::detail::encode_state(st);
  droid::detail::round_state back;
  DROID_FUZZ_CHECK(droid::detail::decode_state(again, back), "an encoded state does not decode");
  DROID_FUZZ_CHECK(droid::detail::encode_state(back) == again, "a state changed through encode and decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text = droid::fuzz::as_text(data + 1, size - 1);
  droid::fuzz::choices pick(text);
  switch (data[0]) {
    case 1: tamper(std::string(text), pick); break;
    case 2: payload(text); break;
    default: must_refuse(sealer(), text, "a token the client made up opened"); break;
  }
  return 0;
}
