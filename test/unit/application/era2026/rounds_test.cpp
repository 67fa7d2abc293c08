// SPDX-License-Identifier: BSL-1.0
/// @file
/// Multi round-trip requests (2026-07-28), with no I/O: a tool's `co_await` on a question
/// answers `input_required`, the retry resumes the same frame (or, when the frame is
/// gone, replays the tool without asking twice), and the sealed `requestState` refuses
/// whatever was not made for this request by this server.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio/io_context.hpp>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/when_all.hpp>

#include "support.hpp"

namespace {

using namespace std::chrono_literals;

struct name_form {
  std::string name;
};
BOOST_DESCRIBE_STRUCT(name_form, (), (name))

struct color_form {
  std::string color;
};
BOOST_DESCRIBE_STRUCT(color_form, (), (color))

constexpr std::string_view all_capabilities = R"({"elicitation":{},"sampling":{},"roots":{}})";

std::string meta(std::string_view capabilities = all_capabilities) {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":)" +
         std::string(capabilities) + R"(,"io.modelcontextprotocol/clientInfo":{"name":"rounds","version":"1"}})";
}

/// A 2026 tools/call of `tool` with `arguments`; `more` follows (inputResponses, requestState).
std::string call(int id, std::string_view tool, std::string_view more = "", std::string_view arguments = "{}",
                 std::string_view capabilities = all_capabilities) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{)" +
         meta(capabilities) + R"(,"name":")" + std::string(tool) + R"(","arguments":)" + std::string(arguments) +
         std::string(more) + "}}";
}

/// The members a retry adds: the answers and the state echoed back.
std::string retry(std::string_view responses, std::string_view state) {
  std::string s = R"(,"inputResponses":)" + std::string(responses);
  if (!state.empty()) s += R"(,"requestState":")" + std::string(state) + '"';
  return s;
}

std::string accepted(std::string_view field, std::string_view value) {
  return R"({"action":"accept","content":{")" + std::string(field) + R"(":")" + std::string(value) + R"("}})";
}

constexpr std::string_view sampled = R"({"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"})";

droid::server_options options(std::size_t kept = 1024) {
  droid::server_options o;
  o.log = [](std::string_view) {};
  o.multi_round.state_secrets = {std::string(32, 'k')};
  o.multi_round.max_kept_frames = kept;
  return o;
}

/// Counts what the tools did, so a test can tell a resumed frame (one start) from a
/// replay (two), and a side effect that ran once from one that ran twice.
struct counters {
  int starts = 0;
  int charges = 0;
};

