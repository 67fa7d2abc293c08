// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::metrics_route`: `/metrics` for Prometheus on the listener that serves MCP.
///
/// Primary adapter. Joins the two halves an application would otherwise wire by hand:
/// the engine's `droid::metrics` (requests) and the gauges only the transport and the
/// server know at scrape time (sessions, connections, streams, kept frames, tasks).
///
///     auto m = std::make_shared<droid::metrics>();
///     droid::server_options so;
///     so.observer = m;
///     droid::server srv(info, so);
///     droid::http::options opts;
///     opts.routes.push_back(droid::http::metrics_route(m, srv));
#pragma once

#include <memory>
#include <string>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/metrics.hpp>

namespace droid {
class server;
}

namespace droid::http {

/// A route answering GET `path` with `m`'s exposition plus these gauges:
/// `droid_http_sessions`, `droid_http_connections`, `droid_http_streams` (of the listener
/// that serves the scrape), `droid_kept_frames`, `droid_running_tasks` (of `srv`) and
/// `droid_live_coroutine_frames` (of the process). Lifetime: `srv` must outlive the
/// listener the route is given to (it must anyway).
[[nodiscard]] route metrics_route(std::shared_ptr<const droid::metrics> m, const droid::server& srv,
                                  std::string path = "/metrics");

}  // namespace droid::http
