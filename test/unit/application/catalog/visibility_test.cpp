// SPDX-License-Identifier: BSL-1.0
/// @file
/// Visibility per request (server::visible_if), through the in-process client in both
/// eras: lists filtered per caller, hidden entries answered as unknown (calls, prompts,
/// reads through a resource or a template, completion), list changes told only to the
/// 2025 sessions that see the entry, and scope hiding as one such predicate.
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>

#include <doctest/doctest.h>

#include <droid/adapters/primary/testing/client.hpp>
#include <droid/droid.hpp>

namespace {

using droid::testing::era;
constexpr era both[] = {era::v2025, era::v2026};

std::shared_ptr<const droid::request_origin> as(std::string subject, std::vector<std::string> scopes = {}) {
  auto who = std::make_shared<droid::principal>();
  who->issuer = "https://issuer.example";
  who->subject = std::move(subject);
  who->scopes = std::move(scopes);
  auto o = std::make_shared<droid::request_origin>();
  o->principal = std::move(who);
  return o;
}

droid::server_options quiet() {
  droid::server_options o;
  o.log = [](std::string_view) {};
  return o;
}

/// Only alice sees `admin_*` tools, the prompt `secret`, the resource `test://private`
/// and the template `users://{id}`.
bool alice_only(const droid::visibility_query& q) {
  const bool is_alice = q.caller() && q.caller()->subject == "alice";
  switch (q.kind) {
    case droid::entry_kind::tool: return is_alice || !q.name.starts_with("admin_");
    case droid::entry_kind::prompt: return is_alice || q.name != "secret";
    case droid::entry_kind::resource: return is_alice || q.name != "test://private";
    case droid::entry_kind::resource_template: return is_alice || q.name != "users://{id}";
  }
  return true;
}

void furnish(droid::server& srv) {
  const auto says = [](std::string text) {
    return [text](droid::tool_context&) -> droid::task<std::string> { co_return text; };
  };
  srv.tool("hello", "Says hello", says("hello"));
  srv.tool("admin_reset", "Resets", says("reset"));
  for (const char* name : {"open", "secret"})
    srv.prompt(droid::prompt_info{.name = name, .description = "A prompt"},
               [](droid::tool_context&, droid::prompt_arguments) -> droid::task<droid::prompt_result> {
                 co_return droid::prompt_result{};
               });
  for (const char* uri : {"test://public", "test://private"})
    srv.resource(droid::resource_info{.uri = uri, .name = uri},
                 [uri](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::text_of(uri, "text");
                 });
  srv.resource_template(droid::resource_template_info{.uri_template = "users://{id}", .name = "user"},
                        [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                          co_return droid::resource_contents::text_of(r.uri, "user");
                        });
  srv.complete_prompt_argument("secret", "topic",
                                [](droid::tool_context&, droid::completion_request) -> droid::task<std::vector<std::string>> {
                                  co_return std::vector<std::string>{"x"};
                                });
}

std::vector<std::string> names(const boost::json::value& list, const char* key = "name") {
  std::vector<std::string> out;
  for (const auto& e : list.as_array()) out.emplace_back(e.at(key).as_string());
  return out;
}

int code_of(asio::io_context& io, droid::task<boost::json::object> t) {
  try {
    (void)droid::testing::run(io, std::move(t));
  } catch (const droid::testing::rpc_error& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

}  // namespace

TEST_SUITE("application/visibility") {
  TEST_CASE("each caller's lists leave out what it cannot see, and what it cannot see is unknown to it") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      asio::io_context io;
      droid::server srv({.name = "vis", .version = "1"}, quiet());
      furnish(srv);
      srv.visible_if(alice_only);
      droid::testing::client alice(srv, io.get_executor(), {.protocol = e, .origin = as("alice")});
      droid::testing::client bob(srv, io.get_executor(), {.protocol = e, .origin = as("bob")});
      (void)droid::testing::run(io, alice.connect());
      (void)droid::testing::run(io, bob.connect());

      CHECK(names(droid::testing::run(io, alice.list_tools())) == std::vector<std::string>{"admin_reset", "hello"});
      CHECK(names(droid::testing::run(io, bob.list_tools())) == std::vector<std::string>{"hello"});
      CHECK(names(droid::testing::run(io, bob.request("prompts/list")).at("prompts")) == std::vector<std::string>{"open"});
      CHECK(names(droid::testing::run(io, alice.request("prompts/list")).at("prompts")).size() == 2);
      CHECK(names(droid::testing::run(io, bob.request("resources/list")).at("resources"), "uri") ==
            std::vector<std::string>{"test://public"});
      CHECK(droid::testing::run(io, bob.request("resources/templates/list")).at("resourceTemplates").as_array().empty());
      CHECK(droid::testing::run(io, alice.request("resources/templates/list")).at("resourceTemplates").as_array().size() == 1);

      // Named anyway: as if it did not exist.
      CHECK(code_of(io, bob.call_tool("admin_reset")) == -32602);
      CHECK(droid::testing::run(io, alice.call_tool("admin_reset")).at("content").at(0).at("text") == "reset");
      CHECK(code_of(io, bob.get_prompt("secret")) == -32602);
      const int not_found = e == era::v2025 ? -32002 : -32602;
      CHECK(code_of(io, bob.read_resource("test://private")) == not_found);
      CHECK(code_of(io, bob.read_resource("users://7")) == not_found);
      CHECK(droid::testing::run(io, alice.read_resource("users://7")).at("contents").at(0).at("text") == "user");
      const boost::json::object complete{{"ref", {{"type", "ref/prompt"}, {"name", "secret"}}},
                                         {"argument", {{"name", "topic"}, {"value", ""}}}};
      CHECK(code_of(io, bob.request("completion/complete", complete)) == -32602);
      CHECK(droid::testing::run(io, alice.request("completion/complete", complete)).at("completion").at("values").at(0) == "x");
      alice.close();
      bob.close();
    }
  }

