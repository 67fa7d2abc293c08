// SPDX-License-Identifier: BSL-1.0
/// @file
/// The methods that modules above the engine serve through the dispatcher.
///
/// Application layer, private: with server.cpp (which makes the engines the shards
/// share) and hosting.cpp (the transports' doors), one of the composition roots at the
/// top of lib/application/, the only files that include an era's or the tasks' headers
/// to wire them to the engine. Why here and not in the dispatcher: the engine would then
/// know every module that extends it, and each new one would be an edit of its switch.
#include "application/engine/dispatcher.hpp"
#include "application/era2026/subscriptions_listen.hpp"

namespace droid::detail {
namespace {

/// 2026-07-28's change stream; it replaces the 2025 GET stream, so older clients lack it.
constexpr module_method listen_method{
    "subscriptions/listen", [](const server&, protocol_revision revision) { return is_modern(revision); },
    [](server& srv, const ir::json_node* params, request_scope& scope) {
      return listen(srv, params, scope.peer, scope.channel, scope.id, std::move(scope.stop), scope.executor);
    }};

constexpr module_method table[] = {listen_method};

}  // namespace

std::span<const module_method> module_methods() noexcept { return table; }

}  // namespace droid::detail
