// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: the stdio transport's line framing (lib/adapters/primary/transport/
/// stdio/stdio.cpp), over real pipes, with a small `max_message_size` so the limit is
/// inside the fuzzer's reach.
///
/// The input is the client's whole stdin. It is written once whole and once in pieces
/// cut at points drawn from the input (the server's reads then end at those points), and
/// the same lines are also handed straight to a session by a reference framer written
/// from the rules in include/droid/adapters/primary/transport/stdio/stdio.hpp: lines end
/// at `\n`, one trailing `\r` is dropped, a line over the limit is answered with -32600
/// and skipped, blank lines are skipped, and a last line without its newline still
/// counts.
///
/// Oracle: all three give the same answers (compared as sorted lines, since requests are
/// served concurrently), and every answer is one line of JSON. A framer whose answers
/// depend on how the pipe split its input would let a client's write pattern decide what
/// the server accepts.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/adapters/primary/transport/stdio/stdio.hpp>
#include <droid/application/server/outbound.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/spawn.hpp>
#include <droid/domain/ir/codec.hpp>

#include "fuzz_support.hpp"

namespace fuzz_stdio {

struct echo_args {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(echo_args, (), (text))

}  // namespace fuzz_stdio

namespace {

constexpr std::size_t max_line = 256;

droid::server& the_server() {
  static droid::server* srv = [] {
    std::signal(SIGPIPE, SIG_IGN);
    droid::server_options options;
    options.log = [](std::string_view) {};
    auto* s = new droid::server(droid::server_info{"fuzz-stdio", "0", {}, {}, {}, {}}, options);
    s->tool("echo", "Returns its text", [](droid::tool_context&, fuzz_stdio::echo_args a) -> droid::task<std::string> {
      co_return a.text;
    });
    return s;
  }();
  return *srv;
}

/// The lines of `text`, sorted, each checked to be one JSON object.
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(lines.back(), ec);
    DROID_FUZZ_CHECK(!ec && v.is_object(), "an output line is not a JSON object");
  }
  DROID_FUZZ_CHECK(start == text.size(), "output does not end with a newline");
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// Runs `droid::stdio::run` over pipes, writing `input` up to each offset in `cuts` and
/// letting the server read before writing on.
std::vector<std::string> through_pipes(std::string_view input, const std::vector<std::size_t>& cuts) {
  int to_server[2];
  int from_server[2];
  DROID_FUZZ_CHECK(::pipe(to_server) == 0 && ::pipe(from_server) == 0, "no pipes");
  ::fcntl(from_server[0], F_SETFL, O_NONBLOCK);
  asio::io_context io;
  droid::stdio::options opts;
  opts.max_message_size = max_line;
  opts.answer_grace = std::chrono::milliseconds(1000);
  bool finished = false;
  droid::spawn(io.get_executor(), droid::stdio::run(the_server(), io.get_executor(), to_server[0], from_server[1], opts),
               [&finished](std::exception_ptr e) {
                 DROID_FUZZ_CHECK(!e, "stdio::run threw");
                 finished = true;
               });
  std::string output;
  auto drain = [&] {
    char buf[65536];
    for (ssize_t n; (n = ::read(from_server[0], buf, sizeof buf)) > 0;) output.append(buf, static_cast<std::size_t>(n));
  };
  std::size_t written = 0;
  for (const std::size_t cut : cuts) {
    while (written < cut) {
      const ssize_t n = ::write(to_server[1], input.data() + written, cut - written);
      DROID_FUZZ_CHECK(n > 0, "writing the server's input failed");
      written += static_cast<std::size_t>(n);
    }
    // Until nothing is ready: the server has read what there is.
    io.restart();
    while (io.poll() > 0) io.restart();
    drain();
  }
  ::close(to_server[1]);
  for (int i = 0; i < 1000 && !finished; ++i) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(5));
    drain();
  }
  DROID_FUZZ_CHECK(finished, "stdio::run did not end after its input did");
  ::close(from_server[1]);
  drain();
  ::close(to_server[0]);
  ::close(from_server[0]);
  return sorted_lines(output);
}

/// Collects what a session sends, as the stdio writer would frame it.
class collect final : public droid::outbound {
 public:
  void send(std::string message) override {
    text += message;
    text += '\n';
  }
  [[nodiscard]] std::string exchange_refusal() const override { return {}; }
  std::string text;
};

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

/// The framing rules applied to `input`, feeding a session directly. The session is
/// stepped after the lines of each read (`cuts`, as `through_pipes` writes them), because
/// that is when the transport lets it run: a request still in flight when a duplicate id
/// arrives in the same read is refused (docs/reliability.md, 2.15), and that is timing,
/// not framing.
std::vector<std::string> reference(std::string_view input, const std::vector<std::size_t>& cuts) {
  asio::io_context io;
  auto out = std::make_shared<collect>();
  auto s = droid::session::create(the_server(), io.get_executor(), out);
  auto line_of = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line) {
      s->reject(droid::ir::rejection{droid::ir::errc::invalid_request,
                                     "Invalid Request: message exceeds the " + std::to_string(max_line) +
                                         "-byte limit",
                                     std::nullopt, true});
      return;
    }
    if (is_blank(line)) return;
    auto decoded = droid::ir::decode(std::string(line));
    if (auto* m = std::get_if<droid::ir::message>(&decoded)) {
      s->receive(std::move(*m));
    } else {
      s->reject(std::get<droid::ir::rejection>(decoded));
    }
  };
  auto step = [&] {
    io.restart();
    while (io.poll() > 0) io.restart();
  };
  std::size_t start = 0;
  for (const std::size_t cut : cuts) {
    for (std::size_t nl; (nl = input.find('\n', start)) != std::string_view::npos && nl < cut; start = nl + 1)
      line_of(input.substr(start, nl - start));
    step();
  }
  if (start < input.size()) line_of(input.substr(start));
  step();
  s->close();
  step();
  s.reset();
  return sorted_lines(out->text);
}

/// Checks that two runs answered alike; prints both on a difference, so a reproducer's
/// log shows which answers differ.
void check_same(const std::vector<std::string>& got, const std::vector<std::string>& expected, const char* what) {
  if (got == expected) return;
  std::fprintf(stderr, "transport answered:\n");
  for (const auto& l : got) std::fprintf(stderr, "  %s\n", l.c_str());
  std::fprintf(stderr, "reference answered:\n");
  for (const auto& l : expected) std::fprintf(stderr, "  %s\n", l.c_str());
  DROID_FUZZ_CHECK(got == expected, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = droid::fuzz::as_text(data, size);
  droid::fuzz::choices pick(input);

  check_same(through_pipes(input, {input.size()}), reference(input, {input.size()}),
             "stdio framing differs from the reference");

  std::vector<std::size_t> cuts;
  for (std::size_t at = 0; at < input.size();) {
    at += 1 + pick.below(std::min<std::size_t>(input.size() - at, 2 * max_line));
    cuts.push_back(at);
  }
  if (cuts.size() > 1)
    check_same(through_pipes(input, cuts), reference(input, cuts), "stdio framing depends on how reads split the input");
  return 0;
}
