// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::session`: one client's MCP conversation in the 2025 protocol era.
///
/// Application layer, transport-neutral and free of I/O: a transport decodes bytes into
/// `ir::message`s, calls `receive`, and supplies an `outbound` for what goes back. That
/// makes every rule here (lifecycle, duplicate ids, cancellation) testable by feeding
/// messages and reading what was sent, with no socket or pipe.
///
///     transport ---- receive(message) ---->  session  -- lifecycle, in-flight ids
///         ^                                     |     -- dispatch: ping, tools/*
///         |                                     v
///         +------ outbound::send(text) ----  spawned tool tasks (on the executor)
///
/// The session is the 2025 layer: `initialize`, negotiated version, log level and
/// subscriptions. What a request *does*, and the machinery of serving it, belong to the
/// request runner beneath (request_runner.hpp), which a 2026-07-28 request uses with no
/// session at all; a 2026 request arriving on a session's connection (stdio carries
/// both eras) is handed to the same runner with its own view of the client.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/any_io_executor.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid {

class server;

/// The versions `initialize` may negotiate, newest first (2026-07-28 has no handshake).
inline constexpr const auto& supported_versions = legacy_versions;

/// The version to answer for a client that requested `requested`: the same when we
/// speak it, otherwise our latest legacy one (the spec's rule: the client then decides
/// whether to continue).
[[nodiscard]] std::string_view negotiate_version(std::string_view requested) noexcept;

/// What `initialize` is answered with, computed without keeping a session.
struct initialize_answer {
  /// The client as it declared itself, at the negotiated version.
  peer_info peer{};
  /// The `InitializeResult` JSON text.
  std::string result{};
  /// Set when the params were unusable: the -32602 message.
  std::optional<std::string> error{};
};

/// Reads `initialize` params and builds the answer. Why outside the session: a
/// stateless HTTP server answers `initialize` without creating anything that outlives
/// the POST.
[[nodiscard]] initialize_answer answer_initialize(const server& srv, ir::raw_json params);

/// What a 2025 session remembers between requests, as plain data.
///
/// Why it exists: a session of a server that runs as several instances must outlive the
/// instance that opened it. The transport stores this (in Redis) whenever it changes,
/// and another instance makes the session anew from it (`session::restore`) when the
/// first is gone. Requests in flight and questions waiting for the client are not here:
/// they are frames, which stay where they run.
struct session_state {
  /// The negotiated version ("2025-11-25", ...).
  std::string protocol_version{};
  boost::json::object client_info{};   ///< `clientInfo` as sent in `initialize`
  boost::json::object capabilities{};  ///< `capabilities` as sent in `initialize`
  std::optional<log_level> min_log_level{};  ///< from `logging/setLevel`, if it came
  std::vector<std::string> subscriptions{};  ///< URIs of `resources/subscribe`, sorted
  std::string principal{};  ///< whom the session belongs to (`principal::key()`)
  /// `initialize` was answered with the tools capability (so tools/list_changed may be
  /// sent).
  bool tools_advertised = false;
};

