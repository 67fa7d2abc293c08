// SPDX-License-Identifier: BSL-1.0
/// @file
/// Method handlers: ping, discovery, tools, resources, prompts, completion; the methods
/// of other modules through their table (module_method).
#include "dispatcher.hpp"

#include <exception>
#include <utility>

#include <boost/json/array.hpp>

#include <droid/application/server/task_store.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "application/catalog/server_core.hpp"

namespace droid::detail {

std::optional<ir::request_id> progress_token(const ir::json_node& token) {
  if (token.kind() == ir::json_node::type::integer) return ir::request_id(token.integer());
  if (token.kind() == ir::json_node::type::string) return ir::request_id(std::string(token.string()));
  return std::nullopt;
}

std::optional<ir::request_id> progress_token_of(const ir::json_node* params) {
  ir::json_node meta, token;
  if (!params || !params->find("_meta", meta) || !meta.find("progressToken", token)) return std::nullopt;
  return progress_token(token);
}

namespace {

constexpr std::string_view cursor_prefix = "dc1.";

/// What a request's `_meta` says that every call reads: its progress token and its
/// OpenTelemetry keys, found in one pass over the members.
///
/// Why one pass: a search per key walks the members again each time, and a tools/call
/// paid about 250 instructions for the five searches (docs/benchmarks.md).
struct request_meta {
  std::optional<ir::request_id> progress_token;
  trace_context trace;
};

request_meta meta_of(const ir::json_node* meta) {
  request_meta m;
  if (!meta || meta->kind() != ir::json_node::type::object) return m;
  bool token_seen = false, parent_seen = false, state_seen = false, baggage_seen = false;
  // The first of duplicate keys counts, as `json_node::find` would have it.
  const auto first = [](bool& seen) { return !std::exchange(seen, true); };
  const auto text = [&](const ir::json_node& v, bool& seen, std::string& out) {
    if (first(seen) && v.kind() == ir::json_node::type::string) out = std::string(v.string());
  };
  meta->for_each_member([&](std::string_view key, const ir::json_node& v) {
    if (key == "progressToken") {
      if (first(token_seen)) m.progress_token = progress_token(v);
    } else if (key == "traceparent") {
      text(v, parent_seen, m.trace.traceparent);
    } else if (key == "tracestate") {
      text(v, state_seen, m.trace.tracestate);
    } else if (key == "baggage") {
      text(v, baggage_seen, m.trace.baggage);
    }
  });
  return m;
}

/// The authenticated caller of the request on `channel`, or null (no authentication).
const principal* caller_of(const request_channel& channel) noexcept {
  const request_origin* o = channel.origin();
  return o ? o->principal.get() : nullptr;
}

/// Whether `shown` (the server's visibility predicate; null: none) lets this request see
/// the entry `name` of `kind`.
bool visible(const visibility_predicate* shown, entry_kind kind, std::string_view name, const tool_info* tool,
             const request_scope& scope) {
  if (!shown) return true;
  return (*shown)(visibility_query{kind, name, tool, &scope.peer, scope.channel.origin()});
}

/// The answer to a call that could not start as the task its client asked for. The
/// client's share and a full server are limits it can wait out (429 and 503 with
/// Retry-After over HTTP, as the transport's own limits answer); anything else is this
/// server's fault. A plain function, not inline in `run_tool`: clang 14 destroyed a
/// temporary that was never built when `co_return` sat in a `switch` of a coroutine.
reply task_refused(const task_refusal& refusal) {
  switch (refusal.which) {
    case task_refusal::limit::tenant:
      return reply::over_limit(429, "Too Many Requests: the call could not start as a task: " + refusal.message);
    case task_refusal::limit::server:
      return reply::over_limit(503, "Service Unavailable: the call could not start as a task: " + refusal.message);
    case task_refusal::limit::other:
      break;
  }
  return reply::error(ir::errc::internal_error,
                      "Internal error: the call could not start as a task: " +
                          (refusal.message.empty() ? std::string("the request cannot carry one") : refusal.message));
}

/// Runs a tool to completion, turning whatever it does into a reply: the whole response
/// for request `id`, written once into the buffer that is sent (for a tool that became a
/// task, the runner takes the result out of it for the task's record).
/// Why here and not in the tool wrapper: a throwing tool must become `isError` content
/// for that call only (as the official SDKs do), whatever adapter produced its task.
/// `tool` is held for the whole call, and declared before `work` so it is destroyed
/// after it: the handler's lambda (and its captures) must outlive its coroutine frame
/// even if the tool is removed meanwhile. `id` is the caller's (request_scope's
/// lifetime), which outlives this frame. `detach` (non-null) makes the call a task
/// before the tool starts.
task<reply> run_tool([[maybe_unused]] std::shared_ptr<const tool_entry> tool, task<tool_result> work,
                     const ir::request_id& id, const peer_info& peer, std::string_view modern_members,
                     request_channel* detach) {
  if (detach) {
    task_refusal refusal;
    if (!detach->become_task(refusal)) co_return task_refused(refusal);
  }
  tool_result result;
  try {
    result = co_await std::move(work);
  } catch (const protocol_error& e) {
    co_return reply::error(e.code(), e.what(), e.data());
  } catch (const std::exception& e) {
    result = tool_result::error(e.what());
  } catch (...) {
    result = tool_result::error("the tool failed with an exception that is not a std::exception");
  }
  const std::string_view modern = peer.is_modern() ? modern_members : std::string_view();
  std::string text;
  // The head is 32 bytes and the id (an integer has at most 20), then the result and `}`.
  text.reserve(33 + (id.is_string() ? id.string().size() + 2 : 20) + result.json_size_hint() + modern.size());
  ir::append_result_head(text, id);
  // `peer` belongs to the request record, which outlives this frame.
  result.append_json(text, peer.revision, modern);
  text.push_back('}');
  co_return reply::framed_result(std::move(text), result.is_error());
}

}  // namespace

std::string missing_extension_data(std::string_view extension) {
  std::string data = R"({"requiredCapabilities":{"extensions":{)";
  ir::append_json_string(data, extension);
  data += ":{}}}}";
  return data;
}

std::string encode_cursor(std::string_view next) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string c(cursor_prefix);
  for (const unsigned char ch : next) {
    c += hex[ch >> 4];
    c += hex[ch & 0xF];
  }
  return c;
}

