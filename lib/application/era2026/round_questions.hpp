// SPDX-License-Identifier: BSL-1.0
/// @file
/// The carrier of a 2026-07-28 request's questions, and the state of its rounds: what
/// the tool asked that goes into `inputRequests`, and what the request remembers across
/// retries (round_questions.cpp).
///
/// Application layer, private. The runner's record (engine/runner_call.hpp) holds one
/// of these in place, beside the 2025 carrier, and the exchange table reaches it only
/// through `question_carrier`: that record is the one place of the engine that names
/// this module.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <asio/steady_timer.hpp>

#include <boost/json/value.hpp>

#include "application/engine/exchange_table.hpp"
#include "multi_round.hpp"

namespace droid {

struct runner_call;

namespace detail {

/// A question a 2026-07-28 tool asked and waits on: what goes into `inputRequests`
/// (its waiter is in the exchange table). `method` and `params` point into the awaiter,
/// which lives as long as the question does.
struct pending_question {
  std::string key;
  std::string_view method;
  std::string_view params;
  std::uint64_t hash = 0;
  std::int64_t id = 0;
};

/// What a 2026-07-28 request remembers across rounds. Allocated the first time the
/// request asks (or a retry brings state), so a request that asks nothing pays nothing.
struct round_memory {
  /// The answers this execution used, in order: the transcript the next state carries.
  std::vector<recorded_answer> answers;
  /// What `once` recorded (carried from the state, then added to).
  std::vector<std::pair<std::string, boost::json::value>> onces;
  /// A replay's book: the state's answers by key, to answer re-asked questions at once.
  std::unordered_map<std::string, recorded_answer> recorded;
  /// The state's outstanding questions by key: an `inputResponses` answer counts for the
  /// question it was asked for, not a changed one under the same key.
  std::unordered_map<std::string, std::uint64_t> stated_asked;
  /// The retry's `inputResponses` (a replay consults them as questions are re-asked).
  retry_input input;
  /// An answer that did not fit its question: the round ends with this -32602 instead
  /// of another `input_required`.
  std::string input_error;
};

/// A 2026-07-28 request's questions: entries of the `input_required` answer that ends
/// its round, answered by the retry's `inputResponses` (round_questions.cpp).
struct round_questions final : question_carrier {
  explicit round_questions(runner_call& c) : call(c) {}
  std::optional<exchange_result> settle(std::string_view method, std::string_view params, std::string& key) override;
  void ask(std::int64_t id, std::string_view method, std::string_view params, std::string key) override;
  std::optional<exchange_result> withdraw(std::int64_t id) override;
  bool answered_by_id() const noexcept override { return false; }
  runner_call& call;

  // The round's state: here, beside the carrier that uses it, rather than in the request
  // record every era shares (a 2025 request and a task never touch it). Held in place,
  // not behind a pointer: a 2026 request allocates nothing more for it.
  /// This request may answer `input_required` (a 2026 request of one of those methods).
  bool rounds = false;
  /// In the kept table, waiting for the retry (no stream: the round was answered).
  bool kept = false;
  /// An `input_required` answer is posted (questions asked in one go travel together).
  bool flush_posted = false;
  /// Questions this execution asked, for default keys.
  std::uint32_t ordinal = 0;
  /// Rounds answered so far (a replay continues its state's count).
  std::uint32_t round = 0;
  /// The kept frame's name, minted when the first round is answered.
  std::uint64_t frame = 0;
  /// `request_binding` of the request: what its sealed state names, so that the state
  /// comes back only with the request it answered. Taken while the params are there, in
  /// `admit`, and only for a request that did not end in its first step: hashing the
  /// params of every tools/call cost about 960 instructions of a 2026 request
  /// (docs/benchmarks.md), for a state that few requests ever seal.
  std::optional<std::uint64_t> binding;
  /// Takes `binding` from the request's method and params when this request may seal a
  /// state and has none yet; nothing otherwise.
  void take_binding(std::string_view method, const ir::json_node* params);
  std::vector<detail::pending_question> pending;
  std::unique_ptr<detail::round_memory> remembered;
  /// Lets a kept frame go when its time to live passes.
  std::optional<asio::steady_timer> expiry;
};

}  // namespace detail
}  // namespace droid
