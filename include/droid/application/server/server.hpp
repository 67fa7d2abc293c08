// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::server`: the registries of what an MCP server offers, and the typed tool API.
///
/// Application layer. A user builds one `server`, registers tools on it, and hands it to
/// one or more transports; each connection gets a `session` that reads the registries
/// through this object. Registration may also happen while serving: sessions that are
/// live get `notifications/tools/list_changed`.
///
///     struct add_args { int a; int b; };
///     BOOST_DESCRIBE_STRUCT(add_args, (), (a, b))
///
///     server.tool("add", "Adds two integers",
///         [](droid::tool_context&, add_args args) -> droid::task<droid::tool_result> {
///           co_return droid::tool_result::text(std::to_string(args.a + args.b));
///         });
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <droid/domain/ir/codec.hpp>

#include <droid/application/server/custom_method.hpp>
#include <droid/application/server/diagnostic.hpp>
#include <droid/application/server/observer.hpp>
#include <droid/application/server/middleware.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/visibility.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/content.hpp>
#include <droid/domain/mcp/extension.hpp>
#include <droid/domain/mcp/mcp_header.hpp>
#include <droid/domain/mcp/prompt.hpp>
#include <droid/domain/mcp/resource.hpp>
#include <droid/domain/mcp/revision.hpp>
#include <droid/domain/mcp/uri_template.hpp>
#include <droid/domain/mcp/schema.hpp>
#include <droid/domain/mcp/tool.hpp>

namespace droid {

class session;
class task_store;

/// What `initialize` says about the server (`serverInfo` and `instructions`).
struct server_info {
  std::string name{};  ///< `serverInfo.name`
  std::string version{};  ///< `serverInfo.version`
  std::string title{};  ///< `serverInfo.title`, a display name; omitted when empty
  /// Guidance for the model on how to use this server; omitted when empty.
  std::string instructions{};
  std::string website_url{};  ///< `serverInfo.websiteUrl`; omitted when empty
  std::vector<icon> icons{};  ///< `serverInfo.icons`
};

/// Server-wide settings.
struct server_options {
  /// Entries per page of `tools/list` (and every later list). Why paginate at all: a
  /// server with thousands of tools would otherwise send one multi-megabyte answer.
  std::size_t page_size = 100;
  /// Where the server writes diagnostics (handler exceptions, dropped messages) as one
  /// readable line each (`to_line`), when `diagnostics` is not set. Never stdout: on
  /// stdio, stdout carries the protocol only. Default: standard error.
  std::function<void(std::string_view)> log{};
  /// Resources one 2025 session may be subscribed to (`resources/subscribe` past it is
  /// -32602). Why bounded: a client may subscribe to any URI string, and each stays for
  /// the session's life.
  std::size_t max_subscriptions = 1024;
  /// Told when each request starts and ends (method, outcome, duration, bytes); see
  /// `request_observer` and `droid::metrics`. Null (the default) costs one pointer test
  /// per request. Shared because the observer usually outlives the server's set-up code
  /// (a metrics route reads it), and several servers may report to one.
  std::shared_ptr<request_observer> observer{};

  /// The cache hints 2026-07-28 clients get on each cacheable result (`ttlMs`,
  /// `cacheScope`). Why 0 by default: the framework cannot know how often a server
  /// changes what it registers, and a stale list is worse than a refetch; a server whose
  /// lists are fixed should raise these.
  struct cache_hints {
    cache_hint discover{};  ///< `server/discover`
    cache_hint tools{};  ///< `tools/list`
    cache_hint prompts{};  ///< `prompts/list`
    cache_hint resources{};  ///< `resources/list`
    cache_hint resource_templates{};  ///< `resources/templates/list`
    /// `resources/read`, unless the resource or template sets its own. Private by
    /// default: contents are the likeliest to depend on who asks.
    cache_hint reads{std::chrono::milliseconds(0), cache_scope::private_};
  };
  cache_hints cache{};  ///< the hints; see `cache_hints`

