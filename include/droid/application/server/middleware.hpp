// SPDX-License-Identifier: BSL-1.0
/// @file
/// Middleware: an ordered chain of coroutines around every request the engine serves,
/// and of plain functions around every notification a client sends.
///
/// Application layer, free of I/O. A middleware reads the request (method, name, params,
/// the caller's principal, address and era), and either refuses it with a JSON-RPC error
/// (and, over HTTP, the status that goes with it) or passes it on with
/// `co_await next(req)`, then reads or rewrites what came back:
///
///     server.use([](droid::middleware::request& req, droid::middleware::next next)
///                    -> droid::task<droid::middleware::response> {
///       if (req.method() == "tools/call" && req.name() == "delete_all" && req.principal().empty())
///         co_return droid::middleware::response::error(-32001, "sign in first");
///       droid::middleware::response r = co_await next(req);
///       // ... time it, log it, rewrite r.result() ...
///       co_return r;
///     });
///
/// Where the chain sits (docs/middleware.md): after the transport's checks (TLS, the
/// Origin check, authentication and scopes, the 2026-07-28 routing headers, size and
/// rate limits of its own) and after the engine's admission (duplicate ids, a 2026
/// retry's sealed state), before the method itself and before a call becomes a task.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <droid/application/detail/reply.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid {

struct request_origin;
namespace ir {
class json_node;
class message;
}  // namespace ir

namespace middleware {

class request;
class response;
class next;

/// One middleware: takes the request and the rest of the chain, returns the answer.
using handler = std::function<task<response>(request&, next)>;
/// A middleware that only lets a request on or refuses it (an allow-list, a limiter):
/// a refusal, or nothing to let the request on.
///
/// Why a kind of its own: a guard needs no code after the method, so it runs as a plain
/// call, with no coroutine frame; a server whose chain holds guards alone serves its
/// requests as fast as one without middleware, but for the guards' own work.
using guard = std::function<std::optional<response>(request&)>;

namespace detail {
/// What the chain hands to its last step (the runner's dispatch), type-erased so that
/// this header does not name the engine.
struct terminal {
  void* host = nullptr;
  std::variant<droid::detail::reply, task<droid::detail::reply>> (*run)(void* host, request& req) = nullptr;
};
/// One link of a chain: a middleware or a guard (exactly one is set).
struct link {
  handler around;
  guard check;
};
/// A server's chain, shared by every request that runs through it.
struct chain {
  std::vector<link> links;
  /// Every link is a guard: the engine runs them at admission and serves the request as
  /// without middleware.
  bool guards_only = true;
};
struct access;
}  // namespace detail

/// A request as middleware sees it: what it is, who sent it, and its params.
///
/// Why params are text first: most middleware never reads them, and the engine parses
/// the text once for the method anyway; `params()` parses them into an object only for
/// a middleware that asks, and `set_params` replaces them for every later step.
/// Lifetime: owned by the chain's frame for the whole request; the views it returns are
/// valid until the request's answer is sent (or `set_params` for `params_text`).
class request {
 public:
  /// The JSON-RPC method (`tools/call`, `resources/read`, a custom method, ...).
  [[nodiscard]] std::string_view method() const noexcept { return method_; }
  /// The tool (`tools/call`), resource URI (`resources/read`) or prompt (`prompts/get`)
  /// the request names; empty for other methods.
  [[nodiscard]] std::string_view name() const;
  /// The request's id, as the client gave it.
  [[nodiscard]] const ir::request_id& id() const noexcept { return *id_; }
  /// The client as this request sees it: its protocol version and era, `clientInfo`,
  /// capabilities and principal.
  [[nodiscard]] const peer_info& peer() const noexcept { return *peer_; }
  /// True for a 2026-07-28 request (no session).
  [[nodiscard]] bool modern() const noexcept { return peer_->is_modern(); }
  /// Who the transport authenticated the caller as (`principal::key()`); empty without
  /// authentication.
  [[nodiscard]] std::string_view principal() const noexcept { return peer_->principal; }
  /// Where the request came from (the principal with its scopes, the client's address,
  /// the headers the server forwards); null when the transport knows nothing (stdio).
  [[nodiscard]] const request_origin* origin() const noexcept { return origin_; }
  /// The client's address as text ("127.0.0.1"), empty when unknown (stdio).
  [[nodiscard]] std::string_view address() const noexcept;
  /// Who this request counts against: the principal when authenticated, the client's
  /// address otherwise, empty when neither is known (the one client of a stdio server).
  [[nodiscard]] std::string_view tenant() const noexcept {
    const std::string_view who = principal();
    return who.empty() ? address() : who;
  }

