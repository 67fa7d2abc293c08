// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::protocol_revision`: the MCP revisions this server speaks, and what each has.
///
/// Domain layer. A client of one revision must not be sent fields from a later one (a
/// 2024-11-05 client validating strictly rejects `structuredContent`), and the two
/// protocol eras differ in shape altogether: the legacy era (2024-11-05 to 2025-11-25)
/// opens a session with `initialize`; the modern era (2026-07-28 on) carries the version
/// on every request. Everything that shapes output by revision asks this header, so the
/// list of what came when lives in one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace droid {

/// An MCP protocol revision, oldest first: comparisons read "at least this revision".
enum class protocol_revision : std::uint8_t {
  v2024_11_05,
  v2025_03_26,
  v2025_06_18,
  v2025_11_25,
  v2026_07_28,
};

/// How many revisions there are (for tables indexed by revision).
inline constexpr std::size_t revision_count = 5;

/// The revision's date string ("2025-11-25").
[[nodiscard]] std::string_view to_string(protocol_revision r) noexcept;
/// The revision named `version`, or nothing for a version this server does not speak.
[[nodiscard]] std::optional<protocol_revision> parse_revision(std::string_view version) noexcept;

/// True for the stateless era: no `initialize`, `_meta` on every request.
[[nodiscard]] constexpr bool is_modern(protocol_revision r) noexcept { return r >= protocol_revision::v2026_07_28; }

/// The versions a client may negotiate with `initialize`, newest first.
inline constexpr std::string_view legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
/// The versions a client may name in a request's `_meta`, newest first.
inline constexpr std::string_view modern_versions[] = {"2026-07-28"};

/// The identifier of the tasks extension in a 2026-07-28 client's and server's
/// capabilities: tasks left the core protocol in that revision and came back as this
/// extension, which a client declares before it may ask for one.
inline constexpr std::string_view tasks_extension = "io.modelcontextprotocol/tasks";

/// True for a version of the modern era this server speaks.
[[nodiscard]] bool is_modern_version(std::string_view version) noexcept;

/// What a revision has, for the fields and blocks that came later than the first one.
/// Why named features and not revision comparisons at each use: "does this client know
/// `outputSchema`?" reads as what it is, and a feature that moves is changed here once.
enum class wire_feature : std::uint8_t {
  tool_annotations,    ///< 2025-03-26: `annotations` on tools
  audio_content,       ///< 2025-03-26: audio content blocks
  titles,              ///< 2025-06-18: `title` on tools, resources, prompts, templates
  structured_content,  ///< 2025-06-18: `outputSchema` and `structuredContent`
  resource_links,      ///< 2025-06-18: `resource_link` content blocks
  descriptor_meta,     ///< 2025-06-18: `_meta` on tools, resources, prompts and contents
  icons,               ///< 2025-11-25: `icons` on descriptors and server info
  result_type,         ///< 2026-07-28: `resultType` on every result, cache hints on lists
  /// 2025-11-25 only: experimental tasks in the core protocol (`execution.taskSupport`,
  /// the `tasks` capability, `tasks/result`, `tasks/list`); 2026-07-28 moved tasks to an
  /// extension with another wire.
  core_tasks,
};

/// True when clients of revision `r` know `f`.
[[nodiscard]] constexpr bool has(protocol_revision r, wire_feature f) noexcept {
  switch (f) {
    case wire_feature::tool_annotations:
    case wire_feature::audio_content: return r >= protocol_revision::v2025_03_26;
    case wire_feature::titles:
    case wire_feature::structured_content:
    case wire_feature::resource_links:
    case wire_feature::descriptor_meta: return r >= protocol_revision::v2025_06_18;
    case wire_feature::icons: return r >= protocol_revision::v2025_11_25;
    case wire_feature::result_type: return r >= protocol_revision::v2026_07_28;
    case wire_feature::core_tasks: return r == protocol_revision::v2025_11_25;
  }
  return false;
}

}  // namespace droid
