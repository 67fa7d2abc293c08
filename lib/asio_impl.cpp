// SPDX-License-Identifier: BSL-1.0
/// @file
/// Asio's separate-compilation unit: its non-template code compiled once for the whole
/// library instead of in every translation unit that includes an Asio header.
///
/// A standard header comes first on purpose. Asio decides at its first include whether
/// it allocates with `aligned_alloc` (when libstdc++'s configuration says it exists);
/// included before any standard header, this unit decided "no" and allocated with
/// `operator new` what every other unit (which includes standard headers first) frees
/// with `free`: a mismatched allocation and deallocation, reported by AddressSanitizer.
#include <cstddef>

#include <asio/impl/src.hpp>

// Fails the build if the order above is ever undone: libstdc++ has aligned_alloc, so
// Asio must have seen it here as it does everywhere else.
#if defined(_GLIBCXX_HAVE_ALIGNED_ALLOC) && !defined(ASIO_HAS_STD_ALIGNED_ALLOC)
#error "asio_impl.cpp: Asio was configured before libstdc++; include a standard header first"
#endif
