// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::metrics`: recording (relaxed atomics) and the text exposition format 0.0.4.
#include <droid/application/server/metrics.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>

namespace droid {
namespace {

constexpr auto relaxed = std::memory_order_relaxed;

/// `metrics::bucket_bounds` as the `le` labels say them. Why spelt out: the shortest
/// form of 0.0001 is `1e-04`, valid but unlike what every other exporter writes, and
/// dashboards match `le` as text.
constexpr std::array<std::string_view, metrics::bucket_bounds.size()> bucket_labels = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",    "10"};

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_number(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

/// Shortest text that reads back as `v`; the format's own spellings for the non-finite.
void append_number(std::string& out, double v) {
  if (v != v) {
    out += "NaN";
    return;
  }
  if (v == std::numeric_limits<double>::infinity()) {
    out += "+Inf";
    return;
  }
  if (v == -std::numeric_limits<double>::infinity()) {
    out += "-Inf";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

/// HELP text escapes backslash and line feed (not the double quote, unlike labels).
void append_help(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

bool valid_metric_name(std::string_view n) noexcept {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

void metrics::append_label_value(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

std::size_t metrics::row_of(std::string_view method) noexcept {
  const auto* it = std::find(methods.begin(), methods.end() - 1, method);
  return static_cast<std::size_t>(it - methods.begin());
}

void metrics::request_started(const request_event&) { in_flight_.fetch_add(1, relaxed); }

void metrics::request_ended(const request_event& e) {
  in_flight_.fetch_sub(1, relaxed);
  row& r = rows_[row_of(e.method)];
  r.outcomes[static_cast<std::size_t>(e.outcome)].fetch_add(1, relaxed);
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, e.duration.count()));
  const double seconds = static_cast<double>(ns) / 1e9;
  const auto* b = std::lower_bound(bucket_bounds.begin(), bucket_bounds.end(), seconds);
  if (b == bucket_bounds.end()) {
    r.over.fetch_add(1, relaxed);
  } else {
    r.buckets[static_cast<std::size_t>(b - bucket_bounds.begin())].fetch_add(1, relaxed);
  }
  r.duration_ns.fetch_add(ns, relaxed);
  r.bytes_in.fetch_add(e.bytes_in, relaxed);
  r.bytes_out.fetch_add(e.bytes_out, relaxed);
}

metrics::stage metrics::add_stage(std::string_view name) {
  const std::lock_guard lock(stage_mutex_);
  for (std::size_t i = 0; i < stage_names_.size(); ++i)
    if (stage_names_[i] == name) return i;
  if (stage_names_.size() == max_stages)
    throw std::length_error("droid::metrics::add_stage: more than " + std::to_string(max_stages) + " stages");
  stage_names_.emplace_back(name);
  return stage_names_.size() - 1;
}

void metrics::record_stage(stage s, std::chrono::nanoseconds d) noexcept {
  if (s >= max_stages) return;
  stage_row& r = stages_[s];
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.count()));
  const auto* b = std::lower_bound(bucket_bounds.begin(), bucket_bounds.end(), static_cast<double>(ns) / 1e9);
  if (b == bucket_bounds.end()) {
    r.over.fetch_add(1, relaxed);
  } else {
    r.buckets[static_cast<std::size_t>(b - bucket_bounds.begin())].fetch_add(1, relaxed);
  }
  r.duration_ns.fetch_add(ns, relaxed);
}

std::string metrics::render(std::span<const gauge> gauges) const {
  for (const gauge& g : gauges)
    if (!valid_metric_name(g.name))
      throw std::invalid_argument("droid::metrics::render: not a Prometheus metric name: " + std::string(g.name));

  // One snapshot of the counts per row: the families below then agree with each other
  // for every row (a histogram's `_count` equals its `+Inf` bucket).
  struct snapshot {
    std::array<std::uint64_t, request_outcome_count> outcomes{};
    std::array<std::uint64_t, bucket_bounds.size()> buckets{};
    std::uint64_t over = 0, total = 0, duration_ns = 0, bytes_in = 0, bytes_out = 0;
  };
  std::array<snapshot, method_count> snap{};
  for (std::size_t i = 0; i < method_count; ++i) {
    const row& r = rows_[i];
    snapshot& s = snap[i];
    for (std::size_t o = 0; o < request_outcome_count; ++o) s.outcomes[o] = r.outcomes[o].load(relaxed);
    for (std::size_t k = 0; k < bucket_bounds.size(); ++k) s.buckets[k] = r.buckets[k].load(relaxed);
    s.over = r.over.load(relaxed);
    s.duration_ns = r.duration_ns.load(relaxed);
    s.bytes_in = r.bytes_in.load(relaxed);
    s.bytes_out = r.bytes_out.load(relaxed);
    s.total = s.over;
    for (const std::uint64_t n : s.buckets) s.total += n;
  }
  const auto method_label = [](std::string& out, std::size_t i) {
    out += "method=\"";
    append_label_value(out, methods[i]);
    out += '"';
  };

  std::string out;
  out.reserve(4096);
  append_help(out, "droid_mcp_requests_total", "MCP requests served, by method and outcome.", "counter");
  for (std::size_t i = 0; i < method_count; ++i) {
    for (std::size_t o = 0; o < request_outcome_count; ++o) {
      if (snap[i].outcomes[o] == 0) continue;
      out += "droid_mcp_requests_total{";
      method_label(out, i);
      out += ",outcome=\"";
      out += to_string(static_cast<request_outcome>(o));
      out += "\"} ";
      append_number(out, snap[i].outcomes[o]);
      out += '\n';
    }
  }

  append_help(out, "droid_mcp_request_duration_seconds",
              "Time from admission to the answer leaving the engine, by method.", "histogram");
  for (std::size_t i = 0; i < method_count; ++i) {
    const snapshot& s = snap[i];
    if (s.total == 0) continue;
    std::uint64_t cumulative = 0;
    for (std::size_t k = 0; k <= bucket_bounds.size(); ++k) {
      out += "droid_mcp_request_duration_seconds_bucket{";
      method_label(out, i);
      out += ",le=\"";
      if (k < bucket_bounds.size()) {
        cumulative += s.buckets[k];
        out += bucket_labels[k];
      } else {
        cumulative += s.over;
        out += "+Inf";
      }
      out += "\"} ";
      append_number(out, cumulative);
      out += '\n';
    }
    out += "droid_mcp_request_duration_seconds_sum{";
    method_label(out, i);
    out += "} ";
    append_number(out, static_cast<double>(s.duration_ns) / 1e9);
    out += "\ndroid_mcp_request_duration_seconds_count{";
    method_label(out, i);
    out += "} ";
    append_number(out, s.total);
    out += '\n';
  }

  const auto bytes_family = [&](std::string_view name, std::string_view help, std::uint64_t snapshot::*field) {
    append_help(out, name, help, "counter");
    for (std::size_t i = 0; i < method_count; ++i) {
      if (snap[i].total == 0) continue;
      out += name;
      out += '{';
      method_label(out, i);
      out += "} ";
      append_number(out, snap[i].*field);
      out += '\n';
    }
  };
  bytes_family("droid_mcp_request_bytes_total", "Bytes of request messages received, by method.",
               &snapshot::bytes_in);
  bytes_family("droid_mcp_response_bytes_total", "Bytes of answers sent, by method.", &snapshot::bytes_out);

  std::vector<std::string> stage_names;
  {
    const std::lock_guard lock(stage_mutex_);
    stage_names = stage_names_;
  }
  if (!stage_names.empty())
    append_help(out, "droid_middleware_duration_seconds",
                "Time a request spent in each stage middleware times, from the stage on.", "histogram");
  for (std::size_t i = 0; i < stage_names.size(); ++i) {
    const stage_row& r = stages_[i];
    const auto label = [&](std::string& o) {
      o += "stage=\"";
      append_label_value(o, stage_names[i]);
      o += '"';
    };
    std::uint64_t cumulative = 0;
    for (std::size_t k = 0; k <= bucket_bounds.size(); ++k) {
      out += "droid_middleware_duration_seconds_bucket{";
      label(out);
      out += ",le=\"";
      if (k < bucket_bounds.size()) {
        cumulative += r.buckets[k].load(relaxed);
        out += bucket_labels[k];
      } else {
        cumulative += r.over.load(relaxed);
        out += "+Inf";
      }
      out += "\"} ";
      append_number(out, cumulative);
      out += '\n';
    }
    out += "droid_middleware_duration_seconds_sum{";
    label(out);
    out += "} ";
    append_number(out, static_cast<double>(r.duration_ns.load(relaxed)) / 1e9);
    out += "\ndroid_middleware_duration_seconds_count{";
    label(out);
    out += "} ";
    append_number(out, cumulative);
    out += '\n';
  }

  append_help(out, "droid_mcp_requests_in_flight", "Requests admitted and not yet ended.", "gauge");
  out += "droid_mcp_requests_in_flight ";
  append_number(out, in_flight_.load(relaxed));
  out += '\n';

  for (const gauge& g : gauges) {
    append_help(out, g.name, g.help, "gauge");
    out += g.name;
    out += ' ';
    append_number(out, g.value);
    out += '\n';
  }
  return out;
}

}  // namespace droid
