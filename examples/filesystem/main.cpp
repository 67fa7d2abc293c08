// SPDX-License-Identifier: BSL-1.0
// A port of the reference filesystem MCP server (`@modelcontextprotocol/server-filesystem`,
// the version pinned in test/filesystem/package.json) to protocol_droid: the same tools,
// arguments, descriptions and results, confined to the directories named on the command
// line or by the client's roots. examples/filesystem/README.md says how to run it and
// where it differs; test/filesystem/differential.mjs compares the two.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/droid.hpp>

#include "fs_ops.hpp"

namespace {

// Argument structs. Members are spelled as the reference's JSON names (camelCase), since
// Boost.Describe takes the JSON name from the member.

struct path_args {
  std::string path;
};
BOOST_DESCRIBE_STRUCT(path_args, (), (path))

struct read_text_args {
  std::string path;
  std::optional<double> tail;
  std::optional<double> head;
};
BOOST_DESCRIBE_STRUCT(read_text_args, (), (path, tail, head))

struct read_multiple_args {
  std::vector<std::string> paths;
};
BOOST_DESCRIBE_STRUCT(read_multiple_args, (), (paths))

struct write_args {
  std::string path;
  std::string content;
};
BOOST_DESCRIBE_STRUCT(write_args, (), (path, content))

struct edit_operation {
  std::string oldText;
  std::string newText;
};
BOOST_DESCRIBE_STRUCT(edit_operation, (), (oldText, newText))

struct edit_args {
  std::string path;
  std::vector<edit_operation> edits;
  std::optional<bool> dryRun;
};
BOOST_DESCRIBE_STRUCT(edit_args, (), (path, edits, dryRun))

enum class sort_key { name, size };
BOOST_DESCRIBE_ENUM(sort_key, name, size)

struct list_sizes_args {
  std::string path;
  std::optional<sort_key> sortBy;
};
BOOST_DESCRIBE_STRUCT(list_sizes_args, (), (path, sortBy))

struct tree_args {
  std::string path;
  std::optional<std::vector<std::string>> excludePatterns;
};
BOOST_DESCRIBE_STRUCT(tree_args, (), (path, excludePatterns))

struct move_args {
  std::string source;
  std::string destination;
};
BOOST_DESCRIBE_STRUCT(move_args, (), (source, destination))

struct search_args {
  std::string path;
  std::string pattern;
  std::optional<std::vector<std::string>> excludePatterns;
};
BOOST_DESCRIBE_STRUCT(search_args, (), (path, pattern, excludePatterns))

/// Where the allowed directories live, and whether the client's roots must be asked for
/// again before the next tool runs.
///
/// Why asked lazily: the framework lets a server ask the client only while it serves a
/// request (docs/exchange.md), so the reference's "ask right after initialization and
/// on every roots/list_changed" becomes "ask before the first tool call, and before the
/// first one after each roots/list_changed". What the tools see is the same.
/// Affinity: the stdio transport runs the tools and the roots handler on one thread; the
/// flag is atomic only because the handler is registered as callable from any shard.
struct state {
  fsx::allowed_directories allowed;
  std::atomic<bool> roots_wanted{true};
};

/// How long a tool waits for the client's roots before it goes on with the directories
/// it has. Why a limit: the reference asks in the background and never holds a tool
/// call for the answer; a client that declared roots but does not answer must not stall
/// every call here.
constexpr std::chrono::seconds roots_wait{5};

/// Lists the client's roots when they are due and the client declared them, replacing
/// the allowed directories with those that are directories. A refused or unanswered
/// question keeps the current list, as the reference does; a call cancelled while it
/// waited leaves the roots due, so the next call asks again.
/// Calls that arrive while one call waits for the roots go on with the current list,
/// as calls racing the reference's background question do.
droid::task<void> refresh_roots(droid::tool_context& ctx, state& st) {
  if (!ctx.peer().has_capability("roots") || !st.roots_wanted.exchange(false)) co_return;
  droid::deadline limit(ctx.executor(), roots_wait);
  auto roots = co_await ctx.list_roots(limit.token());
  if (!roots) {
    if (roots.error().condition == droid::errc::cancelled && !limit.expired()) st.roots_wanted = true;
    std::cerr << "Failed to request roots from client: "
              << (limit.expired() ? "no answer within 5 seconds" : roots.error().message) << '\n';
    co_return;
  }
  std::vector<std::string> uris;
  for (const droid::root& r : roots.value()) {
    // MCP roots are file:// URIs; the reference's SDK refuses a whole answer that has
    // another, and so keeps the directories it had.
    if (!r.uri.starts_with("file://")) {
      std::cerr << "Failed to request roots from client: root URI " << r.uri << " does not start with file://\n";
      co_return;
    }
    uris.push_back(r.uri);
  }
  (void)st.allowed.set_from_roots(uris);
}

/// The one-text-block result with the same text as `structuredContent.content`, which
/// is how every reference tool answers.
droid::tool_result text_result(std::string text) {
  droid::tool_result r = droid::tool_result::text(text);
  r.structured(boost::json::object{{"content", std::move(text)}});
  return r;
}

boost::json::object schema(std::string_view json) { return boost::json::parse(json).as_object(); }

constexpr std::string_view text_output = R"({"type":"object","properties":{"content":{"type":"string"}},
  "required":["content"],"additionalProperties":false})";

