// SPDX-License-Identifier: BSL-1.0
/// @file
/// Revision names.
#include <droid/domain/mcp/revision.hpp>

namespace droid {
namespace {
constexpr std::string_view names[revision_count] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25",
                                                    "2026-07-28"};
}  // namespace

std::string_view to_string(protocol_revision r) noexcept { return names[static_cast<std::size_t>(r)]; }

std::optional<protocol_revision> parse_revision(std::string_view version) noexcept {
  for (std::size_t i = 0; i < revision_count; ++i)
    if (names[i] == version) return static_cast<protocol_revision>(i);
  return std::nullopt;
}

bool is_modern_version(std::string_view version) noexcept {
  for (const std::string_view v : modern_versions)
    if (v == version) return true;
  return false;
}

}  // namespace droid
