// SPDX-License-Identifier: BSL-1.0
/// @file
/// Asio's TLS code compiled once, apart from asio_impl.cpp so that a build without TLS
/// (-Dtls=disabled) neither compiles nor links it. A standard header first, for the
/// reason asio_impl.cpp gives.
#include <cstddef>

#include <asio/ssl/impl/src.hpp>
