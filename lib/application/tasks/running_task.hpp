// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a request that became a task carries from then on: the task's identity, its
/// questions and who waits for its end (running_task.cpp).
///
/// Application layer, private. The runner's record (engine/runner_call.hpp) points to
/// one of these once its request is a task; the exchange table reaches it only through
/// `question_carrier`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/steady_timer.hpp>

#include "application/engine/exchange_table.hpp"

namespace droid {

struct runner_call;

namespace detail {

/// A question a task's tool asked and waits on. 2025: a server request sent on the
/// stream of a `tasks/result` that waits (`message`, until `sent`); 2026: an entry of
/// the task's `inputRequests`, answered through `tasks/update`.
struct task_question {
  std::string key;
  std::int64_t id = 0;
  std::string method;
  std::string params;
  std::string message;
  bool sent = false;
};

/// A `tasks/result` request waiting for its task to end (2025): its record, whose stream
/// carries the task's questions, and the timer it sleeps on (cancelled to wake it).
struct task_watcher {
  runner_call* call = nullptr;
  asio::steady_timer* bell = nullptr;
};

/// What a request that became a task carries from then on, and the carrier of its
/// questions: from the moment it is a task, what its tool asks becomes the task's input
/// (tasks/running_task.cpp), whichever era created it.
struct running_task final : question_carrier {
  explicit running_task(runner_call& c) : call(c) {}
  std::optional<exchange_result> settle(std::string_view method, std::string_view params, std::string& key) override;
  void ask(std::int64_t id, std::string_view method, std::string_view params, std::string key) override;
  std::optional<exchange_result> withdraw(std::int64_t id) override;
  void answered(std::int64_t id) override;
  /// A 2025 task's questions are requests of ours, answered by id on the session; a
  /// 2026 task's answers come through `tasks/update`, by key.
  bool answered_by_id() const noexcept override { return !modern; }

  runner_call& call;
  std::string id;
  /// Who may see it (the store's `owner`).
  std::string owner;
  /// Rendered for 2026-07-28 (the extension) rather than 2025-11-25.
  bool modern = false;
  std::vector<task_question> questions;
  std::vector<task_watcher> watchers;
  /// 2026 keys used so far: a key names one question over the task's whole life.
  std::vector<std::string> used_keys;
  /// Why this 2025 task's questions cannot reach the client (the session answers each
  /// request with one JSON document), or empty.
  std::string question_refusal;
  std::uint32_t ordinal = 0;
  /// Ends the task when its time to live passes.
  std::optional<asio::steady_timer> expiry;
};

}  // namespace detail
}  // namespace droid