  /// Multi round-trip requests (2026-07-28): a tool's question becomes an
  /// `input_required` result and the client's retry resumes the tool. Every bound is on
  /// by default; see docs/exchange.md.
  struct multi_round_options {
    /// Secrets that seal `requestState` (authenticated encryption), newest first, each at
    /// least 32 bytes: state is sealed with the first and opened with any, so a secret is
    /// rotated by putting the new one first and dropping the old one a state lifetime
    /// later. Empty: a random secret per process, so state outlives neither a restart nor
    /// the process (give the same secrets to every instance behind one balancer).
    std::vector<std::string> state_secrets{};
    /// How long a client has to answer: a `requestState` older than this is refused.
    std::chrono::milliseconds state_ttl{std::chrono::minutes(10)};
    /// A larger `requestState` is refused unread; the server keeps the ones it makes
    /// below it (dropping the recorded answers first: see docs/exchange.md).
    std::size_t max_state_bytes = 64 * 1024;
    /// Rounds one request may take before it is refused (a client that never answers
    /// what the tool needs would otherwise loop forever).
    std::uint32_t max_rounds = 32;
    /// Suspended tools kept in memory across rounds, server-wide (the oldest is let go
    /// first), and for how long. A retry that finds no frame replays the tool, so these
    /// bound memory, not correctness. 0 keeps none: every retry replays.
    std::size_t max_kept_frames = 1024;
    std::chrono::milliseconds frame_ttl{std::chrono::minutes(5)};  ///< see `max_kept_frames`
  };
  multi_round_options multi_round{};  ///< see `multi_round_options`

  /// Tasks: tool calls that answer with a task id at once and that the client polls
  /// (docs/tasks.md). Every bound is on by default.
  struct task_options {
    /// Where task records live. Null: a `memory_task_store` with the two bounds below.
    std::shared_ptr<task_store> store{};
    /// Tasks held at once, running or finished within their time to live; past it a new
    /// task is refused with an error (a finished result is never dropped early).
    std::size_t max_tasks = 1024;
    /// Tasks one tenant (the principal when authenticated, the client's address
    /// otherwise) may hold of them: one client filling the table would refuse everyone
    /// else's for the tasks' lifetime. 0: no share.
    std::size_t max_tasks_per_tenant = 128;
    /// Bytes of results finished tasks may hold together before new tasks are refused.
    std::size_t max_result_bytes = 64u << 20;
    /// How long a task and its result are kept after its creation, unless the client asks
    /// for less (2025-11-25 `task.ttl`); a running task that reaches it is cancelled and
    /// marked failed, so no frame outlives it.
    std::chrono::milliseconds ttl{std::chrono::hours(1)};
    /// The polling interval the client is told.
    std::chrono::milliseconds poll_interval{std::chrono::seconds(1)};
  };
  task_options tasks{};  ///< see `task_options`

  /// Where the server's diagnostics go as records (a level, a message and fields such as
  /// `method` and `error`); set, it is used instead of `log`. Affinity: called from any
  /// shard, possibly several at once. Must not throw.
  std::function<void(const diagnostic&)> diagnostics{};

