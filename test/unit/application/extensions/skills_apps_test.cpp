// SPDX-License-Identifier: BSL-1.0
/// @file
/// The two extensions built on the generic mechanism, through a session with no I/O, in
/// both eras. Skills: what `serve` declares and registers, `skills/list` (pages, digests,
/// cache hints), `skills/get`, `resources/directory/read` on every directory of the
/// namespace, the skill files as resources, what registration refuses, and skills read
/// from a directory on disk. MCP Apps: a view's resource and its `_meta.ui` on list and
/// read, the tool link and its visibility, and what a client says it renders.
#include <droid/application/extensions/apps.hpp>
#include <droid/application/extensions/skills.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <openssl/evp.h>

#include <doctest/doctest.h>

#include "support.hpp"

namespace {

const std::string review_md =
    "---\nname: code-review\ndescription: Review a change against the team's checklist\nmetadata:\n  version: \"1.2\"\n---\n"
    "# Code review\n\nUse `checklists/` and `templates/summary.md`.\n";
const std::string refunds_md = "---\nname: refunds\ndescription: >\n  Process refund requests\n  per policy\n---\n# Refunds\n";

std::string sha256(std::string_view bytes) {
  std::array<unsigned char, 32> md{};
  unsigned int len = 0;
  REQUIRE(EVP_Digest(bytes.data(), bytes.size(), md.data(), &len, EVP_sha256(), nullptr) == 1);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (const unsigned char b : md) {
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

std::vector<droid::skills::skill> sample() {
  return {
      droid::skills::skill{.path = "code-review",
                           .skill_md = review_md,
                           .files = {{"checklists/security.md", "- inputs are checked\n", ""},
                                     {"templates/summary.md", "## Summary\n", ""},
                                     {"logo.bin", std::string("\x89PNG\x00\xff", 6), ""}}},
      droid::skills::skill{.path = "acme/billing/refunds", .skill_md = refunds_md, .files = {}},
  };
}

droid::server_options small_pages() {
  droid::server_options o;
  o.log = [](std::string_view) {};
  o.page_size = 1;
  return o;
}

struct fixture : droid::test::session_driver {
  droid::server srv{droid::server_info{.name = "skills-test", .version = "1"}, small_pages()};
  explicit fixture(std::vector<droid::skills::dynamic_skill> dynamic = {}) {
    droid::skills::serve(srv, sample(), std::move(dynamic));
  }
  ~fixture() { stop(); }
  void initialize() {
    start(srv);
    (void)out->pop();
  }
  /// A 2026-07-28 request of `method` with `members` after its `_meta`.
  boost::json::value modern(const std::string& method, const std::string& members = "") {
    if (!s) s = droid::session::create(srv, io.get_executor(), out);
    feed(R"({"jsonrpc":"2.0","id":3,"method":")" + method +
         R"(","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})" +
         (members.empty() ? "" : "," + members) + "}}");
    REQUIRE(out->sent.size() == 1);
    return out->pop();
  }
};

int code_of(const boost::json::value& r) { return static_cast<int>(r.at("error").at("code").as_int64()); }

}  // namespace

TEST_SUITE("application/skills") {
  TEST_CASE("serve declares the extension with directoryRead, and the resources capability with it") {
    fixture f;
    const auto d = f.modern("server/discover");
    const auto& caps = d.at("result").at("capabilities");
    CHECK(caps.at("extensions").at("io.modelcontextprotocol/skills") == boost::json::parse(R"({"directoryRead":true})"));
    CHECK(caps.as_object().contains("resources"));
  }

  TEST_CASE("skills/list pages whole entries with every file's digest and size, and cache hints in 2026") {
    fixture f;
    f.initialize();
    auto r = f.request("skills/list", "{}");
    const auto& first = r.at("result");
    REQUIRE(first.at("skills").as_array().size() == 1);  // page_size 1
    const auto& refunds = first.at("skills").at(0);
    CHECK(refunds.at("uri") == "skill://acme/billing/refunds/SKILL.md");
    CHECK(refunds.at("frontmatter") ==
          boost::json::parse(R"({"name":"refunds","description":"Process refund requests per policy\n"})"));
    CHECK(refunds.at("resources") == boost::json::parse(R"([{"uri":"skill://acme/billing/refunds/SKILL.md","digest":")" +
                                                        sha256(refunds_md) + R"(","size":)" +
                                                        std::to_string(refunds_md.size()) + "}]"));
    CHECK_FALSE(first.as_object().contains("ttlMs"));  // a 2025 session has no cache hints
    const std::string cursor(first.at("nextCursor").as_string());
    r = f.request("skills/list", R"({"cursor":")" + cursor + R"("})");
    const auto& review = r.at("result").at("skills").at(0);
    CHECK(review.at("uri") == "skill://code-review/SKILL.md");
    CHECK(review.at("frontmatter").at("metadata").at("version") == "1.2");
    const auto& files = review.at("resources").as_array();
    REQUIRE(files.size() == 4);
    CHECK(files[0].at("uri") == "skill://code-review/SKILL.md");
    CHECK(files[0].at("digest").as_string() == sha256(review_md));
    CHECK(files[1].at("uri") == "skill://code-review/checklists/security.md");
    CHECK(files[1].at("size") == 21);
    CHECK_FALSE(r.at("result").as_object().contains("nextCursor"));
    CHECK(code_of(f.request("skills/list", R"({"cursor":"nope"})")) == -32602);

    const auto modern = f.modern("skills/list");
    CHECK(modern.at("result").at("ttlMs") == 300000);
    CHECK(modern.at("result").at("cacheScope") == "public");
    CHECK(modern.at("result").at("resultType") == "complete");
  }

