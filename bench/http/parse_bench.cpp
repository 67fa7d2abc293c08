// SPDX-License-Identifier: BSL-1.0
/// @file
/// Micro-benchmark of HTTP/1.1 request framing: `request_parser` on the exact request wrk
/// sends in the HTTP benchmark (bench/http/call.lua), fed the way the connection loop
/// feeds it. A private header, hence droid_private_dep. Checks the parsed request once
/// before timing (docs/conventions.md#benchmarks), so a parser that got faster by
/// dropping a field fails instead of winning.
///
/// For instruction counts, run it under callgrind and divide the inclusive cost of
/// `parse_and_discard` (parse, take, destroy) by its call count:
///
///     valgrind --tool=callgrind --callgrind-out-file=cg.out build/bench/parse_bench
///     callgrind_annotate --inclusive=yes cg.out | grep parse_and_discard
#include <cstdint>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>

#include "adapters/primary/transport/http/wire/request_parser.hpp"

namespace {

using droid::http::detail::request;
using droid::http::detail::request_parser;

const std::string body =
    R"({"jsonrpc":"2.0","id":1000000001,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})";
const std::string session_id = "0123456789abcdef0123456789abcdef";

/// What wrk.format() writes for call.lua: its request line, call.lua's headers plus the
/// Host and Content-Length wrk adds, then the body.
const std::string wire = "POST /mcp HTTP/1.1\r\n"
                         "Host: 127.0.0.1:8080\r\n"
                         "Content-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\n"
                         "MCP-Protocol-Version: 2025-11-25\r\n"
                         "Mcp-Session-Id: " +
                         session_id +
                         "\r\n"
                         "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body;

/// One request through the parser as listener.cpp's connection loop drives it: a feed
/// that stops after the header block, a feed for the body, then take(). Out of line so
/// callgrind can attribute its cost (see the file comment).
[[gnu::noinline]] request parse_once(request_parser& p) {
  std::size_t used = p.feed(wire.data(), wire.size());
  used += p.feed(wire.data() + used, wire.size() - used);
  if (used != wire.size() || !p.complete()) return {};
  return p.take();
}

/// `parse_once` plus destroying the request, which a connection does after answering it:
/// the cost per request that a server pays. Out of line for callgrind as well.
[[gnu::noinline]] std::size_t parse_and_discard(request_parser& p) {
  const request r = parse_once(p);
  return r.body.size();
}

/// Empty when `r` is the request `wire` carries, otherwise what is wrong.
std::string check(const request& r) {
  const auto has = [&](std::string_view name, std::string_view value) {
    const auto* found = r.find(name);
    return found != nullptr && *found == value;
  };
  if (r.method != "POST" || r.target != "/mcp") return "request line";
  if (r.version_major != 1 || r.version_minor != 1 || !r.keep_alive) return "version or keep-alive";
  if (r.headers.size() != 6) return "field count";
  if (!has("host", "127.0.0.1:8080") || !has("content-type", "application/json") ||
      !has("accept", "application/json, text/event-stream") || !has("mcp-protocol-version", "2025-11-25") ||
      !has("mcp-session-id", session_id) || !has("content-length", std::to_string(body.size())))
    return "field values";
  if (r.body != body) return "body";
  return {};
}

void parse_wrk_request(benchmark::State& state) {
  request_parser p;
  if (const std::string wrong = check(parse_once(p)); !wrong.empty()) {
    state.SkipWithError(("parsed request is wrong: " + wrong).c_str());
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse_and_discard(p));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(wire.size()));
}
BENCHMARK(parse_wrk_request);

}  // namespace

BENCHMARK_MAIN();
