// SPDX-License-Identifier: BSL-1.0
/// @file
/// `http::metrics_route`: renders the engine's metrics with the transport's gauges.
#include <droid/adapters/primary/transport/http/metrics_route.hpp>

#include <array>
#include <utility>

#include <droid/application/detail/frame_count.hpp>
#include <droid/application/server/server.hpp>

namespace droid::http {

route metrics_route(std::shared_ptr<const droid::metrics> m, const droid::server& srv, std::string path) {
  route r;
  r.path = std::move(path);
  r.handler = [m = std::move(m), &srv](const listener& l, std::string_view) {
    const std::array<droid::metrics::gauge, 8> gauges = {{
        {"droid_http_sessions", "Live MCP sessions on this listener.", static_cast<double>(l.sessions())},
        {"droid_http_connections", "Open HTTP connections.", static_cast<double>(l.connections())},
        {"droid_http_streams", "Open response streams (POST and GET event streams, sessionless answers).",
         static_cast<double>(l.streams())},
        {"droid_http_kept_bytes", "Bytes of events the sessions keep for resumption (max_kept_bytes).",
         static_cast<double>(l.kept_bytes())},
        {"droid_http_kept_squeezed", "Events evicted early or not kept because a share of max_kept_bytes was full.",
         static_cast<double>(l.kept_squeezed())},
        {"droid_kept_frames", "Suspended tools kept for a 2026-07-28 retry, server-wide.",
         static_cast<double>(srv.kept_frames())},
        {"droid_running_tasks", "Tasks whose tool is still running, server-wide.",
         static_cast<double>(srv.running_tasks())},
        {"droid_live_coroutine_frames", "Coroutine frames alive in the process.",
         static_cast<double>(droid::live_frames())},
    }};
    route_response answer;
    answer.content_type = std::string(droid::metrics::content_type);
    answer.body = m->render(gauges);
    return answer;
  };
  return r;
}

}  // namespace droid::http