bool decode_cursor(std::string_view cursor, std::string& next) {
  if (!cursor.starts_with(cursor_prefix)) return false;
  cursor.remove_prefix(cursor_prefix.size());
  if (cursor.size() % 2 != 0) return false;
  next.clear();
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < cursor.size(); i += 2) {
    const int hi = nibble(cursor[i]), lo = nibble(cursor[i + 1]);
    if (hi < 0 || lo < 0) return false;
    next += static_cast<char>(hi << 4 | lo);
  }
  return true;
}

namespace {

/// The methods the dispatcher serves. Why named once: the method is compared with each
/// name a single time, instead of once to decide whether it is known and again to route it.
enum class method_kind : std::uint8_t {
  ping,
  server_discover,
  tools_list,
  tools_call,
  resources_list,
  resource_templates_list,
  resources_read,
  prompts_list,
  prompts_get,
  completion_complete,
  tasks_get,
  tasks_cancel,
  tasks_update,
  tasks_result,
  tasks_list,
  unknown,
};

method_kind kind_of(std::string_view method) noexcept {
  // tools/call first: it is most of the traffic.
  if (method == "tools/call") return method_kind::tools_call;
  if (method == "ping") return method_kind::ping;
  if (method == "tools/list") return method_kind::tools_list;
  if (method == "resources/list") return method_kind::resources_list;
  if (method == "resources/templates/list") return method_kind::resource_templates_list;
  if (method == "resources/read") return method_kind::resources_read;
  if (method == "prompts/list") return method_kind::prompts_list;
  if (method == "prompts/get") return method_kind::prompts_get;
  if (method == "completion/complete") return method_kind::completion_complete;
  if (method == "server/discover") return method_kind::server_discover;
  if (method.starts_with("tasks/")) {
    if (method == "tasks/get") return method_kind::tasks_get;
    if (method == "tasks/cancel") return method_kind::tasks_cancel;
    if (method == "tasks/update") return method_kind::tasks_update;
    if (method == "tasks/result") return method_kind::tasks_result;
    if (method == "tasks/list") return method_kind::tasks_list;
  }
  return method_kind::unknown;
}

/// The module method named `method`, or null. A walk of a few entries, taken only for a
/// name the switch above does not know.
const module_method* module_method_of(std::string_view method) noexcept {
  for (const module_method& m : module_methods())
    if (m.name == method) return &m;
  return nullptr;
}

/// Whether `srv` serves `method` (of `kind`) to a client of `revision`.
bool is_served(const server& srv, method_kind kind, std::string_view method, protocol_revision revision) {
  switch (kind) {
    case method_kind::resources_list:
    case method_kind::resource_templates_list:
    case method_kind::resources_read: return srv.resource_count() > 0;
    case method_kind::prompts_list:
    case method_kind::prompts_get: return srv.prompt_count() > 0;
    case method_kind::completion_complete: return srv.has_completers();
    // 2026-07-28 removed ping; discovery exists only there.
    case method_kind::ping: return !is_modern(revision);
    case method_kind::server_discover: return is_modern(revision);
    // 2025-11-25 has tasks in the core protocol, with `tasks/result` and `tasks/list`;
    // the 2026-07-28 extension removed those two and added `tasks/update`.
    case method_kind::tasks_get:
    case method_kind::tasks_cancel:
      return (has(revision, wire_feature::core_tasks) || is_modern(revision)) && detail::core(srv).serves_tasks();
    case method_kind::tasks_result:
    case method_kind::tasks_list: return has(revision, wire_feature::core_tasks) && detail::core(srv).serves_tasks();
    case method_kind::tasks_update: return is_modern(revision) && detail::core(srv).serves_tasks();
    case method_kind::unknown: {
      if (const module_method* m = module_method_of(method)) return m->exists(srv, revision);
      const auto custom = detail::core(srv).find_method(method);
      return custom && (is_modern(revision) ? custom->options.in_2026 : custom->options.in_2025);
    }
    default: return true;
  }
}

/// `,"ttlMs":N,"cacheScope":"..."` for a 2026 client, nothing for an older one.
void append_cache_hint(std::string& out, const peer_info& peer, const cache_hint& hint) {
  if (!peer.is_modern()) return;
  out += R"(,"ttlMs":)";
  out += std::to_string(hint.ttl.count() < 0 ? 0 : hint.ttl.count());
  out += hint.scope == cache_scope::private_ ? R"(,"cacheScope":"private")" : R"(,"cacheScope":"public")";
}

}  // namespace