  /// With an authenticating transport, `tools/list` leaves out the tools whose
  /// `required_scopes` the caller's token lacks. Why off by default: a client that cannot
  /// see a tool cannot tell its user which scope would unlock it; a server whose tool
  /// list is itself sensitive turns this on.
  bool hide_unauthorized_tools = false;
};

namespace detail {

/// One listing (a `tools/list` entry, say) serialised once per revision, with the fields
/// that revision does not have left out. Why precomputed: a list is served far more often
/// than it changes, and shaping at registration keeps the list path a copy of strings.
using listings = std::array<std::string, revision_count>;

/// What a listing describes, which decides the fields shaping may drop.
enum class listing_kind : std::uint8_t { tool, resource, resource_template, prompt };

/// The listing `full` (the newest revision's form) as each revision should see it.
[[nodiscard]] listings shape_listings(const boost::json::object& full, listing_kind kind);

/// A registered tool: its listing and the type-erased call.
///
/// Why shared_ptr: a tool removed while one of its calls is running must stay alive
/// until that call completes, because the call's coroutine refers to the handler's
/// lambda captures.
struct tool_entry {
  tool_info info;
  /// The `tools/list` entry per revision, serialised once at registration.
  detail::listings listing;
  /// Decodes the arguments (synchronously, while `args` is valid) and returns the task
  /// that runs the tool. A decoding failure returns a task yielding an `isError` result.
  std::function<task<tool_result>(tool_context&, const ir::json_node* args)> invoke;
  /// The parameters clients mirror into `Mcp-Param-*` headers (`x-mcp-header` in the
  /// input schema), read once at registration so a call checks its headers without
  /// walking the schema again.
  std::vector<header_param> header_params;
};

template <class F>
struct callable_traits : callable_traits<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...)> : callable_traits<R (C::*)(A...) const> {};
template <class R, class... A>
struct callable_traits<R (*)(A...)> {
  using result = R;
  using args = std::tuple<A...>;
};

template <class T>
struct task_value {
  static constexpr bool is_task = false;
};
template <class T>
struct task_value<task<T>> {
  static constexpr bool is_task = true;
  using type = T;
};

inline task<tool_result> ready_result(tool_result r) { co_return r; }

/// Turns what a handler returns into a `tool_result`.
template <class R>
task<tool_result> to_tool_result(task<R> t) {
  R value = co_await std::move(t);
  if constexpr (std::is_same_v<R, std::string>) {
    co_return tool_result::text(value);
  } else {
    // Structured content is mirrored as a text block: MCP asks for it, because clients
    // that predate structured output read only `content`.
    boost::json::value json = to_json_value(value);
    tool_result r;
    r.add(content::text(ir::to_json_text(json)));
    r.structured(std::move(json.as_object()));
    co_return r;
  }
}

/// What a resource handler is asked for: the URI, and (for templates) its variables.
struct resource_request_base {
  std::string uri{};
  uri_template::value_map variables{};
};

/// A registered resource or resource template.
///
/// Why shared_ptr: as with tools, a removed resource's handler must outlive a read that
/// is still running.
struct resource_entry {
  std::string key;  ///< the URI, or the template text
  detail::listings listing;
  /// The hint for a `resources/read` it serves; none: the server's default.
  std::optional<cache_hint> cache;
  std::optional<uri_template> pattern;  ///< templates only
  std::function<task<std::vector<resource_contents>>(tool_context&, resource_request_base)> read;
};

/// A prompt's arguments by name (prompt arguments are strings).
using prompt_arguments_base = std::map<std::string, std::string, std::less<>>;

/// A registered prompt.
struct prompt_entry {
  prompt_info info;
  detail::listings listing;
  std::function<task<prompt_result>(tool_context&, prompt_arguments_base)> get;
};

/// What a completer receives: the partial value, and the other arguments already chosen
/// (`context.arguments`, MCP 2025-06-18).
struct completion_request_base {
  std::string value{};
  std::map<std::string, std::string, std::less<>> context{};
};

using completer_fn = std::function<task<std::vector<std::string>>(tool_context&, completion_request_base)>;

template <class Args>
constexpr bool typed_args = described_struct<Args> || std::is_same_v<Args, boost::json::object>;

/// Decodes arguments into `Args`; an absent `arguments` member decodes as `{}`.
template <class Args>
bool decode_arguments(const ir::json_node* node, Args& out, std::string& error) {
  if (node) {
    if constexpr (std::is_same_v<Args, boost::json::object>) {
      if (node->kind() != ir::json_node::type::object) return error = "`arguments` must be an object", false;
      boost::json::value v;
      if (!decode(*node, v, error)) return false;
      out = std::move(v.as_object());
      return true;
    } else {
      return decode(*node, out, error);
    }
  }
  bool ok = false;
  const std::error_code ec = ir::visit_json("{}", [&](const ir::json_node& empty) { ok = decode_arguments(&empty, out, error); });
  return !ec && ok;
}

}  // namespace detail

/// What a resource handler receives: the URI read, and the template's variables
/// (empty for a concrete resource).
using resource_request = detail::resource_request_base;
/// A prompt's arguments, by name.
using prompt_arguments = detail::prompt_arguments_base;
/// What a completer receives.
using completion_request = detail::completion_request_base;

class server;

namespace detail {
class server_core;
/// The engine's side of `s` (lib/application/server/server_core.hpp): lookups, the change
/// fan-out, and what multi round-trip requests and tasks share. For the library's own
/// sessions and transports; it has no stable interface.
[[nodiscard]] server_core& core(const server& s) noexcept;
}  // namespace detail

/// The registries of one MCP server.
///
/// Why one object shared by all sessions: tools are registered once and served to every
/// connection; a runtime change must reach every session (list_changed).
/// Affinity: registration and removal may happen on any thread; sessions read a published
/// snapshot of the registries without a lock.
/// Lifetime: must outlive every session and transport that serves it.
class server {
 public:
  /// A server that introduces itself with `info` (in `initialize` and `server/discover`).
  explicit server(server_info info, server_options options = {});
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Registers a tool named `name` described by `description`. See the overload below.
  template <class Handler>
  server& tool(std::string name, std::string description, Handler&& handler) {
    tool_info info;
    info.name = std::move(name);
    info.description = std::move(description);
    return tool(std::move(info), std::forward<Handler>(handler));
  }