droid::tool_info info(std::string name, std::string title, std::string description, std::string_view input,
                      bool read_only, std::optional<bool> idempotent = {}, std::optional<bool> destructive = {}) {
  droid::tool_info i;
  i.name = std::move(name);
  i.title = std::move(title);
  i.description = std::move(description);
  i.input_schema = schema(input);
  i.output_schema = schema(text_output);
  i.annotations.read_only_hint = read_only;
  i.annotations.idempotent_hint = idempotent;
  i.annotations.destructive_hint = destructive;
  i.annotations.open_world_hint = false;
  return i;
}

constexpr std::string_view path_only =
    R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]})";
constexpr std::string_view read_text_input = R"({"type":"object","properties":{"path":{"type":"string"},
  "tail":{"description":"If provided, returns only the last N lines of the file","type":"number"},
  "head":{"description":"If provided, returns only the first N lines of the file","type":"number"}},"required":["path"]})";

std::string read_text_tool(const state& st, const read_text_args& args) {
  const std::string path = st.allowed.validate(args.path);
  // JavaScript's truthiness: a head or tail of 0 means "not given".
  const bool head = args.head && *args.head != 0, tail = args.tail && *args.tail != 0;
  if (head && tail) throw fsx::fs_error("Cannot specify both head and tail parameters simultaneously");
  if (tail) return fsx::tail_lines(path, *args.tail);
  if (head) return fsx::head_lines(path, *args.head);
  return fsx::read_text(path);
}