bool dispatcher::serves(const server& srv, std::string_view method, protocol_revision revision) {
  return is_served(srv, kind_of(method), method, revision);
}

std::shared_ptr<const method_entry> dispatcher::custom_method(const server& srv, std::string_view method) {
  if (kind_of(method) != method_kind::unknown || module_method_of(method)) return nullptr;
  return detail::core(srv).find_method(method);
}

bool dispatcher::is_task_method(std::string_view method) noexcept {
  switch (kind_of(method)) {
    case method_kind::tasks_get:
    case method_kind::tasks_cancel:
    case method_kind::tasks_update:
    case method_kind::tasks_result:
    case method_kind::tasks_list: return true;
    default: return false;
  }
}

std::variant<reply, task<reply>> dispatcher::dispatch(std::string_view method, const ir::json_node* params,
                                                      request_scope scope) {
  const method_kind kind = kind_of(method);
  if (!is_served(server_, kind, method, scope.peer.revision))
    return reply::error(ir::errc::method_not_found, "Method not found: " + std::string(method));
  // MCP params are objects; an array or a scalar on a known method is invalid params
  // (docs/reliability.md, 2.12), while an absent or null `params` means "no parameters".
  if (params && params->kind() == ir::json_node::type::null) params = nullptr;
  if (params && params->kind() != ir::json_node::type::object)
    return reply::error(ir::errc::invalid_params, "Invalid params: params must be an object");
  switch (kind) {
    case method_kind::ping: return reply::ok("{}");
    case method_kind::server_discover: return discover(scope);
    case method_kind::tools_list: return list_tools(params, scope);
    case method_kind::tools_call: return call_tool(params, scope);
    case method_kind::resources_list: return list_resources(params, false, scope);
    case method_kind::resource_templates_list: return list_resources(params, true, scope);
    case method_kind::resources_read: return read_resource(params, scope);
    case method_kind::prompts_list: return list_prompts(params, scope);
    case method_kind::prompts_get: return get_prompt(params, scope);
    case method_kind::completion_complete: return complete(params, scope);
    // The runner serves these before dispatching (its task table); reaching here means
    // a caller without one.
    case method_kind::tasks_get:
    case method_kind::tasks_cancel:
    case method_kind::tasks_update:
    case method_kind::tasks_result:
    case method_kind::tasks_list: break;
    case method_kind::unknown:
      if (const module_method* m = module_method_of(method)) return m->serve(server_, params, scope);
      if (auto custom = detail::core(server_).find_method(method)) return call_method(std::move(custom), params, scope);
      break;
  }
  return reply::error(ir::errc::method_not_found, "Method not found: " + std::string(method));
}

