// SPDX-License-Identifier: BSL-1.0
/// @file
/// Asio's separate-compilation unit: its non-template code compiled once for the whole
/// library instead of in every translation unit that includes an Asio header.
#include <asio/impl/src.hpp>
