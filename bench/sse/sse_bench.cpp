// SPDX-License-Identifier: BSL-1.0
/// @file
/// Micro-benchmark of server-sent event framing: `append_sse_event`, which the HTTP
/// listener calls for every event it writes (a private header, hence droid_private_dep).
/// Checks the framing once against the literal the event-stream format requires before
/// timing (docs/conventions.md#benchmarks).
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include "adapters/primary/transport/http/sessions/stream.hpp"

namespace {

const std::string data = R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}})";

void sse_event_framing(benchmark::State& state) {
  const std::string id = droid::http::detail::event_id(2, 1);
  {
    std::string out;
    droid::http::detail::append_sse_event(out, id, data);
    if (out != "id: 2-1\nevent: message\ndata: " + data + "\n\n") {
      state.SkipWithError(("framing is wrong: " + out).c_str());
      return;
    }
  }
  std::string out;
  out.reserve(4096);
  for (auto _ : state) {
    out.clear();  // as the listener does: one buffer reused for a batch of events
    droid::http::detail::append_sse_event(out, id, data);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(sse_event_framing);

/// The event id as well (`event_id(stream, seq)`), which every recorded event mints.
void sse_event_with_id(benchmark::State& state) {
  {
    std::string out;
    droid::http::detail::append_sse_event(out, droid::http::detail::event_id(7, 42), data);
    if (out.rfind("id: 7-42\n", 0) != 0) {
      state.SkipWithError(("event id is wrong: " + out).c_str());
      return;
    }
  }
  std::string out;
  out.reserve(4096);
  std::uint64_t seq = 0;
  for (auto _ : state) {
    out.clear();
    droid::http::detail::append_sse_event(out, droid::http::detail::event_id(7, ++seq), data);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(sse_event_with_id);

}  // namespace

BENCHMARK_MAIN();
