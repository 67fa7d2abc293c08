// SPDX-License-Identifier: BSL-1.0
// Control: every shape the tool API accepts compiles with the harness's flags. The
// compile_fail snippets beside it each break exactly one thing of this file, so their
// failures come from that one thing and not from the harness.
// droid-expect-success
#include <string>

#include <boost/describe/class.hpp>
#include <boost/json/object.hpp>

#include <droid/application/server/server.hpp>

struct add_args {
  int a = 0;
  int b = 0;
};
BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))

struct sum {
  int result = 0;
};
BOOST_DESCRIBE_STRUCT(sum, (), (result))

void register_tools(droid::server& server) {
  server.tool("add", "Adds two integers", [](droid::tool_context&, add_args args) -> droid::task<sum> {
    co_return sum{args.a + args.b};
  });
  server.tool("add_text", "Adds two integers, as text",
              [](droid::tool_context&, add_args args) -> droid::task<std::string> {
                co_return std::to_string(args.a + args.b);
              });
  server.tool("ping", "Answers pong", [](droid::tool_context&) -> droid::task<droid::tool_result> {
    co_return droid::tool_result::text("pong");
  });
  server.tool("raw", "Takes raw JSON arguments",
              [](droid::tool_context&, boost::json::object args) -> droid::task<droid::tool_result> {
                co_return droid::tool_result::text(std::to_string(args.size()));
              });
}
