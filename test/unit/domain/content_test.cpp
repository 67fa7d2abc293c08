// SPDX-License-Identifier: BSL-1.0
/// @file
/// Content blocks, tool results and tool descriptors as MCP spells them.
#include <droid/domain/mcp/content.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>

#include <doctest/doctest.h>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/tool.hpp>

TEST_SUITE("domain/mcp/content") {
  TEST_CASE("every content block carries the MCP field names") {
    CHECK(droid::content::text("t").json() == boost::json::object{{"type", "text"}, {"text", "t"}});
    CHECK(droid::content::image("aGk=", "image/png").json().at("mimeType") == "image/png");
    CHECK(droid::content::audio("aGk=", "audio/wav").json().at("type") == "audio");
    const auto link = droid::content::resource_link("file:///a", "a", "the a", "text/plain").json();
    CHECK(link.at("type") == "resource_link");
    CHECK(link.at("description") == "the a");
    const auto text = droid::content::embedded_text("test://r", "body").json();
    CHECK(text.at("resource").at("text") == "body");
    CHECK(text.at("resource").at("mimeType") == "text/plain");
    const auto blob = droid::content::embedded_blob("test://b", "AAE=", "application/octet-stream").json();
    CHECK(blob.at("resource").at("blob") == "AAE=");
    auto annotated = droid::content::text("x");
    annotated.annotate({{"audience", boost::json::array{"user"}}, {"priority", 0.5}});
    CHECK(annotated.json().at("annotations").at("priority") == 0.5);
  }

  TEST_CASE("base64 follows RFC 4648 with padding") {
    CHECK(droid::base64_encode("") == "");
    CHECK(droid::base64_encode("f") == "Zg==");
    CHECK(droid::base64_encode("fo") == "Zm8=");
    CHECK(droid::base64_encode("foo") == "Zm9v");
    CHECK(droid::base64_encode(std::string("\xff\x00\x10", 3)) == "/wAQ");
  }

  TEST_CASE("a tool result serialises content, structured content and isError") {
    droid::tool_result r = droid::tool_result::text("a");
    r.add(droid::content::text("b")).structured({{"k", 1}});
    auto v = boost::json::parse(r.to_json());
    CHECK(v.at("content").as_array().size() == 2);
    CHECK(v.at("structuredContent").at("k") == 1);
    CHECK_FALSE(v.as_object().contains("isError"));
    v = boost::json::parse(droid::tool_result::error("no").to_json());
    CHECK(v.at("isError") == true);
  }

  TEST_CASE("a text block keeps its text until its object is asked for, and behaves as one either way") {
    const droid::content t = droid::content::text("a \"b\"\n");
    const boost::json::object expected{{"type", "text"}, {"text", "a \"b\"\n"}};
    std::string written;
    t.append_json(written);  // before the object exists
    CHECK(boost::json::parse(written) == expected);
    CHECK(t.json() == expected);
    CHECK(written == droid::ir::to_json_text(t.json()));
    CHECK(t.json_size_hint() + 3 >= written.size());  // three escapes

    droid::content copy = t;  // of a block whose object exists
    CHECK(copy.json() == expected);
    droid::content unbuilt = droid::content::text("u");
    droid::content copy_of_unbuilt = unbuilt;
    droid::content moved = std::move(unbuilt);
    CHECK(moved.json().at("text") == "u");
    CHECK(copy_of_unbuilt.json().at("text") == "u");
    droid::content assigned = droid::content::image("aGk=", "image/png");
    assigned = t;
    CHECK(assigned.json() == expected);
    assigned = droid::content::text("z");
    CHECK(assigned.json().at("text") == "z");
    assigned = droid::content::audio("aGk=", "audio/wav");
    CHECK(assigned.json().at("type") == "audio");

    droid::content annotated = droid::content::text("x");
    annotated.annotate({{"priority", 1}});
    std::string a;
    annotated.append_json(a);
    CHECK(boost::json::parse(a) == annotated.json());
    CHECK(annotated.json().at("text") == "x");
    CHECK(annotated.json().at("annotations").at("priority") == 1);

    // Concurrent first calls on one shared const block build its object once, safely.
    const droid::content shared = droid::content::text("shared");
    std::atomic<int> right{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&] {
        if (shared.json().at("text") == "shared") ++right;
      });
    for (std::thread& th : threads) th.join();
    CHECK(right == 4);
  }

  TEST_CASE("a tool result is written as Boost.JSON would write the same object") {
    droid::tool_result r = droid::tool_result::text("a \"quoted\"\nline");
    r.add(droid::content::embedded_text("test://r", "body")).structured({{"k", 1}, {"s", "x"}});
    r.set_error();
    boost::json::array blocks;
    for (const droid::content& c : r.blocks()) blocks.push_back(c.json());
    const boost::json::object expected{
        {"content", std::move(blocks)}, {"structuredContent", *r.structured_content()}, {"isError", true}};
    std::string appended = "prefix:";
    r.append_json(appended);
    CHECK(appended == "prefix:" + r.to_json());
    CHECK(boost::json::parse(r.to_json()) == expected);
    // The hint is what lets the engine reserve once: with nothing to escape it is enough.
    droid::tool_result plain = droid::tool_result::text("plain");
    plain.add(droid::content::image("aGk=", "image/png")).structured({{"n", 12345}, {"b", false}, {"z", nullptr}});
    CHECK(plain.json_size_hint() >= plain.to_json().size());
    CHECK(droid::tool_result{}.to_json() == R"({"content":[]})");
  }

  TEST_CASE("a tool descriptor lists title, annotations and icons") {
    droid::tool_info info;
    info.name = "t";
    info.title = "T";
    info.description = "d";
    info.annotations.read_only_hint = true;
    info.annotations.destructive_hint = false;
    info.icons.push_back({"https://example.com/i.png", "image/png", {"48x48"}, "dark"});
    const auto j = droid::to_json(info);
    CHECK(j.at("title") == "T");
    CHECK(j.at("inputSchema") == boost::json::object{{"type", "object"}});
    CHECK(j.at("annotations").at("readOnlyHint") == true);
    CHECK(j.at("annotations").at("destructiveHint") == false);
    CHECK_FALSE(j.at("annotations").as_object().contains("openWorldHint"));
    CHECK(j.at("icons").at(0).at("sizes").at(0) == "48x48");
  }
}