droid::tool_result media_result(const state& st, const std::string& requested) {
  const std::string path = st.allowed.validate(requested);
  static constexpr std::pair<std::string_view, std::string_view> types[] = {
      {".png", "image/png"},   {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"},   {".gif", "image/gif"},
      {".webp", "image/webp"}, {".bmp", "image/bmp"},  {".svg", "image/svg+xml"}, {".mp3", "audio/mpeg"},
      {".wav", "audio/wav"},   {".ogg", "audio/ogg"},  {".flac", "audio/flac"}};
  // path.extname: from the last dot of the last component, unless that dot starts it.
  std::string ext;
  const std::string base = path.substr(path.rfind('/') + 1);
  if (const std::size_t dot = base.rfind('.'); dot != std::string::npos && dot != 0) ext = base.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string mime = "application/octet-stream";
  for (const auto& [e, m] : types)
    if (e == ext) mime = m;
  const std::string data = droid::base64_encode(fsx::read_bytes(path));
  boost::json::object item;
  droid::tool_result r;
  if (mime.starts_with("image/") || mime.starts_with("audio/")) {
    item = {{"type", mime.starts_with("image/") ? "image" : "audio"}, {"data", data}, {"mimeType", mime}};
    r.add(mime.starts_with("image/") ? droid::content::image(data, mime) : droid::content::audio(data, mime));
  } else {
    // MCP has no bare binary block: anything else travels as an embedded resource.
    const std::string uri = fsx::file_url(path);
    item = {{"type", "resource"}, {"resource", {{"uri", uri}, {"mimeType", mime}, {"blob", data}}}};
    r.add(droid::content::embedded_blob(uri, data, mime));
  }
  r.structured(boost::json::object{{"content", boost::json::array{std::move(item)}}});
  return r;
}

std::string list_sizes(const state& st, const list_sizes_args& args) {
  const std::string dir = st.allowed.validate(args.path);
  // One entry with its size, kept in readdir order for the totals.
  struct row {
    std::string name;
    bool is_directory;
    std::uint64_t size;
  };
  std::vector<row> rows;
  for (const fsx::dir_entry& e : fsx::list(dir)) {
    std::uint64_t size = 0;
    try {
      size = fsx::stat_path(fsx::join(dir, e.name)).size;
    } catch (const fsx::fs_error&) {
      // A dangling symlink or a vanished entry is listed with size 0, as the reference does.
    }
    rows.push_back({e.name, e.is_directory, size});
  }
  std::vector<row> sorted = rows;
  if (args.sortBy.value_or(sort_key::name) == sort_key::size) {
    std::stable_sort(sorted.begin(), sorted.end(), [](const row& a, const row& b) { return a.size > b.size; });
  } else {
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const row& a, const row& b) { return fsx::locale_compare(a.name, b.name) < 0; });
  }
  const auto pad_end = [](std::string s, std::size_t width) {
    const std::size_t n = fsx::utf16_length(s);
    return n < width ? s + std::string(width - n, ' ') : s;
  };
  const auto pad_start = [](std::string s, std::size_t width) {
    const std::size_t n = fsx::utf16_length(s);
    return n < width ? std::string(width - n, ' ') + s : s;
  };
  std::string out;
  std::size_t files = 0, dirs = 0;
  std::uint64_t total = 0;
  for (const row& r : sorted) {
    out += (r.is_directory ? "[DIR] " : "[FILE] ") + pad_end(r.name, 30) + " " +
           (r.is_directory ? "" : pad_start(fsx::format_size(r.size), 10)) + "\n";
  }
  for (const row& r : rows) {
    (r.is_directory ? dirs : files) += 1;
    if (!r.is_directory) total += r.size;
  }
  out += "\nTotal: " + std::to_string(files) + " files, " + std::to_string(dirs) + " directories\n";
  out += "Combined size: " + fsx::format_size(total);
  return out;
}

/// `directory_tree`'s exclusion test: a pattern with `*` is matched as written; a plain
/// name also matches that name at any depth, and everything below it.
bool excluded(const std::string& rel, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (p.find('*') != std::string::npos) {
      if (fsx::glob_match(rel, p)) return true;
    } else if (fsx::glob_match(rel, p) || fsx::glob_match(rel, "**/" + p) || fsx::glob_match(rel, "**/" + p + "/**")) {
      return true;
    }
  }
  return false;
}

/// The tree below the requested path `current`, as `JSON.stringify(tree, null, 2)`
/// writes it at nesting `depth`. Each directory is validated on its own, so a symlinked
/// directory is not followed (it is listed as a file, as `readdir` types it).
std::string tree_json(const state& st, const std::string& root, const std::string& current,
                      const std::vector<std::string>& patterns, std::size_t depth) {
  const std::string dir = st.allowed.validate(current);
  std::vector<std::string> items;
  const std::string in(2 * (depth + 1), ' '), in2(2 * (depth + 2), ' ');
  for (const fsx::dir_entry& e : fsx::list(dir)) {
    const std::string child = fsx::join(current, e.name);
    if (excluded(fsx::relative(root, child), patterns)) continue;
    std::string item = in + "{\n" + in2 + "\"name\": " + fsx::json_quote(e.name) + ",\n" + in2 +
                       "\"type\": " + (e.is_directory ? "\"directory\"" : "\"file\"");
    if (e.is_directory) item += ",\n" + in2 + "\"children\": " + tree_json(st, root, child, patterns, depth + 2);
    items.push_back(item + "\n" + in + "}");
  }
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) out += items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return out + std::string(2 * depth, ' ') + "]";
}

