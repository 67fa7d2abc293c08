// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request runner's records: one `runner_call` per request being served (or frame
/// kept for a 2026-07-28 retry), the carrier of a 2025 request's questions, and the
/// runner's state around them.
///
/// Application layer, private. Shared by the files that make up the runner, one per
/// concern: engine/request_runner.cpp (admission, spawning, cancellation, a 2025
/// request's questions), era2026/round_questions.cpp (the 2026-07-28 rounds: questions
/// that become `input_required`, frames kept for the retry, replay) and
/// tasks/running_task.cpp (a request that becomes a task, and the tasks/* methods). Why
/// split: each is a concern of its own (state, sealing, second tables, timers) that a
/// reader of admission should not wade through.
///
/// The one file of the engine that names the eras and tasks (docs/architecture.md, rule
/// 11): the record holds each kind of question carrier in place, defined in its module
/// (era2026/round_questions.hpp, tasks/running_task.hpp), so that a request allocates
/// nothing for the carrier its era needs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/steady_timer.hpp>

#include <boost/json/value.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/request_id.hpp>

#include "exchange_table.hpp"
#include "middleware_chain.hpp"
#include "dispatcher.hpp"
#include "application/era2026/round_questions.hpp"
#include "application/tasks/running_task.hpp"
#include "application/observe/observation.hpp"
#include "application/catalog/server_core.hpp"

namespace droid {

struct runner_call;

namespace detail {

/// The outcome of a question that is refused or withdrawn before any answer: why, as
/// the tool will read it.
inline exchange_result refusal(errc condition, std::string why) {
  return exchange_result(exchange_error{make_error_code(condition), 0, std::move(why), {}});
}

/// Rewrites what a resumed tool's context says about the request it serves (the
/// retry's id and progress token). Why a friend and not a setter: only the runner may
/// move a frame to another request.
struct context_rebind {
  static void to(tool_context& c, ir::request_id id, std::optional<ir::request_id> progress) {
    c.id_ = std::move(id);
    c.progress_token_ = std::move(progress);
  }
};

/// A 2025 request's questions: JSON-RPC requests of ours on the request's own stream,
/// answered by the client's response carrying the id (request_runner.cpp).
struct wire_questions final : question_carrier {
  explicit wire_questions(runner_call& c) : call(c) {}
  std::optional<exchange_result> settle(std::string_view method, std::string_view params, std::string& key) override;
  void ask(std::int64_t id, std::string_view method, std::string_view params, std::string key) override;
  std::optional<exchange_result> withdraw(std::int64_t id) override;
  bool answered_by_id() const noexcept override { return true; }
  runner_call& call;
};

}  // namespace detail

/// One request being served: its stop source, its view of the client, and the context
/// its tool sees. Lives in the in-flight table's node, under the request's key, so
/// admitting a request allocates once. A 2026-07-28 request whose tool waits for the
/// client's answers moves (the same node) to the kept table until the retry comes.
struct runner_call final : detail::request_channel {
  runner_call(request_runner& r, request_runner::impl& st, ir::request_id i, std::shared_ptr<outbound> o,
              bool finish)
      : owner(r), state(st), id(std::move(i)), stream(std::move(o)), finish_stream(finish) {}
  runner_call(const runner_call&) = delete;
  runner_call& operator=(const runner_call&) = delete;
  void notify(std::string_view method, std::string params_json) override;
  void log(std::string_view line) override;
  void close_stream() override {
    if (stream && !cancelled) stream->interrupt();
  }
  std::optional<exchange_result> settle_now(std::string_view method, std::string_view params_json,
                                            std::string& key) override {
    return carrier->settle(method, params_json, key);
  }
  std::int64_t mint_exchange_id() override;
  void begin_exchange(detail::exchange_waiter& waiter, std::string_view method, std::string_view params_json,
                      std::string key, std::int64_t id) override;
  void cancel_exchange(std::int64_t exchange_id) override;
  void answer_when_ended() override { graceful = true; }
  const boost::json::value* recorded_once(std::string_view key) override;
  void record_once(std::string_view key, const boost::json::value& value) override;
  bool become_task(task_refusal& refusal) override;
  std::string_view task_id() const noexcept override { return task ? std::string_view(task->id) : std::string_view(); }
  const request_origin* origin() const noexcept override {
    if (origin_of_request) return origin_of_request.get();
    return peer ? peer->origin.get() : nullptr;
  }

