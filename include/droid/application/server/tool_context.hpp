// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::tool_context`: what a running tool can see and do besides computing its result.
///
/// Application layer. A tool receives a `tool_context&` as its first argument. Through
/// it the tool learns it was cancelled (a stop token), reports progress, sleeps without
/// blocking its shard, and reads what the client declared. Messages it sends travel on
/// the stream of the request it serves, before that request's response.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <asio/any_io_executor.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/peer_info.hpp>
#include <droid/domain/mcp/elicitation.hpp>
#include <droid/domain/mcp/sampling.hpp>
#include <droid/application/task.hpp>
#include <droid/domain/ir/request_id.hpp>

namespace droid {

/// Why a server-to-client request produced no result.
struct exchange_error {
  /// `droid::errc::exchange_refused` (the session cannot carry the question: the
  /// message names the setting or capability that would allow it), `cancelled`,
  /// `session_ended`, or `peer_error` (the peer answered with a JSON-RPC error).
  std::error_code condition{};
  /// The peer's JSON-RPC error code, for `peer_error`.
  std::int64_t code = 0;
  /// A sentence for logs and for the tool's own error result.
  std::string message{};
  /// The peer's `error.data` as JSON text, if it sent any.
  std::string data{};
};

/// The outcome of asking the peer something: its answer as a `T`, or why there is none.
///
/// Why a value and not an exception: a declined question, a cancelled call and a client
/// that went away are expected outcomes a tool reacts to (usually by returning an error
/// result), not failures of the tool itself.
template <class T>
class exchange_outcome {
 public:
  exchange_outcome() = default;
  /// An answer.
  explicit exchange_outcome(T v) : value_(std::move(v)), ok_(true) {}
  /// No answer, and why.
  explicit exchange_outcome(exchange_error e) : error_(std::move(e)) {}

  /// True when there is an answer.
  [[nodiscard]] explicit operator bool() const noexcept { return ok_; }
  /// True when there is an answer.
  [[nodiscard]] bool has_value() const noexcept { return ok_; }
  /// The answer. Precondition: `has_value()`.
  [[nodiscard]] const T& value() const noexcept { return value_; }
  /// The answer, to move out of. Precondition: `has_value()`.
  [[nodiscard]] T& value() noexcept { return value_; }
  /// The answer's members. Precondition: `has_value()`.
  [[nodiscard]] const T* operator->() const noexcept { return &value_; }
  /// Why there is no answer. Precondition: `!has_value()`.
  [[nodiscard]] const exchange_error& error() const noexcept { return error_; }

 private:
  T value_{};
  exchange_error error_{};
  bool ok_ = false;
};

/// The outcome of `co_await ctx.exchange(...)`: the peer's `result` as JSON.
using exchange_result = exchange_outcome<boost::json::value>;

/// What the user did with an elicitation.
enum class elicit_action {
  accept,   ///< submitted the form (its content is decoded) or completed the URL flow
  decline,  ///< explicitly said no
  cancel,   ///< dismissed it without choosing
};

/// A form elicitation's answer: the action, and for `accept` the decoded content.
template <class T>
struct elicitation {
  elicit_action action = elicit_action::cancel;  ///< what the user chose
  std::optional<T> content{};  ///< the decoded form, for `accept`
};

struct task_refusal;  // task_store.hpp: a context need not include the store

namespace detail {

struct context_rebind;

/// A suspended exchange as the session's table holds it: whom to resume, and where the
/// answer goes. Lives in the awaiter, so parking a coroutine allocates nothing.
struct exchange_waiter {
  std::coroutine_handle<> handle{};
  exchange_result* slot = nullptr;
};

/// The session-side half of a request in flight, as a tool's context sees it.
///
/// Why an interface: the context must not know the session type (a 2025 session today,
/// a stateless 2026 request later); it only needs "send this notification on my stream".
/// Lifetime: outlives the tool's frame (the session erases it after the frame completes).
class request_channel {
 public:
  virtual void notify(std::string_view method, std::string params_json) = 0;
  /// Writes a diagnostic line to the server's log (`server_options::log`), for a mistake
  /// of the tool's that has no caller to be reported to (a notification it cannot send).
  virtual void log(std::string_view line) = 0;
  /// Ends the current connection of the request's stream, keeping the stream resumable.
  virtual void close_stream() = 0;

