// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Skills extension (skills.hpp): skills read from disk or memory, checked once, and
/// served as resources plus three methods over a catalog that never changes after `serve`.
#include <droid/application/extensions/skills.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include <boost/describe.hpp>
#include <boost/json/array.hpp>

#include <openssl/evp.h>

#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/frontmatter.hpp>

namespace droid::skills {
namespace {

/// What a client may be sent of one skill at most (the extension's limits, which every
/// conforming client accepts; past them no client is bound to load the skill).
constexpr std::size_t max_files = 512;
constexpr std::size_t max_bytes = 16u << 20;

constexpr std::string_view scheme = "skill://";
constexpr std::string_view directory_type = "inode/directory";

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw std::invalid_argument("droid: skill \"" + path + "\": " + why);
}

/// The Agent Skills name rule: 1 to 64 of a-z, 0-9 and hyphens, none first, last or twice.
bool is_skill_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '-' || name.back() == '-') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && name[i - 1] == '-')) return false;
  }
  return true;
}

/// The `/`-separated segments of `path`; false for an empty segment, `.` or `..`, or a
/// character a URI path cannot carry as is.
bool segments_of(std::string_view path, std::vector<std::string_view>& out) {
  out.clear();
  if (path.empty()) return false;
  while (true) {
    const std::size_t slash = path.find('/');
    const std::string_view s = path.substr(0, slash);
    if (s.empty() || s == "." || s == "..") return false;
    for (const char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || c == '?' || c == '#' || c == '%' || c == '\\' || u == 0x7F) return false;
    }
    out.push_back(s);
    if (slash == std::string_view::npos) return true;
    path.remove_prefix(slash + 1);
  }
}

std::string mime_of(std::string_view path, std::string_view content) {
  const std::size_t dot = path.rfind('.');
  const std::string_view ext = dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos
                                   ? std::string_view()
                                   : path.substr(dot + 1);
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> known{{
      {"md", "text/markdown"},      {"markdown", "text/markdown"}, {"txt", "text/plain"},
      {"py", "text/x-python"},      {"sh", "text/x-shellscript"},  {"json", "application/json"},
      {"yaml", "application/yaml"}, {"yml", "application/yaml"},   {"html", "text/html"},
      {"csv", "text/csv"},          {"js", "text/javascript"},     {"xml", "application/xml"},
      {"png", "image/png"},         {"jpg", "image/jpeg"},         {"jpeg", "image/jpeg"},
      {"pdf", "application/pdf"},
  }};
  for (const auto& [e, type] : known)
    if (e == ext) return std::string(type);
  return ir::is_utf8(content) ? "text/plain" : "application/octet-stream";
}

/// True for a type whose UTF-8 content is sent as text rather than base64.
bool is_textual(std::string_view mime) {
  return mime.starts_with("text/") || mime == "application/json" || mime == "application/yaml" ||
         mime == "application/xml";
}

/// `prefix` and two lowercase hex digits per byte of `bytes`.
template <class Bytes>
std::string hex_of(std::string_view prefix, const Bytes& bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(prefix);
  for (const char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

/// `sha256:` and the 64 lowercase hex digits of the SHA-256 of `bytes`.
std::string digest_of(std::string_view bytes) {
  std::array<char, 32> md{};
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(md.data()), &len, EVP_sha256(),
                 nullptr) != 1 ||
      len != md.size())
    throw std::runtime_error("droid: SHA-256 failed (OpenSSL EVP_Digest)");
  return hex_of("sha256:", md);
}

/// An opaque cursor naming the key a page starts at.
std::string encode_cursor(std::string_view key) { return hex_of("sk1.", key); }

