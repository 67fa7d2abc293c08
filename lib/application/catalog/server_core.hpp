// SPDX-License-Identifier: BSL-1.0
/// @file
/// `detail::server_core`: the engine's side of a `droid::server`.
///
/// Application layer, internal. A tool author's `server` registers things and reports
/// figures; sessions, runners and transports need more of it: lookups by name and by
/// page, the audience to tell of a change (change_fanout.hpp), the capabilities and
/// identity a client is sent, and the machinery that multi round-trip requests and tasks
/// share across shards. That part lives here, reached with `detail::core(srv)`, so that
/// `<droid/application/server/server.hpp>` stays what users call and the engine's
/// interface can change without breaking them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/json/object.hpp>

#include <droid/application/server/middleware.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/visibility.hpp>

#include "change_fanout.hpp"

namespace droid {

class session;

namespace detail {

class multi_round_context;
class task_engine;

/// Everything registered with one server, as a value that never changes once published.
///
/// Why a value: every request looks something up (the tool it calls, the page it lists),
/// on every shard at once, while registrations are rare. Readers share the latest
/// published catalog and take no lock; a registration edits the writers' copy and the
/// next reader on each thread publishes or picks up the new one.
struct catalog {
  template <class Entry>
  using by_name = std::map<std::string, std::shared_ptr<const Entry>, std::less<>>;
  // Ordered by name: pagination walks names, so an entry added or removed between two
  // pages shifts nothing else.
  by_name<tool_entry> tools;
  by_name<resource_entry> resources;  ///< by URI
  by_name<resource_entry> templates;  ///< by template text
  by_name<prompt_entry> prompts;
  /// Completers by "ref type \n ref \n argument".
  std::map<std::string, completer_fn, std::less<>> completers;
  /// Custom requests and notifications by name (server::method, server::on_notification).
  by_name<method_entry> methods;
  by_name<notification_entry> notifications;
  /// Declared extensions and their settings, by name (tasks is not among them: it is
  /// declared while `task_tools` is not 0).
  std::map<std::string, boost::json::object, std::less<>> extensions;
  /// The request middleware, in the order registered (null: none, and a request pays one
  /// pointer test). Shared, so a request that runs through it keeps it whole.
  std::shared_ptr<const middleware::detail::chain> middleware;
  /// Which entries a caller sees (server::visible_if); null: every entry, for everyone.
  std::shared_ptr<const visibility_predicate> visibility;
  /// The notification middleware, in the order registered.
  std::vector<middleware::notification_handler> notification_middleware;
  /// Registered tools that may run as a task (every task method and the capability ask).
  std::size_t task_tools = 0;
  /// `tools` by name, hashed: built for a published catalog only (its views point into
  /// that catalog's own map), empty in the writers' draft. Why beside the ordered map:
  /// every `tools/call` looks its tool up, and a walk down the tree compared names about
  /// seven times a request on the example server (bench callgrind section).
  std::unordered_map<std::string_view, const std::shared_ptr<const tool_entry>*> tool_index;

  /// The catalog to publish: a copy of `draft` with its index built.
  static std::shared_ptr<const catalog> publish(const catalog& draft);
};

/// The registries, the change fan-out and the shared engines of one server.
///
/// Affinity: every member may be called on any thread. Lookups read the published
/// catalog without a lock; registrations, and the session and listener lists, take their
/// own mutexes. Lifetime: owned by the `server`, so it outlives every session.
class server_core {
 public:
  /// `multi_round` and `tasks` are the engines the server's shards share, made by the
  /// composition root (lib/application/server.cpp). Why handed in: the catalog then
  /// needs neither engine's definition, and holds them for whoever serves the server.
  server_core(const server& owner, std::shared_ptr<multi_round_context> multi_round,
              std::shared_ptr<task_engine> tasks);
  ~server_core();
  server_core(const server_core&) = delete;
  server_core& operator=(const server_core&) = delete;

  // ---- registration: the checks are the server's, these only store ----------------

