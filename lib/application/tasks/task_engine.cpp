// SPDX-License-Identifier: BSL-1.0
/// @file
/// The server-wide half of tasks: the engine and the wire renderings.
#include "task_engine.hpp"

#include <ctime>

#include <asio/post.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/request_runner.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/mcp/content.hpp>

#include "application/era2026/sealed_state.hpp"

namespace droid::detail {

task_engine::task_engine(const server_options::task_options& options)
    : options_(options),
      memory_(options.store ? nullptr
                            : std::make_shared<memory_task_store>(options.max_tasks, options.max_result_bytes,
                                                                  memory_task_store::clock_fn{},
                                                                  options.max_tasks_per_tenant)),
      store_(options.store ? options.store : memory_) {}

std::string task_engine::mint_id() { return base64url_encode(random_bytes(16)); }

void task_engine::track(const std::string& id, std::weak_ptr<request_runner> runner) {
  std::lock_guard lock(mutex_);
  running_[id] = std::move(runner);
}

void task_engine::forget(const std::string& id) {
  std::lock_guard lock(mutex_);
  running_.erase(id);
}

std::shared_ptr<request_runner> task_engine::runner_of(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : it->second.lock();
}

void task_engine::stop_tool(const std::string& id) const {
  if (std::shared_ptr<request_runner> runner = runner_of(id))
    asio::post(runner->executor(), [runner, id] { runner->stop_task(id); });
}

std::size_t task_engine::running() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

std::string iso8601(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf, n);
  const auto frac = static_cast<int>(ms % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
  out += 'Z';
  return out;
}

void append_task_members(std::string& out, const task_record& task, bool modern, bool detailed) {
  out += R"("taskId":)";
  ir::append_json_string(out, task.id);
  out += R"(,"status":")";
  out += to_string(task.status);
  out += '"';
  if (!task.status_message.empty()) {
    out += R"(,"statusMessage":)";
    ir::append_json_string(out, task.status_message);
  }
  out += R"(,"createdAt":")";
  out += iso8601(task.created_at);
  out += R"(","lastUpdatedAt":")";
  out += iso8601(task.last_updated_at);
  out += modern ? R"(","ttlMs":)" : R"(","ttl":)";
  out += std::to_string(task.ttl.count());
  out += modern ? R"(,"pollIntervalMs":)" : R"(,"pollInterval":)";
  out += std::to_string(task.poll_interval.count());
  if (!detailed) return;
  if (task.status == task_status::input_required && !task.input_requests.empty()) {
    out += R"(,"inputRequests":{)";
    bool first = true;
    for (const auto& [key, request] : task.input_requests) {
      if (!first) out += ',';
      first = false;
      ir::append_json_string(out, key);
      out += ':';
      out += request;
    }
    out += '}';
  }
  if (task.status == task_status::completed && !task.result.empty()) {
    out += R"(,"result":)";
    out += task.result;
  }
  if (task.status == task_status::failed) {
    // The extension: a failed task carries the JSON-RPC error. A tool's own error is a
    // completed task there, so a failure always has one; one without (the server ended
    // it) gets a generic one rather than none.
    out += R"(,"error":)";
    out += task.error.empty() ? R"({"code":-32603,"message":"Internal error: the task ended without a result"})"
                              : task.error;
  }
}

std::string task_object(const task_record& task, bool modern, bool detailed) {
  std::string out = "{";
  append_task_members(out, task, modern, detailed);
  out += '}';
  return out;
}

std::string with_related_task(std::string_view params_json, std::string_view task_id) {
  boost::json::value params;
  std::string error;
  const std::error_code ec = ir::visit_json(params_json.empty() ? std::string_view("{}") : params_json,
                                            [&](const ir::json_node& n) { (void)decode(n, params, error); });
  if (ec || !params.is_object()) return std::string(params_json);
  boost::json::object& o = params.as_object();
  boost::json::value& meta = o["_meta"];
  if (!meta.is_object()) meta = boost::json::object{};
  meta.as_object()[related_task_key] = boost::json::object{{"taskId", task_id}};
  return ir::to_json_text(params);
}

}  // namespace droid::detail
