// SPDX-License-Identifier: BSL-1.0
// <droid/application/middleware/access_log.hpp>: times what comes after it in the chain,
// and writes one logfmt line (or record) per request.
#include <droid/application/middleware/access_log.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <utility>

namespace droid::middleware {
namespace {

/// Appends `key=value`, quoting and escaping `value` when logfmt needs it. Why escape
/// control characters too: a tool name or URI is the client's text, and a line feed in
/// it would otherwise start a forged line of the log.
void append_pair(std::string& out, std::string_view key, std::string_view value) {
  if (!out.empty()) out += ' ';
  out += key;
  out += '=';
  bool quote = value.empty();
  for (const char c : value)
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) quote = true;
  if (!quote) {
    out += value;
    return;
  }
  out += '"';
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

std::string to_line(const access_entry& e) {
  std::string line;
  line.reserve(128);
  append_pair(line, "method", e.method);
  if (!e.name.empty()) append_pair(line, "name", e.name);
  append_pair(line, "tenant", e.tenant);
  append_pair(line, "era", e.protocol_version);
  append_pair(line, "outcome", e.outcome);
  append_pair(line, "code", std::to_string(e.error_code));
  append_pair(line, "us", std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(e.duration).count()));
  return line;
}

handler access_log(access_log_options options) {
  std::optional<metrics::stage> stage;
  if (options.metrics) stage = options.metrics->add_stage(options.stage);
  auto shared = std::make_shared<const access_log_options>(std::move(options));
  return [shared, stage](request& req, next pass) -> task<response> {
    const auto start = std::chrono::steady_clock::now();
    std::optional<response> answer;
    std::exception_ptr thrown;
    try {
      answer.emplace(co_await pass(req));
    } catch (...) {
      thrown = std::current_exception();
    }
    access_entry e;
    e.duration = std::chrono::steady_clock::now() - start;
    e.method = req.method();
    e.name = req.name();
    e.tenant = req.tenant();
    e.protocol_version = req.peer().protocol_version;
    if (thrown) {
      e.outcome = "exception";
      e.error_code = -32603;
    } else if (answer->is_error()) {
      e.outcome = "error";
      e.error_code = answer->error_code();
    } else {
      e.outcome = answer->is_tool_error() ? "tool_error" : "ok";
    }
    const access_log_options& o = *shared;
    if (stage) o.metrics->record_stage(*stage, e.duration);
    if (o.record) {
      o.record(e);
    } else {
      const std::string line = to_line(e);
      if (o.write) {
        o.write(line);
      } else {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
      }
    }
    if (thrown) std::rethrow_exception(thrown);
    co_return std::move(*answer);
  };
}

}  // namespace droid::middleware