void register_tools(droid::server& srv, counters& n) {
  srv.tool("ask_name", "Asks the user's name", [&n](droid::tool_context& ctx) -> droid::task<std::string> {
    ++n.starts;
    auto answer = co_await ctx.elicit<name_form>("What is your name?", "user_name");
    if (!answer) co_return "no answer: " + answer.error().message;
    co_return "Hello " + (answer->content ? answer->content->name : std::string("nobody"));
  });
  // Two rounds, with a side effect between them that must happen once per request. It
  // carries on when its first question fails (as a careless tool might), which is how a
  // test sees that a frame let go does not run the effect.
  srv.tool("ask_twice", "Asks a name, charges, asks a colour", [&n](droid::tool_context& ctx) -> droid::task<std::string> {
    ++n.starts;
    auto name = co_await ctx.elicit<name_form>("What is your name?");
    const boost::json::value receipt = co_await ctx.once("charge", [&n]() -> droid::task<boost::json::value> {
      ++n.charges;
      co_return boost::json::value("receipt-" + std::to_string(n.charges));
    });
    auto color = co_await ctx.elicit<color_form>("Your colour?");
    co_return (name && name->content ? name->content->name : std::string("?")) + " likes " +
        (color && color->content ? color->content->color : std::string("?")) + " (" +
        std::string(receipt.as_string()) + ")";
  });
  srv.tool("ask_both", "Asks the user and the model at once", [&n](droid::tool_context& ctx) -> droid::task<std::string> {
    ++n.starts;
    droid::sampling_request request;
    request.messages.push_back(droid::sampling_message::user_text("Capital of France?"));
    request.max_tokens = 10;
    auto name = ctx.elicit<name_form>("What is your name?", "user_name");
    auto model = ctx.sample(std::move(request), "capital");
    auto [who, said] = co_await droid::when_all(std::move(name), std::move(model));
    co_return (who && who->content ? who->content->name : "no name: " + (who ? std::string() : who.error().message)) +
        " / " + (said ? said->text() : "no model: " + said.error().message);
  });
  // Asks again and again: only the bound on rounds ends it.
  srv.tool("ask_forever", "Never satisfied", [](droid::tool_context& ctx) -> droid::task<std::string> {
    for (int i = 0;; ++i) {
      auto answer = co_await ctx.elicit<name_form>("Again? " + std::to_string(i), "again-" + std::to_string(i));
      if (!answer) co_return "stopped: " + answer.error().message;
    }
  });
  // Params as text, pretty-printed, then text that is no object: the first must reach
  // inputRequests compacted, the second must never reach it.
  srv.tool("ask_pretty", "Asks with params it formatted itself",
           [](droid::tool_context& ctx) -> droid::task<std::string> {
    auto broken = co_await ctx.exchange("roots/list", std::string("{\"a\":\n"), droid::ask_options("broken"));
    auto answer = co_await ctx.exchange("roots/list", std::string("{\n  \"note\": \"a b\",\r\n  \"n\": [1, 2]\n}"),
                                        droid::ask_options("pretty"));
    co_return (broken ? std::string("answered") : broken.error().message) + " / " +
        (answer ? "answered" : "not answered");
  });
  srv.tool("greet", "Asks nothing", [](droid::tool_context&) -> droid::task<std::string> { co_return "hi"; });
  // Suspends before it asks: its question is asked once the request's params are gone.
  srv.tool("wait_then_ask", "Waits, then asks the user's name",
           [&n](droid::tool_context& ctx) -> droid::task<std::string> {
             ++n.starts;
             (void)co_await ctx.sleep(std::chrono::steady_clock::duration::zero());
             auto answer = co_await ctx.elicit<name_form>("What is your name?", "user_name");
             if (!answer) co_return "no answer: " + answer.error().message;
             co_return "Hello " + (answer->content ? answer->content->name : std::string("nobody"));
           });
  srv.prompt(droid::prompt_info{.name = "with_context", .description = "Asks for context"},
             [](droid::tool_context& ctx, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
               auto answer = co_await ctx.elicit<name_form>("Whose prompt?", "owner");
               droid::prompt_result r;
               r.messages.push_back(droid::prompt_message::user(
                   droid::content::text("for " + (answer && answer->content ? answer->content->name : "?"))));
               co_return r;
             });
  srv.resource(droid::resource_info{.uri = "test://near-roots", .name = "near roots"},
               [](droid::tool_context& ctx) -> droid::task<droid::resource_contents> {
                 auto roots = co_await ctx.list_roots("where");
                 co_return droid::resource_contents::text_of(
                     "test://near-roots", roots ? std::to_string(roots->size()) + " roots" : roots.error().message);
               });
  srv.complete_prompt_argument("with_context", "x",
                               [](droid::tool_context& ctx, droid::completion_request) -> droid::task<std::vector<std::string>> {
                                 auto roots = co_await ctx.list_roots();
                                 co_return std::vector<std::string>{roots ? "asked" : roots.error().message};
                               });
}

