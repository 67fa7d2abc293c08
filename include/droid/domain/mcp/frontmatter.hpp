// SPDX-License-Identifier: BSL-1.0
/// @file
/// The YAML frontmatter of a `SKILL.md`, read into JSON.
///
/// Domain layer. A skill (the Agent Skills format the MCP Skills extension serves) begins
/// with a YAML block between `---` lines, and the extension sends that block to clients
/// as a JSON object "verbatim": a client parses the file's YAML itself and refuses the
/// skill when the two differ. So the reading must be YAML's, not an approximation; what
/// this reader does not know how to read exactly it refuses, naming the line, rather
/// than guess.
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

namespace droid {

/// Reads the frontmatter of `markdown` (a `SKILL.md`): the YAML between a first line
/// `---` and the next line `---`, as a JSON object by YAML 1.2's core schema (`true`,
/// `null`, `42` and `1.5` are a boolean, a null and numbers; anything else a string).
///
/// Read: block mappings and sequences nested by indentation, plain scalars (also over
/// several lines), single- and double-quoted scalars on one line, flow sequences of
/// scalars (`[a, "b"]`), literal and folded block scalars (`|`, `>`, with `-` or `+`),
/// and comments. Refused, with `std::invalid_argument` naming the line: no frontmatter,
/// a top level that is not a mapping, duplicate keys, tabs in indentation, anchors,
/// aliases, tags, flow mappings, multi-line quoted scalars, and numbers JSON cannot hold
/// (`.inf`, `.nan`).
[[nodiscard]] boost::json::object parse_frontmatter(std::string_view markdown);

}  // namespace droid
