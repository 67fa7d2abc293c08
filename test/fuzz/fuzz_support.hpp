// SPDX-License-Identifier: BSL-1.0
/// @file
/// What every fuzz harness shares: an oracle check that stops the run in any build, and
/// a deterministic stream of choices drawn from the input itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

/// Fails the run when an oracle does not hold, with the condition and a note.
///
/// Why not `assert`: the replay tests also run in release builds, where `assert` is
/// compiled out and a broken oracle would pass silently; libFuzzer records an abort as
/// a crash and saves the input.
#define DROID_FUZZ_CHECK(cond, note)                                                                    \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: oracle failed: %s (%s)\n", __FILE__, __LINE__, #cond, note);         \
      std::abort();                                                                                     \
    }                                                                                                   \
  } while (false)

namespace droid::fuzz {

/// Input bytes as text, the way every harness hands them to the code under test.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

/// A small PRNG (SplitMix64) seeded from the input's bytes.
///
/// Why seeded from the input and not random: a crash must reproduce from its input file
/// alone, so every "random" split a harness tries is a function of that file; and the
/// corpus files stay plain protocol text, with no control bytes prepended.
class choices {
 public:
  explicit choices(std::string_view bytes) noexcept {
    // FNV-1a over the input, then SplitMix64 from there.
    std::uint64_t h = 1469598103934665603ULL;
    for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    state_ = h;
  }
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// A number in [0, n); 0 when n is 0.
  std::size_t below(std::size_t n) noexcept { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

}  // namespace droid::fuzz