  /// Adds `entry`; throws `std::invalid_argument` when its name is taken.
  void add_tool(std::shared_ptr<const tool_entry> entry);
  bool remove_tool(std::string_view name);
  /// Adds a resource (`is_template` false, keyed by URI) or a template (by its text).
  void add_resource(std::shared_ptr<const resource_entry> entry, bool is_template);
  /// Removes the resource with this URI, else the template with this text.
  bool remove_resource(std::string_view key);
  void add_prompt(std::shared_ptr<const prompt_entry> entry);
  bool remove_prompt(std::string_view name);
  void add_completer(std::string_view ref_type, std::string_view ref, std::string_view argument, completer_fn fn);
  /// Declares extension `name`; `replace` false keeps settings already declared (a
  /// method's extension does not overwrite what `server::extension` said).
  void declare_extension(std::string name, boost::json::object settings, bool replace);
  /// Adds a custom method (declaring its extension); throws when the name is taken.
  void add_method(std::shared_ptr<const method_entry> entry);
  void add_notification(std::shared_ptr<const notification_entry> entry);
  /// Removes the custom method or notification handler `name`.
  bool remove_method(std::string_view name);
  /// Sets the visibility predicate (null: none).
  void set_visibility(visibility_predicate predicate);
  /// Appends a request middleware, or a notification middleware, to its chain.
  void add_middleware(middleware::detail::link l);
  void add_notification_middleware(middleware::notification_handler h);

  // ---- lookups (no lock) ------------------------------------------------------------

  [[nodiscard]] std::size_t tool_count() const;
  [[nodiscard]] std::size_t resource_count() const;  ///< resources and templates
  [[nodiscard]] std::size_t prompt_count() const;
  [[nodiscard]] bool has_completers() const;
  /// The tool named `name`, or null.
  [[nodiscard]] std::shared_ptr<const tool_entry> find_tool(std::string_view name) const;
  /// Up to `page_size` listings starting at the first name not less than `from`, and
  /// the name that starts the next page (empty when this page is the last).
  [[nodiscard]] std::vector<std::shared_ptr<const tool_entry>> tools_from(std::string_view from,
                                                                         std::string& next) const;
  /// The resource with this exact URI, else the first template that matches it (with its
  /// variables filled in), else null.
  [[nodiscard]] std::shared_ptr<const resource_entry> find_resource(std::string_view uri,
                                                                  uri_template::value_map& variables) const;
  /// A page of resources (`templates` false) or templates, as for `tools_from`.
  [[nodiscard]] std::vector<std::shared_ptr<const resource_entry>> resources_from(bool templates,
                                                                                 std::string_view from,
                                                                                 std::string& next) const;
  /// The prompt named `name`, or null.
  [[nodiscard]] std::shared_ptr<const prompt_entry> find_prompt(std::string_view name) const;
  /// A page of prompts, as for `tools_from`.
  [[nodiscard]] std::vector<std::shared_ptr<const prompt_entry>> prompts_from(std::string_view from,
                                                                             std::string& next) const;
  /// The visibility predicate, or null when every entry is visible.
  [[nodiscard]] std::shared_ptr<const visibility_predicate> visibility() const;
  /// False while no visibility predicate was ever set (then `visibility()` is null).
  [[nodiscard]] bool may_hide() const noexcept { return any_visibility_.load(std::memory_order_acquire); }
  /// The request middleware chain, or null when there is none.
  [[nodiscard]] std::shared_ptr<const middleware::detail::chain> middleware() const;
  /// Puts the client's notification `method` through the notification middleware; true
  /// when every one let it on (always, without any). A middleware's exception is
  /// reported as a diagnostic and drops the notification.
  /// `msg`'s params text is found only when there is notification middleware (finding it
  /// scans the message).
  [[nodiscard]] bool pass_notification(const ir::message& msg, const peer_info& peer,
                                       const request_origin* origin) const;
  /// The custom method `name`, or null.
  [[nodiscard]] std::shared_ptr<const method_entry> find_method(std::string_view name) const;
  /// Hands the client's notification `msg` to its custom handler, if one is registered
  /// for `peer`'s era and extensions; true when one ran. Its params are parsed only when
  /// there is a handler. A handler's failure (undecodable params, an exception) is
  /// reported as a diagnostic, never thrown.
  bool deliver_notification(const ir::message& msg, const peer_info& peer) const;
  /// The completer for (`ref_type`, `ref`, `argument`), or null.
  [[nodiscard]] completer_fn find_completer(std::string_view ref_type, std::string_view ref,
                                            std::string_view argument) const;
  /// True when a prompt `name` or a template `text` exists, for completion's -32602.
  [[nodiscard]] bool has_reference(std::string_view ref_type, std::string_view ref) const;
  /// True while some registered tool may run as a task: the task methods and the
  /// capability that announces them exist only then.
  [[nodiscard]] bool serves_tasks() const;