void search(const state& st, const std::string& root, const std::string& dir, const std::string& pattern,
            const std::vector<std::string>& exclude, std::vector<std::string>& out) {
  for (const fsx::dir_entry& e : fsx::list(dir)) {
    const std::string full = fsx::join(dir, e.name);
    // An entry that fails validation (a symlink out of the allowed directories) or whose
    // directory cannot be read is skipped silently, as the reference skips it.
    try {
      (void)st.allowed.validate(full);
      const std::string rel = fsx::relative(root, full);
      bool skip = false;
      for (const std::string& x : exclude) skip = skip || fsx::glob_match(rel, x);
      if (skip) continue;
      if (fsx::glob_match(rel, pattern)) out.push_back(full);
      if (e.is_directory) search(st, root, full, pattern, exclude, out);
    } catch (const fsx::fs_error&) {
    }
  }
}

std::string file_info(const state& st, const std::string& requested) {
  const fsx::file_stats s = fsx::stat_path(st.allowed.validate(requested));
  char perms[8];
  std::snprintf(perms, sizeof perms, "%03o", s.mode & 0777);
  return "size: " + std::to_string(s.size) + "\ncreated: " + fsx::js_date(s.birth_ms) +
         "\nmodified: " + fsx::js_date(s.mtime_ms) + "\naccessed: " + fsx::js_date(s.atime_ms) +
         "\nisDirectory: " + (s.is_directory ? "true" : "false") + "\nisFile: " + (s.is_file ? "true" : "false") +
         "\npermissions: " + perms;
}

