// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::testing::client`: an MCP client for a `droid::server` in the same process, for
/// tests, with no socket and no thread of its own.
///
/// Primary adapter: an in-memory transport. It drives the server through the session
/// engine the stdio and HTTP transports use, in either protocol era: a 2025-11-25 session
/// (`initialize`, then requests; the server's questions arrive as requests the client's
/// handlers answer), or 2026-07-28 requests that each carry their `_meta` (the server's
/// questions arrive as an `input_required` result; the client answers them with the same
/// handlers and retries, as a 2026 client does). A test therefore drives one tool, with
/// its `co_await ctx.elicit<T>(...)`, through both eras with the same code.
///
///     asio::io_context io;
///     droid::testing::client c(server, io.get_executor(), {.protocol = droid::testing::era::v2026});
///     c.on("elicitation/create", [](boost::json::object) -> droid::task<boost::json::object> {
///       co_return boost::json::object{{"action", "accept"}, {"content", {{"name", "Ada"}}}};
///     });
///     auto result = droid::testing::run(io, c.call_tool("greet"));
///
/// Affinity: every member is called on `executor`'s thread (a test's io_context).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/io_context.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <droid/adapters/primary/testing/run.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/mcp/schema.hpp>

namespace droid::testing {

/// Which protocol era the client speaks.
enum class era : std::uint8_t {
  v2025,  ///< a 2025-11-25 session: `initialize`, then requests on it
  v2026,  ///< 2026-07-28: each request alone, with its `_meta`
};

/// What the client is and declares.
struct client_options {
  era protocol = era::v2025;  ///< see `era`
  /// The client's capabilities (`sampling`, `elicitation`, `roots`, `extensions`...),
  /// declared in `initialize` (2025) or in each request's `_meta` (2026). Why not derived
  /// from the handlers: a test of a server's refusals needs a client that declares less
  /// than it could answer, or more.
  boost::json::object capabilities{};
  /// `clientInfo`.
  boost::json::object client_info{{"name", "droid-testing"}, {"version", "1.0.0"}};
  /// Rounds one 2026 request may take (each answers the server's questions and retries)
  /// before the client gives up with an error: a server that asks forever would
  /// otherwise hang the test.
  std::uint32_t max_rounds = 16;
  /// Who the client is to the server, as an authenticating transport would say: its
  /// principal (the session is bound to it, and each request carries it), its address and
  /// the headers the server forwards. Null: nobody in particular, as on stdio.
  std::shared_ptr<const request_origin> origin{};
};

/// A JSON-RPC error the server answered a request with.
class rpc_error : public std::runtime_error {
 public:
  /// `code` and `message` as answered; `data` the error's `data`, or null.
  rpc_error(std::int64_t code, const std::string& message, boost::json::value data)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}
  /// The JSON-RPC error code (-32602, -32021, ...).
  [[nodiscard]] std::int64_t code() const noexcept { return code_; }
  /// `error.data`, or null.
  [[nodiscard]] const boost::json::value& data() const noexcept { return data_; }

 private:
  std::int64_t code_;
  boost::json::value data_;
};

/// A request the test cancelled (`client::cancel`), or a task that ended cancelled: the
/// server sends no answer to a cancelled request, so its call ends with this instead.
class request_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How one `call_tool` is sent, besides its arguments.
struct call_options {
  /// Sent as `_meta.progressToken`: the tool's progress notifications carry it
  /// (`client::progress`). Empty: no progress asked for.
  std::string progress_token{};
};

/// A notification the server sent.
struct notification {
  std::string method{};          ///< `notifications/progress`, ...
  boost::json::object params{};  ///< its params (empty when it had none)
};

/// An in-process MCP client of one server (see the file comment).
///
/// Lifetime: the server outlives the client; the client outlives the tasks it returned.
class client {
 public:
  /// Answers a request the server sends the client (`sampling/createMessage`,
  /// `elicitation/create`, `roots/list`): its params in, the result out. A handler that
  /// throws `rpc_error` answers with that error; any other exception with -32603.
  using handler = std::function<task<boost::json::object>(boost::json::object params)>;