  TEST_CASE("skills/get returns one entry, and -32602 for a URI no skill is served at") {
    fixture f;
    const auto r = f.modern("skills/get", R"("uri":"skill://code-review/SKILL.md")");
    CHECK(r.at("result").at("skill").at("frontmatter").at("name") == "code-review");
    CHECK(r.at("result").at("ttlMs") == 300000);
    CHECK_FALSE(r.at("result").as_object().contains("nextCursor"));
    const auto unknown = f.modern("skills/get", R"("uri":"skill://nope/SKILL.md")");
    CHECK(code_of(unknown) == -32602);
    CHECK(unknown.at("error").at("message") == "No skill is served at skill://nope/SKILL.md");
    CHECK(code_of(f.modern("skills/get")) == -32602);
  }

  TEST_CASE("each file is a resource: SKILL.md named and described by its frontmatter, binary files as blobs") {
    fixture f;
    f.initialize();
    auto r = f.request("resources/read", R"({"uri":"skill://code-review/SKILL.md"})");
    const auto& c = r.at("result").at("contents").at(0);
    CHECK(c.at("mimeType") == "text/markdown");
    CHECK(c.at("text").as_string() == review_md);
    r = f.request("resources/read", R"({"uri":"skill://code-review/logo.bin"})");
    CHECK(r.at("result").at("contents").at(0).at("mimeType") == "application/octet-stream");
    CHECK(r.at("result").at("contents").at(0).as_object().contains("blob"));
    // resources/list pages by URI; the first page is the refunds skill's SKILL.md.
    r = f.request("resources/list", "{}");
    const auto& listed = r.at("result").at("resources").at(0);
    CHECK(listed.at("uri") == "skill://acme/billing/refunds/SKILL.md");
    CHECK(listed.at("name") == "refunds");
    CHECK(listed.at("description") == "Process refund requests per policy\n");
    CHECK(listed.at("mimeType") == "text/markdown");
  }

  TEST_CASE("a file whose bytes JSON text cannot carry as they are is sent as a blob, its digest unchanged") {
    // A UTF-8-encoded surrogate: the encoder would replace it, so sent as text it would
    // not be the bytes the manifest's digest and size describe.
    const std::string odd = "note \xED\xA0\x80 end\n";
    droid::server srv{droid::server_info{.name = "t", .version = "1"}, small_pages()};
    droid::skills::serve(srv, {droid::skills::skill{.path = "odd",
                                                    .skill_md = "---\nname: odd\ndescription: d\n---\n",
                                                    .files = {{"odd.md", odd, ""}}}});
    droid::test::session_driver d;
    d.start(srv);
    (void)d.out->pop();
    const auto entry = d.request("skills/get", R"({"uri":"skill://odd/SKILL.md"})");
    CHECK(entry.at("result").at("skill").at("resources").at(1).at("digest").as_string() == sha256(odd));
    const auto read = d.request("resources/read", R"({"uri":"skill://odd/odd.md"})");
    const auto& c = read.at("result").at("contents").at(0).as_object();
    CHECK_FALSE(c.contains("text"));
    REQUIRE(c.contains("blob"));
    CHECK(c.at("mimeType") == "text/markdown");
    d.stop();
  }

  TEST_CASE("resources/directory/read lists the direct children of every directory of the namespace") {
    fixture f;
    auto r = f.modern("resources/directory/read", R"("uri":"skill://code-review")");
    // page_size 1: follow the cursor through the four children.
    std::vector<std::string> children;
    for (int page = 0; page < 10; ++page) {
      const auto& result = r.at("result");
      for (const auto& e : result.at("resources").as_array())
        children.push_back(std::string(e.at("uri").as_string()) + " " + std::string(e.at("mimeType").as_string()));
      if (!result.as_object().contains("nextCursor")) break;
      r = f.modern("resources/directory/read", R"("uri":"skill://code-review","cursor":")" +
                                                   std::string(result.at("nextCursor").as_string()) + R"(")");
    }
    CHECK(children == std::vector<std::string>{"skill://code-review/SKILL.md text/markdown",
                                               "skill://code-review/checklists inode/directory",
                                               "skill://code-review/logo.bin application/octet-stream",
                                               "skill://code-review/templates inode/directory"});
    CHECK(r.at("result").at("ttlMs") == 300000);  // the official client 2.4.0 requires the hint here too
    r = f.modern("resources/directory/read", R"("uri":"skill://acme")");
    CHECK(r.at("result").at("resources").at(0) ==
          boost::json::parse(R"({"uri":"skill://acme/billing","name":"billing","mimeType":"inode/directory"})"));
    auto refused = f.modern("resources/directory/read", R"("uri":"skill://code-review/SKILL.md")");
    CHECK(code_of(refused) == -32602);
    CHECK(refused.at("error").at("message") == "skill://code-review/SKILL.md is not a directory resource");
    CHECK(code_of(f.modern("resources/directory/read", R"("uri":"skill://none")")) == -32602);
  }

  TEST_CASE("a skill whose files are made when read: a dynamic manifest, its reader's files, its lister's directories") {
    droid::skills::dynamic_skill daily{
        .path = "reports/daily",
        .skill_md = "---\nname: daily\ndescription: Today's report from live data\n---\n# Daily\nRead `data/today.csv`.\n",
        .read = [](droid::tool_context&, std::string path) -> droid::task<std::optional<droid::skills::file>> {
          if (path == "data/today.csv") co_return droid::skills::file{.path = path, .content = "a,b\n1,2\n"};
          co_return std::nullopt;
        },
        .list = [](std::string_view dir) -> std::optional<std::vector<std::string>> {
          if (dir.empty()) return std::vector<std::string>{"data/"};
          if (dir == "data") return std::vector<std::string>{"today.csv"};
          return std::nullopt;
        }};
    fixture f({std::move(daily)});
    auto r = f.modern("skills/get", R"("uri":"skill://reports/daily/SKILL.md")");
    CHECK(r.at("result").at("skill").at("resources") == "dynamic");
    CHECK(r.at("result").at("skill").at("frontmatter").at("name") == "daily");
    r = f.modern("resources/read", R"("uri":"skill://reports/daily/data/today.csv")");
    const auto& c = r.at("result").at("contents").at(0);
    CHECK(c.at("text") == "a,b\n1,2\n");
    CHECK(c.at("mimeType") == "text/csv");
    r = f.modern("resources/read", R"("uri":"skill://reports/daily/nope.md")");
    CHECK(code_of(r) == -32602);
    CHECK(r.at("error").at("message") == "No file is served at skill://reports/daily/nope.md");
    r = f.modern("resources/read", R"("uri":"skill://reports/daily/SKILL.md")");
    CHECK(r.at("result").at("contents").at(0).at("text").as_string().starts_with("---\nname: daily"));
    // Directories: its own through its lister (page_size is 1 here), the prefix's as any.
    r = f.modern("resources/directory/read", R"("uri":"skill://reports/daily")");
    CHECK(r.at("result").at("resources").at(0) ==
          boost::json::parse(R"({"uri":"skill://reports/daily/SKILL.md","name":"SKILL.md","mimeType":"text/markdown"})"));
    const std::string next(r.at("result").at("nextCursor").as_string());
    r = f.modern("resources/directory/read", R"("uri":"skill://reports/daily","cursor":")" + next + R"(")");
    CHECK(r.at("result").at("resources").at(0) ==
          boost::json::parse(R"({"uri":"skill://reports/daily/data","name":"data","mimeType":"inode/directory"})"));
    r = f.modern("resources/directory/read", R"("uri":"skill://reports/daily/data")");
    CHECK(r.at("result").at("resources").at(0).at("mimeType") == "text/csv");
    CHECK(code_of(f.modern("resources/directory/read", R"("uri":"skill://reports/daily/none")")) == -32602);
    r = f.modern("resources/directory/read", R"("uri":"skill://reports")");
    CHECK(r.at("result").at("resources").at(0).at("uri") == "skill://reports/daily");

    droid::server srv{droid::server_info{.name = "t", .version = "1"}, small_pages()};
    CHECK_THROWS_AS(droid::skills::serve(srv, {}, {droid::skills::dynamic_skill{
                                                       .path = "x", .skill_md = "---\nname: x\ndescription: d\n---\n"}}),
                    std::invalid_argument);
  }

  TEST_CASE("without directory_read the method does not exist and the settings are empty") {
    droid::server srv{droid::server_info{.name = "t", .version = "1"}, small_pages()};
    droid::skills::serve(srv, sample(), droid::skills::options{.directory_read = false});
    droid::test::session_driver d;
    d.start(srv);
    const auto init = d.out->pop();
    CHECK(init.at("result").at("capabilities").at("extensions").at("io.modelcontextprotocol/skills") ==
          boost::json::object{});
    CHECK(code_of(d.request("resources/directory/read", R"({"uri":"skill://code-review"})")) == -32601);
    d.stop();
  }

  TEST_CASE("serve refuses what a client could not load or would misread") {
    const auto refusal = [](droid::skills::skill s) -> std::string {
      droid::server srv{droid::server_info{.name = "t", .version = "1"}, small_pages()};
      try {
        droid::skills::serve(srv, {std::move(s)});
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "accepted";
    };
    const std::string ok = "---\nname: good\ndescription: d\n---\n";
    CHECK(refusal({"good", ok, {}}) == "accepted");
    CHECK(refusal({"other", ok, {}}).find("last segment of its path must be its name") != std::string::npos);
    CHECK(refusal({"Bad", "---\nname: Bad\ndescription: d\n---\n", {}}).find("1 to 64 of a-z") != std::string::npos);
    CHECK(refusal({"a--b", "---\nname: a--b\ndescription: d\n---\n", {}}).find("1 to 64") != std::string::npos);
    CHECK(refusal({"good", "---\nname: good\n---\n", {}}).find("needs a `description`") != std::string::npos);
    CHECK(refusal({"good", "no frontmatter", {}}).find("frontmatter, line 1") != std::string::npos);
    CHECK(refusal({"good", ok, {{"a.md", "x", ""}, {"a.md", "y", ""}}}).find("given twice") != std::string::npos);
    CHECK(refusal({"good", ok, {{"../up.md", "x", ""}}}).find("without . or ..") != std::string::npos);
    CHECK(refusal({"x//good", ok, {}}).find("segments") != std::string::npos);
    droid::skills::skill many{"good", ok, {}};
    for (int i = 0; i < 512; ++i) many.files.push_back({"f" + std::to_string(i), "x", ""});
    CHECK(refusal(many).find("more than 512 files") != std::string::npos);
  }

  TEST_CASE("from_directories reads each skill directory, skipping hidden files") {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("droid-skills-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "code-review" / "templates");
    fs::create_directories(root / "code-review" / ".git");
    fs::create_directories(root / "not-a-skill");
    const auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; };
    write(root / "code-review" / "SKILL.md", review_md);
    write(root / "code-review" / "templates" / "summary.md", "## Summary\n");
    write(root / "code-review" / ".hidden", "x");
    write(root / "code-review" / ".git" / "HEAD", "x");
    write(root / "not-a-skill" / "README.md", "x");
    const auto all = droid::skills::from_directories(root, "team");
    fs::remove_all(root);
    REQUIRE(all.size() == 1);
    CHECK(all[0].path == "team/code-review");
    CHECK(all[0].skill_md == review_md);
    REQUIRE(all[0].files.size() == 1);
    CHECK(all[0].files[0].path == "templates/summary.md");
    CHECK_THROWS_AS((void)droid::skills::from_directory(fs::temp_directory_path() / "droid-no-such-skill"),
                    std::invalid_argument);
  }
}

TEST_SUITE("application/apps") {
  TEST_CASE("a view is a text/html;profile=mcp-app resource with its _meta.ui on list and read") {
    droid::server srv{droid::server_info{.name = "apps", .version = "1"}, small_pages()};
    droid::apps::add_view(srv, droid::apps::view{.uri = "ui://t/card",
                                                 .name = "card",
                                                 .html = "<!doctype html><p>card</p>",
                                                 .csp = {.connect_domains = {"https://api.example.com"},
                                                         .resource_domains = {"https://cdn.example.com"}},
                                                 .permissions = {.clipboard_write = true},
                                                 .domain = "card.example.com",
                                                 .prefers_border = false});
    srv.tool(droid::tool_info{.name = "card", .description = "Shows a card", .meta = droid::apps::tool_meta("ui://t/card")},
             [](droid::tool_context&) -> droid::task<std::string> { co_return "a card"; });
    srv.tool(droid::tool_info{.name = "card_refresh",
                              .description = "For the card only",
                              .meta = droid::apps::tool_meta("ui://t/card", droid::apps::visibility::app_only)},
             [](droid::tool_context&) -> droid::task<std::string> { co_return "again"; });
    droid::test::session_driver d;
    d.start(srv);
    const auto init = d.out->pop();
    CHECK(init.at("result").at("capabilities").at("extensions").as_object().contains("io.modelcontextprotocol/ui"));
    const auto ui = boost::json::parse(R"({"ui":{"csp":{"connectDomains":["https://api.example.com"],)"
                                       R"("resourceDomains":["https://cdn.example.com"]},)"
                                       R"("permissions":{"clipboardWrite":{}},"domain":"card.example.com","prefersBorder":false}})");
    auto r = d.request("resources/list", "{}");
    const auto& listed = r.at("result").at("resources").at(0);
    CHECK(listed.at("uri") == "ui://t/card");
    CHECK(listed.at("mimeType") == "text/html;profile=mcp-app");
    CHECK(listed.at("_meta") == ui);
    r = d.request("resources/read", R"({"uri":"ui://t/card"})");
    const auto& c = r.at("result").at("contents").at(0);
    CHECK(c.at("mimeType") == "text/html;profile=mcp-app");
    CHECK(c.at("text") == "<!doctype html><p>card</p>");
    CHECK(c.at("_meta") == ui);
    // The link, and app-only visibility, are on the tools' listings; the text stays.
    r = d.request("tools/list", "{}");
    for (const auto& t : r.at("result").at("tools").as_array()) {
      if (t.at("name") == "card") CHECK(t.at("_meta") == boost::json::parse(R"({"ui":{"resourceUri":"ui://t/card"}})"));
      if (t.at("name") == "card_refresh")
        CHECK(t.at("_meta") == boost::json::parse(R"({"ui":{"resourceUri":"ui://t/card","visibility":["app"]}})"));
    }
    CHECK(d.request("tools/call", R"({"name":"card"})").at("result").at("content").at(0).at("text") == "a card");
    d.stop();
  }

  TEST_CASE("a view's URI, name and document are checked, and a tool can only link a ui:// view") {
    droid::server srv{droid::server_info{.name = "apps", .version = "1"}, small_pages()};
    CHECK_THROWS_AS(droid::apps::add_view(srv, {.uri = "https://x/card", .name = "n", .html = "<p>"}), std::invalid_argument);
    CHECK_THROWS_AS(droid::apps::add_view(srv, {.uri = "ui://", .name = "n", .html = "<p>"}), std::invalid_argument);
    CHECK_THROWS_AS(droid::apps::add_view(srv, {.uri = "ui://x", .name = "", .html = "<p>"}), std::invalid_argument);
    CHECK_THROWS_AS(droid::apps::add_view(srv, {.uri = "ui://x", .name = "n", .html = ""}), std::invalid_argument);
    CHECK_THROWS_AS((void)droid::apps::tool_meta("file:///x"), std::invalid_argument);
    CHECK(droid::apps::tool_meta("ui://x", droid::apps::visibility::model_only) ==
          boost::json::parse(R"({"ui":{"resourceUri":"ui://x","visibility":["model"]}})"));
  }

  TEST_CASE("client_renders_apps reads the client's mimeTypes, from initialize and from a 2026 request") {
    droid::server srv{droid::server_info{.name = "apps", .version = "1"}, small_pages()};
    srv.tool("renders", "Says whether the client renders apps", [](droid::tool_context& ctx) -> droid::task<std::string> {
      co_return droid::apps::client_renders_apps(ctx.peer()) ? "yes" : "no";
    });
    const auto answer = [&](const std::string& capabilities) {
      droid::test::session_driver d;
      d.start(srv, capabilities);
      (void)d.out->pop();
      const auto r = d.request("tools/call", R"({"name":"renders"})");
      d.stop();
      return std::string(r.at("result").at("content").at(0).at("text").as_string());
    };
    CHECK(answer(R"({"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}})") == "yes");
    CHECK(answer(R"({"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/uri-list"]}}})") == "no");
    CHECK(answer(R"({"extensions":{"io.modelcontextprotocol/ui":{}}})") == "no");
    CHECK(answer("{}") == "no");
    droid::test::session_driver d;
    d.s = droid::session::create(srv, d.io.get_executor(), d.out);
    d.feed(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
           R"("io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}},"name":"renders"}})");
    CHECK(d.out->pop().at("result").at("content").at(0).at("text") == "yes");
    d.stop();
  }
}
