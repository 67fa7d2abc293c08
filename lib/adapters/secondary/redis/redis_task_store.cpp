// SPDX-License-Identifier: BSL-1.0
/// @file
/// Task records written through to Redis, and read back as JSON.
#include "redis_task_store.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <droid/domain/ir/codec.hpp>

namespace droid::redis {

namespace {

std::int64_t millis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string_view string_of(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
}

std::int64_t int_of(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : (v && v->is_uint64() ? static_cast<std::int64_t>(v->as_uint64()) : 0);
}

}  // namespace

std::string task_record_json(const task_record& r) {
  boost::json::array questions;
  for (const auto& [key, request] : r.input_requests) questions.push_back(boost::json::array{key.c_str(), request.c_str()});
  boost::json::object o{{"id", r.id},
                        {"owner", r.owner},
                        {"tenant", r.tenant},
                        {"status", to_string(r.status)},
                        {"message", r.status_message},
                        {"created", millis(r.created_at)},
                        {"updated", millis(r.last_updated_at)},
                        {"ttl", r.ttl.count()},
                        {"poll", r.poll_interval.count()},
                        {"revision", r.revision},
                        {"questions", std::move(questions)},
                        {"result", r.result},
                        {"error", r.error}};
  return boost::json::serialize(o);
}

std::optional<task_record> parse_task_record(std::string_view json) {
  boost::json::value v;
  if (!ir::parse_exact(json, v) || !v.is_object()) return std::nullopt;
  const boost::json::object& o = v.as_object();
  task_record r;
  r.id = std::string(string_of(o, "id"));
  if (r.id.empty()) return std::nullopt;
  r.owner = std::string(string_of(o, "owner"));
  r.tenant = std::string(string_of(o, "tenant"));
  const std::string_view status = string_of(o, "status");
  bool known = false;
  for (const task_status s : {task_status::working, task_status::input_required, task_status::completed,
                              task_status::failed, task_status::cancelled}) {
    if (to_string(s) == status) {
      r.status = s;
      known = true;
    }
  }
  if (!known) return std::nullopt;
  r.status_message = std::string(string_of(o, "message"));
  r.created_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(int_of(o, "created")));
  r.last_updated_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(int_of(o, "updated")));
  r.ttl = std::chrono::milliseconds(int_of(o, "ttl"));
  r.poll_interval = std::chrono::milliseconds(int_of(o, "poll"));
  r.revision = std::string(string_of(o, "revision"));
  if (const auto* q = o.if_contains("questions"); q && q->is_array()) {
    for (const auto& pair : q->as_array()) {
      const auto* a = pair.if_array();
      if (a && a->size() == 2 && (*a)[0].is_string() && (*a)[1].is_string())
        r.input_requests.emplace_back(std::string((*a)[0].as_string()), std::string((*a)[1].as_string()));
    }
  }
  r.result = std::string(string_of(o, "result"));
  r.error = std::string(string_of(o, "error"));
  return r;
}

// KEYS[1]: the record; ARGV: this instance, the record's JSON (empty: delete it), its
// expiry (Unix milliseconds), the write's revision. 1 written (or older than what is
// there, and dropped), 0 refused (another instance owns it).
const std::string_view redis_task_store::write_script = R"(
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) return 1 end
local rev = redis.call('HGET', KEYS[1], 'rev')
if rev and tonumber(rev) >= tonumber(ARGV[4]) then return 1 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'record', ARGV[2], 'rev', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
)";

void redis_task_store::publish(std::string_view id) {
  const std::string key = prefix_ + "t:" + std::string(id);
  std::optional<task_record> r;
  std::uint64_t revision = 0;
  {
    // The snapshot and its revision together: of two publishes of one task, the later
    // snapshot has the higher revision, whichever connection delivers it first.
    std::lock_guard lock(mutex_);
    r = local_->peek(id);
    revision = ++next_revision_;
    if (r) {
      published_.emplace(id);
    } else {
      published_.erase(std::string(id));
    }
  }
  if (!r) {
    write_({"EVAL", std::string(write_script), "1", key, instance_, std::string(), "0", std::to_string(revision)});
    return;
  }
  // The whole record each time: updates are few per task (a question, an answer, the
  // end), and a whole record can never be half applied.
  write_({"EVAL", std::string(write_script), "1", key, instance_, task_record_json(*r),
          std::to_string(millis(r->expires_at())), std::to_string(revision)});
}

std::vector<std::string> redis_task_store::held() {
  std::vector<std::string> ids;
  std::lock_guard lock(mutex_);
  for (auto it = published_.begin(); it != published_.end();) {
    if (!local_->peek(*it)) {
      it = published_.erase(it);  // expired here: its record expires in Redis too
      continue;
    }
    ids.push_back(*it);
    ++it;
  }
  return ids;
}

void redis_task_store::drop(std::string_view id) {
  {
    std::lock_guard lock(mutex_);
    published_.erase(std::string(id));
  }
  local_->remove(id);
}

std::optional<task_refusal> redis_task_store::create(task_record record) {
  const std::string id = record.id;
  auto refused = local_->create(std::move(record));
  if (!refused) publish(id);
  return refused;
}

bool redis_task_store::ask(std::string_view id, std::string key, std::string request_json) {
  const bool ok = local_->ask(id, std::move(key), std::move(request_json));
  if (ok) publish(id);
  return ok;
}

std::vector<std::string> redis_task_store::answered(std::string_view id, const std::vector<std::string>& keys) {
  auto taken = local_->answered(id, keys);
  if (!taken.empty()) publish(id);
  return taken;
}

void redis_task_store::set_message(std::string_view id, std::string message) {
  local_->set_message(id, std::move(message));
  publish(id);
}

bool redis_task_store::finish(std::string_view id, task_status status, std::string result, std::string error,
                               std::string message) {
  const bool ended = local_->finish(id, status, std::move(result), std::move(error), std::move(message));
  if (ended) publish(id);
  return ended;
}

void redis_task_store::remove(std::string_view id) {
  local_->remove(id);
  publish(id);
}

void redis_task_store::adopt(task_record record, const std::string& why) {
  const std::string id = record.id;
  const bool running = !is_terminal(record.status);
  if (running) {
    // Made as it was, then ended: the store stamps the end, as for a task of its own.
    record.status = task_status::working;
    record.input_requests.clear();
  }
  if (local_->create(std::move(record))) return;  // held already, or full
  if (running) {
    std::string error = R"({"code":-32603,"message":)";
    error.append(boost::json::serialize(boost::json::value(why))).append("}");
    (void)local_->finish(id, task_status::failed, {}, error, why);
  }
  publish(id);  // the record now names this instance
}

}  // namespace droid::redis
