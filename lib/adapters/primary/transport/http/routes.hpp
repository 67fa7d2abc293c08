// SPDX-License-Identifier: BSL-1.0
/// @file
/// The application's own GET paths on the listener (`http::options::routes`).
///
/// Primary adapter, private. Apart from listener.cpp's router so that the router gains
/// one branch for them, and so that what they check (Host and Origin, never a token)
/// reads in one place.
#pragma once

#include <string_view>
#include <vector>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/task.hpp>

namespace droid {
class server;
}

namespace droid::http::detail {

class connection;
struct request;

/// The route serving `path` exactly, or null.
[[nodiscard]] const route* find_route(const std::vector<route>& routes, std::string_view path) noexcept;

/// Answers `req` with `r`: 403 when Host or Origin is not allowed (as for MCP), 405 for
/// anything but GET, 500 (logged on `srv`) when the handler throws, else what it
/// returns for `served_by`.
task<bool> serve_route(connection& c, request& req, const options& opts, const route& r, droid::server& srv,
                       const listener& served_by);

}  // namespace droid::http::detail
