// SPDX-License-Identifier: BSL-1.0
/// @file
/// Micro-benchmarks of the session engine with no I/O: one `tools/call` dispatched to a
/// tool and answered, and one in-process exchange round trip (the tool asks the client a
/// question, the bench routes the answer back, the tool resumes and answers). The
/// session's outbound is a capture and its io_context is polled, as in
/// test/unit/application/session_test.cpp. Each benchmark checks its output once before
/// timing (docs/conventions.md#benchmarks), and reports `allocs`: calls of `operator new`
/// per item.
#include <atomic>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/domain/ir/codec.hpp>

namespace {

/// Calls of `operator new` in this program, for the `allocs` counter.
///
/// Why counted: allocation was a fifth of a call's time, and a count repeats exactly
/// where times wander. Included: the bench's own copy of the message, one per item. Left
/// out: Asio's operation for the posted driver, which comes from `aligned_alloc` when the
/// post happens outside `run()` (as here) and from Asio's per-thread cache inside it (as
/// in a server).
std::atomic<std::int64_t> news{0};

/// `malloc` (or `aligned_alloc` beyond the default alignment), counted.
void* counted_alloc(std::size_t size, std::size_t align) noexcept {
  news.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(size);
  return std::aligned_alloc(align, (size + align - 1) / align * align);
}

void* counted_alloc_or_throw(std::size_t size, std::size_t align) {
  if (void* p = counted_alloc(size, align)) return p;
  throw std::bad_alloc();
}

}  // namespace

// Every replaceable form, so that no allocation made through one library's form meets a
// deallocation through another's (under AddressSanitizer, simdjson's nothrow `new` would
// otherwise be its interceptor's and our `delete` a plain `free`). Out of line: inlined,
// g++ 12 sees `malloc`'s pointer reach `operator delete` and reports a mismatch
// (-Wmismatched-new-delete) that is not one.
[[gnu::noinline]] void* operator new(std::size_t n) { return counted_alloc_or_throw(n, 0); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return counted_alloc_or_throw(n, 0); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc_or_throw(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

/// Sets `allocs` to the `operator new` calls per item since `before`.
void report_allocations(benchmark::State& state, std::int64_t before) {
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(news.load(std::memory_order_relaxed) - before),
                                                benchmark::Counter::kAvgIterations);
}

struct echo_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

/// An outbound that keeps every message as sent (no parsing: the check parses nothing
/// either, it compares bytes) and lets tools ask questions.
class capture final : public droid::outbound {
 public:
  void send(std::string message) override { sent.push_back(std::move(message)); }
  void finish() override { ++finished; }
  [[nodiscard]] std::string exchange_refusal() const override { return {}; }
  std::deque<std::string> sent;
  std::uint64_t finished = 0;
};

droid::ir::message decoded(const std::string& text) {
  auto d = droid::ir::decode(text);
  return std::get<droid::ir::message>(std::move(d));
}

/// A server with `echo` and `ask`, one initialized session on a capture.
struct engine {
  asio::io_context io;
  droid::server srv{droid::server_info{.name = "bench", .version = "1"}};
  std::shared_ptr<capture> out = std::make_shared<capture>();
  std::shared_ptr<droid::session> s;

  engine() {
    srv.tool("echo", "Echoes", [](droid::tool_context&, echo_args a) -> droid::task<droid::tool_result> {
      co_return droid::tool_result::text(a.text);
    });
    srv.tool("ask", "Asks the client to sample", [](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
      auto answer = co_await ctx.exchange("sampling/createMessage", R"({"messages":[],"maxTokens":5})");
      if (!answer) co_return droid::tool_result::error(answer.error().message);
      co_return droid::tool_result::text("answered");
    });
    s = droid::session::create(srv, io.get_executor(), out);
    feed(decoded(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                 R"("capabilities":{"sampling":{}},"clientInfo":{"name":"bench","version":"1"}}})"));
    feed(decoded(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
    out->sent.clear();
  }
  ~engine() {
    s->close();
    poll();
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  void poll() {
    io.restart();
    (void)io.poll();
  }
  void feed(droid::ir::message m) {
    s->receive(std::move(m));
    poll();
  }
};

const std::string echo_call =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})";
const std::string echo_answer = R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}})";

/// One tools/call: the decoded message is copied in (decoding is decode_bench's), the
/// session dispatches it to the tool, the tool's result is encoded and sent.
void dispatch_tools_call(benchmark::State& state) {
  engine e;
  const droid::ir::message call = decoded(echo_call);
  e.feed(call);
  if (e.out->sent.size() != 1 || e.out->sent.front() != echo_answer || e.s->in_flight() != 0) {
    state.SkipWithError(("dispatch answered wrongly: " + (e.out->sent.empty() ? "nothing" : e.out->sent.front())).c_str());
    return;
  }
  e.out->sent.clear();
  const std::int64_t before = news.load(std::memory_order_relaxed);
  for (auto _ : state) {
    e.feed(call);
    benchmark::DoNotOptimize(e.out->sent.back().data());
    e.out->sent.clear();
  }
  report_allocations(state, before);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(dispatch_tools_call);

/// The id of the question a tool published: `"id":N` after the method in our encoding.
std::int64_t question_id(std::string_view question) {
  const auto at = question.find("\"id\":");
  std::int64_t id = -1;
  if (at != std::string_view::npos) (void)std::from_chars(question.data() + at + 5, question.data() + question.size(), id);
  return id;
}

std::string answer_to(std::int64_t id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}})";
}

/// One exchange round trip: tools/call of `ask` in, the question out (a fresh id from
/// 2^40 each time), the answer decoded and routed back, the tool resumed and its result
/// sent. Includes the dispatch above, the answer's decoding and both encodings.
void exchange_round_trip(benchmark::State& state) {
  engine e;
  const droid::ir::message call =
      decoded(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask","arguments":{}}})");
  auto once = [&]() -> bool {
    e.feed(call);
    if (e.out->sent.size() != 1) return false;
    const std::int64_t id = question_id(e.out->sent.front());
    e.out->sent.clear();
    e.feed(decoded(answer_to(id)));
    return e.out->sent.size() == 1;
  };
  {
    const bool ok = once();
    const std::string expected =
        R"({"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"answered"}]}})";
    if (!ok || e.out->sent.front() != expected || e.s->outstanding_exchanges() != 0 || e.s->in_flight() != 0) {
      state.SkipWithError(("exchange round trip went wrong: " + (e.out->sent.empty() ? "nothing" : e.out->sent.front())).c_str());
      return;
    }
    e.out->sent.clear();
  }
  const std::int64_t before = news.load(std::memory_order_relaxed);
  for (auto _ : state) {
    if (!once()) {
      state.SkipWithError("an iteration lost its question or answer");
      break;
    }
    benchmark::DoNotOptimize(e.out->sent.back().data());
    e.out->sent.clear();
  }
  report_allocations(state, before);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(exchange_round_trip);

}  // namespace

BENCHMARK_MAIN();