namespace {

/// The cursor of a list request, decoded into the key the next page starts at.
bool read_cursor(const ir::json_node* params, std::string& from) {
  ir::json_node cursor;
  if (!params || !params->find("cursor", cursor) || cursor.kind() == ir::json_node::type::null) return true;
  return cursor.kind() == ir::json_node::type::string && decode_cursor(cursor.string(), from);
}

/// The string member `key` of `params`, if it has one.
std::optional<std::string> string_of(const ir::json_node* params, std::string_view key) {
  ir::json_node v;
  if (!params || !params->find(key, v) || v.kind() != ir::json_node::type::string) return std::nullopt;
  return std::string(v.string());
}

/// `{"<member>":[...listings...],"nextCursor":...}`, each listing as `peer`'s revision
/// has it, and the cache hint where that revision has one.
template <class Entries>
std::string page_json(std::string_view member, const Entries& page, const std::string& next, const peer_info& peer,
                      const cache_hint& hint) {
  const auto rev = static_cast<std::size_t>(peer.revision);
  std::string out = "{\"";
  out += member;
  out += "\":[";
  for (std::size_t i = 0; i < page.size(); ++i) {
    if (i) out += ',';
    out += page[i]->listing[rev];
  }
  out += ']';
  if (!next.empty()) {
    out += R"(,"nextCursor":)";
    ir::append_json_string(out, encode_cursor(next));
  }
  append_cache_hint(out, peer, hint);
  out += '}';
  return out;
}

/// Reads a resource through its handler and wraps the contents as a ReadResourceResult.
/// `entry` is held for the read (declared before `work`, destroyed after it): a removed
/// resource's handler must outlive its coroutine.
task<reply> run_read([[maybe_unused]] std::shared_ptr<const resource_entry> entry,
                     task<std::vector<resource_contents>> work, std::string hint, protocol_revision revision) {
  std::vector<resource_contents> contents;
  try {
    contents = co_await std::move(work);
    for (const resource_contents& c : contents) check_author_meta(c.meta, "the contents of " + c.uri);
  } catch (const protocol_error& e) {
    // A handler's own answer: a template whose variables name nothing says -32602, say.
    co_return reply::error(e.code(), e.what(), e.data());
  } catch (const std::exception& e) {
    co_return reply::error(ir::errc::internal_error, std::string("Internal error: reading the resource failed: ") + e.what());
  }
  boost::json::array items;
  for (resource_contents& c : contents) {
    if (!has(revision, wire_feature::descriptor_meta)) c.meta.clear();
    items.push_back(to_json(c));
  }
  std::string text = ir::to_json_text(boost::json::object{{"contents", std::move(items)}});
  // `{"contents":[...]}` plus the cache hint before its closing brace.
  text.insert(text.size() - 1, hint);
  co_return reply::ok(std::move(text));
}

}  // namespace

reply dispatcher::discover(const request_scope& scope) {
  const server_info& info = server_.info();
  boost::json::array versions;
  for (const std::string_view v : modern_versions) versions.emplace_back(v);
  for (const std::string_view v : legacy_versions) versions.emplace_back(v);
  boost::json::object result{{"supportedVersions", std::move(versions)},
                             {"capabilities", detail::core(server_).capabilities(scope.peer.revision)}};
  if (!info.instructions.empty()) result["instructions"] = info.instructions;
  std::string text = ir::to_json_text(result);
  std::string hint;
  append_cache_hint(hint, scope.peer, server_.options().cache.discover);
  text.insert(text.size() - 1, hint);
  return reply::ok(std::move(text));
}

reply dispatcher::list_tools(const ir::json_node* params, const request_scope& scope) {
  std::string from;
  if (!read_cursor(params, from)) return reply::error(ir::errc::invalid_params, "Invalid params: unknown cursor");
  std::string next;
  auto page = detail::core(server_).tools_from(from, next);
  // A page may come out short (even empty, with a next cursor): clients follow the
  // cursor, and the next page is where it says.
  if (server_.options().hide_unauthorized_tools) {
    if (const principal* who = caller_of(scope.channel))
      std::erase_if(page, [who](const auto& t) { return !who->has_scopes(t->info.required_scopes); });
  }
  if (const auto shown = detail::core(server_).visibility())
    std::erase_if(page, [&](const auto& t) { return !visible(shown.get(), entry_kind::tool, t->info.name, &t->info, scope); });
  return reply::ok(page_json("tools", page, next, scope.peer, server_.options().cache.tools));
}

reply dispatcher::list_resources(const ir::json_node* params, bool templates, const request_scope& scope) {
  std::string from;
  if (!read_cursor(params, from)) return reply::error(ir::errc::invalid_params, "Invalid params: unknown cursor");
  std::string next;
  auto page = detail::core(server_).resources_from(templates, from, next);
  if (const auto shown = detail::core(server_).visibility())
    std::erase_if(page, [&](const auto& r) {
      return !visible(shown.get(), templates ? entry_kind::resource_template : entry_kind::resource, r->key, nullptr,
                      scope);
    });
  const server_options::cache_hints& cache = server_.options().cache;
  return reply::ok(page_json(templates ? "resourceTemplates" : "resources", page, next, scope.peer,
                             templates ? cache.resource_templates : cache.resources));
}

