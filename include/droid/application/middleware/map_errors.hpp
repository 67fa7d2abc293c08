// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::middleware::map_errors`: one place that decides what errors say to clients.
///
/// Application layer, free of I/O.
///
///     server.use(droid::middleware::map_errors(droid::middleware::hide_internal_details));
///     server.use(droid::middleware::map_errors([](const droid::middleware::request&,
///                                                 droid::middleware::error_info& e) {
///       if (e.code == -32602) e.message = "Those arguments do not fit: " + e.message;
///     }));
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include <boost/json/value.hpp>

#include <droid/application/server/middleware.hpp>

namespace droid::middleware {

/// An error on its way to the client, for a mapper to edit.
struct error_info {
  std::int64_t code = 0;  ///< the JSON-RPC code
  std::string message{};  ///< `error.message`
  boost::json::value data{};  ///< `error.data` (null: none)
  /// Over HTTP, the status the error goes with (0: 200; 429 and 503 with Retry-After).
  int http_status = 0;
  /// What a later step threw, when the error comes from an exception (null for an error
  /// answer): a `droid::protocol_error` keeps its code, message and data; anything else
  /// arrives as -32603 with the exception's message, which clients should usually not
  /// see (`hide_internal_details`).
  std::exception_ptr thrown{};
};

/// Edits an error before it is sent.
using error_mapper = std::function<void(const request&, error_info&)>;

/// The middleware that hands every error answer, and every exception thrown after it in
/// the chain (the method's own failures are answers already), to `mapper`, and sends what
/// it leaves. An exception it catches is not logged by the server (it never reaches the
/// engine): a mapper that hides its text should log `thrown` itself. A mapper that throws
/// fails the request as any throwing middleware does (-32603, logged).
[[nodiscard]] handler map_errors(error_mapper mapper);

/// A mapper that gives -32603 errors the message "Internal error" and no data, so
/// internal details (an exception's text, a path) stay in the server's log.
void hide_internal_details(const request& req, error_info& e);

}  // namespace droid::middleware
