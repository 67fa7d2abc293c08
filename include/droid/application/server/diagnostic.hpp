// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::diagnostic`: one thing the server has to say about itself (a handler that
/// threw, a client that stopped reading), with a level and structured fields.
///
/// Application layer, free of I/O. Set `server_options::diagnostics` to receive records
/// (a JSON logger, a log shipper); set `server_options::log` to receive each as one
/// readable line instead; set neither and the line goes to standard error.
///
///     droid::server_options o;
///     o.diagnostics = [](const droid::diagnostic& d) {
///       if (d.level >= droid::diagnostic_level::warning) my_logger.write(d.message, d.fields);
///     };
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace droid {

/// How much a diagnostic matters. Why not MCP's `log_level`: these go to the operator,
/// never to the client, and four levels are what log pipelines map to.
enum class diagnostic_level : std::uint8_t { debug, info, warning, error };

/// The level's lower-case name ("debug", "info", "warning", "error").
[[nodiscard]] constexpr std::string_view to_string(diagnostic_level l) noexcept {
  constexpr std::string_view names[] = {"debug", "info", "warning", "error"};
  return names[static_cast<std::size_t>(l)];
}

/// One key and its value (`method` = `tools/call`).
struct diagnostic_field {
  std::string_view key;    ///< the field's name (`method`)
  std::string_view value;  ///< its value (`tools/call`)
};

/// One diagnostic. Every view is valid only during the call it is passed to.
///
/// Keys in use: `method` (the request's), `transport` (`http`, `stdio`), `error` (an
/// exception's text), `path` (an HTTP route), `host`.
struct diagnostic {
  diagnostic_level level = diagnostic_level::error;  ///< how much it matters
  std::string_view message{};  ///< what happened, a sentence without the fields
  std::span<const diagnostic_field> fields{};  ///< what it concerns, by key

  /// The value of field `key`, or empty.
  [[nodiscard]] std::string_view field(std::string_view key) const noexcept {
    for (const diagnostic_field& f : fields)
      if (f.key == key) return f.value;
    return {};
  }
};

/// `d` as one readable line: `error: handler failed method=tools/call error="it broke"`
/// (values with spaces, quotes or `=` quoted, as logfmt does). What the default sink and
/// a string-only `server_options::log` receive; a diagnostic with no fields reaches the
/// latter as its bare message, as before records existed.
[[nodiscard]] std::string to_line(const diagnostic& d);

}  // namespace droid
