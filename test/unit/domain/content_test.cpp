// SPDX-License-Identifier: BSL-1.0
/// @file
/// Content blocks, tool results and tool descriptors as MCP spells them.
#include <droid/domain/mcp/content.hpp>

#include <boost/json/parse.hpp>

#include <doctest/doctest.h>

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
