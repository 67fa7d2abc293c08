// SPDX-License-Identifier: BSL-1.0
/// @file
/// The filesystem server's operations: the allowed directories, path validation, and the
/// reads, writes and listings its tools are made of.
///
/// Example code, outside the framework's layers. Every operation throws `fs_error` with
/// the sentence the reference server (`@modelcontextprotocol/server-filesystem`, pinned in
/// test/filesystem/package.json) answers in the same situation, including Node's own
/// wording for system errors (`ENOENT: no such file or directory, open '/x'`), because
/// the model reads these sentences and the differential test
/// (test/filesystem/differential.mjs) compares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fsx {

/// A tool's failure, whose text becomes the `isError` result.
struct fs_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Node's message for a failed system call: `CODE: description, syscall 'path'`, with
/// ` -> 'dest'` for two-path calls and no path at all when `path` is empty.
[[nodiscard]] fs_error system_error(int err, std::string_view syscall, std::string_view path = {},
                                    std::string_view dest = {});

// ---- paths ------------------------------------------------------------------------------

/// `path.resolve(base, p)` on POSIX: absolute, with `.`, `..`, repeated and trailing
/// slashes removed.
[[nodiscard]] std::string resolve(std::string_view base, std::string_view p);
/// `path.resolve(p)` against the working directory.
[[nodiscard]] std::string resolve(std::string_view p);
/// `path.join(a, b)`: joined, then normalised (a relative result stays relative).
[[nodiscard]] std::string join(std::string_view a, std::string_view b);
/// `path.relative(from, to)`.
[[nodiscard]] std::string relative(std::string_view from, std::string_view to);
/// `path.dirname(p)`.
[[nodiscard]] std::string dirname(std::string_view p);
/// `~` and `~/...` expanded with $HOME.
[[nodiscard]] std::string expand_home(std::string_view p);

/// The directories every tool is confined to, and where relative paths are resolved.
///
/// Why one process-wide list: the server serves one client over stdio, as the reference
/// does, and the client's roots replace the list for the whole process.
/// Affinity: read and written by tools and the roots handler on the session's shard
/// only; the stdio transport runs them on one thread.
class allowed_directories {
 public:
  /// From the command line: each argument, and also its real path when a symlink led
  /// there; those that are not accessible directories are left out with a warning on
  /// stderr. Returns false when arguments were given but none was usable.
  bool set_from_arguments(const std::vector<std::string>& args);
  /// Replaces the list with the client's roots (`file://` URIs or plain paths) that are
  /// existing directories, by real path. An answer with none leaves the list unchanged,
  /// as the reference does. Returns how many were taken.
  std::size_t set_from_roots(const std::vector<std::string>& uris);

  [[nodiscard]] const std::vector<std::string>& directories() const noexcept { return dirs_; }
  [[nodiscard]] bool contains(std::string_view absolute) const;

  /// Resolves a requested path to the real path a tool may use, or throws the
  /// reference's refusal: a Windows drive path, a path outside every allowed directory
  /// (after `..` is applied), a symlink whose target is outside, a dangling symlink.
  /// A path that does not exist yet resolves to its real parent plus the missing tail,
  /// so that a file can be created there.
  [[nodiscard]] std::string validate(std::string_view requested) const;

 private:
  [[nodiscard]] std::string resolve_relative(std::string_view p) const;
  [[nodiscard]] std::string resolve_missing(const std::string& absolute) const;
  [[nodiscard]] std::string joined() const;
  std::vector<std::string> dirs_;
};

// ---- text ---------------------------------------------------------------------------------

/// Bytes decoded as UTF-8 the way Node's `buffer.toString('utf-8')` does: every invalid
/// sequence becomes U+FFFD. Why: a file's bytes go into a JSON string, which must be
/// valid UTF-8, and the reference's replacement is what a client would see from it.
[[nodiscard]] std::string decode_utf8(std::string_view bytes);
/// Length in UTF-16 code units, which is what JavaScript's padding counts.
[[nodiscard]] std::size_t utf16_length(std::string_view utf8);
/// `text.replace(/\r\n/g, '\n')`.
[[nodiscard]] std::string normalize_line_endings(std::string_view text);
/// `JSON.stringify` of a string.
[[nodiscard]] std::string json_quote(std::string_view s);
/// The reference's `formatSize`: `0 B`, `512 B`, `1.13 KB` (JavaScript's toFixed).
[[nodiscard]] std::string format_size(std::uint64_t bytes);

// ---- file operations ----------------------------------------------------------------------

[[nodiscard]] std::string read_text(const std::string& path);
[[nodiscard]] std::string read_bytes(const std::string& path);
/// The first `n` lines, `\n`-separated, without the newline after the last.
[[nodiscard]] std::string head_lines(const std::string& path, double n);
/// The last `n` lines as the reference computes them (a trailing newline counts as an
/// empty last line).
[[nodiscard]] std::string tail_lines(const std::string& path, double n);
/// Creates the file, or replaces an existing one through a temporary file and a rename
/// (never writing through a symlink), keeping its permission bits.
void write_text(const std::string& path, std::string_view content);
/// Replaces `path` by `content` through a temporary file and a rename.
void replace_file(const std::string& path, std::string_view content);
/// `mkdir -p`.
void make_directories(const std::string& path);
/// Renames, refusing when anything (even a dangling symlink) is at the destination.
void move(const std::string& from, const std::string& to);

/// One directory entry as `readdir` with file types gives it: a symlink is not a
/// directory, whatever it points to.
struct dir_entry {
  std::string name;
  bool is_directory = false;
};
/// The entries of `path`, sorted by name bytewise (as libuv's scandir returns them).
[[nodiscard]] std::vector<dir_entry> list(const std::string& path);

/// What `get_file_info` shows.
struct file_stats {
  std::uint64_t size = 0;
  std::int64_t birth_ms = 0, mtime_ms = 0, atime_ms = 0;
  bool is_directory = false, is_file = false;
  unsigned mode = 0;
};
[[nodiscard]] file_stats stat_path(const std::string& path);
/// A time as JavaScript's `Date.prototype.toString` writes it in the local time zone.
[[nodiscard]] std::string js_date(std::int64_t ms);

/// `pathToFileURL(path).href`.
[[nodiscard]] std::string file_url(std::string_view path);

/// Applies `edits` (old text, new text) to the file's text and returns the fenced
/// unified diff; writes the result unless `dry_run`.
[[nodiscard]] std::string apply_edits(const std::string& path,
                                      const std::vector<std::pair<std::string, std::string>>& edits, bool dry_run);

/// jsdiff's `createTwoFilesPatch(name, name, a, b, 'original', 'modified')`: a unified
/// diff of lines with 4 lines of context, found by the same Myers search, so the hunks
/// are the ones the reference prints.
[[nodiscard]] std::string unified_diff(std::string_view name, std::string_view before, std::string_view after);

/// `minimatch(path, pattern, {dot: true})` for the patterns a model writes: `*`, `?`,
/// `[...]`, `**`, `{a,b}` alternatives, `!` negation and `#` comments.
[[nodiscard]] bool glob_match(std::string_view path, std::string_view pattern);

/// ICU-like `a.localeCompare(b)` for file names: letters compared without case first,
/// punctuation before digits before letters, then lower case before upper case.
[[nodiscard]] int locale_compare(std::string_view a, std::string_view b);

}  // namespace fsx
