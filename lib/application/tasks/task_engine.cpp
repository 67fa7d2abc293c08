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

namespace {

/// The store as the engine hands it out: every change that goes through it is also told
/// to the engine's task listeners, after the store applied it.
class observed_store final : public task_store {
 public:
  observed_store(std::shared_ptr<task_store> inner, const task_engine& engine)
      : inner_(std::move(inner)), engine_(engine) {}
  std::optional<task_refusal> create(task_record record) override { return inner_->create(std::move(record)); }
  std::optional<task_record> get(std::string_view id, std::string_view owner) override { return inner_->get(id, owner); }
  std::optional<task_page> list(std::string_view owner, std::string_view after, std::size_t limit) override {
    return inner_->list(owner, after, limit);
  }
  bool ask(std::string_view id, std::string key, std::string request_json) override {
    const bool asked = inner_->ask(id, std::move(key), std::move(request_json));
    if (asked) engine_.changed(id);
    return asked;
  }
  std::vector<std::string> answered(std::string_view id, const std::vector<std::string>& keys) override {
    std::vector<std::string> taken = inner_->answered(id, keys);
    if (!taken.empty()) engine_.changed(id);
    return taken;
  }
  void set_message(std::string_view id, std::string message) override {
    inner_->set_message(id, std::move(message));
    engine_.changed(id);
  }
  bool finish(std::string_view id, task_status status, std::string result, std::string error,
              std::string message) override {
    const bool first = inner_->finish(id, status, std::move(result), std::move(error), std::move(message));
    if (first) engine_.changed(id);
    return first;
  }
  void remove(std::string_view id) override { inner_->remove(id); }

 private:
  std::shared_ptr<task_store> inner_;
  const task_engine& engine_;
};

}  // namespace

task_engine::task_engine(const server_options::task_options& options)
    : options_(options),
      memory_(options.store ? nullptr
                            : std::make_shared<memory_task_store>(options.max_tasks, options.max_result_bytes,
                                                                  memory_task_store::clock_fn{},
                                                                  options.max_tasks_per_tenant)),
      store_(std::make_shared<observed_store>(options.store ? options.store : memory_, *this)) {}

std::string modern_task_owner(const peer_info& peer) {
  std::string owner;
  if (!peer.principal.empty()) owner.append("p:").append(peer.principal);
  return owner;
}

void task_engine::listen(const std::shared_ptr<task_listener>& listener) {
  std::lock_guard lock(listeners_mutex_);
  std::erase_if(listeners_, [](const std::weak_ptr<task_listener>& l) { return l.expired(); });
  listeners_.push_back(listener);
  listening_.store(listeners_.size(), std::memory_order_relaxed);
}

void task_engine::changed(std::string_view id) const {
  if (listening_.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::shared_ptr<task_listener>> live;
  {
    std::lock_guard lock(listeners_mutex_);
    std::erase_if(listeners_, [&](const std::weak_ptr<task_listener>& l) {
      std::shared_ptr<task_listener> p = l.lock();
      if (!p) return true;
      live.push_back(std::move(p));
      return false;
    });
    listening_.store(listeners_.size(), std::memory_order_relaxed);
  }
  for (const auto& l : live) l->task_changed(id);
}

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
