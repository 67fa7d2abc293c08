// SPDX-License-Identifier: BSL-1.0
/// @file
/// The example server's own tools (echo, add, forecast, count, sleep, summarize,
/// book_table, roots, reconnect, fail, client_info, update_resource), apart from its
/// `main` so that its tests (everything_test.cpp) serve the same tools in-process.
#pragma once

#include <droid/droid.hpp>

/// Registers the example's tools on `server`.
void register_tools(droid::server& server);