  /// A task's notifications (tasks/running_task.cpp): on the stream of a `tasks/result` that
  /// waits, or the session's own.
  void notify_task(std::string_view method, std::string_view params_json);
  detail::round_memory& memory();
  /// Answers the round with every outstanding question, once the tool has asked what it
  /// asks in one go (posted; round_questions.cpp).
  void schedule_flush();

  request_runner& owner;
  request_runner::impl& state;
  /// The id the peer gave the request, which its answer carries.
  ir::request_id id;
  /// Where this request's notifications and response go (the POST's stream on HTTP).
  std::shared_ptr<outbound> stream;
  std::stop_source stop;
  bool cancelled = false;
  /// Ended by the runner's close, it still answers (see `answer_when_ended`).
  bool graceful = false;
  /// The stream was given for this request alone and ends with it.
  bool finish_stream = false;
  /// The client as this request sees it: a session's (`peer` points there) or its own.
  const peer_info* peer = nullptr;
  std::optional<peer_info> own_peer;
  /// Where a 2025 session's request came from (a request with a view of its own keeps
  /// it in `own_peer`).
  std::shared_ptr<const request_origin> origin_of_request;
  std::optional<tool_context> context;

  /// How this request's questions travel: chosen at admission by its era (`wire_side`
  /// or `round_side`), and the task's own once it becomes one. The exchange table keeps,
  /// with each question, the carrier that took it.
  detail::wire_questions wire_side{*this};
  detail::round_questions round_side{*this};
  detail::question_carrier* carrier = &wire_side;

  /// The key of this record in its table (in the node itself, so it stays valid while
  /// the record lives, whichever table holds it and whatever it is keyed by).
  const ir::request_id* key_in_table = nullptr;

  // ---- tasks (tasks/running_task.cpp) ----------------------------------------------
  /// Whether this `tools/call` may become a task (filled by the dispatcher).
  detail::task_offer offer;
  /// Set once it is one: the record then lives in the runner's task table, under the
  /// task's id, until the tool ends.
  std::unique_ptr<detail::running_task> task;

  /// What the server's `request_observer` is told at this request's end (null: no
  /// observer, or its end was reported already).
  std::unique_ptr<detail::observation> observed;
  /// Reports this request's end to the observer, if one watches it.
  void observe_end(request_outcome outcome, std::int64_t code = 0, std::size_t bytes_out = 0) {
    if (observed) {
      observed->end(outcome, code, bytes_out);
      observed.reset();
    }
  }
};

struct request_runner::impl {
  impl(server& s, asio::any_io_executor e) : srv(s), executor(std::move(e)), dispatch(s), rounds(detail::core(s).multi_round()) {}

  using table = std::unordered_map<ir::request_id, runner_call>;

  void send(outbound* to, std::string text) const {
    if (!closed && to) to->send(std::move(text));
  }
  /// Returns the bytes sent (what the observer is told).
  /// `modern`: the request is of the 2026-07-28 era (its results carry that era's
  /// members). A flag, not the peer: a request answered at once is out of the table,
  /// peer and all, before its answer is framed.
  std::size_t send_reply(outbound* to, const ir::request_id& id, detail::reply&& r, bool modern) const;
  void frame_result(std::string& buf, const ir::request_id& id, std::string_view result, bool modern) const;
  /// Returns the bytes sent.
  std::size_t send_error_to(outbound* to, const ir::request_id& id, ir::errc code, std::string_view text) const;

