// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one doctest main shared by every test executable (linking one main per layer
/// instead of per file keeps link time down on 2 cores).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
