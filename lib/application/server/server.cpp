// SPDX-License-Identifier: BSL-1.0
/// @file
/// The server's registries and the list_changed fan-out.
#include <droid/application/server/server.hpp>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>

#include <asio/post.hpp>

#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "multi_round.hpp"
#include "tasks.hpp"

namespace droid {

/// The mutable part of a server, behind one mutex.
///
/// Why a mutex and not shard-local copies: registration is rare and lookups are one
/// uncontended lock; copies per shard would need their own change propagation. Revisit
/// with a benchmark that shows the lock.
struct server::registry {
  mutable std::mutex mutex;
  // Ordered by name: pagination walks names, so a tool added or removed between two
  // pages shifts nothing else.
  std::map<std::string, std::shared_ptr<const detail::tool_entry>, std::less<>> tools;
  std::map<std::string, std::shared_ptr<const detail::resource_entry>, std::less<>> resources;
  std::map<std::string, std::shared_ptr<const detail::resource_entry>, std::less<>> templates;
  std::map<std::string, std::shared_ptr<const detail::prompt_entry>, std::less<>> prompts;
  /// Completers by "ref type \n ref \n argument".
  std::map<std::string, detail::completer_fn, std::less<>> completers;
  std::vector<std::weak_ptr<session>> sessions;
  std::vector<std::weak_ptr<detail::change_listener>> listeners;
  std::vector<std::function<void(const peer_info&)>> roots_handlers;
  /// Registered tools that may run as a task. Atomic, and read without the lock: every
  /// task method and every capability answer asks it.
  std::atomic<std::size_t> task_tools{0};
};

namespace {

/// Up to `size` entries of `map` from the first key not less than `from`, and the key
/// that starts the next page (empty on the last page). Why by key and not by offset: an
/// entry added or removed between two pages shifts nothing else.
template <class Map>
auto page_of(const Map& map, std::string_view from, std::size_t size, std::string& next) {
  std::vector<typename Map::mapped_type> page;
  next.clear();
  auto it = map.lower_bound(from);
  for (; it != map.end() && page.size() < size; ++it) page.push_back(it->second);
  if (it != map.end()) next = it->first;
  return page;
}

/// The live listeners, taken out from under the lock (and the expired ones forgotten).
std::vector<std::shared_ptr<detail::change_listener>> live_listeners(
    std::vector<std::weak_ptr<detail::change_listener>>& listeners) {
  std::vector<std::shared_ptr<detail::change_listener>> live;
  std::erase_if(listeners, [&](const std::weak_ptr<detail::change_listener>& w) {
    auto l = w.lock();
    if (!l) return true;
    live.push_back(std::move(l));
    return false;
  });
  return live;
}

}  // namespace

namespace detail {

listings shape_listings(const boost::json::object& full, listing_kind kind) {
  listings out;
  for (std::size_t i = 0; i < revision_count; ++i) {
    const auto r = static_cast<protocol_revision>(i);
    boost::json::object o = full;
    if (!has(r, wire_feature::titles)) o.erase("title");
    if (!has(r, wire_feature::icons)) o.erase("icons");
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

server::server(server_info info, server_options options)
    : info_(std::move(info)),
      options_(std::move(options)),
      registry_(std::make_unique<registry>()),
      multi_round_(std::make_unique<detail::multi_round_context>(options_.multi_round)),
      tasks_(std::make_unique<detail::task_engine>(options_.tasks)) {
  if (options_.page_size == 0) throw std::invalid_argument("droid: server_options.page_size must be at least 1");
  modern_result_members_ = R"("resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":)";
  ir::append_json(modern_result_members_, identity(protocol_revision::v2026_07_28));
  modern_result_members_ += '}';
}

boost::json::object server::identity(protocol_revision revision) const {
  boost::json::object o{{"name", info_.name}, {"version", info_.version}};
  if (has(revision, wire_feature::titles) && !info_.title.empty()) o["title"] = info_.title;
  if (has(revision, wire_feature::icons)) {
    if (!info_.website_url.empty()) o["websiteUrl"] = info_.website_url;
    if (!info_.icons.empty()) o["icons"] = to_json(info_.icons);
  }
  return o;
}

boost::json::object server::capabilities(protocol_revision revision) const {
  boost::json::object caps;
  if (tool_count() > 0) caps["tools"] = boost::json::object{{"listChanged", true}};
  // Every tool can log (ctx.log), so the capability is always there.
  caps["logging"] = boost::json::object{};
  if (resource_count() > 0) caps["resources"] = boost::json::object{{"subscribe", true}, {"listChanged", true}};
  if (prompt_count() > 0) caps["prompts"] = boost::json::object{{"listChanged", true}};
  // Completion came with 2025-03-26; an older client would not know the capability.
  if (has_completers() && revision >= protocol_revision::v2025_03_26) caps["completions"] = boost::json::object{};
  if (serves_tasks()) {
    if (has(revision, wire_feature::core_tasks)) {
      caps["tasks"] = boost::json::object{{"list", boost::json::object{}},
                                          {"cancel", boost::json::object{}},
                                          {"requests", {{"tools", {{"call", boost::json::object{}}}}}}};
    } else if (is_modern(revision)) {
      caps["extensions"] = boost::json::object{{detail::tasks_extension, boost::json::object{}}};
    }
  }
  return caps;
}

bool server::serves_tasks() const { return registry_->task_tools.load(std::memory_order_relaxed) > 0; }

std::size_t server::running_tasks() const { return tasks_->running(); }

server::~server() = default;

std::size_t server::kept_frames() const noexcept { return multi_round_->kept(); }

void server::add_tool(std::shared_ptr<detail::tool_entry> entry) {
  if (!is_valid_tool_name(entry->info.name))
    throw std::invalid_argument("droid: tool name \"" + entry->info.name +
                                "\" must be 1 to 128 characters from A-Z, a-z, 0-9, '_', '.' and '-'");
  if (entry->info.description.empty())
    throw std::invalid_argument("droid: tool \"" + entry->info.name +
                                "\" needs a description: clients reject tools without one");
  if (entry->info.input_schema) entry->header_params = header_params_of(entry->info.name, *entry->info.input_schema);
  entry->listing = detail::shape_listings(to_json(entry->info), detail::listing_kind::tool);
  {
    std::lock_guard lock(registry_->mutex);
    auto [it, inserted] = registry_->tools.try_emplace(entry->info.name, nullptr);
    if (!inserted) throw std::invalid_argument("droid: a tool named \"" + entry->info.name + "\" is already registered");
    if (entry->info.tasks != task_support::forbidden) ++registry_->task_tools;
    it->second = std::move(entry);
  }
  notify_list_changed("notifications/tools/list_changed");
}

bool server::remove_tool(std::string_view name) {
  {
    std::lock_guard lock(registry_->mutex);
    auto it = registry_->tools.find(name);
    if (it == registry_->tools.end()) return false;
    if (it->second->info.tasks != task_support::forbidden) --registry_->task_tools;
    registry_->tools.erase(it);
  }
  notify_list_changed("notifications/tools/list_changed");
  return true;
}

void server::add_resource(std::shared_ptr<detail::resource_entry> entry, bool is_template) {
  {
    std::lock_guard lock(registry_->mutex);
    auto& map = is_template ? registry_->templates : registry_->resources;
    auto [it, inserted] = map.try_emplace(entry->key, nullptr);
    if (!inserted)
      throw std::invalid_argument("droid: a resource" + std::string(is_template ? " template" : "") + " \"" +
                                  entry->key + "\" is already registered");
    it->second = std::move(entry);
  }
  notify_list_changed("notifications/resources/list_changed");
}

bool server::remove_resource(std::string_view key) {
  {
    std::lock_guard lock(registry_->mutex);
    if (auto it = registry_->resources.find(key); it != registry_->resources.end()) {
      registry_->resources.erase(it);
    } else if (auto t = registry_->templates.find(key); t != registry_->templates.end()) {
      registry_->templates.erase(t);
    } else {
      return false;
    }
  }
  notify_list_changed("notifications/resources/list_changed");
  return true;
}

void server::add_prompt(std::shared_ptr<detail::prompt_entry> entry) {
  if (entry->info.name.empty()) throw std::invalid_argument("droid: a prompt needs a name");
  if (entry->info.description.empty())
    throw std::invalid_argument("droid: prompt \"" + entry->info.name + "\" needs a description: clients reject prompts without one");
  entry->listing = detail::shape_listings(to_json(entry->info), detail::listing_kind::prompt);
  {
    std::lock_guard lock(registry_->mutex);
    auto [it, inserted] = registry_->prompts.try_emplace(entry->info.name, nullptr);
    if (!inserted) throw std::invalid_argument("droid: a prompt named \"" + entry->info.name + "\" is already registered");
    it->second = std::move(entry);
  }
  notify_list_changed("notifications/prompts/list_changed");
}

bool server::remove_prompt(std::string_view name) {
  {
    std::lock_guard lock(registry_->mutex);
    auto it = registry_->prompts.find(name);
    if (it == registry_->prompts.end()) return false;
    registry_->prompts.erase(it);
  }
  notify_list_changed("notifications/prompts/list_changed");
  return true;
}

std::size_t server::prompt_count() const {
  std::lock_guard lock(registry_->mutex);
  return registry_->prompts.size();
}

std::shared_ptr<const detail::prompt_entry> server::find_prompt(std::string_view name) const {
  std::lock_guard lock(registry_->mutex);
  auto it = registry_->prompts.find(name);
  return it == registry_->prompts.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const detail::prompt_entry>> server::prompts_from(std::string_view from,
                                                                              std::string& next) const {
  std::lock_guard lock(registry_->mutex);
  return page_of(registry_->prompts, from, options_.page_size, next);
}

namespace {
std::string completer_key(std::string_view type, std::string_view ref, std::string_view argument) {
  std::string key(type);
  key += '\n';
  key += ref;
  key += '\n';
  key += argument;
  return key;
}
}  // namespace

void server::add_completer(std::string ref_type, std::string ref, std::string argument, detail::completer_fn fn) {
  std::lock_guard lock(registry_->mutex);
  registry_->completers[completer_key(ref_type, ref, argument)] = std::move(fn);
}

detail::completer_fn server::find_completer(std::string_view ref_type, std::string_view ref,
                                            std::string_view argument) const {
  std::lock_guard lock(registry_->mutex);
  auto it = registry_->completers.find(completer_key(ref_type, ref, argument));
  return it == registry_->completers.end() ? nullptr : it->second;
}

bool server::has_completers() const {
  std::lock_guard lock(registry_->mutex);
  return !registry_->completers.empty();
}

bool server::has_reference(std::string_view ref_type, std::string_view ref) const {
  std::lock_guard lock(registry_->mutex);
  if (ref_type == "ref/prompt") return registry_->prompts.contains(ref);
  if (ref_type == "ref/resource") return registry_->templates.contains(ref) || registry_->resources.contains(ref);
  return false;
}

std::size_t server::resource_count() const {
  std::lock_guard lock(registry_->mutex);
  return registry_->resources.size() + registry_->templates.size();
}

std::shared_ptr<const detail::resource_entry> server::find_resource(std::string_view uri,
                                                                    uri_template::value_map& variables) const {
  std::lock_guard lock(registry_->mutex);
  if (auto it = registry_->resources.find(uri); it != registry_->resources.end()) return it->second;
  for (const auto& [text, entry] : registry_->templates) {
    if (auto vars = entry->pattern->match(uri)) {
      variables = std::move(*vars);
      return entry;
    }
  }
  return nullptr;
}

std::vector<std::shared_ptr<const detail::resource_entry>> server::resources_from(bool templates,
                                                                                  std::string_view from,
                                                                                  std::string& next) const {
  std::lock_guard lock(registry_->mutex);
  return page_of(templates ? registry_->templates : registry_->resources, from, options_.page_size, next);
}

void server::resource_updated(std::string_view uri) {
  std::vector<std::shared_ptr<session>> live;
  std::vector<std::shared_ptr<detail::change_listener>> listeners;
  {
    std::lock_guard lock(registry_->mutex);
    for (const auto& w : registry_->sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
    listeners = live_listeners(registry_->listeners);
  }
  for (auto& l : listeners) l->resource_updated(uri);
  std::string params = R"({"uri":)";
  ir::append_json_string(params, uri);
  params += '}';
  for (auto& s : live) {
    asio::post(s->executor(), [s, u = std::string(uri), params] {
      if (s->is_subscribed(u)) s->notify("notifications/resources/updated", params);
    });
  }
}

std::size_t server::tool_count() const {
  std::lock_guard lock(registry_->mutex);
  return registry_->tools.size();
}

std::shared_ptr<const detail::tool_entry> server::find_tool(std::string_view name) const {
  std::lock_guard lock(registry_->mutex);
  auto it = registry_->tools.find(name);
  return it == registry_->tools.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const detail::tool_entry>> server::tools_from(std::string_view from,
                                                                          std::string& next) const {
  std::lock_guard lock(registry_->mutex);
  return page_of(registry_->tools, from, options_.page_size, next);
}

void server::listen(const std::shared_ptr<detail::change_listener>& l) {
  std::lock_guard lock(registry_->mutex);
  std::erase_if(registry_->listeners, [](const std::weak_ptr<detail::change_listener>& w) { return w.expired(); });
  registry_->listeners.push_back(l);
}

void server::attach(const std::shared_ptr<session>& s) {
  std::lock_guard lock(registry_->mutex);
  std::erase_if(registry_->sessions, [](const std::weak_ptr<session>& w) { return w.expired(); });
  registry_->sessions.push_back(s);
}

void server::notify_list_changed(std::string_view method) {
  std::vector<std::shared_ptr<session>> live;
  std::vector<std::shared_ptr<detail::change_listener>> listeners;
  {
    std::lock_guard lock(registry_->mutex);
    std::erase_if(registry_->sessions, [](const std::weak_ptr<session>& w) { return w.expired(); });
    for (const auto& w : registry_->sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
    listeners = live_listeners(registry_->listeners);
  }
  for (auto& l : listeners) l->list_changed(method);
  // Posted, not called: a session belongs to its shard, and registration may come from
  // any thread (or from inside a tool running on that very session).
  for (auto& s : live) {
    asio::post(s->executor(), [s, m = std::string(method)] { s->notify(m); });
  }
}

void server::on_roots_list_changed(std::function<void(const peer_info&)> handler) {
  std::lock_guard lock(registry_->mutex);
  registry_->roots_handlers.push_back(std::move(handler));
}

void server::roots_list_changed(const peer_info& peer) const {
  std::vector<std::function<void(const peer_info&)>> handlers;
  {
    std::lock_guard lock(registry_->mutex);
    handlers = registry_->roots_handlers;
  }
  for (auto& h : handlers) {
    try {
      h(peer);
    } catch (const std::exception& e) {
      diagnose(diagnostic_level::error, "roots handler failed", {{"error", e.what()}});
    }
  }
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