  /// What becomes of question `method` before anything is sent: a refusal (with the
  /// setting or capability that would allow it, or "the session ended"), an answer known
  /// already (a 2026-07-28 retry that carries it, or a replay that recorded it), or
  /// nothing: the question must wait (`begin_exchange`). `key` is the name the tool gave
  /// the question, or empty; the channel fills in the name it will go by.
  virtual std::optional<exchange_result> settle_now(std::string_view method, std::string_view params_json,
                                                    std::string& key) = 0;
  /// The id the next question will go by (nothing is recorded yet). Why separate from
  /// `begin_exchange`: the awaiter arms its cancellation with the id before the question
  /// is published, so that nothing of it is touched after publishing.
  virtual std::int64_t mint_exchange_id() = 0;
  /// Records `waiter` under `id` and makes the question known to the peer: a 2025
  /// request is published on this request's stream, a 2026 one becomes an entry of the
  /// request's `inputRequests`. Runs inside `await_suspend`, as its last step.
  virtual void begin_exchange(exchange_waiter& waiter, std::string_view method, std::string_view params_json,
                              std::string key, std::int64_t id) = 0;
  /// Withdraws question `id`: the peer is told (2025: `notifications/cancelled`) and the
  /// waiter resumes with `errc::cancelled`. Callable from any thread (a stop token may be
  /// requested anywhere); the withdrawal itself always happens later, on the request's
  /// shard, so it never resumes a tool off its shard or inside its own `await_suspend`.
  /// A question answered meanwhile is left alone.
  virtual void cancel_exchange(std::int64_t id) = 0;
  /// When the server (not the client) ends this request, its stop token is requested and
  /// its answer is still sent. Why: a `subscriptions/listen` stream the server closes
  /// (shutdown, end of input) ends with a response, so the client can tell a graceful
  /// end from a dropped connection; every other request the server ends falls silent.
  virtual void answer_when_ended() = 0;

  /// The value `tool_context::once` recorded under `key` in an earlier round of this
  /// request (carried in its `requestState`), or null.
  [[nodiscard]] virtual const boost::json::value* recorded_once(std::string_view key) = 0;
  /// Records what `once(key, ...)` produced, so a replay of this request gets it back
  /// instead of running the side effect again.
  virtual void record_once(std::string_view key, const boost::json::value& value) = 0;

  /// Detaches the request's tool into a task (`tool_context::continue_as_task`): the
  /// request is answered with the task and the tool goes on as it. False, with nothing
  /// changed, when the request cannot become one (the client does not accept tasks, the
  /// tool does not support them, it is one already); `refusal` then says why when the
  /// task store turned the task away, or the request cannot carry a task at all.
  virtual bool become_task(task_refusal& refusal) = 0;
  /// The id of the task this tool runs as, or empty.
  [[nodiscard]] virtual std::string_view task_id() const noexcept = 0;
  /// Where the request came from (null: the transport said nothing, as stdio).
  [[nodiscard]] virtual const request_origin* origin() const noexcept { return nullptr; }

 protected:
  ~request_channel() = default;
};
}  // namespace detail

/// Thrown by a tool to end its call with a JSON-RPC error instead of a tool result.
///
/// Why: a tool's failure is usually for the model to read (`isError` content, what any
/// other exception becomes); a failure of the protocol's kind (the server cannot serve
/// the call at all) is for the client, and a task that ends with one is `failed`.
class protocol_error : public std::runtime_error {
 public:
  /// `code` is a JSON-RPC error code (-32603 for an internal error); `data_json`, if
  /// given, the JSON text of `error.data`.
  protocol_error(std::int64_t code, const std::string& message, std::string data_json = {})
      : std::runtime_error(message), code_(code), data_(std::move(data_json)) {}
  /// The JSON-RPC error code of the answer.
  [[nodiscard]] std::int64_t code() const noexcept { return code_; }
  /// The JSON text of `error.data`, or empty.
  [[nodiscard]] const std::string& data() const noexcept { return data_; }

