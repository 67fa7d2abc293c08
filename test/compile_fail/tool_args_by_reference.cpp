// SPDX-License-Identifier: BSL-1.0
// Tool arguments taken by reference: the coroutine would keep a reference to decoded
// arguments that die when the call that decoded them returns.
// droid-expect-error: droid: take tool arguments by value
#include <boost/describe.hpp>

#include <droid/application/server/server.hpp>

struct square_args {
  int x = 0;
};
BOOST_DESCRIBE_STRUCT(square_args, (), (x))

void register_tools(droid::server& server) {
  server.tool("square", "Squares an integer",
              [](droid::tool_context&, const square_args& a) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text(std::to_string(a.x * a.x));
              });
}