  /// Registers a tool. `handler` is a callable (usually a lambda coroutine) taking
  /// `tool_context&` and optionally one argument value, and returning `task<R>`:
  /// - argument: a Boost.Describe'd struct (its schema becomes `inputSchema`), or
  ///   `boost::json::object` for raw arguments (give `info.input_schema` yourself);
  /// - `R`: `tool_result`, `std::string` (one text block), or a described struct
  ///   (becomes `structuredContent`, and its schema `outputSchema`).
  ///
  /// Errors: throws `std::invalid_argument` when the name breaks MCP's naming rule, the
  /// description is empty (clients reject such tools), or the name is already taken; and
  /// for typed arguments, when a `field_hint` names no member or gives one a constraint
  /// it cannot carry or keep, or a member not hinted `defaulted` has an initialiser that
  /// would never be used (see `field_hint`).
  template <class Handler>
  server& tool(tool_info info, Handler&& handler) {
    using H = std::decay_t<Handler>;
    using traits = detail::callable_traits<H>;
    using args = typename traits::args;
    using ret = typename traits::result;
    constexpr std::size_t arity = std::tuple_size_v<args>;
    static_assert(arity == 1 || arity == 2,
                  "droid: a tool handler takes (droid::tool_context&) or (droid::tool_context&, Args)");
    static_assert(std::is_same_v<std::tuple_element_t<0, args>, tool_context&>,
                  "droid: a tool handler's first parameter must be droid::tool_context&");
    static_assert(detail::task_value<ret>::is_task, "droid: a tool handler must return droid::task<R>");
    using value = typename detail::task_value<ret>::type;
    static_assert(std::is_same_v<value, tool_result> || std::is_same_v<value, std::string> ||
                      detail::described_struct<value>,
                  "droid: a tool returns task<tool_result>, task<std::string> or task<S> for a described struct S");
    if constexpr (detail::described_struct<value>) {
      static_assert(detail::json_able<value>(),
                    "droid: a tool's result struct has a member with no JSON form; members may be bool, integers, "
                    "floating point, std::string, described enums and structs, std::optional, std::vector, "
                    "std::map<std::string, T> or boost::json::value");
      if constexpr (detail::json_able<value>()) {
        if (!info.output_schema) info.output_schema = schema_of<value>();
      }
    }

    auto entry = std::make_shared<detail::tool_entry>();
    auto shared_handler = std::make_shared<H>(std::forward<Handler>(handler));
    if constexpr (arity == 2) {
      static_assert(!std::is_reference_v<std::tuple_element_t<1, args>>,
                    "droid: take tool arguments by value (a coroutine keeps references, and the decoded "
                    "arguments would not outlive the call that decoded them)");
      using A = std::remove_cvref_t<std::tuple_element_t<1, args>>;
      static_assert(detail::typed_args<A>,
                    "droid: tool arguments must be a Boost.Describe'd struct (BOOST_DESCRIBE_STRUCT) or "
                    "boost::json::object");
      if constexpr (detail::described_struct<A>) {
        static_assert(detail::json_able<A>(),
                      "droid: a tool's argument struct has a member with no JSON form; members may be bool, integers, "
                      "floating point, std::string, described enums and structs, std::optional, std::vector, "
                      "std::map<std::string, T> or boost::json::value");
        if constexpr (detail::json_able<A>()) {
          // Even with a schema given: the decoder enforces the hints' constraints.
          detail::check_arguments<A>();
          if (!info.input_schema) info.input_schema = schema_of<A>();
        }
      }
      entry->invoke = [shared_handler](tool_context& ctx, const ir::json_node* node) -> task<tool_result> {
        A a{};
        std::string error;
        if (!detail::decode_arguments(node, a, error))
          return detail::ready_result(tool_result::error("Invalid arguments: " + error));
        return wrap((*shared_handler)(ctx, std::move(a)));
      };
    } else {
      entry->invoke = [shared_handler](tool_context& ctx, const ir::json_node*) -> task<tool_result> {
        return wrap((*shared_handler)(ctx));
      };
    }
    entry->info = std::move(info);
    add_tool(std::move(entry));
    return *this;
  }

  /// Removes a tool; live sessions get `notifications/tools/list_changed`. Calls already
  /// running finish normally. Returns false when no tool had that name.
  bool remove_tool(std::string_view name);