  /// What admission learnt about a 2026 retry before dispatching it.
  struct retry_plan {
    /// The reply when the retry is refused (malformed input, bad state): sent, done.
    std::optional<std::string> refusal;
    /// The memory a replay starts with (null: a first round, nothing to remember).
    std::unique_ptr<detail::round_memory> memory;
    std::uint32_t round = 0;
    /// `request_binding` of the request, when the plan needed it (a state to check, a
    /// replay); otherwise `admit` takes it later, only for a request still running.
    std::optional<std::uint64_t> binding;
    /// The kept frame the retry resumes, taken out of the kept table (empty: replay).
    table::node_type resume;
    /// The runner (another shard) that keeps the frame the retry resumes: the retry is
    /// handed to it (null: not so).
    std::shared_ptr<request_runner> forward_to;
    std::uint64_t frame = 0;
    /// The state carries no transcript: without its frame it cannot be replayed.
    bool frame_only = false;
  };
  /// `peer`: a peer the caller keeps (a 2025 session's), or else `own_peer`: the
  /// request's own, which the admission moves from into the record (or into the resumed
  /// or forwarded request). Why a pointer and not an optional by value: each by-value
  /// step was a move and a destruction of every member of a `peer_info` per request.
  void admit(request_runner& self, ir::request_id key, const ir::message& msg, std::shared_ptr<outbound> stream,
             bool finish_stream, const peer_info* peer, peer_info* own_peer,
             std::shared_ptr<const request_origin> origin = {});
  /// `preplanned`: the retry was planned already (a retry another shard handed over
  /// whose frame is gone), so its state is not opened again.
  void admit(request_runner& self, ir::request_id key, std::string_view method, const ir::request_id& id,
             const ir::json_node* params, std::shared_ptr<outbound> stream, bool finish_stream,
             const peer_info* peer, peer_info* own_peer,
             std::optional<retry_plan> preplanned = std::nullopt, std::size_t bytes_in = 0,
             std::shared_ptr<const request_origin> origin = {}, const ir::message* source = nullptr,
             std::string_view params_text = {});
  /// Serves `record`'s request of `method` with `params` (the dispatch, or the runner's
  /// own task methods): what admission does when no middleware runs, and the last step
  /// of the chain when one does.
  std::variant<detail::reply, task<detail::reply>> serve_method(std::string_view method, const ir::json_node* params,
                                                                runner_call& record);
  /// Puts `record`'s request through the server's middleware chain (`req` was built at
  /// admission), ending in `serve_method`; a tool's result a middleware rewrote is
  /// framed again for the request, as the tool's own was.
  task<detail::reply> through_chain(middleware::request req, runner_call& record, middleware::request** live);
  /// The chain's last step: `serve_method` with the params `req` holds now.
  std::variant<detail::reply, task<detail::reply>> serve_chained(middleware::request& req, runner_call& record);
  /// Ends a spawned request (a tool, or the chain): its record leaves its table and its
  /// answer (or its task's end) goes out.
  static void finish_spawned(const std::shared_ptr<request_runner>& self, const ir::request_id* key_in_node,
                             runner_call* rec, std::exception_ptr failure, detail::reply r);

  // ---- era2026/round_questions.cpp -------------------------------------------------
  /// Reads a 2026 request's `inputResponses` and `requestState`, opens and checks the
  /// state, and finds the frame it names.
  retry_plan plan_retry(request_runner& self, std::string_view method, const ir::json_node* params,
                        const peer_info& peer);
  /// Hands a kept frame the retry's stream and id, and the answers it waits for.
  void resume(request_runner& self, table::node_type node, ir::request_id key, const ir::request_id& id,
              std::optional<ir::request_id> progress, std::shared_ptr<outbound> stream, bool finish_stream,
              peer_info&& peer, detail::round_memory& retry);
  /// Hands a retry to `plan.forward_to`, the shard that keeps its frame, and remembers
  /// where it went so that cancelling `key` here reaches it.
  void forward(request_runner& self, retry_plan& plan, ir::request_id key, std::string_view method,
               const ir::request_id& id, const ir::json_node* params, std::shared_ptr<outbound> stream,
               bool finish_stream, peer_info&& peer);
  /// On the shard that keeps `frame`: serves a retry `forward` handed over, resuming the
  /// frame if it is still there at that round, or serving it afresh (a replay) if not.
  void take_forwarded(request_runner& self, std::uint64_t frame, std::uint32_t round, ir::request_id key,
                      const std::string& method, const ir::request_id& id, const std::string& params_text,
                      std::shared_ptr<outbound> stream, bool finish_stream, peer_info&& peer,
                      std::unique_ptr<detail::round_memory> memory, bool frame_only);
  /// Answers the round: `input_required` with every outstanding question (posted, so
  /// that questions asked in one go, `when_all`, travel together).
  void flush(const ir::request_id& key, runner_call* expected);
  /// Moves an answered round's record to the kept table until its retry or its expiry.
  void keep(table::node_type node);
  /// Ends a kept frame (its stop token fires; it unwinds and is freed).
  void let_go(std::uint64_t frame);
  void let_go_all();