 private:
  std::int64_t code_;
  std::string data_;
};

/// How a question to the client is asked, besides what it asks.
///
///     co_await ctx.elicit<name_form>("What is your name?", "user_name");
///
/// Why constructors and not an aggregate: g++ 12 miscompiles an aggregate temporary
/// passed by value to a coroutine (`ctx.elicit<T>(m, {.key = "k"})` frees the key's
/// storage from the wrong frame); with constructors the same call is safe on every
/// compiler.
class ask_options {
 public:
  ask_options() = default;
  /// A key alone, from a literal: `ctx.list_roots("client_roots")`.
  ask_options(const char* key) : key(key) {}  // NOLINT(google-explicit-constructor): the point is brevity
  /// A key, and an extra token that cancels the question.
  ask_options(std::string key, std::stop_token stop = {}) : key(std::move(key)), stop(std::move(stop)) {}

  /// The question's name in a 2026-07-28 `inputRequests` map, which the client's
  /// `inputResponses` answers by. Empty: the framework names it from the method and the
  /// order in which the tool asks (`elicitation-1`, `sampling-2`, ...), which is stable
  /// from one round of the request to the next. Give one when a client or a test expects
  /// a name; it must be unique within the request. Ignored by 2025 sessions, which send
  /// real requests with ids of their own.
  std::string key{};
  /// An extra token that cancels the question (a deadline of the tool's own).
  std::stop_token stop{};
};

/// An awaitable that completes at once: sending is enqueueing for the stream's writer.
///
/// Why awaitable at all: back-pressure (a slow client) may make it suspend one day, and
/// making tools write `co_await` now means that change breaks nobody.
struct [[nodiscard]] send_awaiter {
  /// Always ready: nothing waits.
  bool await_ready() const noexcept { return true; }
  /// Never called (the awaiter is always ready).
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  /// Nothing to return: the message is queued.
  void await_resume() const noexcept {}
};

/// The awaiter of `tool_context::exchange`: parks the tool until the peer answers, the
/// request is cancelled, or the session ends. In a 2025 session the question is a
/// server request on the request's stream; in a 2026-07-28 request it is an entry of the
/// `input_required` result, and the retry that answers it resumes the same frame.
///
/// Why each step is where it is (docs/architecture.md#the-exchange):
/// - `await_ready` is the path that needs no waiting: a session that cannot carry the
///   question (single JSON answers, stateless 2025 HTTP, a client without the
///   capability, a closed session, a cancelled call) completes at once, and nothing is
///   minted, recorded or published; so does a 2026 question whose answer the retry (or
///   its `requestState`) already carries.
/// - `await_suspend` mints, records, registers the stop callback, then publishes, all on
///   the session's shard, so no other code can see an id that has no waiter; publishing
///   only enqueues for the stream's writer, so nothing can resume the tool before
///   `await_suspend` returns.
/// - The router resumes the tool directly from the table; a stop request (the peer's
///   `notifications/cancelled`, or the tool's own token) takes the entry out first, so a
///   late answer finds nothing and is dropped.
/// Not copyable or movable: the table holds its address.
class [[nodiscard]] exchange_awaiter {
 public:
  /// Cancelled by either token: the call's own and an optional extra one.
  exchange_awaiter(detail::request_channel& channel, std::string method, std::string params_json,
                   std::stop_token call_stop, std::stop_token extra_stop, std::string key = {});
  exchange_awaiter(const exchange_awaiter&) = delete;
  exchange_awaiter& operator=(const exchange_awaiter&) = delete;

  /// Completes at once when the question cannot be asked, or is answered already.
  bool await_ready();
  /// Records the question, then sends it; the tool stays parked until the answer, a
  /// cancellation or the end of the session resumes it.
  // void: the coroutine is parked in the table; publishing cannot fail synchronously.
  void await_suspend(std::coroutine_handle<> h);
  /// The peer's answer, or why there is none.
  exchange_result await_resume();

 private:
  /// Holds what it needs by value: it may run on another thread, and it must not read
  /// the awaiter, whose coroutine may be resuming meanwhile.
  struct canceller {
    detail::request_channel* channel;
    std::int64_t id;
    void operator()() const noexcept;
  };

