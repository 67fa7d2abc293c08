// SPDX-License-Identifier: BSL-1.0
/// @file
/// The exchange table: every question a tool has asked its client and still waits for,
/// by the id minted for it, with the coroutine to resume and the carrier that took the
/// question to the client.
///
/// Application layer, private: the engine's heart. A tool's `co_await ctx.exchange(...)`
/// parks its coroutine here; whoever learns the answer (the task that parses the
/// client's response, a 2026 retry carrying `inputResponses`, a `tasks/update`) resumes
/// it from here, directly, on the runner's shard; a stop withdraws it; a session that
/// ends releases what only it could answer. How a question travels is not this table's
/// business: a `question_carrier` does that, one per kind of question (a 2025 request
/// on the request's stream, a 2026 `input_required` round, a task's input), so the table
/// knows no era and no task, and a new way to ask is a new carrier, not a new branch.
///
///     tool --co_await--> exchange_awaiter --settle?--> carrier (refuse, or answer at once)
///                              |--mint, park--> exchange_table --ask--> carrier --> client
///     client's answer --> route_answer / resume --> the tool goes on, same frame
///
/// Affinity: one table per runner, used on that runner's shard only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <droid/application/server/tool_context.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/message.hpp>

namespace droid::detail {

/// How one kind of question reaches the client, and how it is withdrawn.
///
/// Why an interface: the three ways a question travels (a 2025 server-to-client request,
/// a 2026 `input_required` round, a task's `input_required` status) differ in everything
/// but what the table needs of them, and the table must not grow an `if` per way.
/// Implementations are the carriers of one request; they outlive every question they
/// carry (a question ends before its request does).
class question_carrier {
 public:
  /// Before anything is parked: an outcome for the tool now (a refusal naming why, or an
  /// answer the request brought already, as a 2026 retry does), or nothing when the
  /// question must be asked. May choose the question's `key`.
  [[nodiscard]] virtual std::optional<exchange_result> settle(std::string_view method, std::string_view params,
                                                              std::string& key) = 0;
  /// Takes question `id`, parked already, towards the client. `method` and `params` live
  /// as long as the question (they are the awaiter's).
  virtual void ask(std::int64_t id, std::string_view method, std::string_view params, std::string key) = 0;
  /// The tool gave question `id` up (its request was cancelled): the carrier forgets it
  /// and tells the client if the client must know, and says what the tool reads. Nothing
  /// when the carrier holds no such question (the table then leaves it as it is).
  [[nodiscard]] virtual std::optional<exchange_result> withdraw(std::int64_t id) = 0;
  /// Question `id` was answered by the client's response (`exchange_table::route_answer`).
  virtual void answered(std::int64_t id) { (void)id; }
  /// True when the client answers with a JSON-RPC response carrying the id: only such
  /// questions may be settled by `route_answer`. Why it matters: a peer must not be able
  /// to answer, by guessing an id, a question that travels in a 2026 round, whose answer
  /// comes checked against the question in the retry.
  [[nodiscard]] virtual bool answered_by_id() const noexcept = 0;

 protected:
  ~question_carrier() = default;
};

/// The questions waiting for an answer, by minted id.
///
/// Why a table of its own: minting, parking, resuming, withdrawing and releasing are
/// one invariant (a parked coroutine is resumed exactly once, from outside the table,
/// after its entry is gone) that five files kept by hand before.
class exchange_table {
 public:
  /// Ids start at 2^40: they share one JSON-RPC channel with the peer's own ids, and a
  /// minted id that met one of the peer's would make the in-flight check report a
  /// duplicate the peer never sent. Peers count from 0 or 1; 2^40 is far from both and
  /// still exact in a JavaScript number.
  static constexpr std::int64_t first_id = std::int64_t{1} << 40;

  /// A fresh id for a question.
  [[nodiscard]] std::int64_t mint() noexcept { return next_++; }
  /// Parks `waiter` under `id` until an answer, a withdrawal or the end; `carrier` took
  /// (or is about to take) the question to the client.
  void park(std::int64_t id, exchange_waiter& waiter, question_carrier& carrier);
  /// Takes question `id` out and resumes its tool with `outcome`. False when nothing
  /// waits under `id` (answered, withdrawn, never asked). The tool runs inside this call
  /// and may end its request: the caller must hold what owns the table, and touch
  /// nothing of the request after.
  bool resume(std::int64_t id, exchange_result outcome);
  /// The client's answer `msg` (a response or an error): resumes the question its id
  /// names, if the client answers that question by id. False when the answer matches no
  /// such question (given up, never asked, or another session's): it is dropped and
  /// counted, never dispatched and never answered. An id echoed as a string
  /// ("1099511627776") still means ours: TypeScript and Python peers do this.
  bool route_answer(const ir::message& msg);
  /// Withdraws question `id` (its tool's request was cancelled): its carrier forgets it,
  /// then the tool resumes with what the carrier says. Nothing happens for an id no
  /// longer waiting.
  void withdraw(std::int64_t id);
  /// Resumes every question answered by id with `why` (`errc::session_ended`): the
  /// session that alone could carry their answers is gone. Questions of other carriers
  /// end with their requests (the runner stops those, and they withdraw).
  void end_answered_by_id(std::string_view why);

  /// Questions waiting.
  [[nodiscard]] std::size_t size() const noexcept { return parked_.size(); }
  [[nodiscard]] bool contains(std::int64_t id) const { return parked_.contains(id); }
  /// Answers `route_answer` dropped.
  [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }

 private:
  struct parked {
    exchange_waiter* waiter;
    question_carrier* carrier;
  };
  std::unordered_map<std::int64_t, parked> parked_;
  std::int64_t next_ = first_id;
  std::size_t dropped_ = 0;
};

}  // namespace droid::detail
