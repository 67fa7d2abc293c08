// SPDX-License-Identifier: BSL-1.0
/// @file
/// Application routes: the checks they share with MCP, and the handler's call.
#include "routes.hpp"

#include <exception>
#include <string>

#include <droid/application/server/server.hpp>

#include "access/request_rules.hpp"
#include "connection.hpp"

namespace droid::http::detail {

const route* find_route(const std::vector<route>& routes, std::string_view path) noexcept {
  for (const route& r : routes)
    if (r.path == path) return &r;
  return nullptr;
}

task<bool> serve_route(connection& c, request& req, const options& opts, const route& r, droid::server& srv,
                       const listener& served_by) {
  // The same DNS-rebinding rule as the MCP endpoint: a page elsewhere must not read
  // these paths through a name that resolves to this host.
  const std::string_view* host = req.host();
  const bool host_ok = host ? c.host_passes(*host, opts.allowed_hosts)
                            : req.version_minor == 0 && !c.local_is_loopback();
  if (!host_ok || req.count("origin") > 1 || !origin_allowed(req.find("origin"), opts.allowed_origins))
    co_return co_await c.reply(403, "text/plain", "Forbidden: Host or Origin not allowed\n");
  // HEAD is GET without the body (RFC 9110 §9.3.2; the connection leaves the body out).
  if (req.method != "GET" && req.method != "HEAD")
    co_return co_await c.reply(405, "text/plain", "method not allowed\n", false, "Allow: GET, HEAD\r\n");
  route_response answer;
  bool failed = false;
  try {
    answer = r.handler(served_by, req.target);
  } catch (const std::exception& e) {
    srv.diagnose(diagnostic_level::error, "route failed", {{"transport", "http"}, {"path", r.path}, {"error", e.what()}});
    failed = true;
  } catch (...) {
    srv.diagnose(diagnostic_level::error, "route failed with a non-standard exception",
                 {{"transport", "http"}, {"path", r.path}});
    failed = true;
  }
  if (failed) co_return co_await c.reply(500, "text/plain", "internal error\n");
  co_return co_await c.reply(answer.status, answer.content_type, answer.body);
}

}  // namespace droid::http::detail
