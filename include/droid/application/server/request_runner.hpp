// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::request_runner`: serves admitted requests, whatever protocol era they belong to.
///
/// Application layer, transport-neutral. Everything between "this is a request to
/// serve" and "its answer is on its stream" happens here, once for both eras:
///
///     2025 session (lifecycle, log level,  ----+
///                   subscriptions)            |   serve(key, message, stream, peer)
///     2026 request (_meta checked by          +-------------------------------------> request_runner
///                   admit_modern)  -----------+                                        | in-flight table
///                                                                                      | exchange table
///                                                      dispatcher (what a method does) <+ spawn + reply framing
///
/// - admission: one in-flight record per key; a duplicate is refused with `id: null`;
/// - cancellation: `cancel(key)` requests the tool's stop token; the request then sends
///   nothing more (MCP: the canceller expects nothing);
/// - the spawn and exception policy: a tool's exception becomes its `isError` result
///   (in the dispatcher); any other handler's becomes -32603 plus a log line;
/// - reply framing: results of a 2026 request carry `resultType` and the server's
///   identity, whichever handler made them;
/// - the request channel a tool's context talks to, and the table of questions it asked
///   the client: server requests in a 2025 session; in a 2026-07-28 request, rounds of
///   `input_required` whose retry resumes the same frame (rounds.cpp, docs/exchange.md).
///
/// ## Why the table key is separate from the request id
/// Where one peer owns the id space (a 2025 session, a stdio connection) the key is the
/// peer's own id, which is what `notifications/cancelled` names. Where requests of
/// unrelated clients meet (stateless HTTP) two of them may both be id 1; the transport
/// then keys each by a number of its own and the answer still carries the peer's id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid {

class server;
struct runner_call;

/// Serves requests on one shard: their records, their tasks, their answers.
///
/// Why shared: every spawned request holds its runner alive until it has answered, so a
/// transport may drop its reference (a stdio connection at EOF) while tools unwind.
/// Invariants: at most one in-flight record per key; a cancelled request or a closed
/// runner sends nothing more for it; every stream given for one request is finished
/// exactly once.
/// Affinity: every member function runs on the runner's executor, as do the tasks.
/// Lifetime: the `server` must outlive the runner.
class request_runner : public std::enable_shared_from_this<request_runner> {
 public:
  /// A runner for `srv`'s requests on `executor` (shared: its coroutines keep it alive).
  [[nodiscard]] static std::shared_ptr<request_runner> create(server& srv, asio::any_io_executor executor);
  ~request_runner();
  request_runner(const request_runner&) = delete;
  request_runner& operator=(const request_runner&) = delete;

  /// Serves the request `msg` under `key`. Its notifications and answer go to `stream`;
  /// when `finish_stream`, `stream->finish()` is called once the request is over
  /// (answered, refused, cancelled). `peer` is a session's view of the client and must
  /// outlive the request (the session keeps it, and updates the log level in place).
  /// `origin`: where this request came from (its principal, address, headers), or null.
  void serve(ir::request_id key, ir::message msg, std::shared_ptr<outbound> stream, bool finish_stream,
             const peer_info& peer, std::shared_ptr<const request_origin> origin = {});
  /// The same with a view of the client that belongs to this request alone (a 2026
  /// request's `_meta`, a stateless HTTP request's headers).
  void serve(ir::request_id key, ir::message msg, std::shared_ptr<outbound> stream, bool finish_stream,
             peer_info&& peer);
  /// The same for request `id` of `method` whose `params` the caller has parsed already
  /// (null: none), from inside its `ir::visit_json` callback. Why: a 2026 request's params
  /// are read for its `_meta` (and over HTTP its routing headers) before it is served; a
  /// second parse for the handler would double the cost of reading them. `bytes_in` is
  /// the request message's size, for the server's `request_observer`; `source` the
  /// message the params were parsed from, whose text a middleware may ask for (null:
  /// written from the tree if asked).
  void serve_parsed(ir::request_id key, std::string_view method, const ir::request_id& id,
                    const ir::json_node* params, std::shared_ptr<outbound> stream, bool finish_stream,
                    peer_info&& peer, std::size_t bytes_in = 0, const ir::message* source = nullptr);

