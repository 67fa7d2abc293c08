// SPDX-License-Identifier: BSL-1.0
/// @file
/// Resources and resource templates through the session: listing, reading, templates,
/// not-found, subscriptions and change notifications.
#include <droid/application/server/server.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include <asio/io_context.hpp>

#include <boost/json/value.hpp>

#include <doctest/doctest.h>

#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "support.hpp"

namespace {

struct fixture : droid::test::session_driver {
  droid::server srv{droid::server_info{.name = "resources-test", .version = "1"},
                    droid::server_options{.page_size = 2, .log = [](std::string_view) {}}};

  fixture() {
    srv.resource(droid::resource_info{.uri = "test://static-text", .name = "static-text", .mime_type = "text/plain"},
                 [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::text_of("test://static-text", "This is the content");
                 });
    srv.resource(droid::resource_info{.uri = "test://static-binary", .name = "static-binary", .mime_type = "image/png"},
                 [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
                   co_return droid::resource_contents::blob_of(r.uri, std::string("\x89PNG", 4), "image/png");
                 });
    srv.resource(droid::resource_info{.uri = "test://broken", .name = "broken"},
                 [](droid::tool_context&) -> droid::task<std::vector<droid::resource_contents>> {
                   throw std::runtime_error("disk on fire");
                   co_return std::vector<droid::resource_contents>{};
                 });
    srv.resource_template(
        droid::resource_template_info{.uri_template = "test://template/{id}/data", .name = "template"},
        [](droid::tool_context&, droid::resource_request r) -> droid::task<droid::resource_contents> {
          co_return droid::resource_contents::text_of(r.uri, "data for " + r.variables.at("id"), "application/json");
        });
    start(srv);
  }
  // The session must end before the server (a member of this class) does.
  ~fixture() { stop(); }
};

}  // namespace