std::variant<reply, task<reply>> dispatcher::read_resource(const ir::json_node* params, request_scope& scope) {
  const std::optional<std::string> uri = string_of(params, "uri");
  if (!uri) return reply::error(ir::errc::invalid_params, "Invalid params: uri must be a string");
  uri_template::value_map variables;
  auto entry = detail::core(server_).find_resource(*uri, variables);
  // Hidden from this caller: as if it did not exist (a template's hiding covers every
  // URI it matches).
  if (entry) {
    if (const auto shown = detail::core(server_).visibility();
        shown && !visible(shown.get(), entry->pattern ? entry_kind::resource_template : entry_kind::resource,
                          entry->key, nullptr, scope))
      entry = nullptr;
  }
  if (!entry) {
    // The uri in data, so a client can tell which read failed. The code is -32002 up to
    // 2025-11-25; 2026-07-28 made it -32602 and forbids -32002.
    std::string data = R"({"uri":)";
    ir::append_json_string(data, *uri);
    data += '}';
    return reply::error(scope.peer.is_modern() ? ir::errc::invalid_params : ir::errc::resource_not_found,
                        "Resource not found: " + *uri, std::move(data));
  }
  std::string hint;
  append_cache_hint(hint, scope.peer, entry->cache ? *entry->cache : server_.options().cache.reads);
  scope.context.emplace(scope.channel, scope.peer, scope.id, std::nullopt, std::move(scope.stop), scope.executor);
  task<std::vector<resource_contents>> work;
  try {
    work = entry->read(*scope.context, resource_request{*uri, std::move(variables)});
  } catch (const std::exception& e) {
    return reply::error(ir::errc::internal_error, std::string("Internal error: reading the resource failed: ") + e.what());
  }
  return run_read(std::move(entry), std::move(work), std::move(hint), scope.peer.revision);
}

reply dispatcher::list_prompts(const ir::json_node* params, const request_scope& scope) {
  std::string from;
  if (!read_cursor(params, from)) return reply::error(ir::errc::invalid_params, "Invalid params: unknown cursor");
  std::string next;
  auto page = detail::core(server_).prompts_from(from, next);
  if (const auto shown = detail::core(server_).visibility())
    std::erase_if(page, [&](const auto& p) { return !visible(shown.get(), entry_kind::prompt, p->info.name, nullptr, scope); });
  return reply::ok(page_json("prompts", page, next, scope.peer, server_.options().cache.prompts));
}

namespace {

task<reply> run_prompt(std::shared_ptr<const prompt_entry> entry, task<prompt_result> work) {
  prompt_result result;
  try {
    result = co_await std::move(work);
    check_author_meta(result.meta, "the prompt's result");
  } catch (const std::exception& e) {
    co_return reply::error(ir::errc::internal_error, std::string("Internal error: the prompt failed: ") + e.what());
  }
  (void)entry;
  co_return reply::ok(ir::to_json_text(to_json(result)));
}

/// At most this many completion values go to the client (MCP's limit).
constexpr std::size_t max_completions = 100;

task<reply> run_completer(completer_fn fn, task<std::vector<std::string>> work) {
  std::vector<std::string> values;
  try {
    values = co_await std::move(work);
  } catch (const std::exception& e) {
    co_return reply::error(ir::errc::internal_error, std::string("Internal error: the completer failed: ") + e.what());
  }
  (void)fn;
  const std::size_t total = values.size();
  boost::json::array shown;
  for (std::size_t i = 0; i < total && i < max_completions; ++i) shown.emplace_back(values[i]);
  boost::json::object completion{{"values", std::move(shown)}, {"total", total}, {"hasMore", total > max_completions}};
  co_return reply::ok(ir::to_json_text(boost::json::object{{"completion", std::move(completion)}}));
}

}  // namespace