  /// Writes a JSON-RPC error for request `id` (none: `id: null`) to `to`, unless closed.
  /// Returns its size in bytes (for the server's `request_observer`).
  std::size_t send_error(outbound* to, const std::optional<ir::request_id>& id, ir::errc code,
                         std::string_view text, std::string_view data_json = {}) const;
  /// Writes a result for request `id`, framed for `peer`'s revision (a 2026 result gains
  /// `resultType` and the server's identity), unless closed. Returns its size in bytes.
  std::size_t send_result(outbound* to, const ir::request_id& id, std::string_view result_json,
                          const peer_info& peer) const;

  /// Cancels the request `key` as `notifications/cancelled` would: its tool's stop token
  /// is requested and nothing more is sent for it. Unknown keys are ignored.
  void cancel(const ir::request_id& key);
  /// Ends everything: waiting questions resume with "the session ended", every request
  /// is cancelled, nothing more is sent. Idempotent.
  void close();
  [[nodiscard]] bool is_closed() const noexcept;  ///< true once `close()` ran

  /// Hands the peer's answer (a response or error) to the question waiting for its id.
  /// Answers that match nothing are dropped and counted, never dispatched.
  void route_answer(const ir::message& msg);

  /// Ends the 2026-07-28 frame `frame` kept on this runner for a retry (engine internal:
  /// another shard posts it when the server-wide bound lets the frame go, or when a retry
  /// that reached that shard replays instead). Unknown frames are ignored.
  void let_go_frame(std::uint64_t frame);

  /// Forgets where a retry served by another shard went, once it is over (engine
  /// internal: that shard posts it when the retry's stream finishes).
  void forget_forwarded(const ir::request_id& key);

  /// Applies answers a client gave in `tasks/update` to the questions task `id` waits on
  /// here, and stops task `id`'s tool once `tasks/cancel` has recorded it cancelled
  /// (engine internal: whichever shard served the request posts these to the runner that
  /// runs the task). Unknown tasks are ignored.
  void answer_task(const std::string& id, std::vector<std::pair<std::string, boost::json::value>> answers);
  /// Stops task `id`'s tool (see `answer_task`).
  void stop_task(const std::string& id);
  /// Where a task sends what concerns no request (its progress, its status): the
  /// session's own stream, which the session keeps current (null: none).
  void set_standalone(std::shared_ptr<outbound> out);
  /// Keeps `owner` alive as long as this runner. Why: a frame the runner spawned holds
  /// the runner, and may resume after its session was destroyed (a task's tool, or a
  /// cancelled call whose stop is still on its way); the peer that `serve` was given by
  /// reference must live as long, so the session hands its peer's owner here.
  void keep_alive_with(std::shared_ptr<const void> owner);

  /// Requests being served.
  [[nodiscard]] std::size_t in_flight() const noexcept;
  /// Requests that became tasks whose tools still run here.
  [[nodiscard]] std::size_t running_tasks() const noexcept;
  /// Frames of 2026-07-28 requests kept for their retry (suspended tools that asked the
  /// client something and answered `input_required`).
  [[nodiscard]] std::size_t kept_frames() const noexcept;
  /// True when a request is being served under `key`.
  [[nodiscard]] bool is_in_flight(const ir::request_id& key) const;
  /// Questions to the peer waiting for an answer.
  [[nodiscard]] std::size_t outstanding_exchanges() const noexcept;
  /// Answers from the peer that matched no question (dropped, for diagnostics).
  [[nodiscard]] std::size_t dropped_responses() const noexcept;
  /// Where every member function and task runs.
  [[nodiscard]] const asio::any_io_executor& executor() const noexcept;

  /// The implementation; opaque (public only so the records in its translation unit can
  /// name it).
  struct impl;

 private:
  friend struct runner_call;  // a request's record posts its round's answer (rounds.cpp)
  explicit request_runner(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace droid