  /// The params as JSON text; empty when the request has none. Copied out of the message
  /// on first use.
  [[nodiscard]] std::string_view params_text() const;
  /// The params as an object (empty when the request has none), parsed on first use.
  [[nodiscard]] const boost::json::object& params();
  /// Replaces the params every later middleware and the method see. `name()` follows
  /// the new params.
  void set_params(boost::json::object params);

 private:
  friend struct detail::access;
  request() = default;
 public:
  /// Moved only by the engine, before the request is admitted.
  request(request&&) noexcept = default;
  /// Moved only by the engine, before the request is admitted.
  request& operator=(request&&) noexcept = default;
  /// Tells the engine's admission that the request is gone, if it is still watched.
  ~request();

 private:

  /// Makes `params_text_` hold the params (from the message, the given text, or the
  /// tree), once.
  void take_text() const;

  std::string method_;
  /// Found on first use (most guards never ask), or when admission ends.
  mutable std::string name_;
  mutable bool name_ready_ = false;
  /// Why the params are kept as where to find them rather than as text: a middleware
  /// that passes the request on before the message is gone (the usual one: a check, a
  /// count, a timer) has the method served from the tree the request arrived as, with no
  /// copy and no second parse. The views below are valid while `live_` points here (the
  /// request's admission); after it the text is in `params_text_`.
  const ir::json_node* tree_ = nullptr;
  const ir::message* message_ = nullptr;
  std::string_view given_text_{};
  request** live_ = nullptr;
  bool has_params_ = false;
  mutable bool text_ready_ = false;
  mutable std::string params_text_;
  std::optional<boost::json::object> parsed_;
  const ir::request_id* id_ = nullptr;
  const peer_info* peer_ = nullptr;
  const request_origin* origin_ = nullptr;
  std::shared_ptr<const detail::chain> chain_;
  detail::terminal terminal_;
};

/// The answer to a request: a result or a JSON-RPC error.
///
/// Why it wraps the engine's own answer: a result the middleware does not read stays
/// the text the method wrote (a tool's result framed once, as without middleware); it is
/// parsed only when `result()` is asked for, and written again only after `set_result`.
class response {
 public:
  /// An empty result (`{}`).
  response();
  /// Takes `other`'s answer.
  response(response&& other) noexcept;
  /// Takes `other`'s answer.
  response& operator=(response&& other) noexcept;
  /// Frees the answer.
  ~response();

  /// A result: `result` is the method's result object (for `tools/call`, a
  /// `CallToolResult`: `content`, maybe `structuredContent` and `isError`).
  [[nodiscard]] static response result(boost::json::object result);
  /// A JSON-RPC error; `data` (when not null) is its `error.data`.
  [[nodiscard]] static response error(std::int64_t code, std::string message, const boost::json::value& data = nullptr);
  /// A JSON-RPC error that refuses the request for a limit: over HTTP the response is
  /// `http_status` (429 for the caller's share, 503 for a full server) with Retry-After
  /// `retry_after` (rounded up to whole seconds, at least one), when it has not started;
  /// other transports send the error alone. `data` (when not null) is its `error.data`.
  [[nodiscard]] static response refuse(int http_status, std::int64_t code, std::string message,
                                       std::chrono::milliseconds retry_after = std::chrono::seconds(1),
                                       const boost::json::value& data = nullptr);