std::variant<reply, task<reply>> dispatcher::get_prompt(const ir::json_node* params, request_scope& scope) {
  std::optional<std::string> name;
  prompt_arguments args;
  bool bad_arguments = false;
  if (params) {
    [&](const ir::json_node& p) {
      ir::json_node n, a;
      if (p.find("name", n) && n.kind() == ir::json_node::type::string) name = std::string(n.string());
      if (p.find("arguments", a) && a.kind() != ir::json_node::type::null) {
        if (a.kind() != ir::json_node::type::object) {
          bad_arguments = true;
          return;
        }
        a.for_each_member([&](std::string_view k, const ir::json_node& v) {
          if (v.kind() == ir::json_node::type::string) args.emplace(std::string(k), std::string(v.string()));
          else bad_arguments = true;
        });
      }
    }(*params);
  }
  if (!name) return reply::error(ir::errc::invalid_params, "Invalid params: name must be a string");
  if (bad_arguments) return reply::error(ir::errc::invalid_params, "Invalid params: prompt arguments must be strings");
  auto entry = detail::core(server_).find_prompt(*name);
  if (entry) {
    if (const auto shown = detail::core(server_).visibility();
        shown && !visible(shown.get(), entry_kind::prompt, entry->info.name, nullptr, scope))
      entry = nullptr;
  }
  if (!entry) return reply::error(ir::errc::invalid_params, "Unknown prompt: " + *name);
  for (const prompt_argument& a : entry->info.arguments)
    if (a.required && !args.contains(a.name))
      return reply::error(ir::errc::invalid_params, "Invalid params: missing required argument `" + a.name + "`");
  scope.context.emplace(scope.channel, scope.peer, scope.id, std::nullopt, std::move(scope.stop), scope.executor);
  task<prompt_result> work;
  try {
    work = entry->get(*scope.context, std::move(args));
  } catch (const std::exception& e) {
    return reply::error(ir::errc::internal_error, std::string("Internal error: the prompt failed: ") + e.what());
  }
  return run_prompt(std::move(entry), std::move(work));
}

std::variant<reply, task<reply>> dispatcher::complete(const ir::json_node* params, request_scope& scope) {
  std::string ref_type, ref, argument;
  completion_request request;
  bool ok = false;
  if (params) {
    [&](const ir::json_node& p) {
      ir::json_node r, t, n, a, an, av, ctx, ctx_args;
      if (!p.find("ref", r) || !r.find("type", t) || t.kind() != ir::json_node::type::string) return;
      ref_type = std::string(t.string());
      const char* key = ref_type == "ref/prompt" ? "name" : ref_type == "ref/resource" ? "uri" : nullptr;
      if (!key || !r.find(key, n) || n.kind() != ir::json_node::type::string) return;
      ref = std::string(n.string());
      if (!p.find("argument", a) || !a.find("name", an) || an.kind() != ir::json_node::type::string) return;
      argument = std::string(an.string());
      if (a.find("value", av) && av.kind() == ir::json_node::type::string) request.value = std::string(av.string());
      if (p.find("context", ctx) && ctx.find("arguments", ctx_args))
        ctx_args.for_each_member([&](std::string_view k, const ir::json_node& v) {
          if (v.kind() == ir::json_node::type::string) request.context.emplace(std::string(k), std::string(v.string()));
        });
      ok = true;
    }(*params);
  }
  if (!ok)
    return reply::error(ir::errc::invalid_params,
                        "Invalid params: completion/complete needs ref (ref/prompt with name, or ref/resource with "
                        "uri) and argument.name");
  bool known = detail::core(server_).has_reference(ref_type, ref);
  if (const auto shown = detail::core(server_).visibility(); known && shown)
    known = visible(shown.get(), ref_type == "ref/prompt" ? entry_kind::prompt : entry_kind::resource_template, ref,
                    nullptr, scope);
  if (!known) return reply::error(ir::errc::invalid_params, "Invalid params: unknown " + ref_type + " " + ref);
  completer_fn fn = detail::core(server_).find_completer(ref_type, ref, argument);
  // Nothing to suggest is an empty completion, not an error.
  if (!fn) return reply::ok(R"({"completion":{"values":[],"total":0,"hasMore":false}})");
  scope.context.emplace(scope.channel, scope.peer, scope.id, std::nullopt, std::move(scope.stop), scope.executor);
  task<std::vector<std::string>> work;
  try {
    work = fn(*scope.context, std::move(request));
  } catch (const std::exception& e) {
    return reply::error(ir::errc::internal_error, std::string("Internal error: the completer failed: ") + e.what());
  }
  return run_completer(std::move(fn), std::move(work));
}