/// One client's conversation: lifecycle state, requests in flight, and their tasks.
///
/// Why a class of its own (and not per-request state on the transport): the 2025 era
/// remembers, for the whole conversation, what `initialize` declared, the log level, the
/// subscriptions, and the peer's in-flight ids (the runner's table, kept as long as the
/// session), whatever stream each request arrived on.
/// Invariants: at most one in-flight request per peer id; a cancelled or closed request
/// gets no response; nothing is sent after `close()`.
/// Affinity: every member function runs on the session's executor (its shard); spawned
/// tool tasks run there too, so nothing here takes a lock.
/// Lifetime: created with `create` and shared: each running tool holds its runner alive
/// until it completes. The `server` must outlive it.
class session : public std::enable_shared_from_this<session> {
 public:
  /// A session serving `srv`, running tools on `executor`, sending through `out`, for
  /// the authenticated `principal` (`principal::key()`; empty: none), to which its tasks
  /// are bound. The transport checks that later requests come from the same principal.
  [[nodiscard]] static std::shared_ptr<session> create(server& srv, asio::any_io_executor executor,
                                                       std::shared_ptr<outbound> out, std::string principal = {});
  /// An initialized session made from `state` (another instance's, see `session_state`):
  /// it serves requests at once, as the session that `state` was taken from would have.
  [[nodiscard]] static std::shared_ptr<session> restore(server& srv, asio::any_io_executor executor,
                                                        std::shared_ptr<outbound> out, session_state state);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Handles one decoded message from the peer. Whatever answers it (its response, and
  /// notifications from its tool) goes to `stream`, or to the session's own outbound when
  /// `stream` is null; `stream->finish()` is called once the request is over. `origin`:
  /// where the message came from (its principal, address, headers), for the tool it
  /// reaches; or null.
  void receive(ir::message message, std::shared_ptr<outbound> stream = nullptr,
               std::shared_ptr<const request_origin> origin = nullptr);
  /// Answers a message the decoder refused (when JSON-RPC says to answer it).
  void reject(const ir::rejection& why);
  /// Cancels the peer's request `id` as if the peer had sent `notifications/cancelled`:
  /// its tool's stop token is requested and no response will be sent. Why: a transport
  /// that loses the only connection a request could be answered on (a non-resumable
  /// stream) must release the tool and whatever it waits on.
  void cancel(const ir::request_id& id);

  /// Ends the session: every in-flight request is cancelled (tools see their stop token
  /// requested), and nothing more is sent. Idempotent.
  void close();

  /// Requests currently being served.
  [[nodiscard]] std::size_t in_flight() const noexcept;
  /// True once the client's `initialize` has been answered.
  [[nodiscard]] bool is_initialized() const noexcept;
  /// True once the session has ended (`close()`).
  [[nodiscard]] bool is_closed() const noexcept;
  /// What the client declared in `initialize`.
  [[nodiscard]] const peer_info& peer() const noexcept;
  /// Where the session's latest request came from (null before any, and on stdio).
  /// Why kept: a change to what the server offers is told only to sessions that can see
  /// the entry (`server::visible_if`), which may depend on the caller's token. Affinity:
  /// the session's shard.
  [[nodiscard]] std::shared_ptr<const request_origin> last_origin() const noexcept;
  /// The shard executor the session runs on.
  [[nodiscard]] const asio::any_io_executor& executor() const noexcept;
  /// Responses from the peer that matched no request of ours (dropped, for diagnostics).
  [[nodiscard]] std::size_t dropped_responses() const noexcept;
  /// True when the client subscribed to `uri` (`resources/subscribe`).
  [[nodiscard]] bool is_subscribed(std::string_view uri) const;
  /// Server-to-client requests waiting for the peer's answer.
  [[nodiscard]] std::size_t outstanding_exchanges() const noexcept;

  /// Sends a notification that concerns no particular request (list_changed) on the
  /// session's own outbound; dropped before initialization, after close, or when there
  /// is no such outbound (HTTP with no GET stream open).
  void notify(std::string_view method, std::string params_json = {});

  /// What the session remembers (see `session_state`); meaningful once initialized.
  [[nodiscard]] session_state state() const;
  /// Calls `f` on the session's shard each time `state()` changes: `initialize` answered,
  /// a new log level, a subscription added or removed. Why: a transport that shares the
  /// session with other instances writes the state out then, and only then.
  void on_state_change(std::function<void()> f);

  /// Replaces the session's own outbound (HTTP: the standalone GET stream, or null).
  void set_outbound(std::shared_ptr<outbound> out);

  /// The implementation; opaque.
  struct impl;

 private:
  explicit session(std::unique_ptr<impl> p);
  /// Hands a peer's answer to the exchange waiting for it, or drops it.
  void route_answer(ir::message msg);
  std::unique_ptr<impl> impl_;
};

}  // namespace droid
