// SPDX-License-Identifier: BSL-1.0
// The transport-facing promises of <droid/application/server/hosting.hpp>, each a thin
// door onto the engine's private parts: what is behind them may change, the doors not.
#include <droid/application/server/hosting.hpp>

#include <utility>

#include "application/catalog/server_core.hpp"
#include "application/tasks/task_engine.hpp"

namespace droid::hosting {

std::shared_ptr<const detail::tool_entry> find_tool(const server& srv, std::string_view name) {
  return detail::core(srv).find_tool(name);
}

bool deliver_notification(const server& srv, const ir::message& msg, const peer_info& peer) {
  const detail::server_core& core = detail::core(srv);
  if (!core.pass_notification(msg, peer, peer.origin.get())) return false;
  return core.deliver_notification(msg, peer);
}

void listen(const server& srv, const std::shared_ptr<change_listener>& listener) {
  detail::core(srv).changes().listen(listener);
}

void announce_list_changed(const server& srv, std::string_view method) {
  detail::core(srv).changes().list_changed(method);
}

void announce_resource_updated(const server& srv, std::string_view uri) { detail::core(srv).changes().resource_updated(uri); }

task_store& task_records(const server& srv) { return detail::core(srv).tasks().store(); }

std::shared_ptr<memory_task_store> default_task_store(const server& srv) { return detail::core(srv).tasks().memory(); }

void wrap_task_store(const server& srv, std::shared_ptr<task_store> wrapper) {
  detail::core(srv).tasks().wrap_store(std::move(wrapper));
}

void stop_task_tool(const server& srv, const std::string& id) { detail::core(srv).tasks().stop_tool(id); }

}  // namespace droid::hosting