  detail::request_channel* channel_;
  std::string method_;
  std::string params_;
  /// Why the params cannot be sent, or empty (checked in the constructor, so that no
  /// path, neither a 2025 request nor a 2026 `inputRequests` entry, sees them unchecked).
  std::string params_refusal_;
  std::string key_;
  std::stop_token call_stop_;
  std::stop_token extra_stop_;
  exchange_result result_{};
  detail::exchange_waiter waiter_{};
  std::int64_t id_ = 0;
  std::optional<std::stop_callback<canceller>> on_call_stop_{};
  std::optional<std::stop_callback<canceller>> on_extra_stop_{};
};

/// The W3C trace context a request carried in `_meta` (`traceparent`, `tracestate`,
/// `baggage`; MCP reserves these keys for OpenTelemetry in both eras). Why kept: a tool
/// that calls other services continues the client's trace by passing these on.
struct trace_context {
  std::string traceparent{};  ///< the W3C `traceparent`
  std::string tracestate{};  ///< the W3C `tracestate`
  std::string baggage{};  ///< the W3C `baggage`
  /// True when the request carried none of the three.
  [[nodiscard]] bool empty() const noexcept { return traceparent.empty() && tracestate.empty() && baggage.empty(); }
};

/// The tool's view of the request it is serving.
///
/// Why: a tool needs cancellation, progress and the peer's capabilities, but must not
/// reach into the session (which another thread may own in another era or transport).
/// Affinity: use only from the tool's own coroutine, on the session's shard.
/// Lifetime: valid until the tool's task completes; do not keep it beyond that.
class tool_context {
 public:
  /// Made by the engine for each call; a tool receives it by reference.
  tool_context(detail::request_channel& channel, const peer_info& peer, ir::request_id id,
               std::optional<ir::request_id> progress_token, std::stop_token stop, asio::any_io_executor executor,
               trace_context trace = {})
      : channel_(&channel),
        peer_(&peer),
        id_(std::move(id)),
        progress_token_(std::move(progress_token)),
        stop_(std::move(stop)),
        executor_(std::move(executor)),
        trace_(std::move(trace)) {}