TEST_SUITE("application/resources") {
  TEST_CASE("initialize declares resources with subscribe and listChanged") {
    fixture f;
    CHECK(f.out->pop().at("result").at("capabilities").at("resources") ==
          boost::json::object{{"subscribe", true}, {"listChanged", true}});
  }

  TEST_CASE("resources/list pages through concrete resources; templates are listed apart") {
    fixture f;
    f.out->sent.clear();
    auto page = f.request("resources/list", "{}");
    CHECK(page.at("result").at("resources").as_array().size() == 2);
    const std::string cursor(page.at("result").at("nextCursor").as_string());
    page = f.request("resources/list", R"({"cursor":")" + cursor + "\"}");
    CHECK(page.at("result").at("resources").as_array().size() == 1);
    CHECK_FALSE(page.at("result").as_object().contains("nextCursor"));
    const auto templates = f.request("resources/templates/list", "{}");
    const auto& t = templates.at("result").at("resourceTemplates").at(0);
    CHECK(t.at("uriTemplate") == "test://template/{id}/data");
    CHECK(t.at("name") == "template");
    CHECK(f.request("resources/list", R"({"cursor":"nope"})").at("error").at("code") == -32602);
  }

  TEST_CASE("resources/read returns text and base64 blobs") {
    fixture f;
    f.out->sent.clear();
    auto r = f.request("resources/read", R"({"uri":"test://static-text"})");
    const auto& text = r.at("result").at("contents").at(0);
    CHECK(text.at("uri") == "test://static-text");
    CHECK(text.at("mimeType") == "text/plain");
    CHECK(text.at("text") == "This is the content");
    r = f.request("resources/read", R"({"uri":"test://static-binary"})");
    CHECK(r.at("result").at("contents").at(0).at("blob") == "iVBORw==");
  }

  TEST_CASE("a template's variables reach the handler") {
    fixture f;
    f.out->sent.clear();
    const auto r = f.request("resources/read", R"({"uri":"test://template/42/data"})");
    CHECK(r.at("result").at("contents").at(0).at("text") == "data for 42");
    CHECK(r.at("result").at("contents").at(0).at("uri") == "test://template/42/data");
  }

  TEST_CASE("an unknown resource is -32002 with the uri in data") {
    fixture f;
    f.out->sent.clear();
    const auto r = f.request("resources/read", R"({"uri":"test://nothing/here"})");
    CHECK(r.at("error").at("code") == -32002);
    CHECK(r.at("error").at("data").at("uri") == "test://nothing/here");
    CHECK(f.request("resources/read", "{}").at("error").at("code") == -32602);
  }

  TEST_CASE("a template value that does not decode to UTF-8 is not found, and handler text is sent as UTF-8") {
    // Both ends of the bytes' way: the URI never reaches the handler as %FF decoded, and
    // whatever text a handler returns, the frame stays valid JSON (request() parses it).
    fixture f;
    // A file read as it is, in Latin-1: the handler does not know its text is not UTF-8.
    f.srv.resource(droid::resource_info{.uri = "test://latin1", .name = "latin1", .mime_type = "text/plain"},
                   [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                     co_return droid::resource_contents::text_of("test://latin1", "caf\xE9");
                   });
    droid::test::poll(f.io);
    f.out->sent.clear();
    const auto r = f.request("resources/read", R"({"uri":"test://template/%FF/data"})");
    CHECK(r.at("error").at("code") == -32002);
    CHECK(r.at("error").at("data").at("uri") == "test://template/%FF/data");
    CHECK(f.request("resources/read", R"({"uri":"test://template/caf%C3%A9/data"})")
              .at("result").at("contents").at(0).at("text") == "data for caf\xC3\xA9");
    CHECK(f.request("resources/read", R"({"uri":"test://latin1"})").at("result").at("contents").at(0).at("text") ==
          "caf\xEF\xBF\xBD");
  }

  TEST_CASE("a resource handler that throws is -32603 and the session goes on") {
    fixture f;
    f.out->sent.clear();
    CHECK(f.request("resources/read", R"({"uri":"test://broken"})").at("error").at("code") == -32603);
    CHECK(f.request("resources/read", R"({"uri":"test://static-text"})").at("result").is_object());
  }

  TEST_CASE("subscribe and unsubscribe answer exactly {} and gate resources/updated") {
    fixture f;
    f.out->sent.clear();
    f.srv.resource_updated("test://static-text");
    droid::test::poll(f.io);
    CHECK(f.out->sent.empty());  // not subscribed
    CHECK(f.request("resources/subscribe", R"({"uri":"test://static-text"})").at("result") == boost::json::object{});
    f.srv.resource_updated("test://static-text");
    droid::test::poll(f.io);
    const auto updated = f.out->pop();
    CHECK(updated.at("method") == "notifications/resources/updated");
    CHECK(updated.at("params").at("uri") == "test://static-text");
    CHECK(f.request("resources/unsubscribe", R"({"uri":"test://static-text"})").at("result") == boost::json::object{});
    f.srv.resource_updated("test://static-text");
    droid::test::poll(f.io);
    CHECK(f.out->sent.empty());
  }

  TEST_CASE("subscriptions are bounded per session; subscribing again or after unsubscribing is not refused") {
    fixture f;
    f.out->sent.clear();
    for (int i = 0; i < 1024; ++i)
      REQUIRE(f.request("resources/subscribe", R"({"uri":"test://u/)" + std::to_string(i) + R"("})").at("result") ==
              boost::json::object{});
    const auto refused = f.request("resources/subscribe", R"({"uri":"test://u/one-more"})");
    CHECK(refused.at("error").at("code") == -32602);
    CHECK(std::string(refused.at("error").at("message").as_string()).find("max_subscriptions") != std::string::npos);
    CHECK(f.request("resources/subscribe", R"({"uri":"test://u/7"})").at("result") == boost::json::object{});
    CHECK(f.request("resources/unsubscribe", R"({"uri":"test://u/7"})").at("result") == boost::json::object{});
    CHECK(f.request("resources/subscribe", R"({"uri":"test://u/one-more"})").at("result") == boost::json::object{});
  }

  TEST_CASE("adding and removing resources notifies list_changed; duplicates are refused") {
    fixture f;
    f.out->sent.clear();
    f.srv.resource(droid::resource_info{.uri = "test://late", .name = "late"},
                   [](droid::tool_context&) -> droid::task<droid::resource_contents> {
                     co_return droid::resource_contents::text_of("test://late", "late");
                   });
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/resources/list_changed");
    CHECK(f.srv.remove_resource("test://late"));
    droid::test::poll(f.io);
    CHECK(f.out->pop().at("method") == "notifications/resources/list_changed");
    CHECK_FALSE(f.srv.remove_resource("test://late"));
    auto handler = [](droid::tool_context&) -> droid::task<droid::resource_contents> { co_return {}; };
    CHECK_THROWS_AS(f.srv.resource(droid::resource_info{.uri = "test://static-text", .name = "x"}, handler),
                    std::invalid_argument);
    CHECK_THROWS_AS(
        f.srv.resource_template(droid::resource_template_info{.uri_template = "test://{a,b}", .name = "x"}, handler),
        std::invalid_argument);
  }
}