  // ---- tasks/running_task.cpp ------------------------------------------------------
  /// Who `peer` is to the task store: a 2025 session (this runner) and its principal,
  /// or a 2026 request's principal alone.
  [[nodiscard]] std::string task_owner(const peer_info& peer) const;
  /// Serves `tasks/get`, `tasks/update`, `tasks/cancel`, `tasks/result`, `tasks/list`.
  std::variant<detail::reply, task<detail::reply>> serve_task_method(std::string_view method,
                                                                      const ir::json_node* params, runner_call& rec);
  /// `tasks/result` of a task still running here: waits for its end (2025).
  task<detail::reply> wait_for_task(std::string id, std::string owner, runner_call& rec);
  /// The tool of a task ended: its result or error goes to the store, and whoever waits
  /// for it is woken.
  void finish_task(runner_call& c, std::exception_ptr failure, detail::reply&& r);
  /// Applies answers of `tasks/update` that the store took (posted by whichever shard
  /// served it).
  void answer_task(const std::string& id, std::vector<std::pair<std::string, boost::json::value>>& answers);
  /// Stops task `id`'s tool, whose end the store records already (cancelled by
  /// `tasks/cancel`, failed when its time to live passed): the tool's own end no longer
  /// changes it.
  void stop_task(const std::string& id);
  /// Sends `notifications/tasks/status` (2025, optional in MCP) on the session's stream.
  void announce(const detail::running_task& t);
  /// Ends every task on this runner (it is closing): a 2025 session's tasks go with it,
  /// a 2026 request's are marked failed.
  void end_tasks();

  server& srv;
  asio::any_io_executor executor;
  detail::dispatcher dispatch;
  detail::multi_round_context& rounds;
  bool closed = false;
  /// The requests being served. Node-based on purpose: a call's address (its tool's
  /// context points at it) and its key (its task reads it) must not move when the
  /// table grows.
  table in_flight;
  /// Frames of 2026 requests whose round was answered `input_required`, by frame name
  /// (as an integer key), until the retry resumes them or they expire. The same node
  /// type as `in_flight`: a frame moves between the two without moving in memory.
  table kept;
  /// Retries served by another shard's runner (which keeps their frames), by the key
  /// given here, until their stream finishes: `cancel` on this runner reaches them.
  std::unordered_map<ir::request_id, std::weak_ptr<request_runner>> forwarded;

  /// Every question this runner's tools wait on, whichever way it travels.
  detail::exchange_table exchanges;

  /// Requests that became tasks, by task id, while their tools run. Same node type as
  /// `in_flight`: a request moves here without moving in memory.
  table tasks;
  /// The request whose first step `admit` is running, or null: `finish_spawned` clears
  /// it when that request ends in it. Why: a request still running once admitted needs
  /// its binding taken from params that live only until then, and one that ended (most
  /// do) needs none (`admit`).
  runner_call* admitting = nullptr;
  /// The session's own stream (2025: the GET stream, or stdio), for what a task sends
  /// when no `tasks/result` waits: progress, logs, status notifications.
  std::shared_ptr<outbound> standalone;
  /// What references given to `serve` point into (the session's peer): see
  /// `request_runner::keep_alive_with`.
  std::shared_ptr<const void> referenced;
  /// Names this runner in 2025 task owners (a session's tasks are its own).
  std::uint64_t serial = 0;
};

/// Calls `finish()` on a request's stream when it goes out of scope, so that every exit
/// path of a request (answered, refused, cancelled, thrown through) ends its stream.
struct stream_finisher {
  outbound* to;
  ~stream_finisher() {
    if (to) to->finish();
  }
};

}  // namespace droid
