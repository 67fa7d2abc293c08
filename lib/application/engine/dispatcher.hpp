// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request pipeline: what each MCP method does, independent of sessions.
///
/// Application layer, private. The 2025 session (lifecycle, the peer's ids, streams)
/// sits on top of this and feeds it requests it has already admitted; a stateless front
/// for the 2026-07-28 era can feed it the same way, with the peer's info taken from each
/// request's `_meta` instead of from `initialize`.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>

#include <asio/any_io_executor.hpp>

#include <droid/application/detail/reply.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid::detail {

/// Everything a request handler may use besides its parameters.
///
/// Lifetime: the references belong to the caller's per-request record (or the session),
/// which outlives any task the dispatcher returns; so a task may keep `id` by reference.
/// `context` is constructed here for tools and must stay put. Why references: this is
/// built for every request, and copies of the id, the executor and the token cost more
/// than the dispatch of a small tools/call around them.
/// Whether a `tools/call` may become a task, as the dispatcher found (`allowed`), and
/// the time to live its client asked for (0: the server's).
struct task_offer {
  bool allowed = false;
  std::chrono::milliseconds ttl{0};
};

struct request_scope {
  const peer_info& peer;
  request_channel& channel;
  const ir::request_id& id;
  /// Moved into the context; a handler that builds no context leaves it.
  std::stop_token stop;
  const asio::any_io_executor& executor;
  std::optional<tool_context>& context;
  /// Where a `tools/call` says whether it may become a task (null: it may not).
  task_offer* offer = nullptr;
};

/// Maps methods to handlers. Stateless apart from the server it reads.
class dispatcher {
 public:
  explicit dispatcher(server& srv) noexcept : server_(srv) {}

  /// Handles `method`: an immediate reply, or a task that computes one (tools). The task
  /// never throws: a tool's exception becomes its `isError` result. What a method
  /// answers, and which methods exist, follow `scope.peer.revision`.
  ///
  /// `params` is the request's parsed `params` (null when absent or `null`), valid for
  /// this call only: a handler reads what it needs now (a tool's arguments are decoded
  /// here) and its task keeps values, never nodes. Why parsed by the caller: the runner
  /// (or a transport that read the params for checks of its own) parses them once for
  /// everything, instead of each handler parsing the text again.
  [[nodiscard]] std::variant<reply, task<reply>> dispatch(std::string_view method, const ir::json_node* params,
                                                          request_scope scope);

  /// True when this server serves `method` to a client of `revision` now: the method
  /// exists in that revision and what it needs is registered (resources, prompts,
  /// completers). Why asked before dispatch: over HTTP a 2026 request for a method that
  /// does not exist is answered 404, which must be known before the response starts.
  [[nodiscard]] static bool serves(const server& srv, std::string_view method, protocol_revision revision);
  /// True for the task methods (`tasks/get` and the rest), which the runner serves
  /// itself: they concern its task table.
  [[nodiscard]] static bool is_task_method(std::string_view method) noexcept;
  /// The custom method `method` names (`server::method`), or null for a built-in or a
  /// module's method (and for a name nothing serves). Why a built-in's name is told apart
  /// first: the admission of every 2026 request asks, and a tools/call then pays one
  /// comparison instead of a catalog lookup.
  [[nodiscard]] static std::shared_ptr<const method_entry> custom_method(const server& srv, std::string_view method);

 private:
  reply list_tools(const ir::json_node* params, const request_scope& scope);
  reply list_resources(const ir::json_node* params, bool templates, const request_scope& scope);
  reply list_prompts(const ir::json_node* params, const request_scope& scope);
  reply discover(const request_scope& scope);
  std::variant<reply, task<reply>> get_prompt(const ir::json_node* params, request_scope& scope);
  std::variant<reply, task<reply>> complete(const ir::json_node* params, request_scope& scope);
  std::variant<reply, task<reply>> read_resource(const ir::json_node* params, request_scope& scope);
  std::variant<reply, task<reply>> call_method(std::shared_ptr<const method_entry> entry, const ir::json_node* params,
                                               request_scope& scope);
  std::variant<reply, task<reply>> call_tool(const ir::json_node* params, request_scope& scope);
  std::optional<reply> offer_task(const tool_entry& tool, const ir::json_node* asked, request_scope& scope,
                                  bool& detach_first);

  server& server_;
};

/// A method that another module of the application serves through the dispatcher
/// (2026-07-28's `subscriptions/listen`).
///
/// Why a table: the dispatcher routes every method, but the engine must not know the
/// eras and tasks that extend it (docs/architecture.md, rule 11). A module's method is
/// an entry the composition root lists (lib/application/module_methods.cpp), not a case
/// here; a new module adds an entry and the engine does not change.
struct module_method {
  std::string_view name;
  /// Whether `srv` serves the method to a client of `revision` now.
  bool (*exists)(const server& srv, protocol_revision revision);
  /// Serves it: `params` is an object or null (the dispatcher checked it).
  std::variant<reply, task<reply>> (*serve)(server& srv, const ir::json_node* params, request_scope& scope);
};
/// Every module method (lib/application/module_methods.cpp).
[[nodiscard]] std::span<const module_method> module_methods() noexcept;

/// `{"requiredCapabilities":{"extensions":{"<extension>":{}}}}`: the `data` of a -32021
/// refusal for want of an extension (the tasks extension, a custom method's), so a client
/// can read what to declare.
[[nodiscard]] std::string missing_extension_data(std::string_view extension);

/// The id a `progressToken` value names (an integer or a string), or nothing.
[[nodiscard]] std::optional<ir::request_id> progress_token(const ir::json_node& token);
/// The `progressToken` in a request's `_meta`, if it has one.
[[nodiscard]] std::optional<ir::request_id> progress_token_of(const ir::json_node* params);

/// Opaque pagination cursors: `next` names where the next page starts. Why opaque: MCP
/// says clients must not parse cursors, and an encoding we own lets us change paging
/// without breaking anyone.
[[nodiscard]] std::string encode_cursor(std::string_view next);
/// Returns false for a cursor we did not make.
[[nodiscard]] bool decode_cursor(std::string_view cursor, std::string& next);

}  // namespace droid::detail
