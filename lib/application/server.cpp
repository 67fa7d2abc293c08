// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a tool author calls on a server: registration with its checks, the figures, and
/// the diagnostics sink. The registries themselves are `detail::server_core`'s
/// (catalog/server_core.cpp).
///
/// A composition root (with hosting.cpp and module_methods.cpp beside it): it makes the
/// engines the server's shards share (the 2026 frame registry, the task engine), so the
/// catalog that holds them, and the engine that uses them, need not know their modules.
#include <droid/application/server/server.hpp>

#include <iostream>
#include <stdexcept>

#include <droid/domain/ir/codec.hpp>

#include "application/era2026/multi_round.hpp"
#include "application/catalog/server_core.hpp"
#include "application/tasks/task_engine.hpp"

namespace droid {

namespace detail {

listings shape_listings(const boost::json::object& full, listing_kind kind) {
  listings out;
  for (std::size_t i = 0; i < revision_count; ++i) {
    const auto r = static_cast<protocol_revision>(i);
    boost::json::object o = full;
    if (!has(r, wire_feature::titles)) o.erase("title");
    if (!has(r, wire_feature::icons)) o.erase("icons");
    if (!has(r, wire_feature::descriptor_meta)) o.erase("_meta");
    if (kind == listing_kind::tool) {
      if (!has(r, wire_feature::structured_content)) o.erase("outputSchema");
      if (!has(r, wire_feature::tool_annotations)) o.erase("annotations");
      if (!has(r, wire_feature::core_tasks)) o.erase("execution");
    }
    out[i] = ir::to_json_text(o);
  }
  return out;
}

}  // namespace detail

detail::server_core& detail::core(const server& s) noexcept { return *s.core_; }

server::server(server_info info, server_options options) : info_(std::move(info)), options_(std::move(options)) {
  if (options_.page_size == 0) throw std::invalid_argument("droid: server_options.page_size must be at least 1");
  // The engines every shard of this server shares are made here, the composition root,
  // and handed to the catalog that holds them.
  core_ = std::make_unique<detail::server_core>(*this, std::make_shared<detail::multi_round_context>(options_.multi_round),
                                                std::make_shared<detail::task_engine>(options_.tasks));
}

server::~server() = default;

std::size_t server::kept_frames() const noexcept { return core_->multi_round().kept(); }
std::size_t server::running_tasks() const { return core_->tasks().running(); }

void server::add_tool(std::shared_ptr<detail::tool_entry> entry) {
  if (!is_valid_tool_name(entry->info.name))
    throw std::invalid_argument("droid: tool name \"" + entry->info.name +
                                "\" must be 1 to 128 characters from A-Z, a-z, 0-9, '_', '.' and '-'");
  if (entry->info.description.empty())
    throw std::invalid_argument("droid: tool \"" + entry->info.name +
                                "\" needs a description: clients reject tools without one");
  check_author_meta(entry->info.meta, "tool \"" + entry->info.name + "\"");
  if (entry->info.input_schema) entry->header_params = header_params_of(entry->info.name, *entry->info.input_schema);
  entry->listing = detail::shape_listings(to_json(entry->info), detail::listing_kind::tool);
  core_->add_tool(std::move(entry));
}

bool server::remove_tool(std::string_view name) { return core_->remove_tool(name); }

void server::add_resource(std::shared_ptr<detail::resource_entry> entry, bool is_template) {
  core_->add_resource(std::move(entry), is_template);
}

bool server::remove_resource(std::string_view key) { return core_->remove_resource(key); }

void server::add_prompt(std::shared_ptr<detail::prompt_entry> entry) {
  if (entry->info.name.empty()) throw std::invalid_argument("droid: a prompt needs a name");
  if (entry->info.description.empty())
    throw std::invalid_argument("droid: prompt \"" + entry->info.name + "\" needs a description: clients reject prompts without one");
  check_author_meta(entry->info.meta, "prompt \"" + entry->info.name + "\"");
  entry->listing = detail::shape_listings(to_json(entry->info), detail::listing_kind::prompt);
  core_->add_prompt(std::move(entry));
}

bool server::remove_prompt(std::string_view name) { return core_->remove_prompt(name); }

void server::add_completer(std::string ref_type, std::string ref, std::string argument, detail::completer_fn fn) {
  core_->add_completer(ref_type, ref, argument, std::move(fn));
}

namespace {

/// Checks what a custom method or notification is registered with.
void check_custom(std::string_view kind, const std::string& name, const method_options& options) {
  if (name.empty()) throw std::invalid_argument("droid: a custom " + std::string(kind) + " needs a name");
  if (is_protocol_method(name))
    throw std::invalid_argument("droid: \"" + name + "\" is a method MCP defines; a custom " + std::string(kind) +
                                " needs a name of its own (an extension's, such as com.example/search)");
  if (!options.extension.empty() && !is_valid_extension_name(options.extension))
    throw std::invalid_argument("droid: the " + std::string(kind) + " \"" + name + "\" names the extension \"" +
                                options.extension + "\", which is not vendor.prefix/name");
  if (options.extension == tasks_extension)
    throw std::invalid_argument("droid: the " + std::string(kind) + " \"" + name +
                                "\" cannot belong to the tasks extension, which the server runs itself");
  if (!options.in_2025 && !options.in_2026)
    throw std::invalid_argument("droid: the " + std::string(kind) + " \"" + name + "\" is offered in no era");
}

}  // namespace

server& server::extension(std::string name, boost::json::object settings) {
  if (!is_valid_extension_name(name))
    throw std::invalid_argument("droid: \"" + name + "\" is not an extension name (vendor.prefix/name, as in com.example/search)");
  if (name == tasks_extension)
    throw std::invalid_argument("droid: the server declares " + name + " itself while a tool may run as a task");
  core_->declare_extension(std::move(name), std::move(settings), true);
  return *this;
}

void server::add_method(std::shared_ptr<detail::method_entry> entry) {
  check_custom("method", entry->name, entry->options);
  core_->add_method(std::move(entry));
}

void server::add_notification(std::shared_ptr<detail::notification_entry> entry) {
  check_custom("notification", entry->name, entry->options);
  core_->add_notification(std::move(entry));
}

bool server::remove_method(std::string_view name) { return core_->remove_method(name); }

server& server::visible_if(visibility_predicate predicate) {
  core_->set_visibility(std::move(predicate));
  return *this;
}

bool visible_with_scopes(const visibility_query& q) {
  if (q.kind != entry_kind::tool || !q.tool) return true;
  const principal* who = q.caller();
  return !who || who->has_scopes(q.tool->required_scopes);
}

server& server::use(middleware::handler h) {
  if (!h) throw std::invalid_argument("droid: server::use needs a middleware");
  core_->add_middleware(middleware::detail::link{std::move(h), {}});
  return *this;
}

server& server::use(middleware::guard g) {
  if (!g) throw std::invalid_argument("droid: server::use needs a guard");
  core_->add_middleware(middleware::detail::link{{}, std::move(g)});
  return *this;
}

server& server::use_on_notifications(middleware::notification_handler h) {
  if (!h) throw std::invalid_argument("droid: server::use_on_notifications needs a middleware");
  core_->add_notification_middleware(std::move(h));
  return *this;
}

void server::resource_updated(std::string_view uri) { core_->changes().resource_updated(uri); }

std::size_t server::tool_count() const { return core_->tool_count(); }
std::size_t server::resource_count() const { return core_->resource_count(); }
std::size_t server::prompt_count() const { return core_->prompt_count(); }
bool server::has_completers() const { return core_->has_completers(); }

void server::on_roots_list_changed(std::function<void(const peer_info&)> handler) {
  core_->changes().on_roots_list_changed(std::move(handler));
}

void server::diagnose(const diagnostic& d) const {
  if (options_.diagnostics) {
    options_.diagnostics(d);
    return;
  }
  if (options_.log) {
    if (d.fields.empty()) {
      options_.log(d.message);  // exactly the line a string-only sink always got
    } else {
      options_.log(to_line(d));
    }
    return;
  }
  // One write per line: lines of several shards must not interleave.
  std::string line = "droid: ";
  line += to_line(d);
  line += '\n';
  std::clog << line << std::flush;
}

std::string to_line(const diagnostic& d) {
  std::string out;
  out += to_string(d.level);
  out += ": ";
  out += d.message;
  for (const diagnostic_field& f : d.fields) {
    out += ' ';
    out += f.key;
    out += '=';
    const bool quote = f.value.empty() || f.value.find_first_of(" \"=\t\n\\") != std::string_view::npos;
    if (!quote) {
      out += f.value;
      continue;
    }
    out += '"';
    for (const char c : f.value) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += '"';
  }
  return out;
}

}  // namespace droid