std::optional<std::string> decode_cursor(std::string_view cursor) {
  if (!cursor.starts_with("sk1.") || cursor.size() % 2 != 0) return std::nullopt;
  cursor.remove_prefix(4);
  const auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < cursor.size(); i += 2) {
    const int hi = nibble(cursor[i]), lo = nibble(cursor[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

/// One file as served: its resource description and its bytes.
struct served_file {
  resource_info info;
  std::string content;
};

/// Everything `serve` built: the skill entries by URI and the directory tree, fixed
/// after `serve` returns, shared by the three methods' handlers.
struct catalog {
  std::map<std::string, boost::json::object, std::less<>> entries;  ///< Skill entries by SKILL.md URI
  /// Each directory's direct children by name: a file's listing, or a directory's.
  std::map<std::string, std::map<std::string, boost::json::object>, std::less<>> directories;
  std::set<std::string, std::less<>> files;  ///< every file URI (not a directory)
  /// The roots of the skills whose files are made when read, with what lists them.
  std::map<std::string, std::function<std::optional<std::vector<std::string>>(std::string_view)>, std::less<>>
      dynamic_roots;
  std::size_t page_size = 100;
};

/// The children of directory `asked` of a skill whose files are made when read (`root` is
/// its root), as directory entries, or none when `asked` is not one of its directories.
std::optional<std::map<std::string, boost::json::object>> dynamic_children(
    const std::string& root, const std::function<std::optional<std::vector<std::string>>(std::string_view)>& list,
    std::string_view asked) {
  const std::string_view rel = asked.size() == root.size() ? std::string_view() : asked.substr(root.size() + 1);
  std::optional<std::vector<std::string>> names;
  if (list) names = list(rel);
  else if (rel.empty()) names.emplace();
  if (!names) return std::nullopt;
  const std::string base = std::string(asked) + "/";
  std::map<std::string, boost::json::object> out;
  if (rel.empty())
    out["SKILL.md"] = boost::json::object{{"uri", base + "SKILL.md"}, {"name", "SKILL.md"}, {"mimeType", "text/markdown"}};
  for (const std::string& n : *names) {
    const bool dir = n.ends_with('/');
    const std::string name = dir ? n.substr(0, n.size() - 1) : n;
    if (name.empty() || name.find('/') != std::string::npos) continue;  // not a direct child
    out[name] = boost::json::object{{"uri", base + name}, {"name", name},
                                    {"mimeType", dir ? std::string(directory_type) : mime_of(name, {})}};
  }
  return out;
}

/// Reads the `cursor` member of `params`: the key to start at (empty: the first page).
std::string start_of(const boost::json::object& params) {
  const auto* c = params.if_contains("cursor");
  if (!c || c->is_null()) return {};
  const std::optional<std::string> key = c->is_string() ? decode_cursor(c->as_string()) : std::nullopt;
  if (!key) throw protocol_error(-32602, "Invalid params: unknown cursor");
  return *key;
}

/// A page of `map` from `from`, as `member` with `nextCursor` when more follow.
template <class Map, class Entry>
boost::json::object page_of(const Map& map, const std::string& from, std::size_t size, std::string_view member,
                            Entry&& entry) {
  boost::json::array items;
  auto it = map.lower_bound(from);
  for (; it != map.end() && items.size() < size; ++it) items.push_back(entry(*it));
  boost::json::object out{{member, std::move(items)}};
  if (it != map.end()) out["nextCursor"] = encode_cursor(it->first);
  return out;
}

struct get_params {
  std::string uri;
};
BOOST_DESCRIBE_STRUCT(get_params, (), (uri))

}  // namespace

skill from_directory(const std::filesystem::path& dir, std::string_view prefix) {
  namespace fs = std::filesystem;
  const auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::invalid_argument("droid: cannot read " + p.string());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  skill s;
  const std::string name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  s.path = prefix.empty() ? name : std::string(prefix) + "/" + name;
  if (!fs::is_regular_file(dir / "SKILL.md")) throw std::invalid_argument("droid: " + dir.string() + " has no SKILL.md");
  s.skill_md = read(dir / "SKILL.md");
  std::vector<std::string> paths;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string leaf = it->path().filename().string();
    if (leaf.starts_with('.')) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || it->is_symlink()) continue;
    std::string rel = fs::relative(it->path(), dir).generic_string();
    if (rel != "SKILL.md") paths.push_back(std::move(rel));
  }
  std::sort(paths.begin(), paths.end());
  for (std::string& p : paths) {
    std::string content = read(dir / p);
    s.files.push_back(file{std::move(p), std::move(content), {}});
  }
  return s;
}

std::vector<skill> from_directories(const std::filesystem::path& root, std::string_view prefix) {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (e.is_directory() && !e.path().filename().string().starts_with('.') && fs::is_regular_file(e.path() / "SKILL.md"))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<skill> out;
  for (const fs::path& d : dirs) out.push_back(from_directory(d, prefix));
  return out;
}

void serve(server& srv, std::vector<skill> skills, options opts) { serve(srv, std::move(skills), {}, std::move(opts)); }

