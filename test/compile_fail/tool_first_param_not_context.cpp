// SPDX-License-Identifier: BSL-1.0
// A tool handler whose first parameter is not `droid::tool_context&` (here a const
// reference, an easy slip: the context is mutable because progress and sampling use it).
// droid-expect-error: droid: a tool handler's first parameter must be droid::tool_context&
#include <boost/describe/class.hpp>

#include <droid/application/server/server.hpp>

struct add_args {
  int a = 0;
  int b = 0;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))

void register_tools(droid::server& server) {
  server.tool("add", "Adds two integers",
              [](const droid::tool_context&, add_args args) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text(std::to_string(args.a + args.b));
              });
}