  TEST_CASE("a list change reaches only the 2025 sessions that see the entry that changed") {
    asio::io_context io;
    droid::server srv({.name = "vis", .version = "1"}, quiet());
    furnish(srv);
    srv.visible_if(alice_only);
    droid::testing::client alice(srv, io.get_executor(), {.origin = as("alice")});
    droid::testing::client bob(srv, io.get_executor(), {.origin = as("bob")});
    (void)droid::testing::run(io, alice.connect());
    (void)droid::testing::run(io, bob.connect());
    const auto changes = [](const droid::testing::client& c) {
      std::size_t n = 0;
      for (const auto& note : c.notifications()) n += note.method == "notifications/tools/list_changed";
      return n;
    };
    srv.tool("admin_purge", "Purges", [](droid::tool_context&) -> droid::task<std::string> { co_return "purged"; });
    io.restart();
    io.poll();
    CHECK(changes(alice) == 1);
    CHECK(changes(bob) == 0);
    srv.remove_tool("admin_purge");
    io.restart();
    io.poll();
    CHECK(changes(alice) == 2);
    CHECK(changes(bob) == 0);
    srv.tool("public", "For all", [](droid::tool_context&) -> droid::task<std::string> { co_return "hi"; });
    io.restart();
    io.poll();
    CHECK(changes(alice) == 3);
    CHECK(changes(bob) == 1);
    alice.close();
    bob.close();
  }

  TEST_CASE("scope hiding is one such predicate: visible_with_scopes") {
    for (const era e : both) {
      CAPTURE(static_cast<int>(e));
      asio::io_context io;
      droid::server srv({.name = "vis", .version = "1"}, quiet());
      srv.tool(droid::tool_info{.name = "write", .description = "Writes", .required_scopes = {"files:write"}},
               [](droid::tool_context&) -> droid::task<std::string> { co_return "written"; });
      srv.tool("read", "Reads", [](droid::tool_context&) -> droid::task<std::string> { co_return "read"; });
      srv.visible_if(droid::visible_with_scopes);
      droid::testing::client writer(srv, io.get_executor(), {.protocol = e, .origin = as("w", {"files:write"})});
      droid::testing::client reader(srv, io.get_executor(), {.protocol = e, .origin = as("r", {"files:read"})});
      droid::testing::client nobody(srv, io.get_executor(), {.protocol = e});  // no authentication at all
      for (auto* c : {&writer, &reader, &nobody}) (void)droid::testing::run(io, c->connect());
      CHECK(names(droid::testing::run(io, writer.list_tools())) == std::vector<std::string>{"read", "write"});
      CHECK(names(droid::testing::run(io, reader.list_tools())) == std::vector<std::string>{"read"});
      CHECK(names(droid::testing::run(io, nobody.list_tools())).size() == 2);
      CHECK(code_of(io, reader.call_tool("write")) == -32602);
      for (auto* c : {&writer, &reader, &nobody}) c->close();
    }
  }
}
