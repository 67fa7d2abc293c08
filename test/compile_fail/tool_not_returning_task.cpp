// SPDX-License-Identifier: BSL-1.0
// A tool handler that is a plain function returning a result instead of droid::task<R>.
// droid-expect-error: droid: a tool handler must return droid::task<R>
#include <droid/application/server/server.hpp>

void register_tools(droid::server& server) {
  server.tool("ping", "Answers pong", [](droid::tool_context&) -> droid::tool_result {
    return droid::tool_result::text("pong");
  });
}
