// SPDX-License-Identifier: BSL-1.0
// Tool arguments of a type without a Boost.Describe description: no schema can be made.
// droid-expect-error: droid: tool arguments must be a Boost.Describe'd struct
#include <droid/application/server/server.hpp>

void register_tools(droid::server& server) {
  server.tool("square", "Squares an integer", [](droid::tool_context&, int x) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::text(std::to_string(x * x));
  });
}