/// A server and a connection to it (a session that 2026 requests reach as on stdio).
struct fixture : droid::test::session_driver {
  counters n;
  droid::server srv;
  explicit fixture(droid::server_options o = options()) : srv(droid::server_info{"rounds-test", "1"}, std::move(o)) {
    register_tools(srv, n);
    s = droid::session::create(srv, io.get_executor(), out);
  }
  ~fixture() { stop(); }
  boost::json::value send(const std::string& text) {
    feed(text);
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
};

const boost::json::object& result_of(const boost::json::value& r) {
  INFO(boost::json::serialize(r));
  REQUIRE(r.as_object().contains("result"));
  return r.at("result").as_object();
}

std::string state_of(const boost::json::value& r) {
  const auto& result = result_of(r);
  REQUIRE(result.at("resultType") == "input_required");
  return std::string(result.at("requestState").as_string());
}

std::string text_of(const boost::json::value& r) {
  const auto& result = result_of(r);
  REQUIRE(result.at("resultType") == "complete");
  return std::string(result.at("content").at(0).at("text").as_string());
}

int code_of(const boost::json::value& r) {
  INFO(boost::json::serialize(r));
  REQUIRE(r.as_object().contains("error"));
  return static_cast<int>(r.at("error").at("code").as_int64());
}

std::string message_of(const boost::json::value& r) { return std::string(r.at("error").at("message").as_string()); }

/// Serves the 2026 request `text` on runner `r` (a shard, in these tests) under `key`,
/// with the capabilities every test here declares, and runs what it posted.
void serve_modern(droid::request_runner& r, int key, const std::string& text,
                  const std::shared_ptr<droid::test::capture>& out, bool finish, asio::io_context& io) {
  droid::peer_info peer;
  peer.protocol_version = "2026-07-28";
  peer.revision = droid::protocol_revision::v2026_07_28;
  peer.capabilities = boost::json::parse(all_capabilities).as_object();
  auto decoded = droid::ir::decode(text);
  r.serve(droid::ir::request_id(key), std::move(std::get<droid::ir::message>(decoded)), out, finish, std::move(peer));
  droid::test::poll(io);
}

}  // namespace