  /// True for a JSON-RPC error.
  [[nodiscard]] bool is_error() const noexcept { return reply_.is_error(); }
  /// The error's code (0 for a result).
  [[nodiscard]] std::int64_t error_code() const noexcept { return reply_.code; }
  /// The error's message ("" for a result).
  [[nodiscard]] std::string_view error_message() const noexcept { return reply_.message(); }
  /// The error's `data` as JSON text ("" when none).
  [[nodiscard]] std::string_view error_data() const noexcept { return reply_.data(); }
  /// The HTTP status an error is carried with (0: the usual 200).
  [[nodiscard]] int http_status() const noexcept { return reply_.http_status(); }
  /// With `http_status`: the Retry-After it goes with (0: none given).
  [[nodiscard]] std::chrono::seconds retry_after() const noexcept { return std::chrono::seconds(reply_.retry_after()); }
  /// A `tools/call` result that reports the tool's own failure (`isError: true`).
  [[nodiscard]] bool is_tool_error() const noexcept { return reply_.tool_error; }

  /// The result object, parsed on first use (empty for an error). Members the protocol
  /// era adds to every result (2026-07-28's `resultType` and the server's identity in
  /// `_meta`) are not part of it: they are added again when the answer is written.
  [[nodiscard]] const boost::json::object& result();
  /// Replaces the result (an error becomes this result).
  void set_result(boost::json::object result);

 private:
  friend struct detail::access;
  friend class next;
  explicit response(droid::detail::reply r) noexcept;

  droid::detail::reply reply_;
  std::optional<boost::json::object> parsed_;
};

/// The rest of the chain after the middleware that holds it.
///
/// Why a value and not a function: it is two words (the chain, and where in it), so a
/// middleware may keep it, call it once, or not at all (a refusal), without an allocation.
class next {
 public:
  /// What `next(req)` gives: `co_await` it for the answer.
  ///
  /// Why an awaitable and not a `task<response>`: a task is a coroutine frame, and every
  /// request would pay one per middleware for nothing but handing an answer up; this
  /// holds the answer, or the work that will give it, and awaits that directly.
  class [[nodiscard]] awaitable {
   public:
    /// True when the answer is there already (a refusal, a list, any method that
    /// answers without waiting).
    [[nodiscard]] bool await_ready() const noexcept { return state_.index() == 0; }
    /// Runs the rest of the chain, resuming `awaiting` when it has answered.
    bool await_suspend(std::coroutine_handle<> awaiting) noexcept;
    /// The answer (rethrows what the rest of the chain threw).
    response await_resume();

   private:
    friend class next;
    template <std::size_t I, class T>
    awaitable(std::in_place_index_t<I> which, T&& value) : state_(which, std::forward<T>(value)) {}
    std::variant<response, task<droid::detail::reply>, task<response>> state_;
  };

  /// Passes `req` on (to the next middleware, or to the method itself) and returns its
  /// answer once it has one (`co_await next(req)`). The rest of the chain starts when
  /// this is called. Called at most once per request: a second call answers -32603
  /// instead of running the method twice.
  awaitable operator()(request& req) const;

 private:
  friend struct detail::access;
  next(const detail::chain* chain, std::size_t index) noexcept : chain_(chain), index_(index) {}
  const detail::chain* chain_;
  std::size_t index_;
};

/// A notification a client sent, as notification middleware sees it.
struct notification {
  std::string_view method{};  ///< `notifications/cancelled`, an extension's, ...
  std::string_view params_text{};  ///< its params as JSON text; empty when none
  const peer_info* peer = nullptr;  ///< the client (a session's view, or the request's own)
  const request_origin* origin = nullptr;  ///< where it came from; null when unknown
};

/// One notification middleware: calls `pass()` to let the notification on (to the next
/// one, then to the engine), or returns without calling it to drop it. Why not a
/// coroutine: a notification has no answer to wait for, and it is acted on in order
/// with the messages around it (a cancellation must not overtake its request).
using notification_handler = std::function<void(const notification&, const std::function<void()>& pass)>;

}  // namespace middleware
}  // namespace droid
