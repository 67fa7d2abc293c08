// SPDX-License-Identifier: BSL-1.0
// The public-API test (libcamera's technique; docs/architecture.md#layers): what a user
// gets from the umbrella header, compiled exactly as a user compiles it, with droid_dep's
// public include directories only. Also the `main` of the header_checks executable, so that
// every generated self-containment TU is built before `meson test` can pass.
#include <droid/droid.hpp>

// simdjson is private to lib/domain/ir/*.cpp: its 7 MB header must never reach users.
// SIMDJSON_VERSION_MAJOR is an enumerator in simdjson 3, not a macro, so `#ifdef` on it
// alone would never fire; the include guard and SIMDJSON_VERSION are macros.
#if defined(SIMDJSON_H) || defined(SIMDJSON_VERSION) || defined(SIMDJSON_VERSION_MAJOR)
#error "<droid/droid.hpp> leaks simdjson into the public API"
#endif

// This TU must see include/ only. lib/ on the include path would let a public header
// include a private one unnoticed; lib/domain/ir/decode.cpp is the file
// docs/architecture.md#layers names as simdjson's only user, so it is a stable landmark
// of lib/.
#if __has_include(<domain/ir/decode.cpp>) || __has_include(<lib/domain/ir/decode.cpp>)
#error "lib/ is on the include path of the public-API test; compile it with droid_dep only"
#endif

// The version header is generated into the build tree; the umbrella must bring it.
#ifndef DROID_VERSION_STRING
#error "<droid/droid.hpp> does not provide <droid/version.hpp>"
#endif

int main() { return droid::version_string[0] == '\0' ? 1 : 0; }