TEST_SUITE("application/rounds") {
  TEST_CASE("a question answers input_required, and the retry resumes the same frame") {
    {
      fixture f;
      const auto first = f.send(call(1, "ask_name"));
      CHECK(first.at("id") == 1);
      const auto& result = result_of(first);
      CHECK(result.at("resultType") == "input_required");
      const auto& question = result.at("inputRequests").at("user_name");
      CHECK(question.at("method") == "elicitation/create");
      CHECK(question.at("params").at("message") == "What is your name?");
      CHECK(question.at("params").at("requestedSchema").at("required") == boost::json::array{"name"});
      CHECK(result.at("_meta").as_object().contains("io.modelcontextprotocol/serverInfo"));
      CHECK(f.s->in_flight() == 0);
      CHECK(f.srv.kept_frames() == 1);

      const auto second = f.send(call(2, "ask_name", retry(R"({"user_name":)" + accepted("name", "Alice") + "}",
                                                            state_of(first))));
      CHECK(second.at("id") == 2);
      CHECK(text_of(second) == "Hello Alice");
      CHECK(f.n.starts == 1);  // resumed, not replayed
      CHECK(f.srv.kept_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a tool that asks twice keeps one frame through both rounds, and each round has its own state") {
    {
      fixture f;
      const auto r1 = f.send(call(1, "ask_twice"));
      CHECK(result_of(r1).at("inputRequests").as_object().contains("elicitation-1"));
      const auto r2 = f.send(call(2, "ask_twice", retry(R"({"elicitation-1":)" + accepted("name", "Ada") + "}",
                                                        state_of(r1))));
      CHECK(result_of(r2).at("inputRequests").as_object().contains("elicitation-2"));
      CHECK(state_of(r2) != state_of(r1));
      const auto r3 = f.send(call(3, "ask_twice", retry(R"({"elicitation-2":)" + accepted("color", "blue") + "}",
                                                        state_of(r2))));
      CHECK(text_of(r3) == "Ada likes blue (receipt-1)");
      CHECK(f.n.starts == 1);
      CHECK(f.n.charges == 1);
    }
    CHECK(droid::live_frames() == 0);
    {
      // The client sends round 1's state again while the frame waits in round 2: the
      // state is replayed, and the charge the frame made since is not made again.
      fixture f;
      const auto r1 = f.send(call(1, "ask_twice"));
      const std::string answer = retry(R"({"elicitation-1":)" + accepted("name", "Ada") + "}", state_of(r1));
      (void)state_of(f.send(call(2, "ask_twice", answer)));
      const auto again = f.send(call(3, "ask_twice", answer));
      CHECK(result_of(again).at("inputRequests").as_object().contains("elicitation-2"));
      CHECK(f.n.starts == 2);
      CHECK(f.n.charges == 1);
      const auto done = f.send(call(4, "ask_twice", retry(R"({"elicitation-2":)" + accepted("color", "red") + "}",
                                                          state_of(again))));
      CHECK(text_of(done) == "Ada likes red (receipt-1)");
      CHECK(f.n.charges == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("questions asked at once travel in one round; a retry that answers part is asked the rest") {
    {
      fixture f;
      const auto r1 = f.send(call(1, "ask_both"));
      const auto& asked = result_of(r1).at("inputRequests").as_object();
      CHECK(asked.size() == 2);
      CHECK(asked.at("user_name").at("method") == "elicitation/create");
      CHECK(asked.at("capital").at("method") == "sampling/createMessage");
      // MCP: what is missing is asked again, not an error.
      const auto r2 =
          f.send(call(2, "ask_both", retry(R"({"user_name":)" + accepted("name", "Alice") + "}", state_of(r1))));
      const auto& again = result_of(r2).at("inputRequests").as_object();
      CHECK(again.size() == 1);
      CHECK(again.contains("capital"));
      const auto r3 = f.send(call(3, "ask_both", retry(R"({"capital":)" + std::string(sampled) + "}", state_of(r2))));
      CHECK(text_of(r3) == "Alice / Paris");
      CHECK(f.n.starts == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a retry that finds no frame replays the tool: answers are not asked twice and once runs once") {
    // The same tool and answers as the kept-frame test above, with no frame kept: the
    // result is the same; only the starts show the replays.
    {
      fixture f(options(0));
      const auto r1 = f.send(call(1, "ask_twice"));
      CHECK(f.srv.kept_frames() == 0);
      const auto r2 = f.send(call(2, "ask_twice", retry(R"({"elicitation-1":)" + accepted("name", "Ada") + "}",
                                                        state_of(r1))));
      const auto& asked = result_of(r2).at("inputRequests").as_object();
      CHECK(asked.size() == 1);
      CHECK(asked.contains("elicitation-2"));
      const auto r3 = f.send(call(3, "ask_twice", retry(R"({"elicitation-2":)" + accepted("color", "blue") + "}",
                                                        state_of(r2))));
      CHECK(text_of(r3) == "Ada likes blue (receipt-1)");
      CHECK(f.n.starts == 3);
      CHECK(f.n.charges == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("another instance with the same secrets replays a state; rotation keeps old states; others are foreign") {
    {
      fixture first;
      const std::string state = state_of(first.send(call(1, "ask_name")));
      const std::string answer = retry(R"({"user_name":)" + accepted("name", "Bo") + "}", state);
      {
        // Restarted (or another instance behind the balancer): the frame is not here.
        fixture restarted;
        CHECK(text_of(restarted.send(call(2, "ask_name", answer))) == "Hello Bo");
        CHECK(restarted.n.starts == 1);
      }
      {
        droid::server_options rotated = options();
        rotated.multi_round.state_secrets = {std::string(32, 'n'), std::string(32, 'k')};
        fixture next(rotated);
        CHECK(text_of(next.send(call(2, "ask_name", answer))) == "Hello Bo");
      }
      {
        droid::server_options other = options();
        other.multi_round.state_secrets = {std::string(32, 'n')};
        fixture foreign(other);
        const auto r = foreign.send(call(2, "ask_name", answer));
        CHECK(code_of(r) == -32602);
        CHECK(message_of(r).find("another server") != std::string::npos);
        CHECK(foreign.n.starts == 0);
      }
      {
        fixture defaults(droid::server_options{.log = [](std::string_view) {}});  // a random secret
        CHECK(code_of(defaults.send(call(2, "ask_name", answer))) == -32602);
      }
      // The first instance still holds its frame, and resumes it.
      CHECK(text_of(first.send(call(3, "ask_name", answer))) == "Hello Bo");
      CHECK(first.n.starts == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a tool that asks only after it waited binds its state to its request all the same") {
    // The binding is taken from the params while the request is admitted, and only for
    // one still running then; this tool asks after the params are gone.
    {
      fixture f;
      const std::string args = R"({"x":1})";
      const std::string state = state_of(f.send(call(1, "wait_then_ask", "", args)));
      const std::string answers = R"({"user_name":)" + accepted("name", "Bo") + "}";
      const auto other_args = f.send(call(2, "wait_then_ask", retry(answers, state), R"({"x":2})"));
      CHECK(code_of(other_args) == -32602);
      CHECK(message_of(other_args).find("another request") != std::string::npos);
      CHECK(text_of(f.send(call(3, "wait_then_ask", retry(answers, state), args))) == "Hello Bo");
      CHECK(f.n.starts == 1);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a tampered, misplaced, expired or oversized state is an error that says which, and the tool never sees it") {
    {
      fixture f;
      const std::string state = state_of(f.send(call(1, "ask_name")));
      const std::string answers = R"({"user_name":)" + accepted("name", "Eve") + "}";
      std::string flipped = state;
      flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
      for (const std::string& bad : {flipped, state + "-TAMPERED", state.substr(0, state.size() - 4)}) {
        const auto r = f.send(call(2, "ask_name", retry(answers, bad)));
        CHECK(code_of(r) == -32602);
        CHECK(message_of(r).find("requestState") != std::string::npos);
      }
      // For another tool, or the same tool with other arguments.
      const auto other_tool = f.send(call(3, "ask_twice", retry(answers, state)));
      CHECK(message_of(other_tool).find("another request") != std::string::npos);
      const auto other_args = f.send(call(4, "ask_name", retry(answers, state), R"({"x":1})"));
      CHECK(message_of(other_args).find("another request") != std::string::npos);
      const auto huge = f.send(call(5, "ask_name", retry(answers, std::string(70000, 'A'))));
      CHECK(message_of(huge).find("too long") != std::string::npos);
      CHECK(f.n.starts == 1);
      // None of that disturbed the frame: the genuine retry resumes it.
      CHECK(text_of(f.send(call(6, "ask_name", retry(answers, state)))) == "Hello Eve");
      CHECK(f.n.starts == 1);
    }
    {
      // A lifetime that ended before the state was sealed: it is expired when it comes
      // back, however fast. The expiry is read from the system clock, which a test cannot
      // move, so waiting out a short lifetime would be the only other way.
      droid::server_options brief = options();
      brief.multi_round.state_ttl = -1h;
      fixture f(brief);
      const std::string state = state_of(f.send(call(1, "ask_name")));
      const auto r = f.send(call(2, "ask_name", retry(R"({"user_name":)" + accepted("name", "Eve") + "}", state)));
      CHECK(code_of(r) == -32602);
      CHECK(message_of(r).find("expired") != std::string::npos);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("inputResponses: malformed is an error, missing or wrong keys are asked again, extra keys are ignored") {
    {
      fixture f;
      for (const char* bad : {R"(,"inputResponses":null)", R"(,"inputResponses":[])", R"(,"inputResponses":{"user_name":12345})",
                              R"(,"requestState":7)"}) {
        CAPTURE(bad);
        CHECK(code_of(f.send(call(1, "ask_name", bad))) == -32602);
      }
      CHECK(f.n.starts == 0);
      // Without any state: the tool runs, and asks for what is missing.
      const auto wrong = f.send(call(2, "ask_name", retry(R"({"wrong_key":)" + accepted("name", "x") + "}", "")));
      const std::string state = state_of(wrong);
      CHECK(result_of(wrong).at("inputRequests").as_object().contains("user_name"));
      const auto missing = f.send(call(3, "ask_name", retry("{}", state)));
      const std::string state2 = state_of(missing);
      CHECK(result_of(missing).at("inputRequests").as_object().contains("user_name"));
      const auto done = f.send(call(4, "ask_name", retry(R"({"user_name":)" + accepted("name", "Al") +
                                                             R"(,"extra":{"action":"accept","content":{"z":1}}})",
                                                         state2)));
      CHECK(text_of(done) == "Hello Al");
      CHECK(f.n.starts == 1);  // the first call ran without state; its frame was kept for the rest
      // An answer that comes first, with no state at all, is used as well.
      CHECK(text_of(f.send(call(5, "ask_name", retry(R"({"user_name":)" + accepted("name", "Cy") + "}", "")))) ==
            "Hello Cy");
      CHECK(f.n.starts == 2);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("an elicitation answer that does not fit the requested form is refused before the tool sees it") {
    for (const std::size_t kept : {std::size_t{1024}, std::size_t{0}}) {
      CAPTURE(kept);
      {
        fixture f(options(kept));
        const std::string state = state_of(f.send(call(1, "ask_name")));
        const auto bad = f.send(call(2, "ask_name", retry(R"({"user_name":{"action":"accept","content":{"name":5}}})", state)));
        CHECK(code_of(bad) == -32602);
        CHECK(message_of(bad).find("`name` must be a string") != std::string::npos);
        const auto nothing = f.send(call(3, "ask_name", retry(R"({"user_name":{"action":"accept"}})", state)));
        CHECK(code_of(nothing) == -32602);
        const auto odd = f.send(call(4, "ask_name", retry(R"({"user_name":{"action":"maybe"}})", state)));
        CHECK(code_of(odd) == -32602);
        // The same state, answered properly, still completes.
        CHECK(text_of(f.send(call(5, "ask_name", retry(R"({"user_name":)" + accepted("name", "Di") + "}", state)))) ==
              "Hello Di");
        CHECK(f.srv.kept_frames() == 0);
      }
      CHECK(droid::live_frames() == 0);
    }
  }

  TEST_CASE("kept frames are bounded: the oldest is let go, and its retry replays") {
    {
      fixture f(options(1));
      const std::string a = state_of(f.send(call(1, "ask_name")));
      const std::string b = state_of(f.send(call(2, "ask_name")));
      CHECK(f.srv.kept_frames() == 1);
      CHECK(f.s->in_flight() == 0);
      CHECK(text_of(f.send(call(3, "ask_name", retry(R"({"user_name":)" + accepted("name", "A") + "}", a)))) ==
            "Hello A");
      CHECK(f.n.starts == 3);  // two starts, and the replay of the one let go
      CHECK(text_of(f.send(call(4, "ask_name", retry(R"({"user_name":)" + accepted("name", "B") + "}", b)))) ==
            "Hello B");
      CHECK(f.n.starts == 3);  // resumed
      CHECK(f.srv.kept_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a kept frame whose retry never comes is freed at its time to live, and so is one whose connection ends") {
    {
      droid::server_options brief = options();
      brief.multi_round.frame_ttl = 20ms;
      fixture f(brief);
      (void)state_of(f.send(call(1, "ask_name")));
      CHECK(f.srv.kept_frames() == 1);
      CHECK(droid::live_frames() > 0);
      f.io.restart();
      f.io.run_for(200ms);
      CHECK(f.srv.kept_frames() == 0);
      CHECK(f.out->sent.empty());  // the round was answered: nothing more goes out
      CHECK(droid::live_frames() == 0);
    }
    {
      fixture f;
      (void)state_of(f.send(call(1, "ask_twice")));
      CHECK(f.srv.kept_frames() == 1);
      f.stop();
      CHECK(f.srv.kept_frames() == 0);
      CHECK(droid::live_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("rounds are bounded: a request that never completes is refused after max_rounds") {
    {
      droid::server_options few = options();
      few.multi_round.max_rounds = 3;
      fixture f(few);
      std::string state = state_of(f.send(call(1, "ask_forever")));
      for (int i = 0; i < 2; ++i)
        state = state_of(f.send(call(2 + i, "ask_forever",
                                     retry(R"({"again-)" + std::to_string(i) + R"(":)" + accepted("name", "x") + "}", state))));
      const auto r = f.send(call(9, "ask_forever", retry(R"({"again-2":)" + accepted("name", "x") + "}", state)));
      CHECK(code_of(r) == -32602);
      CHECK(message_of(r).find("max_rounds") != std::string::npos);
      CHECK(f.srv.kept_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("only what the request declared is asked; methods that may not answer input_required never do") {
    {
      fixture f;
      const auto r1 = f.send(call(1, "ask_both", "", "{}", R"({"sampling":{}})"));
      const auto& asked = result_of(r1).at("inputRequests").as_object();
      CHECK(asked.size() == 1);
      CHECK(asked.contains("capital"));
      const auto r2 = f.send(call(2, "ask_both", retry(R"({"capital":)" + std::string(sampled) + "}", state_of(r1)), "{}",
                                  R"({"sampling":{}})"));
      const std::string text = text_of(r2);
      CHECK(text.find("no name") != std::string::npos);
      CHECK(text.find("elicitation") != std::string::npos);
      CHECK(text.find("/ Paris") != std::string::npos);

      // completion/complete may not answer input_required: the completer's question is refused.
      const auto c = f.send(
          R"({"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{)" + meta() +
          R"(,"ref":{"type":"ref/prompt","name":"with_context"},"argument":{"name":"x","value":""}}})");
      const std::string value(result_of(c).at("completion").at("values").at(0).as_string());
      CHECK(value.find("input_required") != std::string::npos);
      CHECK(result_of(c).at("resultType") == "complete");
      CHECK(f.srv.kept_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("params text reaches inputRequests compacted, and text that is not an object never does") {
    {
      fixture f;
      f.feed(call(1, "ask_pretty"));
      REQUIRE(f.out->sent.size() == 1);
      const std::string raw = f.out->sent.front();
      CHECK(raw.find_first_of("\r\n") == std::string::npos);
      CHECK(raw.find(R"("pretty":{"method":"roots/list","params":{"note":"a b","n":[1,2]}})") != std::string::npos);
      const auto r1 = f.out->pop();
      const auto& asked = result_of(r1).at("inputRequests").as_object();
      CHECK(asked.size() == 1);
      const auto r2 = f.send(call(2, "ask_pretty", retry(R"({"pretty":{"roots":[]}})", state_of(r1))));
      CHECK(text_of(r2) == "the params of roots/list are not a JSON object: they do not parse / answered");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("resources/read asks through input_required as tools do") {
    {
      fixture f;
      const auto read = [](int id, const std::string& more) {
        return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"resources/read","params":{)" + meta() +
               R"(,"uri":"test://near-roots")" + more + "}}";
      };
      const auto r1 = f.send(read(1, ""));
      CHECK(result_of(r1).at("inputRequests").at("where").at("method") == "roots/list");
      const auto r2 = f.send(read(2, retry(R"({"where":{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}})",
                                           state_of(r1))));
      CHECK(result_of(r2).at("resultType") == "complete");
      CHECK(result_of(r2).at("contents").at(0).at("text") == "2 roots");
      // Another resource's state is refused: the URI is part of what a state is bound to.
      const auto other = f.send(R"({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{)" + meta() +
                                R"(,"uri":"test://doc")" + retry("{}", state_of(r1)) + "}}");
      CHECK(code_of(other) == -32602);
      CHECK(message_of(other).find("another request") != std::string::npos);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("prompts/get asks through input_required as tools do") {
    {
      fixture f;
      const auto get = [](int id, const std::string& more) {
        return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"prompts/get","params":{)" + meta() +
               R"(,"name":"with_context")" + more + "}}";
      };
      const auto r1 = f.send(get(1, ""));
      CHECK(result_of(r1).at("inputRequests").as_object().contains("owner"));
      const auto r2 = f.send(get(2, retry(R"({"owner":)" + accepted("name", "Bob") + "}", state_of(r1))));
      CHECK(result_of(r2).at("resultType") == "complete");
      CHECK(result_of(r2).at("messages").at(0).at("content").at("text") == "for Bob");
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a retry that reaches another shard is handed to the shard that keeps its frame, cancellation too") {
    {
      counters n;
      droid::server srv(droid::server_info{"rounds-test", "1"}, options());
      register_tools(srv, n);
      bool waited_out = false;
      srv.tool("ask_then_wait", "Asks, then waits until cancelled",
               [&waited_out](droid::tool_context& ctx) -> droid::task<std::string> {
                 auto answer = co_await ctx.elicit<name_form>("Name?", "user_name");
                 waited_out = co_await ctx.sleep(std::chrono::hours(1)) == droid::errc::cancelled;
                 co_return "late";
               });
      asio::io_context io;
      // Two runners on one server, as the HTTP listener's shards are (keys unique across them).
      auto a = droid::request_runner::create(srv, io.get_executor());
      auto b = droid::request_runner::create(srv, io.get_executor());
      auto out = std::make_shared<droid::test::capture>();
      const auto serve = [&](droid::request_runner& r, int key, const std::string& text) {
        serve_modern(r, key, text, out, true, io);
      };
      const std::string answer = R"({"user_name":)" + accepted("name", "Sh") + "}";

      serve(*a, 1, call(1, "ask_name"));
      const std::string state = state_of(out->pop());
      CHECK(a->kept_frames() == 1);
      serve(*b, 2, call(2, "ask_name", retry(answer, state)));
      REQUIRE(out->sent.size() == 1);
      CHECK(text_of(out->pop()) == "Hello Sh");
      CHECK(n.starts == 1);  // resumed on a, not replayed on b
      CHECK(a->kept_frames() == 0);
      CHECK(srv.kept_frames() == 0);
      CHECK(out->finished == 2);

      // A retry with an older round's state reaches b while a's frame has moved on: a lets
      // the frame go and replays from the older state (which is what the client asked).
      serve(*a, 3, call(3, "ask_twice"));
      const std::string round1 = state_of(out->pop());
      const std::string first_answer = R"({"elicitation-1":)" + accepted("name", "Ada") + "}";
      serve(*a, 4, call(4, "ask_twice", retry(first_answer, round1)));
      (void)state_of(out->pop());
      CHECK(n.starts == 2);
      serve(*b, 5, call(5, "ask_twice", retry(first_answer, round1)));
      REQUIRE(out->sent.size() == 1);
      CHECK(result_of(out->pop()).at("inputRequests").as_object().contains("elicitation-2"));
      CHECK(n.starts == 3);
      // The charge ran after round 1's state was sealed; the frame's record of it goes to
      // the replay, so it does not run again.
      CHECK(n.charges == 1);
      // A cancelled retry (its connection on b closed) is cancelled where it runs.
      serve(*a, 7, call(7, "ask_then_wait"));
      const std::string third = state_of(out->pop());
      serve(*b, 8, call(8, "ask_then_wait", retry(answer, third)));
      CHECK(out->sent.empty());
      CHECK(a->in_flight() == 1);
      b->cancel(droid::ir::request_id(8));
      droid::test::poll(io);
      CHECK(waited_out);
      CHECK(a->in_flight() == 0);
      CHECK(out->sent.empty());  // a cancelled request answers nothing

      a->close();
      b->close();
      droid::test::poll(io);
      CHECK(srv.kept_frames() == 0);
    }
    CHECK(droid::live_frames() == 0);
  }

  TEST_CASE("a retry handed to another shard on a shared stream is forgotten when it ends, so its id is free again") {
    // A stdio session's stream serves every request and is never finished by one: the
    // receiving runner must still let go of the hand-over, or it grows by one entry per
    // such retry and refuses the id as in flight for ever.
    counters n;
    droid::server srv(droid::server_info{"rounds-test", "1"}, options());
    register_tools(srv, n);
    asio::io_context io;
    auto a = droid::request_runner::create(srv, io.get_executor());
    auto b = droid::request_runner::create(srv, io.get_executor());
    auto out = std::make_shared<droid::test::capture>();
    const auto serve = [&](droid::request_runner& r, int key, const std::string& text, bool finish) {
      serve_modern(r, key, text, out, finish, io);
    };
    const std::string answer = R"({"user_name":)" + accepted("name", "Sh") + "}";
    for (int key : {1, 3}) {
      serve(*a, key, call(key, "ask_name"), true);
      const std::string state = state_of(out->pop());
      // The same id each time, as a client reusing ids of requests that are over may.
      serve(*b, 2, call(2, "ask_name", retry(answer, state)), false);
      REQUIRE(out->sent.size() == 1);
      CHECK(text_of(out->pop()) == "Hello Sh");
    }
    CHECK(n.starts == 2);  // both resumed where their frames were kept
    a->close();
    b->close();
    droid::test::poll(io);
  }
}
