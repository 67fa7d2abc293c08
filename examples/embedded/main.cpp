// SPDX-License-Identifier: BSL-1.0
// protocol_droid inside an application that already runs Asio. The application (a
// pretend thermostat) owns one io_context and its thread; the MCP listener serves on that
// same context, so the tools read and change the application's state with no lock: a
// tool runs on the thread that runs everything else.
//
//   build/examples/embedded/embedded-server [--http HOST:PORT]   # prints the MCP URL; Ctrl-C stops
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <boost/describe.hpp>

#include <droid/droid.hpp>

/// The application's own state, touched only on its io_context's thread.
struct thermostat {
  double temperature = 18.0;
  double target = 21.0;
  long ticks = 0;
};

struct target_args {
  double celsius;
};
BOOST_DESCRIBE_STRUCT(target_args, (), (celsius))

/// The application's own work on the context: every 100 ms the room moves a tenth of a
/// degree towards the target.
void regulate(asio::steady_timer& timer, thermostat& t) {
  timer.expires_after(std::chrono::milliseconds(100));
  timer.async_wait([&timer, &t](const std::error_code& ec) {
    if (ec) return;  // cancelled: the application is shutting down
    if (t.temperature < t.target - 0.05) t.temperature += 0.1;
    else if (t.temperature > t.target + 0.05) t.temperature -= 0.1;
    ++t.ticks;
    regulate(timer, t);
  });
}

int main(int argc, char** argv) {
  asio::io_context io(1);  // one thread: the application's, which main() lends it below
  thermostat state;
  asio::steady_timer timer(io);
  regulate(timer, state);

  droid::server server({.name = "embedded-thermostat", .version = "1.0.0"});
  server.tool("reading", "The room's temperature and the thermostat's target, in degrees Celsius",
              [&state](droid::tool_context&) -> droid::task<std::string> {
                co_return "temperature " + std::to_string(state.temperature) + ", target " +
                    std::to_string(state.target) + " after " + std::to_string(state.ticks) + " ticks";
              });
  server.tool("set_target", "Sets the thermostat's target temperature (5 to 30 degrees Celsius)",
              [&state](droid::tool_context&, target_args args) -> droid::task<droid::tool_result> {
                if (!(args.celsius >= 5 && args.celsius <= 30))
                  co_return droid::tool_result::error("celsius must be between 5 and 30");
                state.target = args.celsius;
                co_return droid::tool_result::text("target set to " + std::to_string(args.celsius));
              });

  droid::http::options opts;  // 127.0.0.1, a free port
  if (argc == 3 && std::string_view(argv[1]) == "--http") {
    const std::string_view where = argv[2];
    const auto colon = where.rfind(':');
    opts.host = std::string(where.substr(0, colon));
    opts.port = static_cast<std::uint16_t>(std::stoi(std::string(where.substr(colon + 1))));
  } else if (argc != 1) {
    std::cerr << "usage: " << argv[0] << " [--http HOST:PORT]\n";
    return 2;
  }
  droid::http::listener mcp(server, opts, {&io});
  mcp.start();
  std::cout << mcp.url() << std::endl;

  // The application decides when to stop: the listener ends its sessions and connections,
  // then the application ends its own work, and run() returns when nothing is left.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const std::error_code& ec, int) {
    if (!ec) mcp.stop([&timer] { timer.cancel(); });
  });
  std::signal(SIGPIPE, SIG_IGN);
  io.run();
  return 0;
}
