// SPDX-License-Identifier: BSL-1.0
/// @file
/// `json_answer`: the outbound of a request answered with one JSON document.
///
/// Primary adapter, private.
///
///     connection (shard i) --receive(msg, answer)--> session or runner (shard i)
///            |                                             |
///            +-- co_await answer.done() <-- finish() ------+  (no post when the tool
///                                                              answered without suspending)
///
///     connection (shard i) --post: receive(msg, answer)--> session (shard j)
///            |                                                  |
///            +-- co_await answer.done() <-- post <-- finish() --+  (two posts in all)
#pragma once

#include <coroutine>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <asio/io_context.hpp>

#include <droid/application/server/outbound.hpp>

namespace droid::http::detail {

/// Where the engine puts the answer of a request that gets one JSON document.
///
/// Why not a `logical_stream` with a `response_sink`, as every other response: those
/// two exist for what a JSON answer never needs (events recorded for a resume, a queue
/// of events written one by one, a stream that outlives its connection), and cost four
/// allocations, two hand-offs through lambdas and a queue per request
/// (docs/benchmarks.md, "Where a request's time goes"). Here the answer is a string the
/// connection reads when the request is over. What the connection writes is what
/// `serve_json` would have: the last message sent (notifications before it have nowhere
/// to go in one document), 202 when none was, the status of a refusal for a limit.
///
/// Two placements. *Here*: the engine runs on the connection's shard (the usual case: a
/// client's connections follow its session), everything happens on one thread, and a
/// tool that answers without suspending costs no post at all. *Remote*: the session
/// lives on another shard (a proxy's pooled connection carries many clients' sessions),
/// the engine's calls come from that shard, and `finish` posts the end to the
/// connection's shard once: the request costs two posts in all (there and back), where
/// a sink cost one per event and one for the end, each taking the other shard's
/// scheduler lock while its thread takes it too.
/// Affinity: `send`, `refuse_with_status` and `finish` on the engine's shard; the rest on
/// the connection's. Until `finish`, only the engine touches the answer; after the post
/// that tells the connection, only the connection does. Lifetime: shared by the
/// connection (until it has written the answer) and the engine (until the request is
/// over).
class json_answer final : public outbound, public std::enable_shared_from_this<json_answer> {
 public:
  /// `home`: the connection's io_context, where a connection waiting for the end is
  /// resumed. `refusal`: why a tool may not ask the client a question here (see
  /// `outbound::exchange_refusal`); it must outlive the answer (the transport passes
  /// string literals). `remote`: the engine runs on another shard than `home`'s.
  json_answer(asio::io_context& home, std::string_view refusal, bool remote = false)
      : home_(home), refusal_(refusal), remote_(remote) {}

  void send(std::string message) override {
    if (!ended_) last_ = std::move(message);
  }
  void finish() override;
  void refuse_with_status(int http_status, int retry_after) override {
    if (ended_) return;
    status_ = http_status;
    retry_after_ = retry_after;
  }
  [[nodiscard]] std::string exchange_refusal() const override { return std::string(refusal_); }

  /// Keeps `held` (the request's slots under the server's limits) until the request is
  /// over, and gives them back before the connection can write the answer (a client that
  /// sends its next request at once must find its slot free).
  void hold(std::shared_ptr<const void> held) { held_ = std::move(held); }
  /// The client hung up (the connection's close watch): a waiting connection resumes,
  /// and nothing is written.
  void hang_up() noexcept;

  /// Suspends the connection until the request is over or its client hung up; does not
  /// suspend at all when the engine answered already (most requests).
  struct [[nodiscard]] waiter {
    json_answer& answer;
    bool await_ready() const noexcept { return answer.finished_ || answer.hung_up_; }
    void await_suspend(std::coroutine_handle<> h) noexcept { answer.waiter_ = h; }
    void await_resume() const noexcept {}
  };
  waiter done() noexcept { return {*this}; }

  [[nodiscard]] bool finished() const noexcept { return finished_; }
  [[nodiscard]] bool hung_up() const noexcept { return hung_up_; }
  /// The answer (empty: none was sent, the connection says 202).
  [[nodiscard]] std::string& body() noexcept { return last_; }
  /// The status a refusal for a limit asked for (0: none, 200).
  [[nodiscard]] int status() const noexcept { return status_; }
  /// The Retry-After seconds it asked for (0: one).
  [[nodiscard]] int retry_after() const noexcept { return retry_after_; }

 private:
  /// Resumes a waiting connection through a post: the caller is the engine in the middle
  /// of ending a request, and the connection's next step must not run inside it.
  void wake() noexcept;

  asio::io_context& home_;
  std::string_view refusal_;
  std::shared_ptr<const void> held_;
  std::string last_;
  std::coroutine_handle<> waiter_;
  int status_ = 0;
  int retry_after_ = 0;
  /// The engine's view: the request is over (its shard only).
  bool ended_ = false;
  /// The connection's view: the answer may be written (its shard only; set by `finish`
  /// here, or by the post it makes when the engine is remote).
  bool finished_ = false;
  bool hung_up_ = false;
  const bool remote_;
};

}  // namespace droid::http::detail
