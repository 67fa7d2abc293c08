// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-memory task store: one lock, expiry swept on use, two bounds.
#include <droid/application/server/task_store.hpp>

#include <algorithm>
#include <charconv>

namespace droid {

std::string_view to_string(task_status s) noexcept {
  switch (s) {
    case task_status::working: return "working";
    case task_status::input_required: return "input_required";
    case task_status::completed: return "completed";
    case task_status::failed: return "failed";
    case task_status::cancelled: return "cancelled";
  }
  return "working";
}

memory_task_store::memory_task_store(std::size_t max_tasks, std::size_t max_result_bytes, clock_fn now,
                                     std::size_t max_per_tenant)
    : max_tasks_(max_tasks), max_result_bytes_(max_result_bytes), now_(std::move(now)), max_per_tenant_(max_per_tenant) {}

std::chrono::system_clock::time_point memory_task_store::now() const {
  return now_ ? now_() : std::chrono::system_clock::now();
}

void memory_task_store::erase(map::iterator it) {
  result_bytes_ -= it->second.record.result.size() + it->second.record.error.size();
  if (const std::string& tenant = it->second.record.tenant; !tenant.empty()) {
    auto held = per_tenant_.find(tenant);
    if (held != per_tenant_.end() && --held->second == 0) per_tenant_.erase(held);
  }
  by_order_.erase(it->second.order);
  tasks_.erase(it);
}

/// Drops every expired task. Why on use and not on a timer: a store nobody touches holds
/// at most its bounds, and one that is used frees what expired before it answers; no
/// thread or timer is needed for that.
void memory_task_store::sweep(std::chrono::system_clock::time_point t) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (it->second.record.expires_at() <= t) {
      auto gone = it++;
      erase(gone);
    } else {
      ++it;
    }
  }
}

std::optional<task_refusal> memory_task_store::create(task_record record) {
  using limit = task_refusal::limit;
  std::lock_guard lock(mutex_);
  const auto t = now();
  sweep(t);
  if (tasks_.size() >= max_tasks_)
    return task_refusal{"the server holds its maximum of " + std::to_string(max_tasks_) +
                            " tasks (server_options::task_options::max_tasks); try again when some have finished "
                            "and expired",
                        limit::server};
  if (result_bytes_ >= max_result_bytes_)
    return task_refusal{"the results of finished tasks fill the server's task store (" +
                            std::to_string(max_result_bytes_) +
                            " bytes, server_options::task_options::max_result_bytes); try again when some have "
                            "expired",
                        limit::server};
  if (tasks_.contains(record.id)) return task_refusal{"a task with this id exists already", limit::other};
  if (max_per_tenant_ != 0 && !record.tenant.empty()) {
    auto held = per_tenant_.find(record.tenant);
    if (held != per_tenant_.end() && held->second >= max_per_tenant_)
      return task_refusal{"this client holds as many tasks as it may (server_options::task_options::"
                          "max_tasks_per_tenant, " +
                              std::to_string(max_per_tenant_) +
                              "); try again when one has finished and expired, or delete one",
                          limit::tenant};
  }
  if (!record.tenant.empty()) ++per_tenant_[record.tenant];
  if (record.created_at == std::chrono::system_clock::time_point{}) record.created_at = t;
  record.last_updated_at = record.created_at;
  const std::uint64_t order = next_order_++;
  by_order_.emplace(order, record.id);
  std::string id = record.id;
  tasks_.emplace(std::move(id), entry{std::move(record), order});
  return std::nullopt;
}

std::optional<task_record> memory_task_store::peek(std::string_view id) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end() || it->second.record.expires_at() <= now()) return std::nullopt;
  return it->second.record;
}

std::optional<task_record> memory_task_store::get(std::string_view id, std::string_view owner) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end()) return std::nullopt;
  if (it->second.record.expires_at() <= now()) {
    erase(it);
    return std::nullopt;
  }
  if (it->second.record.owner != owner) return std::nullopt;
  return it->second.record;
}

std::optional<task_page> memory_task_store::list(std::string_view owner, std::string_view after, std::size_t limit) {
  std::lock_guard lock(mutex_);
  sweep(now());
  std::uint64_t from = 0;
  if (!after.empty()) {
    const auto [end, ec] = std::from_chars(after.data(), after.data() + after.size(), from);
    if (ec != std::errc() || end != after.data() + after.size()) return std::nullopt;
  }
  task_page page;
  for (auto it = by_order_.lower_bound(from); it != by_order_.end(); ++it) {
    const task_record& r = tasks_.at(it->second).record;
    if (r.owner != owner) continue;
    if (page.tasks.size() == limit) {
      page.next = std::to_string(it->first);
      break;
    }
    page.tasks.push_back(r);
  }
  return page;
}

bool memory_task_store::ask(std::string_view id, std::string key, std::string request_json) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end() || is_terminal(it->second.record.status)) return false;
  task_record& r = it->second.record;
  r.input_requests.emplace_back(std::move(key), std::move(request_json));
  r.status = task_status::input_required;
  r.last_updated_at = now();
  return true;
}

std::vector<std::string> memory_task_store::answered(std::string_view id, const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> taken;
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end() || is_terminal(it->second.record.status)) return taken;
  task_record& r = it->second.record;
  for (const std::string& k : keys) {
    auto q = std::find_if(r.input_requests.begin(), r.input_requests.end(), [&](const auto& e) { return e.first == k; });
    if (q == r.input_requests.end()) continue;
    r.input_requests.erase(q);
    taken.push_back(k);
  }
  if (!taken.empty()) {
    if (r.input_requests.empty()) r.status = task_status::working;
    r.last_updated_at = now();
  }
  return taken;
}

void memory_task_store::set_message(std::string_view id, std::string message) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end() || is_terminal(it->second.record.status)) return;
  it->second.record.status_message = std::move(message);
  it->second.record.last_updated_at = now();
}

bool memory_task_store::finish(std::string_view id, task_status status, std::string result, std::string error,
                               std::string message) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it == tasks_.end() || is_terminal(it->second.record.status)) return false;
  task_record& r = it->second.record;
  r.status = status;
  r.input_requests.clear();
  if (!message.empty()) r.status_message = std::move(message);
  result_bytes_ += result.size() + error.size();
  r.result = std::move(result);
  r.error = std::move(error);
  r.last_updated_at = now();
  return true;
}

void memory_task_store::remove(std::string_view id) {
  std::lock_guard lock(mutex_);
  auto it = tasks_.find(std::string(id));
  if (it != tasks_.end()) erase(it);
}

std::size_t memory_task_store::size() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

std::size_t memory_task_store::result_bytes() const {
  std::lock_guard lock(mutex_);
  return result_bytes_;
}

}  // namespace droid