/// Decides whether a call may become a task, by the era's rules. 2025-11-25: the client
/// asks with `params.task`; a tool that forbids tasks is then -32601 (SHOULD), and one
/// that requires them, called without, is -32601 (MUST). 2026-07-28: the server decides,
/// for a client that declared the extension; `params.task` is an older client's hint and
/// means nothing. Earlier revisions have no tasks: a tool that requires one cannot run.
std::optional<reply> dispatcher::offer_task(const tool_entry& tool, const ir::json_node* task_member,
                                            request_scope& scope, bool& detach_first) {
  const peer_info& peer = scope.peer;
  const task_support support = tool.info.tasks;
  const std::string& name = tool.info.name;
  if (has(peer.revision, wire_feature::core_tasks)) {
    const bool wants = task_member && task_member->kind() != ir::json_node::type::null;
    // A server that declares no tasks processes the call normally, ignoring `task` (MUST).
    if (wants && support == task_support::forbidden && !detail::core(server_).serves_tasks()) return std::nullopt;
    if (wants && support == task_support::forbidden)
      return reply::error(ir::errc::method_not_found,
                          "Method not found: tool " + name + " does not run as a task (execution.taskSupport is forbidden)");
    if (!wants && support == task_support::required)
      return reply::error(ir::errc::method_not_found,
                          "Method not found: tool " + name +
                              " runs only as a task (execution.taskSupport is required): call it with params.task");
    if (!wants) return std::nullopt;
    if (task_member->kind() != ir::json_node::type::object)
      return reply::error(ir::errc::invalid_params, "Invalid params: \"task\" must be an object");
    std::chrono::milliseconds ttl{0};
    ir::json_node t;
    if (task_member->find("ttl", t) && t.kind() != ir::json_node::type::null) {
      if (t.kind() != ir::json_node::type::integer || t.integer() < 0)
        return reply::error(ir::errc::invalid_params, "Invalid params: task.ttl must be a non-negative integer (ms)");
      ttl = std::chrono::milliseconds(t.integer());
    }
    if (!scope.offer) return reply::error(ir::errc::internal_error, "Internal error: this transport cannot run tasks");
    scope.offer->allowed = true;
    scope.offer->ttl = ttl;
    // The client waits for a CreateTaskResult, whatever the tool would rather do.
    detach_first = true;
    return std::nullopt;
  }
  if (peer.is_modern()) {
    if (support == task_support::forbidden) return std::nullopt;
    const bool accepts = peer.has_extension(tasks_extension);
    if (support == task_support::required && !accepts) {
      std::string data = missing_extension_data(tasks_extension);
      return reply::error(ir::errc::missing_client_capability,
                          "Missing required client capability: tool " + name + " runs only as a task, and this "
                          "request's _meta did not declare the " + std::string(tasks_extension) + " extension",
                          std::move(data));
    }
    if (!accepts || !scope.offer) return std::nullopt;
    scope.offer->allowed = true;
    detach_first = tool.info.start == task_start::at_once;
    return std::nullopt;
  }
  if (support == task_support::required)
    return reply::error(ir::errc::method_not_found, "Method not found: tool " + name +
                                                        " runs only as a task, which MCP " + peer.protocol_version +
                                                        " does not have (2025-11-25 and later do)");
  return std::nullopt;
}

std::variant<reply, task<reply>> dispatcher::call_tool(const ir::json_node* params, request_scope& scope) {
  if (!params) return reply::error(ir::errc::invalid_params, "Invalid params: tools/call needs a tool name");
  // The members a call reads, in one pass over params (the first of duplicates counts, as
  // with `json_node::find`); `_meta`'s are read in one more (see `request_meta`).
  ir::json_node name, args, asked, meta;
  bool has_name = false, has_args = false, has_task = false, has_meta = false;
  params->for_each_member([&](std::string_view key, const ir::json_node& v) {
    const auto take = [&](bool& seen, ir::json_node& out) {
      if (!seen) out = v;
      seen = true;
    };
    if (key == "name") take(has_name, name);
    else if (key == "arguments") take(has_args, args);
    else if (key == "task") take(has_task, asked);
    else if (key == "_meta") take(has_meta, meta);
  });
  if (!has_name || name.kind() != ir::json_node::type::string)
    return reply::error(ir::errc::invalid_params, "Invalid params: \"name\" must be a string");
  auto tool = detail::core(server_).find_tool(name.string());
  // A tool hidden from this caller is unknown to it.
  if (tool) {
    if (const auto shown = detail::core(server_).visibility();
        shown && !visible(shown.get(), entry_kind::tool, tool->info.name, &tool->info, scope))
      tool = nullptr;
  }
  // MCP: an unknown tool is a protocol error, not a tool execution error.
  if (!tool) return reply::error(ir::errc::invalid_params, "Unknown tool: " + std::string(name.string()));
  if (const principal* who = caller_of(scope.channel); who && !who->has_scopes(tool->info.required_scopes)) {
    // HTTP answers this with 403 before the request gets here (the status tells the
    // client to step up); a transport that does not still never runs the tool.
    std::string text = "Forbidden: tool " + std::string(name.string()) + " requires the scope(s)";
    for (const std::string& s : tool->info.required_scopes) text.append(" ").append(s);
    return reply::error(ir::errc::invalid_request, std::move(text));
  }
  has_args = has_args && args.kind() != ir::json_node::type::null;
  if (has_args && args.kind() != ir::json_node::type::object)
    return reply::error(ir::errc::invalid_params, "Invalid params: \"arguments\" must be an object");
  bool detach_first = false;
  if (auto refused = offer_task(*tool, has_task ? &asked : nullptr, scope, detach_first)) return std::move(*refused);
  request_meta m = meta_of(has_meta ? &meta : nullptr);
  scope.context.emplace(scope.channel, scope.peer, scope.id, std::move(m.progress_token), std::move(scope.stop),
                        scope.executor, std::move(m.trace));
  // The arguments are decoded now, while the parsed tree exists; the task owns the
  // decoded value, not the tree.
  task<tool_result> work;
  try {
    work = tool->invoke(*scope.context, has_args ? &args : nullptr);
  } catch (const std::exception& e) {
    // A handler that is not a coroutine may throw before returning its task; to the
    // model that is the same failure as a throwing coroutine.
    work = ready_result(tool_result::error(e.what()));
  } catch (...) {
    work = ready_result(tool_result::error("the tool failed with an exception that is not a std::exception"));
  }
  return run_tool(std::move(tool), std::move(work), scope.id, scope.peer, detail::core(server_).modern_result_members(),
                  detach_first ? &scope.channel : nullptr);
}

