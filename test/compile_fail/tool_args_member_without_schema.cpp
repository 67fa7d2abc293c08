// SPDX-License-Identifier: BSL-1.0
// Described tool arguments with a member whose type has no JSON Schema (a raw pointer).
// droid-expect-error: droid: a tool's argument struct has a member with no JSON form
#include <boost/describe/class.hpp>

#include <droid/application/server/server.hpp>

struct lookup_args {
  const char* key = nullptr;
};
BOOST_DESCRIBE_STRUCT(lookup_args, (), (key))

void register_tools(droid::server& server) {
  server.tool("lookup", "Looks a key up", [](droid::tool_context&, lookup_args) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::text("");
  });
}
