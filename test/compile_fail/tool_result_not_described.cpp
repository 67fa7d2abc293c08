// SPDX-License-Identifier: BSL-1.0
// A typed result that is a struct without BOOST_DESCRIBE_STRUCT: it has no outputSchema
// and no JSON form.
// droid-expect-error: droid: a tool returns task<tool_result>, task<std::string> or task<S> for a described struct S
#include <droid/application/server/server.hpp>

struct sum {
  int result = 0;
};

void register_tools(droid::server& server) {
  server.tool("one", "Returns one", [](droid::tool_context&) -> droid::task<sum> { co_return sum{1}; });
}