namespace {

/// Runs a custom method and frames what it returns: the result object with its `_meta`
/// first (a 2026 result's is merged with the server's there, and JSON allows the key
/// once), and the method's cache hint for a 2026 client. `entry` is held for the call, as
/// a tool's is.
task<reply> run_method([[maybe_unused]] std::shared_ptr<const method_entry> entry, task<boost::json::object> work,
                       std::string hint) {
  boost::json::object result;
  try {
    result = co_await std::move(work);
    if (const auto* meta = result.if_contains("_meta")) {
      if (!meta->is_object()) throw std::invalid_argument("the method's result has a _meta that is not an object");
      check_author_meta(meta->as_object(), "the method's result");
    }
  } catch (const protocol_error& e) {
    co_return reply::error(e.code(), e.what(), e.data());
  } catch (const std::exception& e) {
    co_return reply::error(ir::errc::internal_error, std::string("Internal error: ") + e.what());
  } catch (...) {
    co_return reply::error(ir::errc::internal_error, "Internal error: the method failed with an unknown exception");
  }
  std::string text;
  if (const auto* meta = result.if_contains("_meta"); meta && result.begin()->key() != "_meta") {
    text = R"({"_meta":)";
    ir::append_json(text, *meta);
    for (const auto& member : result) {
      if (member.key() == "_meta") continue;
      text += ',';
      ir::append_json_string(text, member.key());
      text += ':';
      ir::append_json(text, member.value());
    }
    text += '}';
  } else {
    ir::append_json(text, result);
  }
  // The hint's members start with a comma, which an empty object must not keep.
  text.insert(text.size() - 1, text == "{}" && !hint.empty() ? std::string_view(hint).substr(1) : hint);
  co_return reply::ok(std::move(text));
}

}  // namespace

std::variant<reply, task<reply>> dispatcher::call_method(std::shared_ptr<const method_entry> entry,
                                                         const ir::json_node* params, request_scope& scope) {
  const method_options& o = entry->options;
  // A 2026 request without the extension was refused with -32021 before it got here, by
  // admit_modern, which every transport calls first; a 2025 session declared its
  // extensions in initialize, and a method it did not declare the extension of does not
  // exist for it.
  if (!scope.peer.is_modern() && !o.extension.empty() && !scope.peer.has_extension(o.extension))
    return reply::error(ir::errc::method_not_found, "Method not found: " + entry->name + " belongs to the " +
                                                        o.extension +
                                                        " extension, which this session's initialize did not declare");
  ir::json_node meta;
  request_meta m = meta_of(params && params->find("_meta", meta) ? &meta : nullptr);
  scope.context.emplace(scope.channel, scope.peer, scope.id, std::move(m.progress_token), std::move(scope.stop),
                        scope.executor, std::move(m.trace));
  std::string hint;
  if (o.cache) append_cache_hint(hint, scope.peer, *o.cache);
  task<boost::json::object> work;
  try {
    work = entry->invoke(*scope.context, params);
  } catch (const protocol_error& e) {
    return reply::error(e.code(), e.what(), e.data());
  } catch (const std::exception& e) {
    return reply::error(ir::errc::internal_error, std::string("Internal error: ") + e.what());
  }
  return run_method(std::move(entry), std::move(work), std::move(hint));
}

}  // namespace droid::detail
