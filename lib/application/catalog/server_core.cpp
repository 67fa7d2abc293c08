// SPDX-License-Identifier: BSL-1.0
/// @file
/// The registries behind a published catalog, and what a client is told of the server.
#include "server_core.hpp"

#include <functional>
#include <stdexcept>
#include <utility>

#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>


namespace droid::detail {

namespace {

/// Gives every core its own id, so that a thread's cached view is never taken for
/// another server's (an address can be reused once a server is destroyed; an id is not).
std::atomic<std::uint64_t> next_core_id{1};

/// The view of one core that this thread read last. Why per thread and not per core:
/// the point is that a lookup writes nothing shared, so each thread keeps its own
/// reference to the snapshot; one slot suffices because a thread serves one server
/// almost always, and a thread that alternates merely refetches under the lock.
struct cached_view {
  std::uint64_t core = 0;
  std::uint64_t version = 0;
  std::shared_ptr<const catalog> snapshot;
};
thread_local cached_view this_thread_view;

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

/// The entry of `map` under `key`, or an empty one.
template <class Map>
typename Map::mapped_type entry_of(const Map& map, std::string_view key) {
  auto it = map.find(key);
  return it == map.end() ? typename Map::mapped_type() : it->second;
}

std::string completer_key(std::string_view type, std::string_view ref, std::string_view argument) {
  std::string key(type);
  key += '\n';
  key += ref;
  key += '\n';
  key += argument;
  return key;
}


}  // namespace

void server_core::declare_extension(std::string name, boost::json::object settings, bool replace) {
  edit([&](catalog& c) {
    auto [it, inserted] = c.extensions.try_emplace(std::move(name), std::move(settings));
    if (!inserted && replace) it->second = std::move(settings);
  });
}

namespace {

/// Adds a custom request or notification handler to `into`, declaring its extension; a
/// name is one or the other, never both.
template <class Entry>
void add_custom(catalog& c, catalog::by_name<Entry>& into, std::shared_ptr<const Entry> entry) {
  if (c.methods.contains(entry->name) || c.notifications.contains(entry->name))
    throw std::invalid_argument("droid: a custom method named \"" + entry->name + "\" is already registered");
  if (!entry->options.extension.empty()) c.extensions.try_emplace(entry->options.extension);
  into.emplace(entry->name, std::move(entry));
}

}  // namespace

void server_core::add_method(std::shared_ptr<const method_entry> entry) {
  edit([&](catalog& c) { add_custom(c, c.methods, std::move(entry)); });
}

void server_core::add_notification(std::shared_ptr<const notification_entry> entry) {
  edit([&](catalog& c) { add_custom(c, c.notifications, std::move(entry)); });
}

bool server_core::remove_method(std::string_view name) {
  bool removed = false;
  edit([&](catalog& c) {
    if (auto it = c.methods.find(name); it != c.methods.end()) {
      c.methods.erase(it);
      removed = true;
    } else if (auto n = c.notifications.find(name); n != c.notifications.end()) {
      c.notifications.erase(n);
      removed = true;
    }
  });
  return removed;
}

void server_core::add_middleware(middleware::detail::link l) {
  edit([&](catalog& c) {
    // A new chain, so that requests running through the old one keep it whole.
    auto chain = std::make_shared<middleware::detail::chain>();
    if (c.middleware) *chain = *c.middleware;
    if (l.around) chain->guards_only = false;
    chain->links.push_back(std::move(l));
    c.middleware = std::move(chain);
  });
  // After the catalog is published: a request that sees the flag finds the chain.
  any_middleware_.store(true, std::memory_order_release);
}

void server_core::set_visibility(visibility_predicate predicate) {
  edit([&](catalog& c) {
    c.visibility = predicate ? std::make_shared<const visibility_predicate>(std::move(predicate)) : nullptr;
  });
  any_visibility_.store(true, std::memory_order_release);
  // Every client's view may have changed, and nothing says how.
  changes_.list_changed("notifications/tools/list_changed");
  changes_.list_changed("notifications/prompts/list_changed");
  changes_.list_changed("notifications/resources/list_changed");
}

std::shared_ptr<const visibility_predicate> server_core::visibility() const {
  if (!may_hide()) return nullptr;
  return view().visibility;
}

void server_core::add_notification_middleware(middleware::notification_handler h) {
  edit([&](catalog& c) { c.notification_middleware.push_back(std::move(h)); });
}

std::shared_ptr<const middleware::detail::chain> server_core::middleware() const {
  if (!any_middleware_.load(std::memory_order_acquire)) return nullptr;
  return view().middleware;
}

bool server_core::pass_notification(const ir::message& msg, const peer_info& peer,
                                    const request_origin* origin) const {
  std::vector<middleware::notification_handler> chain;
  {
    const catalog& c = view();
    if (c.notification_middleware.empty()) return true;
    chain = c.notification_middleware;  // copied: the view is this thread's until its next lookup
  }
  const std::string_view method = msg.method();
  const middleware::notification n{method, msg.params().text, &peer, origin};
  bool passed = false;
  std::function<void(std::size_t)> from = [&](std::size_t i) {
    if (i == chain.size()) {
      passed = true;
      return;
    }
    bool called = false;
    const std::function<void()> pass = [&] {
      if (std::exchange(called, true)) return;  // once, as a request's next
      from(i + 1);
    };
    chain[i](n, pass);
  };
  try {
    from(0);
  } catch (const std::exception& e) {
    owner_.diagnose(diagnostic_level::warning, "a notification middleware failed",
                    {{"method", method}, {"error", e.what()}});
    return passed;  // dropped, unless it had let the notification on already
  } catch (...) {
    owner_.diagnose(diagnostic_level::warning, "a notification middleware failed",
                    {{"method", method}, {"error", "an exception that is not a std::exception"}});
    return passed;
  }
  return passed;
}

std::shared_ptr<const method_entry> server_core::find_method(std::string_view name) const {
  const catalog& c = view();
  if (c.methods.empty()) return nullptr;
  return entry_of(c.methods, name);
}

bool server_core::deliver_to(const notification_entry& entry, std::string_view method, const ir::json_node* params,
                             const peer_info& peer) const {
  const method_options& o = entry.options;
  const auto dropped = [&](std::string_view why) {
    owner_.diagnose(diagnostic_level::warning, "a custom notification was dropped",
                    {{"method", method}, {"error", why}});
    return false;
  };
  if (!(peer.is_modern() ? o.in_2026 : o.in_2025)) return false;
  if (!o.extension.empty() && !peer.has_extension(o.extension))
    return dropped("the client did not declare the extension " + o.extension);
  if (params && params->kind() == ir::json_node::type::null) params = nullptr;
  if (params && params->kind() != ir::json_node::type::object) return dropped("params must be an object");
  try {
    entry.deliver(peer, params);
  } catch (const std::exception& e) {
    return dropped(e.what());
  } catch (...) {
    return dropped("the handler threw an exception that is not a std::exception");
  }
  return true;
}

bool server_core::deliver_notification(const ir::message& msg, const peer_info& peer) const {
  std::shared_ptr<const notification_entry> entry;
  {
    const catalog& c = view();
    if (c.notifications.empty()) return false;
    entry = entry_of(c.notifications, msg.method());
  }
  if (!entry) return false;
  const ir::json_kind kind = msg.params_kind();
  if (kind == ir::json_kind::absent || kind == ir::json_kind::null) return deliver_to(*entry, msg.method(), nullptr, peer);
  bool delivered = false;
  std::string_view detail;
  if (ir::visit_params(msg, [&](const ir::json_node& p) { delivered = deliver_to(*entry, msg.method(), &p, peer); },
                       &detail)) {
    owner_.diagnose(diagnostic_level::warning, "a custom notification was dropped",
                    {{"method", msg.method()}, {"error", detail}});
  }
  return delivered;
}

server_core::server_core(const server& owner, std::shared_ptr<multi_round_context> multi_round,
                         std::shared_ptr<task_engine> tasks)
    : owner_(owner),
      id_(next_core_id.fetch_add(1, std::memory_order_relaxed)),
      multi_round_(std::move(multi_round)),
      tasks_(std::move(tasks)),
      changes_(owner) {
  modern_result_members_ = R"("resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":)";
  ir::append_json(modern_result_members_, identity(protocol_revision::v2026_07_28));
  modern_result_members_ += '}';
}

server_core::~server_core() {
  // Other threads drop their view of this core at their next lookup or when they end;
  // this one can drop it now, which is what a server made and destroyed on one thread
  // (a test, a short-lived embedding) expects of the tools' captures.
  if (this_thread_view.core == id_) this_thread_view = {};
}

const catalog& server_core::view() const {
  cached_view& mine = this_thread_view;
  if (mine.core != id_ || mine.version != version_.load(std::memory_order_acquire)) {
    std::lock_guard lock(catalog_mutex_);
    // Under the lock `version_` cannot move: edits bump it while holding the lock.
    const std::uint64_t now = version_.load(std::memory_order_relaxed);
    if (published_version_ != now) {
      published_ = catalog::publish(draft_);
      published_version_ = now;
    }
    mine = {id_, now, published_};
  }
  return *mine.snapshot;
}

void server_core::edit(const std::function<void(catalog&)>& change) {
  std::lock_guard lock(catalog_mutex_);
  change(draft_);  // may throw, and then nothing is published
  version_.fetch_add(1, std::memory_order_release);
}

void server_core::add_tool(std::shared_ptr<const tool_entry> entry) {
  edit([&](catalog& c) {
    auto [it, inserted] = c.tools.try_emplace(entry->info.name, nullptr);
    if (!inserted) throw std::invalid_argument("droid: a tool named \"" + entry->info.name + "\" is already registered");
    if (entry->info.tasks != task_support::forbidden) ++c.task_tools;
    it->second = entry;
  });
  changes_.list_changed("notifications/tools/list_changed", changed_entry::of(entry));
}

bool server_core::remove_tool(std::string_view name) {
  std::shared_ptr<const tool_entry> removed;
  edit([&](catalog& c) {
    auto it = c.tools.find(name);
    if (it == c.tools.end()) return;
    if (it->second->info.tasks != task_support::forbidden) --c.task_tools;
    removed = std::move(it->second);
    c.tools.erase(it);
  });
  if (removed) changes_.list_changed("notifications/tools/list_changed", changed_entry::of(removed));
  return removed != nullptr;
}

void server_core::add_resource(std::shared_ptr<const resource_entry> entry, bool is_template) {
  edit([&](catalog& c) {
    auto& map = is_template ? c.templates : c.resources;
    auto [it, inserted] = map.try_emplace(entry->key, nullptr);
    if (!inserted)
      throw std::invalid_argument("droid: a resource" + std::string(is_template ? " template" : "") + " \"" +
                                  entry->key + "\" is already registered");
    it->second = entry;
  });
  changes_.list_changed("notifications/resources/list_changed",
                        std::make_shared<const changed_entry>(changed_entry{
                            is_template ? entry_kind::resource_template : entry_kind::resource, entry->key, nullptr}));
}

bool server_core::remove_resource(std::string_view key) {
  bool removed = false;
  bool was_template = false;
  edit([&](catalog& c) {
    removed = c.resources.erase(std::string(key)) > 0;
    if (!removed) removed = was_template = c.templates.erase(std::string(key)) > 0;
  });
  if (removed)
    changes_.list_changed("notifications/resources/list_changed",
                          std::make_shared<const changed_entry>(changed_entry{
                              was_template ? entry_kind::resource_template : entry_kind::resource, std::string(key), nullptr}));
  return removed;
}

void server_core::add_prompt(std::shared_ptr<const prompt_entry> entry) {
  edit([&](catalog& c) {
    auto [it, inserted] = c.prompts.try_emplace(entry->info.name, nullptr);
    if (!inserted) throw std::invalid_argument("droid: a prompt named \"" + entry->info.name + "\" is already registered");
    it->second = entry;
  });
  changes_.list_changed("notifications/prompts/list_changed",
                        std::make_shared<const changed_entry>(changed_entry{entry_kind::prompt, entry->info.name, nullptr}));
}

bool server_core::remove_prompt(std::string_view name) {
  bool removed = false;
  edit([&](catalog& c) { removed = c.prompts.erase(std::string(name)) > 0; });
  if (removed)
    changes_.list_changed("notifications/prompts/list_changed",
                          std::make_shared<const changed_entry>(changed_entry{entry_kind::prompt, std::string(name), nullptr}));
  return removed;
}

void server_core::add_completer(std::string_view ref_type, std::string_view ref, std::string_view argument,
                                completer_fn fn) {
  edit([&](catalog& c) { c.completers[completer_key(ref_type, ref, argument)] = std::move(fn); });
}

std::size_t server_core::tool_count() const { return view().tools.size(); }

std::size_t server_core::resource_count() const {
  const catalog& c = view();
  return c.resources.size() + c.templates.size();
}

std::size_t server_core::prompt_count() const { return view().prompts.size(); }

bool server_core::has_completers() const { return !view().completers.empty(); }

bool server_core::serves_tasks() const { return view().task_tools > 0; }

std::shared_ptr<const tool_entry> server_core::find_tool(std::string_view name) const {
  const catalog& c = view();
  auto it = c.tool_index.find(name);
  return it == c.tool_index.end() ? nullptr : *it->second;
}

std::shared_ptr<const catalog> catalog::publish(const catalog& draft) {
  auto out = std::make_shared<catalog>(draft);  // the draft's index is always empty
  out->tool_index.reserve(out->tools.size());
  for (const auto& [name, entry] : out->tools) out->tool_index.emplace(name, &entry);
  return out;
}

std::vector<std::shared_ptr<const tool_entry>> server_core::tools_from(std::string_view from,
                                                                       std::string& next) const {
  return page_of(view().tools, from, owner_.options().page_size, next);
}

std::shared_ptr<const resource_entry> server_core::find_resource(std::string_view uri,
                                                                 uri_template::value_map& variables) const {
  const catalog& c = view();
  if (auto it = c.resources.find(uri); it != c.resources.end()) return it->second;
  for (const auto& [text, entry] : c.templates) {
    if (auto vars = entry->pattern->match(uri)) {
      variables = std::move(*vars);
      return entry;
    }
  }
  return nullptr;
}

std::vector<std::shared_ptr<const resource_entry>> server_core::resources_from(bool templates,
                                                                               std::string_view from,
                                                                               std::string& next) const {
  const catalog& c = view();
  return page_of(templates ? c.templates : c.resources, from, owner_.options().page_size, next);
}

std::shared_ptr<const prompt_entry> server_core::find_prompt(std::string_view name) const {
  return entry_of(view().prompts, name);
}

std::vector<std::shared_ptr<const prompt_entry>> server_core::prompts_from(std::string_view from,
                                                                           std::string& next) const {
  return page_of(view().prompts, from, owner_.options().page_size, next);
}

completer_fn server_core::find_completer(std::string_view ref_type, std::string_view ref,
                                         std::string_view argument) const {
  return entry_of(view().completers, completer_key(ref_type, ref, argument));
}

bool server_core::has_reference(std::string_view ref_type, std::string_view ref) const {
  const catalog& c = view();
  if (ref_type == "ref/prompt") return c.prompts.contains(ref);
  if (ref_type == "ref/resource") return c.templates.contains(ref) || c.resources.contains(ref);
  return false;
}

boost::json::object server_core::identity(protocol_revision revision) const {
  const server_info& info = owner_.info();
  boost::json::object o{{"name", info.name}, {"version", info.version}};
  if (has(revision, wire_feature::titles) && !info.title.empty()) o["title"] = info.title;
  if (has(revision, wire_feature::icons)) {
    if (!info.website_url.empty()) o["websiteUrl"] = info.website_url;
    if (!info.icons.empty()) o["icons"] = to_json(info.icons);
  }
  return o;
}

boost::json::object server_core::capabilities(protocol_revision revision) const {
  const catalog& c = view();
  boost::json::object caps;
  if (!c.tools.empty()) caps["tools"] = boost::json::object{{"listChanged", true}};
  // Every tool can log (ctx.log), so the capability is always there.
  caps["logging"] = boost::json::object{};
  if (!c.resources.empty() || !c.templates.empty())
    caps["resources"] = boost::json::object{{"subscribe", true}, {"listChanged", true}};
  if (!c.prompts.empty()) caps["prompts"] = boost::json::object{{"listChanged", true}};
  // Completion came with 2025-03-26; an older client would not know the capability.
  if (!c.completers.empty() && revision >= protocol_revision::v2025_03_26) caps["completions"] = boost::json::object{};
  if (c.task_tools > 0) {
    if (has(revision, wire_feature::core_tasks)) {
      caps["tasks"] = boost::json::object{{"list", boost::json::object{}},
                                          {"cancel", boost::json::object{}},
                                          {"requests", {{"tools", {{"call", boost::json::object{}}}}}}};
    } else if (is_modern(revision)) {
      caps["extensions"] = boost::json::object{{tasks_extension, boost::json::object{}}};
    }
  }
  if (!c.extensions.empty()) {
    boost::json::value& declared = caps["extensions"];
    if (!declared.is_object()) declared = boost::json::object{};
    for (const auto& [name, settings] : c.extensions) declared.as_object()[name] = settings;
  }
  return caps;
}

}  // namespace droid::detail