  /// Registers a concrete resource. `handler` is `task<R>(tool_context&)` or
  /// `task<R>(tool_context&, resource_request)`, where `R` is `resource_contents` or
  /// `std::vector<resource_contents>`; it runs on `resources/read`.
  /// Errors: `std::invalid_argument` for an empty URI or name, or a URI already taken.
  template <class Handler>
  server& resource(resource_info info, Handler&& handler) {
    auto entry = std::make_shared<detail::resource_entry>();
    entry->key = info.uri;
    if (info.uri.empty() || info.name.empty())
      throw std::invalid_argument("droid: a resource needs a uri and a name");
    check_author_meta(info.meta, "resource \"" + info.uri + "\"");
    entry->listing = detail::shape_listings(to_json(info), detail::listing_kind::resource);
    entry->cache = info.cache;
    entry->read = adapt_resource_handler(std::forward<Handler>(handler));
    add_resource(std::move(entry), false);
    return *this;
  }

  /// Registers a resource template (RFC 6570 levels 1 and 2). `resources/read` of a URI
  /// that no concrete resource has and that the template matches runs `handler` with the
  /// decoded variables in `resource_request::variables`.
  /// Errors: `std::invalid_argument` for a malformed template, an empty name, or a
  /// template already registered.
  template <class Handler>
  server& resource_template(resource_template_info info, Handler&& handler) {
    auto entry = std::make_shared<detail::resource_entry>();
    entry->key = info.uri_template;
    entry->pattern.emplace(info.uri_template);
    if (info.name.empty()) throw std::invalid_argument("droid: a resource template needs a name");
    check_author_meta(info.meta, "resource template \"" + info.uri_template + "\"");
    entry->listing = detail::shape_listings(to_json(info), detail::listing_kind::resource_template);
    entry->cache = info.cache;
    entry->read = adapt_resource_handler(std::forward<Handler>(handler));
    add_resource(std::move(entry), true);
    return *this;
  }

  /// Registers a prompt. `handler` is `task<prompt_result>(tool_context&, prompt_arguments)`
  /// and runs on `prompts/get` after the required arguments were checked.
  /// Errors: `std::invalid_argument` for an empty name or description, or a name taken.
  template <class Handler>
  server& prompt(prompt_info info, Handler&& handler) {
    using H = std::decay_t<Handler>;
    static_assert(std::is_invocable_r_v<task<prompt_result>, H&, tool_context&, prompt_arguments>,
                  "droid: a prompt handler is task<droid::prompt_result>(droid::prompt_context&, droid::prompt_arguments)");
    auto entry = std::make_shared<detail::prompt_entry>();
    auto shared = std::make_shared<H>(std::forward<Handler>(handler));
    entry->get = [shared](tool_context& ctx, prompt_arguments args) { return (*shared)(ctx, std::move(args)); };
    entry->info = std::move(info);
    add_prompt(std::move(entry));
    return *this;
  }

  /// Registers a prompt whose arguments are the members of the described struct `Args`
  /// (each `std::string`, or `std::optional<std::string>` for an optional argument; the
  /// descriptions come from `droid::field_hints<Args>`). `handler` is
  /// `task<prompt_result>(tool_context&, Args)`.
  template <class Handler>
  server& prompt(std::string name, std::string description, Handler&& handler) {
    using H = std::decay_t<Handler>;
    using traits = detail::callable_traits<H>;
    using args = typename traits::args;
    static_assert(std::tuple_size_v<args> == 2, "droid: a typed prompt handler takes (droid::prompt_context&, Args)");
    using A = std::remove_cvref_t<std::tuple_element_t<1, args>>;
    static_assert(detail::described_struct<A>, "droid: typed prompt arguments must be a Boost.Describe'd struct");
    prompt_info info;
    info.name = std::move(name);
    info.description = std::move(description);
    boost::mp11::mp_for_each<detail::public_members<A>>([&](auto d) {
      using M = std::remove_cvref_t<decltype(std::declval<A&>().*d.pointer)>;
      static_assert(std::is_same_v<M, std::string> || std::is_same_v<M, std::optional<std::string>>,
                    "droid: prompt arguments are strings: use std::string or std::optional<std::string>");
      prompt_argument a;
      a.name = d.name;
      if (const field_hint* h = detail::find_hint<A>(d.name)) {
        // A prompt argument is listed with a name and a description only, and its value
        // is not decoded, so a constraint would be neither shown nor checked.
        if (detail::has_checks(*h))
          throw std::invalid_argument("droid: field_hints gives the prompt argument " + detail::quoted(d.name) +
                                      " a constraint, which prompt arguments do not carry");
        a.description = std::string(h->description);
      }
      a.required = std::is_same_v<M, std::string>;
      info.arguments.push_back(std::move(a));
    });
    auto shared = std::make_shared<H>(std::forward<Handler>(handler));
    return prompt(std::move(info), [shared](tool_context& ctx, prompt_arguments given) -> task<prompt_result> {
      A typed{};
      boost::mp11::mp_for_each<detail::public_members<A>>([&](auto d) {
        if (auto it = given.find(d.name); it != given.end()) typed.*d.pointer = it->second;
      });
      return (*shared)(ctx, std::move(typed));
    });
  }