void register_tools(droid::server& server, state& st) {
  const auto read_text = [&st](droid::tool_context& ctx, read_text_args args) -> droid::task<droid::tool_result> {
    co_await refresh_roots(ctx, st);
    co_return text_result(read_text_tool(st, args));
  };
  server.tool(info("read_file", "Read File (Deprecated)",
                   "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
                   read_text_input, true),
              read_text);
  server.tool(info("read_text_file", "Read Text File",
                   "Read the complete contents of a file from the file system as text. "
                   "Handles various text encodings and provides detailed error messages "
                   "if the file cannot be read. Use this tool when you need to examine "
                   "the contents of a single file. Use the 'head' parameter to read only "
                   "the first N lines of a file, or the 'tail' parameter to read only "
                   "the last N lines of a file. Operates on the file as text regardless of extension. "
                   "Only works within allowed directories.",
                   read_text_input, true),
              read_text);

  droid::tool_info media = info("read_media_file", "Read Media File",
                                "Read a file and return it as a base64-encoded content block with its MIME type. "
                                "Image and audio files are returned as image/audio content; any other file type is "
                                "returned as an embedded resource. Only works within allowed directories.",
                                path_only, true);
  media.output_schema = schema(R"({"type":"object","properties":{"content":{"type":"array","items":{"anyOf":[
    {"type":"object","properties":{"type":{"type":"string","enum":["image","audio"]},"data":{"type":"string"},
      "mimeType":{"type":"string"}},"required":["type","data","mimeType"],"additionalProperties":false},
    {"type":"object","properties":{"type":{"type":"string","const":"resource"},"resource":{"type":"object",
      "properties":{"uri":{"type":"string"},"mimeType":{"type":"string"},"blob":{"type":"string"}},
      "required":["uri","blob"],"additionalProperties":false}},"required":["type","resource"],
      "additionalProperties":false}]}}},"required":["content"],"additionalProperties":false})");
  server.tool(std::move(media), [&st](droid::tool_context& ctx, path_args args) -> droid::task<droid::tool_result> {
    co_await refresh_roots(ctx, st);
    co_return media_result(st, args.path);
  });

  server.tool(info("read_multiple_files", "Read Multiple Files",
                   "Read the contents of multiple files simultaneously. This is more "
                   "efficient than reading files one by one when you need to analyze "
                   "or compare multiple files. Each file's content is returned with its "
                   "path as a reference. Failed reads for individual files won't stop "
                   "the entire operation. Only works within allowed directories.",
                   R"({"type":"object","properties":{"paths":{"minItems":1,"type":"array","items":{"type":"string"},
             "description":"Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories."}},
             "required":["paths"]})",
                   true),
              [&st](droid::tool_context& ctx, read_multiple_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                if (args.paths.empty())
                  co_return droid::tool_result::error("Invalid arguments: `paths` needs at least one path");
                std::string text;
                for (std::size_t i = 0; i < args.paths.size(); ++i) {
                  const std::string& p = args.paths[i];
                  if (i) text += "\n---\n";
                  try {
                    text += p + ":\n" + fsx::read_text(st.allowed.validate(p)) + "\n";
                  } catch (const std::exception& e) {
                    text += p + ": Error - " + e.what();
                  }
                }
                co_return text_result(std::move(text));
              });

  server.tool(info("write_file", "Write File",
                   "Create a new file or completely overwrite an existing file with new content. "
                   "Use with caution as it will overwrite existing files without warning. "
                   "Handles text content with proper encoding. Only works within allowed directories.",
                   R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},
                     "required":["path","content"]})",
                   false, true, true),
              [&st](droid::tool_context& ctx, write_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                fsx::write_text(st.allowed.validate(args.path), args.content);
                co_return text_result("Successfully wrote to " + args.path);
              });

  server.tool(
      info("edit_file", "Edit File",
           "Make line-based edits to a text file. Each edit replaces exact line sequences "
           "with new content. Returns a git-style diff showing the changes made. "
           "Only works within allowed directories.",
           R"({"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object",
             "properties":{"oldText":{"type":"string","description":"Text to search for - must match exactly"},
             "newText":{"type":"string","description":"Text to replace with"}},"required":["oldText","newText"]}},
             "dryRun":{"default":false,"description":"Preview changes using git-style diff format","type":"boolean"}},
             "required":["path","edits"]})",
           false, false, true),
      [&st](droid::tool_context& ctx, edit_args args) -> droid::task<droid::tool_result> {
        co_await refresh_roots(ctx, st);
        const std::string path = st.allowed.validate(args.path);
        std::vector<std::pair<std::string, std::string>> edits;
        for (edit_operation& e : args.edits) edits.emplace_back(std::move(e.oldText), std::move(e.newText));
        co_return text_result(fsx::apply_edits(path, edits, args.dryRun.value_or(false)));
      });

  server.tool(info("create_directory", "Create Directory",
                   "Create a new directory or ensure a directory exists. Can create multiple "
                   "nested directories in one operation. If the directory already exists, "
                   "this operation will succeed silently. Perfect for setting up directory "
                   "structures for projects or ensuring required paths exist. Only works within allowed directories.",
                   path_only, false, true, false),
              [&st](droid::tool_context& ctx, path_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                fsx::make_directories(st.allowed.validate(args.path));
                co_return text_result("Successfully created directory " + args.path);
              });

  server.tool(info("list_directory", "List Directory",
                   "Get a detailed listing of all files and directories in a specified path. "
                   "Results clearly distinguish between files and directories with [FILE] and [DIR] "
                   "prefixes. This tool is essential for understanding directory structure and "
                   "finding specific files within a directory. Only works within allowed directories.",
                   path_only, true),
              [&st](droid::tool_context& ctx, path_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                std::string out;
                for (const fsx::dir_entry& e : fsx::list(st.allowed.validate(args.path)))
                  out += (out.empty() ? "" : "\n") + std::string(e.is_directory ? "[DIR] " : "[FILE] ") + e.name;
                co_return text_result(std::move(out));
              });

  server.tool(info("list_directory_with_sizes", "List Directory with Sizes",
                   "Get a detailed listing of all files and directories in a specified path, including sizes. "
                   "Results clearly distinguish between files and directories with [FILE] and [DIR] "
                   "prefixes. This tool is useful for understanding directory structure and "
                   "finding specific files within a directory. Only works within allowed directories.",
                   R"({"type":"object","properties":{"path":{"type":"string"},"sortBy":{"default":"name",
             "description":"Sort entries by name or size","type":"string","enum":["name","size"]}},"required":["path"]})",
                   true),
              [&st](droid::tool_context& ctx, list_sizes_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                co_return text_result(list_sizes(st, args));
              });

  server.tool(
      info("directory_tree", "Directory Tree",
           "Get a recursive tree view of files and directories as a JSON structure. "
           "Each entry includes 'name', 'type' (file/directory), and 'children' for directories. "
           "Files have no children array, while directories always have a children array (which may be empty). "
           "The output is formatted with 2-space indentation for readability. Only works within allowed directories.",
           R"({"type":"object","properties":{"path":{"type":"string"},"excludePatterns":{"default":[],"type":"array",
             "items":{"type":"string"}}},"required":["path"]})",
           true),
      [&st](droid::tool_context& ctx, tree_args args) -> droid::task<droid::tool_result> {
        co_await refresh_roots(ctx, st);
        co_return text_result(
            tree_json(st, args.path, args.path, args.excludePatterns.value_or(std::vector<std::string>{}), 0));
      });

  server.tool(info("move_file", "Move File",
                   "Move or rename files and directories. Can move files between directories "
                   "and rename them in a single operation. If the destination exists, the "
                   "operation will fail. Works across different directories and can be used "
                   "for simple renaming within the same directory. Both source and destination must be within "
                   "allowed directories.",
                   R"({"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},
                     "required":["source","destination"]})",
                   false, false, true),
              [&st](droid::tool_context& ctx, move_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                const std::string from = st.allowed.validate(args.source);
                const std::string to = st.allowed.validate(args.destination);
                fsx::move(from, to);
                co_return text_result("Successfully moved " + args.source + " to " + args.destination);
              });

  server.tool(
      info(
          "search_files", "Search Files",
          "Recursively search for files and directories matching a pattern. "
          "The patterns should be glob-style patterns that match paths relative to the working directory. "
          "Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all "
          "subdirectories. "
          "Returns full paths to all matching items. Great for finding files when you don't know their exact location. "
          "Only searches within allowed directories.",
          R"({"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"},
             "excludePatterns":{"default":[],"type":"array","items":{"type":"string"}}},"required":["path","pattern"]})",
          true),
      [&st](droid::tool_context& ctx, search_args args) -> droid::task<droid::tool_result> {
        co_await refresh_roots(ctx, st);
        const std::string root = st.allowed.validate(args.path);
        std::vector<std::string> found;
        search(st, root, root, args.pattern, args.excludePatterns.value_or(std::vector<std::string>{}), found);
        std::string text;
        for (const std::string& f : found) text += (text.empty() ? "" : "\n") + f;
        co_return text_result(found.empty() ? "No matches found" : text);
      });

  server.tool(info("get_file_info", "Get File Info",
                   "Retrieve detailed metadata about a file or directory. Returns comprehensive "
                   "information including size, creation time, last modified time, permissions, "
                   "and type. This tool is perfect for understanding file characteristics "
                   "without reading the actual content. Only works within allowed directories.",
                   path_only, true),
              [&st](droid::tool_context& ctx, path_args args) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                co_return text_result(file_info(st, args.path));
              });

  server.tool(info("list_allowed_directories", "List Allowed Directories",
                   "Returns the list of directories that this server is allowed to access. "
                   "Subdirectories within these allowed directories are also accessible. "
                   "Use this to understand which directories and their nested paths are available "
                   "before trying to access files.",
                   R"({"type":"object","properties":{}})", true),
              [&st](droid::tool_context& ctx) -> droid::task<droid::tool_result> {
                co_await refresh_roots(ctx, st);
                // The heading's newline stays when there are none, as the reference writes it.
                std::string text = "Allowed directories:\n";
                const std::vector<std::string>& dirs = st.allowed.directories();
                for (std::size_t i = 0; i < dirs.size(); ++i) text += (i ? "\n" : "") + dirs[i];
                co_return text_result(std::move(text));
              });
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "Usage: filesystem-server [allowed-directory] [additional-directories...]\n"
                 "Note: Allowed directories can be provided via:\n"
                 "  1. Command-line arguments (shown above)\n"
                 "  2. MCP roots protocol (if client supports it)\n"
                 "At least one directory must be provided by EITHER method for the server to operate.\n";
  }
  static state st;
  if (!st.allowed.set_from_arguments(args)) {
    std::cerr << "Error: None of the specified directories are accessible\n";
    return 1;
  }
  droid::server server({.name = "secure-filesystem-server", .version = "0.2.0"});
  register_tools(server, st);
  server.on_roots_list_changed([](const droid::peer_info&) { st.roots_wanted = true; });
  std::cerr << "Secure MCP Filesystem Server running on stdio\n";
  if (st.allowed.directories().empty())
    std::cerr << "Started without allowed directories - waiting for client to provide roots via MCP protocol\n";
  return droid::stdio::serve(server);
}
