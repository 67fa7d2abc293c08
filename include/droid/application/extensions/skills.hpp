// SPDX-License-Identifier: BSL-1.0
/// @file
/// The MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): serving Agent
/// Skills (a `SKILL.md` and the files beside it) from a server.
///
/// Application layer, built on the generic extension mechanism alone (`server::extension`,
/// `server::method`, resources with `_meta`): a server serves skills by calling
/// `droid::skills::serve`, and nothing else in the framework knows about them.
///
///     auto all = droid::skills::from_directories("skills");  // skills/<name>/SKILL.md, ...
///     droid::skills::serve(server, std::move(all));
///
/// Each file of a skill becomes a resource `skill://<skill path>/<file path>`; clients
/// that know the extension enumerate skills with `skills/list`, fetch one entry with
/// `skills/get` (its frontmatter as JSON and every file's size and SHA-256 digest, which
/// they verify what they read against), and list a directory with
/// `resources/directory/read`. See docs/skills.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <droid/application/server/server.hpp>
#include <droid/domain/mcp/resource.hpp>

namespace droid::skills {

/// The extension's identifier, as servers declare it and clients look for it.
inline constexpr std::string_view extension_name = "io.modelcontextprotocol/skills";

/// One file of a skill other than its `SKILL.md`.
struct file {
  /// Its path from the skill's root, `/`-separated (`references/FORMS.md`).
  std::string path{};
  /// Its bytes, served as text when they are UTF-8 of a textual type, else as a blob.
  std::string content{};
  /// Its MIME type; empty: chosen from the file name's extension (`text/markdown` for
  /// `.md`, `text/plain` for unknown UTF-8 text, `application/octet-stream` otherwise).
  std::string mime_type{};
};

/// A skill: a directory whose root holds a `SKILL.md`.
struct skill {
  /// Where the skill sits in the server's skill namespace: one segment (`git-workflow`)
  /// or several (`acme/billing/refunds`, whose `acme/billing` only organises). The last
  /// segment must be the frontmatter's `name`.
  std::string path{};
  /// The bytes of `SKILL.md`: YAML frontmatter with `name` and `description`, then the
  /// instructions.
  std::string skill_md{};
  /// Every other file of the skill (a client is told of each, with its digest).
  std::vector<file> files{};
};

/// A skill whose files are made when they are read (a report from live data, say): its
/// entry's manifest is `"dynamic"` (there are no digests to publish, and a client that
/// insists on them may decline it). Its `SKILL.md` is fixed, since a client compares its
/// frontmatter with the entry's; every other file is read through `read`.
struct dynamic_skill {
  /// As `skill::path`.
  std::string path{};
  /// As `skill::skill_md`.
  std::string skill_md{};
  /// The file at `file_path` (from the skill's root, `/`-separated, never `SKILL.md`), or
  /// none when there is no such file (the client gets -32602). Runs on the request's
  /// shard, like a resource handler.
  std::function<task<std::optional<file>>(tool_context&, std::string file_path)> read{};
  /// The direct children of the directory `dir_path` (empty: the skill's root), each a
  /// file's name or a directory's name followed by `/`; none when it is not a directory.
  /// Unset: the root lists `SKILL.md` alone, and there are no other directories.
  std::function<std::optional<std::vector<std::string>>(std::string_view dir_path)> list{};
};

/// How skills are served.
struct options {
  /// Serve `resources/directory/read` on every directory of the skill namespace (declared
  /// as `directoryRead: true`): a skill that says "pick a template from `templates/`"
  /// lets the agent list that directory.
  bool directory_read = true;
  /// The freshness hint of `skills/list`, `skills/get` and each skill file's read for
  /// 2026-07-28 clients. Why five minutes and public: skills served by `serve` are fixed
  /// for the server's life and the same for every caller; a server that replaces its
  /// skills would lower it.
  cache_hint cache{std::chrono::minutes(5), cache_scope::public_};
};

/// Reads the skill in directory `dir`: its `SKILL.md` and every regular file below it
/// (names starting with a dot, and anything that is not a regular file or directory, are
/// skipped), as the skill whose path is `prefix`, a slash and the directory's name (no
/// prefix: the directory's name alone).
/// Errors: `std::invalid_argument` when there is no `SKILL.md`, and what
/// `std::filesystem` throws for a directory it cannot read.
[[nodiscard]] skill from_directory(const std::filesystem::path& dir, std::string_view prefix = {});

/// Every skill in the direct subdirectories of `root` that have a `SKILL.md`, in name
/// order, each as `from_directory` reads it.
[[nodiscard]] std::vector<skill> from_directories(const std::filesystem::path& root, std::string_view prefix = {});

/// Serves `skills` on `srv`: declares the extension, registers `skills/list`,
/// `skills/get` and (with `opts.directory_read`) `resources/directory/read`, and each
/// file as a `skill://` resource (a `SKILL.md` with its frontmatter's `name` and
/// `description`, as `text/markdown`). Call it once per server, before serving.
/// Errors: `std::invalid_argument` naming the skill for frontmatter that does not parse
/// (`droid::parse_frontmatter`) or lacks `name` or `description`, a name that breaks the
/// Agent Skills naming rule (1 to 64 of `a-z`, `0-9` and single inner hyphens) or differs
/// from the path's last segment, a bad path, two files or skills at one URI, more than
/// 512 files or 16 MiB in one skill (the limits every client must accept), and what
/// registering the resources and methods throws.
void serve(server& srv, std::vector<skill> skills, options opts = {});

/// The same with skills whose files are made when read (`dynamic_skill`), beside the
/// fixed ones: the rules on paths, names and frontmatter are the same; the file limits
/// apply to what a fixed skill publishes only.
/// Errors: as `serve` above, and `std::invalid_argument` for a dynamic skill without `read`.
void serve(server& srv, std::vector<skill> skills, std::vector<dynamic_skill> dynamic, options opts = {});

}  // namespace droid::skills