  /// Removes a prompt; sessions get `notifications/prompts/list_changed`.
  bool remove_prompt(std::string_view name);

  /// Registers what `completion/complete` offers for argument `argument` of prompt
  /// `prompt`. `completer` is `task<std::vector<std::string>>(tool_context&,
  /// completion_request)`; at most 100 values are sent, with `total` and `hasMore`.
  template <class Completer>
  server& complete_prompt_argument(std::string prompt, std::string argument, Completer&& completer) {
    add_completer("ref/prompt", std::move(prompt), std::move(argument), make_completer(std::forward<Completer>(completer)));
    return *this;
  }
  /// The same for variable `variable` of the resource template `uri_template`.
  template <class Completer>
  server& complete_resource_variable(std::string uri_template, std::string variable, Completer&& completer) {
    add_completer("ref/resource", std::move(uri_template), std::move(variable),
                  make_completer(std::forward<Completer>(completer)));
    return *this;
  }

  /// Removes a resource (by URI) or a template (by its text); sessions get
  /// `notifications/resources/list_changed`. Returns false when there was none.
  bool remove_resource(std::string_view uri_or_template);

  /// Tells every session subscribed to `uri` that it changed
  /// (`notifications/resources/updated`, on the session's own stream).
  void resource_updated(std::string_view uri);

  /// How many tools are registered.
  [[nodiscard]] std::size_t tool_count() const;
  /// How many resources and resource templates are registered.
  [[nodiscard]] std::size_t resource_count() const;
  /// How many prompts are registered.
  [[nodiscard]] std::size_t prompt_count() const;
  /// True when a completer is registered (the server then declares `completions`).
  [[nodiscard]] bool has_completers() const;

  /// Calls `handler(peer)` when a client says its roots changed
  /// (`notifications/roots/list_changed`). Why a callback and not a re-list here: asking
  /// needs a stream to the client, which a tool's request has; a typical handler marks
  /// the roots stale so the next tool call re-lists them with `ctx.list_roots()`.
  /// Affinity: called on the session's shard.
  void on_roots_list_changed(std::function<void(const peer_info&)> handler);
  /// Declares the extension `name` (SEP-2133) with `settings`: clients find it in the
  /// `extensions` member of the capabilities (`initialize` in 2025, `server/discover` in
  /// 2026-07-28) and handlers read what the client declared with `peer_info::extension`.
  /// Declaring it again replaces its settings. Errors: `std::invalid_argument` for a name
  /// that is not `vendor.prefix/name` (`is_valid_extension_name`), and for the tasks
  /// extension, which the server declares itself while a tool may run as a task.
  server& extension(std::string name, boost::json::object settings = {});

