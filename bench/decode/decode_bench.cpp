// SPDX-License-Identifier: BSL-1.0
/// @file
/// Micro-benchmarks of the JSON-RPC decoder: envelope plus raw params, and typed tool
/// arguments. Each checks its output once before timing (docs/conventions.md#benchmarks).
#include <string>

#include <benchmark/benchmark.h>

#include <boost/describe.hpp>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/schema.hpp>

namespace {

const std::string call =
    R"({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo","days":5,"unit":"metric","fields":["wind","rain","humidity"]},"_meta":{"progressToken":"tok-42"}}})";

struct forecast_args {
  std::string city;
  int days = 3;
  std::string unit;
  std::vector<std::string> fields;
};
BOOST_DESCRIBE_STRUCT(forecast_args, (), (city, days, unit, fields))

void decode_envelope(benchmark::State& state) {
  {
    auto d = droid::ir::decode(call);
    auto& m = std::get<droid::ir::message>(d);
    if (m.method() != "tools/call" || m.params().text.size() < 100) state.SkipWithError("decoder output is wrong");
  }
  for (auto _ : state) {
    auto d = droid::ir::decode(call);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(call.size()));
}
BENCHMARK(decode_envelope);

void decode_typed_arguments(benchmark::State& state) {
  auto d = droid::ir::decode(call);
  const std::string_view params = std::get<droid::ir::message>(d).params().text;
  auto run = [&](forecast_args& out) {
    std::string error;
    (void)droid::ir::visit_json(params, [&](const droid::ir::json_node& p) {
      droid::ir::json_node args;
      if (p.find("arguments", args)) (void)droid::decode(args, out, error);
    });
  };
  {
    forecast_args a{};
    run(a);
    if (a.city != "Oslo" || a.days != 5 || a.fields.size() != 3) state.SkipWithError("argument decoding is wrong");
  }
  for (auto _ : state) {
    forecast_args a{};
    run(a);
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(decode_typed_arguments);

}  // namespace

BENCHMARK_MAIN();