void serve(server& srv, std::vector<skill> skills, std::vector<dynamic_skill> dynamic, options opts) {
  auto cat = std::make_shared<catalog>();
  cat->page_size = srv.options().page_size;
  std::vector<served_file> files;
  std::vector<std::string_view> segments;
  // A skill's SKILL.md as the entry has it: the frontmatter, checked against the naming
  // rules and the path (whose segments are left in `segments`).
  struct checked {
    boost::json::object frontmatter;
    std::string name;
    std::string description;
  };
  const auto check = [&](const std::string& path, std::string_view skill_md) {
    if (!segments_of(path, segments)) refuse(path, "its path must be /-separated segments of URI characters");
    checked c;
    try {
      c.frontmatter = parse_frontmatter(skill_md);
    } catch (const std::invalid_argument& e) {
      refuse(path, e.what());
    }
    const auto* name = c.frontmatter.if_contains("name");
    const auto* description = c.frontmatter.if_contains("description");
    if (!name || !name->is_string() || name->as_string().empty()) refuse(path, "its SKILL.md frontmatter needs a `name`");
    if (!description || !description->is_string() || description->as_string().empty())
      refuse(path, "its SKILL.md frontmatter needs a `description`");
    c.name = std::string(name->as_string());
    c.description = std::string(description->as_string());
    if (!is_skill_name(c.name))
      refuse(path, "its name \"" + c.name +
                       "\" must be 1 to 64 of a-z, 0-9 and hyphens, with no hyphen first, last or next to another");
    if (segments.back() != c.name) refuse(path, "the last segment of its path must be its name, \"" + c.name + "\"");
    if (cat->entries.contains(std::string(scheme) + path + "/SKILL.md"))
      refuse(path, "two skills are served at " + std::string(scheme) + path + "/SKILL.md");
    return c;
  };
  // Serves one fixed file of the skill at `path`: its resource, its manifest entry, and
  // every directory on the way, from the skill path's first segment down.
  const auto add = [&](const std::string& path, std::set<std::string>& seen, boost::json::array& manifest,
                       std::string rel, std::string content, std::string mime, resource_info info) {
    std::vector<std::string_view> parts;
    if (!segments_of(rel, parts)) refuse(path, "the file path \"" + rel + "\" must be relative, without . or ..");
    if (!seen.insert(rel).second) refuse(path, "the file " + rel + " is given twice");
    info.uri = std::string(scheme) + path + "/" + rel;
    if (info.name.empty()) info.name = std::string(parts.back());
    info.mime_type = mime.empty() ? mime_of(rel, content) : std::move(mime);
    info.size = static_cast<std::int64_t>(content.size());
    info.cache = opts.cache;
    manifest.push_back(boost::json::object{
        {"uri", info.uri}, {"digest", digest_of(content)}, {"size", static_cast<std::int64_t>(content.size())}});
    std::string dir = std::string(scheme);
    std::vector<std::string_view> all = segments;
    all.insert(all.end(), parts.begin(), parts.end());
    for (std::size_t k = 0; k + 1 < all.size(); ++k) {
      if (k) dir += '/';
      dir += all[k];
      const bool last = k + 2 == all.size();
      boost::json::object child = last ? to_json(info)
                                       : boost::json::object{{"uri", dir + "/" + std::string(all[k + 1])},
                                                             {"name", std::string(all[k + 1])},
                                                             {"mimeType", directory_type}};
      cat->directories[dir].insert_or_assign(std::string(all[k + 1]), std::move(child));
    }
    if (!cat->files.insert(info.uri).second) refuse(path, "two files are served at " + info.uri);
    files.push_back(served_file{std::move(info), std::move(content)});
  };

  for (skill& s : skills) {
    checked c = check(s.path, s.skill_md);
    if (s.files.size() + 1 > max_files)
      refuse(s.path, "it has more than " + std::to_string(max_files) + " files, which clients need not load");
    std::size_t total = s.skill_md.size();
    for (const file& f : s.files) total += f.content.size();
    if (total > max_bytes) refuse(s.path, "its files exceed 16 MiB together, which clients need not load");
    boost::json::array manifest;
    std::set<std::string> seen;
    add(s.path, seen, manifest, "SKILL.md", s.skill_md, "text/markdown",
        resource_info{.name = c.name, .description = c.description});
    for (file& f : s.files) {
      if (f.path == "SKILL.md") refuse(s.path, "SKILL.md is given as a file too");
      add(s.path, seen, manifest, std::move(f.path), std::move(f.content), std::move(f.mime_type), resource_info{});
    }
    const std::string skill_uri = std::string(scheme) + s.path + "/SKILL.md";
    cat->entries.emplace(skill_uri, boost::json::object{{"uri", skill_uri},
                                                        {"frontmatter", std::move(c.frontmatter)},
                                                        {"resources", std::move(manifest)}});
  }
  // Skills whose files are made when read: SKILL.md as a fixed file, the rest through a
  // template over the skill's root, and a manifest that says so.
  struct dynamic_files {
    std::string root;
    std::string name;
    std::function<task<std::optional<file>>(tool_context&, std::string)> read;
  };
  std::vector<dynamic_files> templates;
  for (dynamic_skill& d : dynamic) {
    if (!d.read) refuse(d.path, "a skill whose files are made when read needs `read`");
    checked c = check(d.path, d.skill_md);
    boost::json::array ignored;
    std::set<std::string> seen;
    add(d.path, seen, ignored, "SKILL.md", d.skill_md, "text/markdown",
        resource_info{.name = c.name, .description = c.description});
    const std::string root = std::string(scheme) + d.path;
    cat->dynamic_roots.emplace(root, std::move(d.list));
    cat->entries.emplace(root + "/SKILL.md", boost::json::object{{"uri", root + "/SKILL.md"},
                                                                 {"frontmatter", std::move(c.frontmatter)},
                                                                 {"resources", "dynamic"}});
    templates.push_back(dynamic_files{root, c.name, std::move(d.read)});
  }
  // A directory is never also a file (a skill path that is another skill's file).
  for (const auto& [dir, children] : cat->directories)
    if (cat->files.contains(dir)) throw std::invalid_argument("droid: skills: " + dir + " is both a file and a directory");

  boost::json::object settings;
  if (opts.directory_read) settings["directoryRead"] = true;
  srv.extension(std::string(extension_name), std::move(settings));

  for (served_file& f : files) {
    auto content = std::make_shared<const std::string>(std::move(f.content));
    const std::string uri = f.info.uri;
    const std::string mime = f.info.mime_type;
    srv.resource(std::move(f.info), [content, uri, mime](tool_context&) -> task<resource_contents> {
      if (is_textual(mime) && ir::is_utf8(*content)) co_return resource_contents::text_of(uri, *content, mime);
      co_return resource_contents::blob_of(uri, *content, mime);
    });
  }

  for (dynamic_files& t : templates) {
    auto read = std::make_shared<decltype(t.read)>(std::move(t.read));
    srv.resource_template(
        resource_template_info{.uri_template = t.root + "/{+file}",
                               .name = t.name + "-files",
                               .description = "The files of the skill " + t.name + ", made when read",
                               .cache = cache_hint{std::chrono::milliseconds(0), cache_scope::private_}},
        [read, root = t.root](tool_context& ctx, resource_request r) -> task<resource_contents> {
          const std::string rel = r.variables.at("file");
          task<std::optional<file>> pending = (*read)(ctx, rel);
          std::optional<file> f = co_await std::move(pending);
          if (!f) throw protocol_error(-32602, "No file is served at " + r.uri);
          const std::string mime = f->mime_type.empty() ? mime_of(rel, f->content) : f->mime_type;
          if (is_textual(mime) && ir::is_utf8(f->content)) co_return resource_contents::text_of(r.uri, f->content, mime);
          co_return resource_contents::blob_of(r.uri, f->content, mime);
        });
  }

  // No client declaration gates these: the extension defines none, and a client calls
  // them only after it saw the server's declaration.
  const method_options offered{.cache = opts.cache};
  srv.method(
      "skills/list",
      [cat](tool_context&, boost::json::object params) -> task<boost::json::object> {
        const std::string from = start_of(params);
        co_return page_of(cat->entries, from, cat->page_size, "skills", [](const auto& e) { return e.second; });
      },
      offered);
  srv.method(
      "skills/get",
      [cat](tool_context&, get_params p) -> task<boost::json::object> {
        const auto it = cat->entries.find(p.uri);
        if (it == cat->entries.end()) throw protocol_error(-32602, "No skill is served at " + p.uri);
        co_return boost::json::object{{"skill", it->second}};
      },
      offered);
  if (!opts.directory_read) return;
  srv.method("resources/directory/read",
             [cat](tool_context&, boost::json::object params) -> task<boost::json::object> {
               const auto* uri = params.if_contains("uri");
               if (!uri || !uri->is_string()) throw protocol_error(-32602, "Invalid params: uri must be a string");
               const std::string_view asked = uri->as_string();
               const std::string from = start_of(params);
               // A directory of a skill whose files are made when read is listed by it.
               for (const auto& [root, list] : cat->dynamic_roots) {
                 if (asked != root && !(asked.starts_with(root) && asked[root.size()] == '/')) continue;
                 std::optional<std::map<std::string, boost::json::object>> children =
                     dynamic_children(root, list, asked);
                 if (!children) throw protocol_error(-32602, std::string(asked) + ": no directory resource is served there");
                 co_return page_of(*children, from, cat->page_size, "resources",
                                   [](const auto& child) { return child.second; });
               }
               const auto dir = cat->directories.find(asked);
               if (dir == cat->directories.end()) {
                 throw protocol_error(-32602, std::string(asked) + (cat->files.contains(asked)
                                                                        ? " is not a directory resource"
                                                                        : ": no directory resource is served there"));
               }
               co_return page_of(dir->second, from, cat->page_size, "resources",
                                 [](const auto& child) { return child.second; });
             },
             // The extension's page shows no hint on this result, but the official client
             // (2.4.0) refuses a 2026-07-28 directory read without one, as for any list.
             offered);
}

}  // namespace droid::skills