  /// Requested when the peer cancels this request or the session ends. Pass it to
  /// `droid::use_task(token)` to make any Asio operation cancellable.
  [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
  /// True once `stop_token()` has been requested.
  [[nodiscard]] bool is_cancelled() const noexcept { return stop_.stop_requested(); }

  /// The id of the request being served, as the peer sent it (in a 2026-07-28 request
  /// that took several rounds, the id of the round being served).
  [[nodiscard]] const ir::request_id& request_id() const noexcept { return id_; }
  /// What the client declared: version, identity, capabilities.
  [[nodiscard]] const peer_info& peer() const noexcept { return *peer_; }
  /// The session's shard executor, for timers and sockets the tool creates.
  [[nodiscard]] const asio::any_io_executor& executor() const noexcept { return executor_; }
  /// The trace context the request carried in `_meta` (empty when it carried none).
  [[nodiscard]] const trace_context& trace() const noexcept { return trace_; }
  /// Where the request came from: its principal, the peer's address, the headers the
  /// server passes on (`http::options::forwarded_headers`). Null on stdio.
  [[nodiscard]] const request_origin* origin() const noexcept { return channel_->origin(); }
  /// Who the request is authenticated as (subject, scopes, claims); null when the
  /// transport authenticates nobody (stdio, HTTP without `http::options::auth`).
  [[nodiscard]] const droid::principal* principal() const noexcept {
    const request_origin* o = origin();
    return o ? o->principal.get() : nullptr;
  }

  /// Sends `notifications/progress` if the client asked for progress (it sent a
  /// `progressToken`); otherwise does nothing. `progress` should increase with each call.
  send_awaiter progress(double progress, std::optional<double> total = std::nullopt, std::string_view message = {});

  /// Suspends for `duration` without blocking the shard. Returns an empty error code when
  /// the time elapsed, or `droid::errc::cancelled` when the request was cancelled first.
  [[nodiscard]] task<std::error_code> sleep(std::chrono::steady_clock::duration duration);

  /// Sends a log message (`notifications/message`) about this request, on its stream,
  /// if the client asked for messages of this level or above (`logging/setLevel`);
  /// otherwise nothing. `text` becomes the message's `data`.
  send_awaiter log(log_level level, std::string_view text, std::string_view logger = {});
  /// The same with structured details as `data`. (An object, not any JSON value: a
  /// string literal must pick the text overload unambiguously.)
  send_awaiter log(log_level level, boost::json::object data, std::string_view logger = {});

  /// Sends an arbitrary notification related to this request (advanced use).
  /// `params_json` must be one JSON object (or empty, for none). Text that is not is
  /// dropped with a line in the server's log; text with line breaks is compacted first,
  /// because a raw newline would end the frame on stdio and the `data:` line on SSE.
  send_awaiter notify(std::string_view method, std::string params_json);

  /// Asks the client a question (`sampling/createMessage`, `elicitation/create`,
  /// `roots/list`, ...) and resumes with its answer. The request travels on the stream
  /// of the request this tool serves. `params_json` is the request's params as JSON text:
  /// one object, compacted when it has line breaks (see `notify`); other text completes
  /// the exchange at once with `droid::errc::exchange_refused`, and nothing is sent.
  /// Cancelled when this call is cancelled (the peer is then told, with
  /// `notifications/cancelled`) or when `stop` (an extra token, e.g. a deadline of the
  /// tool's own) is requested.
  [[nodiscard]] exchange_awaiter exchange(std::string method, std::string params_json = "{}",
                                          std::stop_token stop = {});
  /// The same with params as a JSON object.
  [[nodiscard]] exchange_awaiter exchange(std::string method, const boost::json::object& params,
                                          std::stop_token stop = {});
  /// The same with a name for the question (see `ask_options::key`).
  [[nodiscard]] exchange_awaiter exchange(std::string method, std::string params_json, ask_options options);
  /// The same with params as a JSON object and a name for the question.
  [[nodiscard]] exchange_awaiter exchange(std::string method, const boost::json::object& params,
                                          ask_options options);

  /// Asks the client's model to complete `request` (`sampling/createMessage`). Refused
  /// when the client did not declare `sampling` (or `sampling.tools`, when the request
  /// carries tools).
  [[nodiscard]] task<exchange_outcome<sampling_result>> sample(sampling_request request, std::stop_token stop = {});
  /// The same with a name for the question (see `ask_options::key`).
  [[nodiscard]] task<exchange_outcome<sampling_result>> sample(sampling_request request, ask_options options);

  /// Asks the client for its roots (`roots/list`). Refused when it did not declare `roots`.
  [[nodiscard]] task<exchange_outcome<std::vector<root>>> list_roots(std::stop_token stop = {});
  /// The same with a name for the question (see `ask_options::key`).
  [[nodiscard]] task<exchange_outcome<std::vector<root>>> list_roots(ask_options options);

  /// Asks the user to fill in a form (`elicitation/create`, form mode) whose
  /// `requestedSchema` comes from the described flat struct `T` (see elicitation.hpp),
  /// and decodes an accepted answer into `T`. Decline and cancel are distinct actions,
  /// not errors; an accepted answer that does not fit `T` is a `peer_error`.
  template <class T>
  [[nodiscard]] task<exchange_outcome<elicitation<T>>> elicit(std::string message, std::stop_token stop = {}) {
    return elicit<T>(std::move(message), ask_options(std::string(), std::move(stop)));
  }
  /// The same with a name for the question (see `ask_options::key`).
  template <class T>
  [[nodiscard]] task<exchange_outcome<elicitation<T>>> elicit(std::string message, ask_options options);

  /// Sends the user to `url` for something the client must not see (a login, a payment:
  /// URL-mode elicitation, 2025-11-25) and returns what the user chose. Refused unless
  /// the client declared `elicitation.url`. Call `elicitation_complete(id)` when the
  /// out-of-band flow finishes.
  [[nodiscard]] task<exchange_outcome<elicit_action>> elicit_url(std::string message, std::string url,
                                                                 std::string elicitation_id,
                                                                 std::stop_token stop = {});
  /// The same with a name for the question (see `ask_options::key`).
  [[nodiscard]] task<exchange_outcome<elicit_action>> elicit_url(std::string message, std::string url,
                                                                 std::string elicitation_id, ask_options options);
  /// Runs `effect` once per request, however many rounds the request takes, and returns
  /// what it produced. Why: a 2026-07-28 request whose frame is gone (the server
  /// restarted, the retry reached another instance) is replayed from the start with the
  /// answers the client gave so far; a side effect in the tool (charging a card, sending
  /// a mail) would run again. `once` records `effect`'s value under `key` in the
  /// request's sealed `requestState`, and a replay gets the value back without running
  /// `effect`. Outside a 2026 request (or before any question) it simply runs `effect`.
  /// `key` must be unique within the request; the value must be JSON (it travels in
  /// the state, so keep it small: a receipt id, not a document). A cancelled request
  /// (or a frame let go because its retry did not come) never runs `effect`: `once`
  /// then returns null, so an abandoned tool that carries on cannot repeat the effect.
  template <class Effect>
  [[nodiscard]] task<boost::json::value> once(std::string key, Effect effect) {
    if (const boost::json::value* recorded = channel_->recorded_once(key)) co_return *recorded;
    if (stop_.stop_requested()) co_return boost::json::value();
    boost::json::value value = co_await effect();
    channel_->record_once(key, value);
    co_return value;
  }

  /// Goes on as a task, for a tool registered with `task_start::when_asked` (a tool with
  /// `task_start::at_once` is one before it runs). The request is answered with the
  /// task's id; the client polls it, and what the tool returns becomes the task's result.
  /// Returns false, and the tool simply goes on in its request, when the client does not
  /// accept tasks or the server holds as many as it may. Why the tool decides: it may
  /// ask the client something first, within the request, and decide afterwards.
  [[nodiscard]] task<bool> continue_as_task();
  /// The id of the task this tool runs as, or empty when it serves a plain request.
  [[nodiscard]] std::string_view task_id() const noexcept { return channel_->task_id(); }

  /// Sends `notifications/elicitation/complete` for a URL-mode elicitation.
  send_awaiter elicitation_complete(std::string_view elicitation_id);

  /// Closes the connection currently carrying this request's event stream, without
  /// ending the request: the client reconnects (GET with `Last-Event-ID`) and receives
  /// what follows, the response included. Why: long calls should not pin a connection
  /// (and proxies cut long ones anyway); MCP 2025-11-25 lets the server poll this way.
  /// Does nothing on transports without resumable streams (stdio, JSON answers).
  void close_stream() { channel_->close_stream(); }

 private:
  // A 2026-07-28 retry resumes the frame that asked: the request it then serves has the
  // retry's id and progress token (request_runner.cpp).
  friend struct detail::context_rebind;

  detail::request_channel* channel_;
  const peer_info* peer_;
  ir::request_id id_;
  std::optional<ir::request_id> progress_token_;
  std::stop_token stop_;
  asio::any_io_executor executor_;
  trace_context trace_;
};

/// The same context under the names of the other handlers that receive it. Why one type:
/// a resource read, a prompt and a completion are requests too, with the same
/// cancellation, logging, progress and questions to the client; why the names: a reader of
/// `[](droid::resource_context&)` knows at once what the handler is for. `tool_context`
/// works everywhere these do.
using resource_context = tool_context;
using prompt_context = tool_context;  ///< see `resource_context`
using completion_context = tool_context;  ///< see `resource_context`

namespace detail {
/// Reads an elicitation result's `action`; false when it is none of the three.
bool parse_elicit_action(const boost::json::value& result, elicit_action& action);
/// Where `peer` declared its capabilities, for refusals: "in initialize" (a 2025
/// session) or "in the request's _meta" (2026-07-28).
[[nodiscard]] std::string_view where_declared(const peer_info& peer) noexcept;
/// The `peer_error` for an answer that parsed as JSON but not as MCP says.
exchange_error malformed_answer(std::string what);
/// A refusal when the client declared elicitation but not its form mode (2025-11-25:
/// `{"url":{}}` alone means URL mode only; `{}` is the older spelling of form mode).
std::optional<exchange_error> form_elicitation_refusal(const peer_info& peer);
}  // namespace detail

template <class T>
task<exchange_outcome<elicitation<T>>> tool_context::elicit(std::string message, ask_options options) {
  using outcome = exchange_outcome<elicitation<T>>;
  if (auto refused = detail::form_elicitation_refusal(*peer_)) co_return outcome(std::move(*refused));
  boost::json::object params{{"message", message}, {"requestedSchema", elicitation_schema<T>()}};
  exchange_result answer = co_await exchange("elicitation/create", params, std::move(options));
  if (!answer) co_return outcome(answer.error());
  elicitation<T> result;
  if (!detail::parse_elicit_action(answer.value(), result.action))
    co_return outcome(detail::malformed_answer("the elicitation action is not accept, decline or cancel"));
  if (result.action == elicit_action::accept) {
    const boost::json::value* content = answer.value().as_object().if_contains("content");
    T decoded{};
    std::string error;
    if (!content || !decode_elicited(*content, decoded, error))
      co_return outcome(detail::malformed_answer("the accepted content does not fit the form: " +
                                                 (content ? error : std::string("no content"))));
    result.content = std::move(decoded);
  }
  co_return outcome(std::move(result));
}

}  // namespace droid
