// SPDX-License-Identifier: BSL-1.0
/// @file
/// everything-server: the example protocol_droid server, written with the public API only.
///
/// Serves a handful of tools that show the framework's shapes: plain text, typed
/// arguments with a typed (structured) result, progress, cancellation, and a tool that
/// fails. The peer tests drive it with the official TypeScript SDK client.
///
///     build/examples/everything-server            # stdio (the default)
///     build/examples/everything-server --stdio
///     build/examples/everything-server --http 127.0.0.1:8080 [--json-response] [--stateless] [--threads N]
///                                      [--max-requests-per-address N] [--max-sessions-per-tenant N]
///                                      [--tls-cert FILE --tls-key FILE] [--cors-origin ORIGIN]...
///                                      [--auth-issuer URL --auth-audience URL --auth-jwks FILE|URL]
///                                      [--diagnostics SECONDS] [--metrics] [--rate-limit N] [--access-log]
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <boost/describe.hpp>

#include <unistd.h>

#include <droid/application/extensions/skills.hpp>
#include <droid/droid.hpp>

#include "auth_tools.hpp"
#include "conformance_tools.hpp"
#include "everything_tools.hpp"
#include "weather_app.hpp"

namespace {

/// What a person or script at the terminal is told once the server listens.
void announce(const droid::http::listener& l) {
  // The URL on stdout, alone on its line, is what scripts and tests wait for.
  std::cout << l.url() << std::endl;
  std::cerr << "everything-server: serving Streamable HTTP at " << l.url()
            << "\n  connect with: npx @modelcontextprotocol/inspector (transport: Streamable HTTP, URL above)\n"
               "  stop with Ctrl-C\n";
}

/// `droid::http::serve`, plus a line on stderr every `every` with the live sessions,
/// connections and coroutine frames (`--diagnostics`; scripts/soak reads it to tell a
/// leak from a steady state).
///
/// Why not `serve()` with a reporter started from its callback: the reporter reads the
/// listener, which `serve()` destroys before returning, so nothing could stop the reporter
/// in time. Here the listener outlives it, and SIGINT/SIGTERM stop it as `serve()` would.
int serve_with_diagnostics(droid::server& server, droid::http::options http, std::chrono::seconds every) {
  std::signal(SIGPIPE, SIG_IGN);
  droid::http::listener l(server, std::move(http));
  announce(l);
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  std::thread reporter([&] {
    std::unique_lock lock(mutex);
    while (!wake.wait_for(lock, every, [&] { return done; }))
      std::cerr << "everything-server: diagnostics: sessions " << l.sessions() << " connections "
                << l.connections() << " live_frames " << droid::live_frames() << std::endl;
  });
  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  signals.async_wait([&l](const std::error_code& ec, int) {
    if (!ec) l.stop();
  });
  std::thread watcher([&signal_io] { signal_io.run(); });
  l.run();
  signals.cancel();
  signal_io.stop();
  watcher.join();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  wake.notify_one();
  reporter.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> http_address;
  droid::http::options http;
  std::chrono::seconds diagnostics{0};
  auth_flags auth;
  bool metrics = false;
  std::string state_secret_file;
  // The two skills of examples/skills (docs/skills.md), found in the source tree this
  // binary was built from unless --skills names another directory.
  std::string skills_dir = DROID_EXAMPLE_SKILLS_DIR;
  bool apps = true;
  double rate_limit = 0;
  bool access_log = false;
  bool pass_through = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--stdio") {
      http_address.reset();
    } else if (arg == "--http" && i + 1 < argc) {
      http_address = argv[++i];
    } else if (arg == "--json-response") {
      http.reply = droid::http::streaming::json;
    } else if (arg == "--stateless") {
      http.stateless = true;
    } else if (arg == "--legacy-sse") {
      http.legacy_sse = true;
    } else if (arg == "--threads" && i + 1 < argc) {
      http.threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (arg == "--max-requests-per-address" && i + 1 < argc) {
      http.max_requests_per_address = std::stoul(argv[++i]);
    } else if (arg == "--max-sessions-per-tenant" && i + 1 < argc) {
      http.max_sessions_per_tenant = std::stoul(argv[++i]);
    } else if (arg == "--tls-cert" && i + 1 < argc) {
      http.tls_certificate_chain = argv[++i];
    } else if (arg == "--tls-key" && i + 1 < argc) {
      http.tls_private_key = argv[++i];
    } else if (arg == "--trusted-proxy" && i + 1 < argc) {
      http.trusted_proxies.emplace_back(argv[++i]);
    } else if (arg == "--cors-origin" && i + 1 < argc) {
      http.allowed_origins.emplace_back(argv[++i]);
    } else if (arg == "--auth-issuer" && i + 1 < argc) {
      auth.issuer = argv[++i];
    } else if (arg == "--auth-audience" && i + 1 < argc) {
      auth.audience = argv[++i];
    } else if (arg == "--auth-jwks" && i + 1 < argc) {
      auth.jwks = argv[++i];
    } else if (arg == "--auth-jwks-ca" && i + 1 < argc) {
      auth.jwks_ca = argv[++i];
    } else if (arg == "--diagnostics" && i + 1 < argc) {
      diagnostics = std::chrono::seconds(std::stoul(argv[++i]));
    } else if (arg == "--metrics") {
      metrics = true;
    } else if (arg == "--redis" && i + 1 < argc) {
      http.cluster.redis_url = argv[++i];
    } else if (arg == "--instance-id" && i + 1 < argc) {
      http.cluster.instance_id = argv[++i];
    } else if (arg == "--state-secret-file" && i + 1 < argc) {
      state_secret_file = argv[++i];
    } else if (arg == "--skills" && i + 1 < argc) {
      skills_dir = argv[++i];
    } else if (arg == "--no-skills") {
      skills_dir.clear();
    } else if (arg == "--no-apps") {
      apps = false;
    } else if (arg == "--rate-limit" && i + 1 < argc) {
      try {
        rate_limit = std::stod(argv[++i]);
      } catch (const std::exception&) {
        rate_limit = -1;
      }
      if (!(rate_limit > 0) || !std::isfinite(rate_limit)) {
        std::cerr << "everything-server: --rate-limit needs a positive number of requests per second\n";
        return 2;
      }
    } else if (arg == "--access-log") {
      access_log = true;
    } else if (arg == "--pass-through-middleware") {
      pass_through = true;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: everything-server [--stdio | --http HOST:PORT [--json-response] [--stateless] [--legacy-sse] [--threads N]\n"
                   "                         [--max-requests-per-address N] [--max-sessions-per-tenant N]\n"
                   "                         [--tls-cert FILE --tls-key FILE] [--cors-origin ORIGIN]... [--trusted-proxy ADDR]...\n"
                   "                         [--auth-issuer URL --auth-audience URL --auth-jwks FILE|URL] [--diagnostics SECONDS] [--metrics]\n"
                   "                         [--redis URL [--instance-id NAME]]] [--skills DIR | --no-skills] [--no-apps]\n"
                   "                         [--rate-limit N] [--access-log]\n"
                   "  --stdio            serve MCP on stdin/stdout (the default)\n"
                   "  --http HOST:PORT   serve Streamable HTTP at http://HOST:PORT/mcp (PORT 0: any free port)\n"
                   "  --json-response    answer requests with one JSON document instead of an event stream\n"
                   "  --stateless        no sessions: every POST is served on its own\n"
                   "  --legacy-sse       also serve the 2024-11-05 HTTP+SSE transport at /sse and /messages\n"
                   "  --threads N        HTTP threads (shards); default: one per core\n"
                   "  --max-requests-per-address N\n"
                   "                     requests and streams one client address may have open at once\n"
                   "                     (default 256; 0: no limit)\n"
                   "  --max-sessions-per-tenant N\n"
                   "                     sessions one principal (or, without authentication, one address)\n"
                   "                     may hold at once (default 1000; 0: no share)\n"
                   "  --trusted-proxy A  a reverse proxy (address or network, e.g. 127.0.0.1 or 10.0.0.0/8) whose\n"
                   "                     X-Forwarded-For names the client each per-address limit counts (repeatable)\n"
                   "  --tls-cert FILE    HTTPS: the certificate chain (PEM, leaf first); SIGHUP reloads it\n"
                   "  --tls-key FILE     HTTPS: its private key (PEM)\n"
                   "  --cors-origin O    let browser pages from origin O (e.g. https://app.example.com) call the\n"
                   "                     server; loopback origins always may (repeatable)\n"
                   "  --auth-issuer URL  require bearer tokens (JWT, RS256/ES256/EdDSA) issued by URL\n"
                   "  --auth-audience U  this server's resource identifier, which tokens must name (its public URL)\n"
                   "  --auth-jwks F|URL  the issuer's key set (JSON Web Key Set), a file or an https:// URL\n"
                   "  --auth-jwks-ca F   extra CA certificates (PEM) for an https:// key set\n"
                   "                     with these, tools whoami and admin_reset (scope admin) are added\n"
                   "  --diagnostics S    every S seconds, log live sessions, connections and coroutine frames to stderr\n"
                   "  --metrics          HTTP: serve Prometheus metrics at /metrics (no authentication; Host/Origin checked)\n"
                   "  --redis URL        HTTP: one instance of several behind a load balancer, sharing sessions\n"
                   "                     through Redis at URL (redis://127.0.0.1:6379); see docs/scale-out.md\n"
                   "  --instance-id N    this instance's name among the others (default: host, pid, random)\n"
                   "  --state-secret-file F  seal 2026-07-28 requestState with the secret in F (at least 32 bytes);\n"
                   "                     give every instance behind one balancer the same file\n"
                   "  --skills DIR       serve the skills in DIR's subdirectories (the Skills extension, docs/skills.md);\n"
                   "                     default: the example's own two, " DROID_EXAMPLE_SKILLS_DIR "\n"
                   "  --no-skills        serve no skills (the extension is not declared)\n"
                   "  --no-apps          serve weather_card without its MCP App view (docs/apps.md)\n"
                   "  --rate-limit N     each tenant (principal, else address) may make N requests a second, bursts\n"
                   "                     of 2N; past it -32600, and over HTTP 429 with Retry-After (docs/middleware.md)\n"
                   "  --access-log       one logfmt line per request on stderr, timed (with --metrics, also a histogram)\n"
                   "  --pass-through-middleware  one middleware that passes every request on (the bench's measure of\n"
                   "                     what a middleware costs)\n";
      return 0;
    } else {
      std::cerr << "everything-server: unknown option " << arg << " (try --help)\n";
      return 2;
    }
  }

  droid::server_info info;
  info.name = "everything-server";
  info.title = "protocol_droid everything server";
  info.version = droid::version_string;
  info.instructions =
      "Example tools: echo, add, forecast, count (progress), sleep (cancellable), summarize (asks the client's model), "
      "book_table (asks the user a form), roots (asks the client's roots), reconnect (stream resumption), fail, "
      "client_info, weather_card (an MCP App).";
  // Where an agent finds the skills (the Skills extension lets a server point to them).
  if (!skills_dir.empty())
    info.instructions += " Skills: skill://table-booking/SKILL.md (book a table), "
                         "skill://weather-briefing/SKILL.md (a briefing from forecasts).";
  // --metrics: every request counted and timed, served at /metrics on the same listener
  // (docs/observability.md).
  droid::server_options options;
  std::shared_ptr<droid::metrics> observed;
  if (metrics) options.observer = observed = std::make_shared<droid::metrics>();
  if (!state_secret_file.empty()) {
    std::ifstream in(state_secret_file, std::ios::binary);
    std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (!in.good() && !in.eof()) secret.clear();
    if (secret.size() < 32) {
      std::cerr << "everything-server: --state-secret-file needs a readable file of at least 32 bytes\n";
      return 2;
    }
    options.multi_round.state_secrets = {secret};
  }
  droid::server server(std::move(info), options);
  if (observed) http.routes.push_back(droid::http::metrics_route(observed, server));
  register_tools(server);
  register_conformance(server);  // the conformance suite's fixtures (conformance_tools.cpp)
  register_weather_app(server, apps);  // the MCP App (weather_app.cpp)
  // Middleware (docs/middleware.md): the access log outermost, so it times the limiter's
  // refusals too.
  if (access_log) server.use(droid::middleware::access_log({.metrics = observed}));
  if (pass_through)
    server.use([](droid::middleware::request& req, droid::middleware::next next) -> droid::task<droid::middleware::response> {
      co_return co_await next(req);
    });
  if (rate_limit > 0) server.use(droid::middleware::rate_limit({.per_second = rate_limit, .burst = 2 * rate_limit}));
  if (!skills_dir.empty()) {
    try {
      droid::skills::serve(server, droid::skills::from_directories(skills_dir));
    } catch (const std::exception& e) {
      std::cerr << "everything-server: --skills " << skills_dir << ": " << e.what() << "\n";
      return 2;
    }
  }

  if (!http.cluster.redis_url.empty() && !http_address) {
    std::cerr << "everything-server: --redis shares HTTP sessions between instances; add --http HOST:PORT\n";
    return 2;
  }
  if (auth.any() && !http_address) {
    // stdio has no tokens: the client that spawns the server is trusted as its user is.
    std::cerr << "everything-server: --auth-* protects HTTP; add --http HOST:PORT\n";
    return 2;
  }
  if (http_address) {
    const auto colon = http_address->rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "everything-server: --http needs HOST:PORT, e.g. 127.0.0.1:8080\n";
      return 2;
    }
    http.host = http_address->substr(0, colon);
    if (http.host.size() > 2 && http.host.front() == '[') http.host = http.host.substr(1, http.host.size() - 2);
    http.port = static_cast<std::uint16_t>(std::stoi(http_address->substr(colon + 1)));
    try {
      if (auth.any()) configure_auth(server, http, auth);
      if (diagnostics.count() > 0) return serve_with_diagnostics(server, std::move(http), diagnostics);
      return droid::http::serve(server, http, announce);
    } catch (const std::exception& e) {
      std::cerr << "everything-server: " << e.what() << "\n";
      return 1;
    }
  }

  // The banner is for a person at a terminal; a client that spawns the server reads its
  // stderr as a log, where a how-to is noise.
  if (isatty(STDIN_FILENO))
    std::cerr << "everything-server " << droid::version_string
            << ": serving MCP over stdio (newline-delimited JSON-RPC on stdin/stdout).\n"
               "  Connect a client by letting it spawn this program, e.g.\n"
               "    npx @modelcontextprotocol/inspector " << argv[0] << "\n"
               "  or type a message, e.g.\n"
               "    {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
               "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"me\",\"version\":\"1\"}}}\n"
               "  End input (Ctrl-D) to stop; run with --help for the HTTP transport.\n";
  return droid::stdio::serve(server);
}