  /// A client of `srv` whose messages are handled on `executor`. Nothing is sent yet.
  client(server& srv, asio::any_io_executor executor, client_options options = {});
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Sets what answers the server's requests of `method`; without one, the client
  /// answers -32601, as a client that does not serve the method would.
  void on(std::string method, handler h);

  /// 2025: `initialize` and `notifications/initialized`, returning the initialize result
  /// (the session is then open). 2026: `server/discover`'s result. Requests made before
  /// it are sent without it (2025 refuses them, as a server must).
  task<boost::json::object> connect();

  /// Sends request `method` with `params` and returns its result once every round is
  /// over (2026: the server's questions answered by the handlers, the request retried).
  /// Throws `rpc_error` for an error answer. In 2026 the result keeps `resultType` and
  /// the server's `_meta`.
  task<boost::json::object> request(std::string method, boost::json::object params = {});

  /// `tools/call` of `name` with `arguments`: the CallToolResult (a tool's own failure is
  /// `isError: true` in it, not an exception).
  task<boost::json::object> call_tool(std::string name, boost::json::object arguments = {});
  /// The same with the arguments as a described struct.
  template <class Args>
    requires detail::described_struct<Args>
  task<boost::json::object> call_tool(std::string name, const Args& arguments) {
    return call_tool(std::move(name), to_json_value(arguments).as_object());
  }
  /// The same with `options` (a progress token).
  task<boost::json::object> call_tool(std::string name, boost::json::object arguments, call_options options);
  /// Every tool the server lists, every page followed.
  task<boost::json::array> list_tools();
  /// `resources/read` of `uri`: the ReadResourceResult.
  task<boost::json::object> read_resource(std::string uri);
  /// `prompts/get` of `name` with `arguments`: the GetPromptResult.
  task<boost::json::object> get_prompt(std::string name, boost::json::object arguments = {});

  // ---- tasks (docs/tasks.md) ------------------------------------------------------
  /// `tools/call` of `name` asking for a task (`params.task`, with `ttl` when not 0; in
  /// 2026 the tasks extension is declared for it): the task object the server answered
  /// with (`taskId`, `status`, ...). A tool that does not run as a task answers its result
  /// instead, which this returns as it is (no `taskId`).
  task<boost::json::object> start_task(std::string name, boost::json::object arguments = {},
                                       std::chrono::milliseconds ttl = std::chrono::milliseconds(0));
  /// `tasks/get`: the task as it is now.
  task<boost::json::object> get_task(std::string task_id);
  /// The task's result once it has ended: 2025 `tasks/result` (which waits, and carries
  /// the task's questions to the handlers); 2026 `tasks/get` polled every `poll`, its
  /// questions answered by the handlers through `tasks/update`. A task that failed
  /// throws `rpc_error` with its error; one cancelled throws `request_cancelled`.
  task<boost::json::object> task_result(std::string task_id,
                                        std::chrono::milliseconds poll = std::chrono::milliseconds(1));
  /// `tasks/cancel`.
  task<boost::json::object> cancel_task(std::string task_id);

  // ---- cancellation and progress -----------------------------------------------------
  /// Ids of the requests sent and not yet answered, oldest first.
  [[nodiscard]] std::vector<std::int64_t> pending() const;
  /// Cancels request `id` as a client does (`notifications/cancelled`); the call waiting
  /// for it throws `request_cancelled` (the server answers a cancelled request with
  /// nothing). Nothing happens for an id not pending.
  void cancel(std::int64_t id, std::string reason = "cancelled by the test");
  /// The params of every `notifications/progress` that carried `token`, oldest first.
  [[nodiscard]] std::vector<boost::json::object> progress(std::string_view token) const;

  /// Sends notification `method` to the server.
  void notify(std::string method, boost::json::object params = {});

  /// Every notification the server sent so far, oldest first.
  [[nodiscard]] const std::vector<notification>& notifications() const noexcept;
  /// How many of the server's questions the handlers answered (2025 requests, 2026
  /// `inputRequests` entries).
  [[nodiscard]] std::size_t questions_answered() const noexcept;

  /// Ends the session (2025): the server cancels what is still running. Idempotent; the
  /// destructor does it too.
  void close();

 private:
  class impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace droid::testing