  // ---- what a client is told ----------------------------------------------------------

  /// The capabilities object for a client of `revision` (in `initialize` and
  /// `server/discover`): what is registered, and only that.
  [[nodiscard]] boost::json::object capabilities(protocol_revision revision) const;
  /// The `serverInfo` object for a client of `revision`.
  [[nodiscard]] boost::json::object identity(protocol_revision revision) const;
  /// `"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{...}}`: the
  /// members every 2026-07-28 result starts with, serialised once.
  [[nodiscard]] std::string_view modern_result_members() const noexcept { return modern_result_members_; }

  // ---- who hears of changes -------------------------------------------------------------

  /// The audience of this server's changes; registrations above tell it themselves.
  [[nodiscard]] change_fanout& changes() const noexcept { return changes_; }

  // ---- engines shared by the server's shards ------------------------------------------

  /// The sealer and the kept frames of multi round-trip requests.
  [[nodiscard]] multi_round_context& multi_round() const noexcept { return *multi_round_; }
  /// The task store and the running tasks' whereabouts.
  [[nodiscard]] task_engine& tasks() const noexcept { return *tasks_; }

 private:
  /// The catalog as this thread last saw it, or the newer one a registration published
  /// since. The reference stays valid until this thread's next `view()`, so callers copy
  /// out what they need and never call back into the core while holding it.
  [[nodiscard]] const catalog& view() const;
  /// Runs `entry` for notification `method` with `params` (null: none), as
  /// `deliver_notification` says.
  bool deliver_to(const notification_entry& entry, std::string_view method, const ir::json_node* params,
                  const peer_info& peer) const;
  /// Applies `change` to the writers' catalog under the writers' lock, then makes it the
  /// one the next `view()` on each thread publishes.
  void edit(const std::function<void(catalog&)>& change);

  const server& owner_;
  /// Tells this core's views apart from another server's in a thread's cache.
  const std::uint64_t id_;
  std::string modern_result_members_;
  // Shared pointers for their type-erased deleters: the catalog destroys engines whose
  // types it never sees.
  std::shared_ptr<multi_round_context> multi_round_;
  std::shared_ptr<task_engine> tasks_;

  /// Guards `draft_`, `published_` and `published_version_`.
  mutable std::mutex catalog_mutex_;
  catalog draft_;
  /// Bumped (under `catalog_mutex_`) by every edit; a thread whose cached view is of an
  /// older version fetches the new one.
  std::atomic<std::uint64_t> version_{1};
  /// Set once a middleware or a visibility predicate is registered (never cleared: a
  /// later `visible_if(nullptr)` costs the lookup it saves). Why beside the catalog:
  /// every request asks for both, and a server with neither then pays one load
  /// each instead of a catalog lookup.
  std::atomic<bool> any_middleware_{false};
  std::atomic<bool> any_visibility_{false};
  mutable std::shared_ptr<const catalog> published_;
  mutable std::uint64_t published_version_ = 0;

  /// Mutable: telling of a change is not a change of the catalog, and lookups hand out
  /// a const core.
  mutable change_fanout changes_;
};

}  // namespace detail
}  // namespace droid