  /// Registers the custom request `name`, as an extension defines one (docs/extensions.md).
  /// `handler` is `task<R>(tool_context&)` or `task<R>(tool_context&, P)`, where `P` (the
  /// params, without `_meta`) is a described struct or `boost::json::object`, and `R` (the
  /// result) is a described struct, `boost::json::object` or `void` (`{}`). Params that do
  /// not decode are -32602; a `protocol_error` thrown by the handler is its JSON-RPC error,
  /// any other exception -32603. Errors: `std::invalid_argument` for a name MCP defines
  /// (`is_protocol_method`), a name taken, or an invalid `options.extension`.
  template <class Handler>
  server& method(std::string name, Handler&& handler, method_options options = {}) {
    using H = std::decay_t<Handler>;
    using traits = detail::callable_traits<H>;
    using args = typename traits::args;
    constexpr std::size_t arity = std::tuple_size_v<args>;
    static_assert(arity == 1 || arity == 2,
                  "droid: a method handler takes (droid::tool_context&) or (droid::tool_context&, Params)");
    static_assert(std::is_same_v<std::tuple_element_t<0, args>, tool_context&>,
                  "droid: a method handler's first parameter must be droid::tool_context&");
    using R = typename traits::result;
    static_assert(detail::task_value<R>::is_task, "droid: a method handler returns droid::task<R>");
    using V = typename detail::task_value<R>::type;
    static_assert(std::is_void_v<V> || std::is_same_v<V, boost::json::object> || detail::described_struct<V>,
                  "droid: a method's result is a Boost.Describe'd struct, boost::json::object or void");
    auto entry = std::make_shared<detail::method_entry>();
    auto shared = std::make_shared<H>(std::forward<Handler>(handler));
    if constexpr (arity == 2) {
      static_assert(!std::is_reference_v<std::tuple_element_t<1, args>>,
                    "droid: take method params by value (a coroutine keeps references)");
      using P = std::remove_cvref_t<std::tuple_element_t<1, args>>;
      static_assert(detail::typed_args<P>,
                    "droid: method params must be a Boost.Describe'd struct or boost::json::object");
      entry->invoke = [shared](tool_context& ctx, const ir::json_node* params) -> task<boost::json::object> {
        P p = detail::decode_method_params<P>(params);
        return detail::method_result((*shared)(ctx, std::move(p)));
      };
    } else {
      entry->invoke = [shared](tool_context& ctx, const ir::json_node*) -> task<boost::json::object> {
        return detail::method_result((*shared)(ctx));
      };
    }
    entry->name = std::move(name);
    entry->options = std::move(options);
    add_method(std::move(entry));
    return *this;
  }

  /// Registers what runs when a client sends the custom notification `name`. `handler`
  /// is `void(const peer_info&)` or `void(const peer_info&, P)` with `P` as for `method`;
  /// it runs on the shard that received the notification and must not block. A
  /// notification has no answer: params that do not decode, a client without
  /// `options.extension`, or a handler that throws are reported as a diagnostic and the
  /// notification is dropped. Errors: as for `method`.
  template <class Handler>
  server& on_notification(std::string name, Handler&& handler, method_options options = {}) {
    using H = std::decay_t<Handler>;
    using traits = detail::callable_traits<H>;
    using args = typename traits::args;
    constexpr std::size_t arity = std::tuple_size_v<args>;
    static_assert(arity == 1 || arity == 2,
                  "droid: a notification handler takes (const droid::peer_info&) or (const droid::peer_info&, Params)");
    auto entry = std::make_shared<detail::notification_entry>();
    auto shared = std::make_shared<H>(std::forward<Handler>(handler));
    if constexpr (arity == 2) {
      using P = std::remove_cvref_t<std::tuple_element_t<1, args>>;
      static_assert(detail::typed_args<P>,
                    "droid: notification params must be a Boost.Describe'd struct or boost::json::object");
      entry->deliver = [shared](const peer_info& peer, const ir::json_node* params) {
        (*shared)(peer, detail::decode_method_params<P>(params));
      };
    } else {
      entry->deliver = [shared](const peer_info& peer, const ir::json_node*) { (*shared)(peer); };
    }
    entry->name = std::move(name);
    entry->options = std::move(options);
    add_notification(std::move(entry));
    return *this;
  }

  /// Removes a custom request or notification handler; returns false when none had that
  /// name. Calls already running finish normally.
  bool remove_method(std::string_view name);

  /// Sets which tools, prompts, resources and templates each caller sees (see
  /// `visibility_query`): lists leave out what `predicate` hides, a request naming a
  /// hidden entry is answered as for an unknown one, and a 2025 session is told of a
  /// changed list only when it sees the entry that changed. Replaces the previous
  /// predicate; null shows everything. Clients are told every list may have changed.
  server& visible_if(visibility_predicate predicate);

  /// Appends `h` to the request middleware chain (docs/middleware.md): every request the
  /// engine serves, in both eras and on every transport, runs through the chain in the
  /// order middleware was added, the first added outermost. Requests already running
  /// keep the chain they started with. Without middleware a request pays one pointer test.
  server& use(middleware::handler h);
  /// Appends guard `g` to the same chain, in order with the middleware: a plain
  /// function that refuses the request or lets it on, run with no coroutine frame (see
  /// `middleware::guard`).
  server& use(middleware::guard g);
  /// Appends `h` to the notification middleware chain: every notification a client
  /// sends runs through it, in order, before the engine acts on it.
  server& use_on_notifications(middleware::notification_handler h);

