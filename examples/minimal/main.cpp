// SPDX-License-Identifier: BSL-1.0
// The smallest useful MCP server: one typed tool, over stdio. Build it, then let a client
// spawn it, e.g. `npx @modelcontextprotocol/inspector build/examples/minimal/minimal-server`.
#include <optional>
#include <string>

#include <droid/droid.hpp>

struct greet_args {
  std::string name;
  std::optional<int> times;  // optional in the schema; absent means once
};
BOOST_DESCRIBE_STRUCT(greet_args, (), (name, times))

int main() {
  droid::server server({.name = "minimal", .version = "1.0.0"});
  server.tool("greet", "Greets someone, as many times as asked",
              [](droid::tool_context&, greet_args args) -> droid::task<std::string> {
                std::string out;
                for (int i = 0; i < args.times.value_or(1) && i < 10; ++i) out += "Hello, " + args.name + "!\n";
                co_return out;
              });
  return droid::stdio::serve(server);
}
