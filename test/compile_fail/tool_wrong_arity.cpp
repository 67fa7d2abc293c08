// SPDX-License-Identifier: BSL-1.0
// A tool handler taking its arguments as separate parameters instead of one struct.
// droid-expect-error: droid: a tool handler takes (droid::tool_context&) or (droid::tool_context&, Args)
#include <droid/application/server/server.hpp>

void register_tools(droid::server& server) {
  server.tool("add", "Adds two integers", [](droid::tool_context&, int a, int b) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::text(std::to_string(a + b));
  });
}