  /// What the server was constructed with.
  [[nodiscard]] const server_info& info() const noexcept { return info_; }
  /// The settings the server was constructed with.
  [[nodiscard]] const server_options& options() const noexcept { return options_; }

  /// Suspended tools kept for a 2026-07-28 retry, server-wide.
  [[nodiscard]] std::size_t kept_frames() const noexcept;
  /// Tasks whose tool is still running, server-wide.
  [[nodiscard]] std::size_t running_tasks() const;
  /// Reports `d` through `options().diagnostics`, else as a line through `options().log`,
  /// else as a line on standard error.
  void diagnose(const diagnostic& d) const;
  /// Reports a diagnostic of `level` saying `message` about `fields`.
  void diagnose(diagnostic_level level, std::string_view message,
                std::initializer_list<diagnostic_field> fields = {}) const {
    diagnose(diagnostic{level, message, std::span<const diagnostic_field>(fields.begin(), fields.size())});
  }
  /// Reports `line` as an error with no fields (for code that has only a string).
  void log(std::string_view line) const { diagnose(diagnostic_level::error, line); }

 private:
  template <class R>
  static task<tool_result> wrap(task<R> t) {
    if constexpr (std::is_same_v<R, tool_result>) {
      return t;
    } else {
      return detail::to_tool_result(std::move(t));
    }
  }

  void add_tool(std::shared_ptr<detail::tool_entry> entry);
  void add_resource(std::shared_ptr<detail::resource_entry> entry, bool is_template);
  void add_prompt(std::shared_ptr<detail::prompt_entry> entry);
  void add_completer(std::string ref_type, std::string ref, std::string argument, detail::completer_fn fn);
  void add_method(std::shared_ptr<detail::method_entry> entry);
  void add_notification(std::shared_ptr<detail::notification_entry> entry);

  template <class Completer>
  static detail::completer_fn make_completer(Completer&& completer) {
    using C = std::decay_t<Completer>;
    static_assert(std::is_invocable_r_v<task<std::vector<std::string>>, C&, tool_context&, completion_request>,
                  "droid: a completer is task<std::vector<std::string>>(droid::completion_context&, droid::completion_request)");
    auto shared = std::make_shared<C>(std::forward<Completer>(completer));
    return [shared](tool_context& ctx, completion_request req) { return (*shared)(ctx, std::move(req)); };
  }

  /// Checks a resource handler's shape first, so that each mistake's first error is one
  /// sentence saying what is expected (not an overload failure deep in the adapter), then
  /// wraps it as the registry stores it.
  template <class Handler>
  static std::function<task<std::vector<resource_contents>>(tool_context&, resource_request)>
  adapt_resource_handler(Handler&& handler) {
    using H = std::decay_t<Handler>;
    constexpr bool with_request = std::is_invocable_v<H&, tool_context&, resource_request>;
    constexpr bool plain = std::is_invocable_v<H&, tool_context&>;
    static_assert(with_request || plain,
                  "droid: a resource handler takes (droid::resource_context&) or "
                  "(droid::resource_context&, droid::resource_request)");
    using R = typename std::conditional_t<with_request, std::invoke_result<H&, tool_context&, resource_request>,
                                          std::conditional_t<plain, std::invoke_result<H&, tool_context&>,
                                                             std::type_identity<void>>>::type;
    constexpr bool returns_contents =
        std::is_same_v<R, task<resource_contents>> || std::is_same_v<R, task<std::vector<resource_contents>>>;
    static_assert(!(with_request || plain) || returns_contents,
                  "droid: a resource handler returns droid::task<droid::resource_contents> or "
                  "droid::task<std::vector<droid::resource_contents>>");
    if constexpr ((with_request || plain) && returns_contents) {
      auto shared = std::make_shared<H>(std::forward<Handler>(handler));
      return [shared](tool_context& ctx, resource_request req) -> task<std::vector<resource_contents>> {
        if constexpr (with_request) return as_contents((*shared)(ctx, std::move(req)));
        else return as_contents((*shared)(ctx));
      };
    } else {
      return {};
    }
  }
  static task<std::vector<resource_contents>> as_contents(task<std::vector<resource_contents>> t) { return t; }
  static task<std::vector<resource_contents>> as_contents(task<resource_contents> t) {
    std::vector<resource_contents> out;
    out.push_back(co_await std::move(t));
    co_return out;
  }

  friend detail::server_core& detail::core(const server& s) noexcept;

  server_info info_;
  server_options options_;
  std::unique_ptr<detail::server_core> core_;
};

}  // namespace droid
