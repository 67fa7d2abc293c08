// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fuzz harness: a whole session, driven by newline-delimited JSON-RPC input, on a server
/// with every feature registered: the conformance fixtures of examples/conformance_tools.*
/// (tools of every shape, multi round-trip and task tools, resources, a template,
/// prompts, completion).
///
/// Each input line is decoded as the stdio transport decodes it and handed to one
/// session (`droid::session`, 2025 and 2026-07-28 requests alike), which is then stepped
/// until nothing is ready. Questions the server asks the client are answered with an
/// error, an empty result or a refusal, or left unanswered, as the input's hash picks.
/// At the end the session is closed and the server destroyed.
///
/// Oracles:
/// - Every line the server sends is one JSON-RPC 2.0 object: Boost.JSON parses it, and
///   the project's own decoder reads it back as a message (an error answered with
///   `id: null` is checked by Boost.JSON alone, since a peer may not send that).
/// - Every response or error names an id the client used, or null: the server never
///   answers an id nobody asked with.
/// - Nothing outlives the session: once it is closed and the server gone, no coroutine
///   frame is alive (`droid::live_frames()`).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/application/detail/frame_count.hpp>
#include <droid/application/server/outbound.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "conformance_tools.hpp"
#include "fuzz_support.hpp"

namespace {

/// Records what the session sends; `exchange_refusal` empty, as on stdio, so questions
/// to the client go out.
class collect final : public droid::outbound {
 public:
  void send(std::string message) override { sent.push_back(std::move(message)); }
  [[nodiscard]] std::string exchange_refusal() const override { return {}; }
  std::vector<std::string> sent;
};

/// Checks one line the server sent; returns the id of a question it asked the client.
std::optional<droid::ir::request_id> check_output(const std::string& line,
                                                  const std::unordered_set<droid::ir::request_id>& asked) {
  DROID_FUZZ_CHECK(line.find('\n') == std::string::npos, "a message spans lines");
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(line, ec);
  DROID_FUZZ_CHECK(!ec && v.is_object(), "a message is not a JSON object");
  const boost::json::object& o = v.as_object();
  const auto* version = o.if_contains("jsonrpc");
  DROID_FUZZ_CHECK(version && version->is_string() && version->as_string() == "2.0", "a message without jsonrpc 2.0");
  const auto* id = o.if_contains("id");
  if (id && id->is_null()) {
    DROID_FUZZ_CHECK(o.contains("error") && !o.contains("result"), "an id of null on something not an error");
    return std::nullopt;
  }
  const droid::ir::decoded d = droid::ir::decode(line);
  const auto* m = std::get_if<droid::ir::message>(&d);
  DROID_FUZZ_CHECK(m != nullptr, std::get<droid::ir::rejection>(d).message.c_str());
  if (m->is_response())
    DROID_FUZZ_CHECK(asked.count(m->id()) == 1, "an answer to an id the client never used");
  if (m->is_request()) return m->id();
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = droid::fuzz::as_text(data, size);
  droid::fuzz::choices pick(input);
  {
    droid::server_options options;
    options.log = [](std::string_view) {};
    droid::server srv(droid::server_info{"fuzz-session", "0", {}, {}, {}, {}}, options);
    register_conformance(srv);
    // Declared after the server, so it is destroyed first: a handler still queued holds
    // frames that refer to the server.
    asio::io_context io;
    auto out = std::make_shared<collect>();
    auto s = droid::session::create(srv, io.get_executor(), out);

    std::unordered_set<droid::ir::request_id> client_ids;
    std::size_t checked = 0;
    auto step = [&] {
      io.restart();
      for (int i = 0; i < 64 && io.poll() > 0; ++i) io.restart();
      // Read what was sent; answer some of the server's questions.
      while (checked < out->sent.size()) {
        const std::string line = out->sent[checked++];
        const std::optional<droid::ir::request_id> question = check_output(line, client_ids);
        if (!question) continue;
        std::string answer;
        switch (pick.below(4)) {
          case 0: break;
          case 1: droid::ir::append_error(answer, *question, -32603, "no"); break;
          case 2: droid::ir::append_result(answer, *question, "{}"); break;
          default: droid::ir::append_result(answer, *question, R"({"action":"decline"})"); break;
        }
        if (answer.empty()) continue;
        auto d = droid::ir::decode(answer);
        s->receive(std::move(std::get<droid::ir::message>(d)));
      }
    };

    std::size_t start = 0;
    while (start < input.size()) {
      std::size_t nl = input.find('\n', start);
      if (nl == std::string_view::npos) nl = input.size();
      std::string_view line = input.substr(start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      auto decoded = droid::ir::decode(std::string(line));
      if (auto* m = std::get_if<droid::ir::message>(&decoded)) {
        if (m->is_request()) client_ids.insert(m->id());
        s->receive(std::move(*m));
      } else {
        const auto& r = std::get<droid::ir::rejection>(decoded);
        if (r.id) client_ids.insert(*r.id);
        s->reject(r);
      }
      step();
    }
    step();
    s->close();
    step();
    s.reset();
    step();
  }
  DROID_FUZZ_CHECK(droid::live_frames() == 0, "a coroutine frame outlived its session and server");
  return 0;
}
