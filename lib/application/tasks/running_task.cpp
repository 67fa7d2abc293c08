// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request runner's tasks: a request whose tool goes on as a task, the questions a
/// task asks, and the task methods.
///
/// ## How a request becomes a task
/// The tool's frame does not move: its request's record (the same node) leaves the
/// in-flight table for the task table, keyed by the task's id, and the request is
/// answered with the task. From then on the record's channel behaves as a task's: its
/// questions wait for `tasks/result` (2025) or `tasks/update` (2026), its notifications
/// go to the session's own stream (2025) or nowhere (2026: the extension has none), and
/// the tool's end writes the task's result to the store instead of a response. Why the
/// same record: the tool's context points at it, and so does the completion that ends
/// the spawned call; nothing about the tool changes when it becomes a task.
///
/// ## Why the store is changed before the frame is told
/// `tasks/update` and `tasks/cancel` may reach any shard, and the client reads the
/// effect with the next `tasks/get`, which may reach yet another. So the shard that
/// serves them changes the record in the store first (answered keys leave
/// `inputRequests`, the status becomes `cancelled`) and only then posts the change to
/// the shard that runs the tool: by the time the client has its acknowledgement, every
/// shard reads the new state.
#include <algorithm>
#include <system_error>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <boost/json/object.hpp>

#include <droid/application/server/request_origin.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "running_task.hpp"
#include "application/engine/runner_call.hpp"
#include "application/catalog/server_core.hpp"
#include "task_engine.hpp"
#include "application/observe/trace_meta.hpp"

namespace droid {
namespace {

/// The task's id from a task method's params (a string), or empty.
std::string task_id_of(const ir::json_node* params) {
  ir::json_node v;
  if (!params || !params->find("taskId", v) || v.kind() != ir::json_node::type::string) return {};
  return std::string(v.string());
}

/// `{"code":C,"message":M[,"data":D]}`: a JSON-RPC error as a failed task keeps it.
std::string error_object(std::int64_t code, std::string_view message, std::string_view data) {
  std::string out = R"({"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  ir::append_json_string(out, message);
  if (!data.empty()) {
    out += R"(,"data":)";
    out += data;
  }
  out += '}';
  return out;
}

/// The result text inside a response a tool's call produced for request `id`
/// (`{"jsonrpc":"2.0","id":...,"result":X}` → `X`).
std::string result_of(const ir::request_id& id, std::string response) {
  std::string head;
  ir::append_result_head(head, id);
  if (response.size() < head.size() + 1 || response.compare(0, head.size(), head) != 0) return response;
  response.pop_back();
  response.erase(0, head.size());
  return response;
}

detail::reply not_found(std::string_view id) {
  return detail::reply::error(ir::errc::invalid_params,
                              "Invalid params: no task " + std::string(id) +
                                  " (it never existed, it expired, or it belongs to another client)");
}

}  // namespace

std::string request_runner::impl::task_owner(const peer_info& peer) const {
  // Appended, not `"s" + std::to_string(...)`: g++ 12 at -O3 warns (-Wrestrict, a false
  // positive) on a literal prepended to a temporary string, and warnings fail the build.
  if (peer.is_modern()) return detail::modern_task_owner(peer);
  std::string owner;
  owner.append("s").append(std::to_string(serial)).append(":").append(peer.principal);
  return owner;
}

bool runner_call::become_task(task_refusal& refusal) {
  // A request with a question outstanding, or one kept for a retry, is in the middle of
  // something else; one that was cancelled has nobody to answer.
  if (task || !offer.allowed || cancelled || state.closed) return false;
  if (round_side.kept || !round_side.pending.empty()) return false;
  if (own_peer && !own_peer->is_modern()) {
    // A 2025 request with a view of the client of its own has no session (stateless
    // HTTP): nothing would own the task, and the next request could not find it.
    refusal = {"a 2025 task belongs to its session, and this request has none (a stateless server: "
               "http::options::stateless); serve with sessions, or call in 2026-07-28",
               task_refusal::limit::other};
    return false;
  }
  detail::task_engine& engine = detail::core(state.srv).tasks();
  const server_options::task_options& options = engine.options();
  task_record record;
  record.id = detail::task_engine::mint_id();
  record.owner = state.task_owner(*peer);
  if (!peer->principal.empty()) {
    record.tenant = "p" + peer->principal;
  } else if (const request_origin* o = origin(); o && !o->remote_address.empty()) {
    record.tenant = "a" + o->remote_address;
  }
  record.created_at = std::chrono::system_clock::now();
  record.last_updated_at = record.created_at;
  record.ttl = offer.ttl.count() > 0 ? std::min(offer.ttl, options.ttl) : options.ttl;
  record.poll_interval = options.poll_interval;
  record.revision = peer->protocol_version;
  if (std::optional<task_refusal> why = engine.store().create(record)) {
    refusal = std::move(*why);
    return false;
  }
  const bool modern = peer->is_modern();
  // The answer to the request: the task, as the client's era writes it.
  std::string buf;
  if (modern) {
    // Flat: the result is the task, with `resultType: "task"` and the server's identity.
    constexpr std::string_view complete = R"("resultType":"complete",)";
    ir::append_result_head(buf, id);
    buf += R"({"resultType":"task",)";
    buf += detail::core(state.srv).modern_result_members().substr(complete.size());
    buf += ',';
    detail::append_task_members(buf, record, true, false);
    buf += "}}";
  } else {
    std::string result = R"({"task":{)";
    detail::append_task_members(result, record, false, false);
    result += "}}";
    ir::append_result(buf, id, result);
  }
  // What this session can carry later, asked of the stream that started the task: a
  // 2025 task's questions travel on a `tasks/result` stream of the same session.
  std::string question_refusal = stream && !modern ? stream->exchange_refusal() : std::string();
  const std::size_t sent = buf.size();
  state.send(stream.get(), std::move(buf));
  observe_end(request_outcome::task, 0, sent);
  if (finish_stream && stream) stream->finish();
  stream.reset();
  finish_stream = false;

  task = std::make_unique<detail::running_task>(*this);
  task->id = record.id;
  task->owner = std::move(record.owner);
  task->modern = modern;
  task->question_refusal = std::move(question_refusal);
  // From now on what the tool asks is the task's input, whichever era created it.
  carrier = task.get();
  // The same node, now under the task's id: the request's id is free for the client to
  // use again, and `notifications/cancelled` naming it no longer reaches the tool (the
  // extension says a task is cancelled with `tasks/cancel` only).
  auto node = state.in_flight.extract(*key_in_table);
  node.key() = ir::request_id(task->id);
  state.tasks.insert(std::move(node));
  engine.track(task->id, owner.weak_from_this());

  task->expiry.emplace(state.executor, record.ttl);
  task->expiry->async_wait([weak = owner.weak_from_this(), tid = task->id](std::error_code ec) {
    if (ec) return;
    std::shared_ptr<request_runner> runner = weak.lock();
    if (!runner) return;
    // The status first: a tool that finishes while it unwinds must not overwrite it.
    (void)detail::core(runner->impl_->srv).tasks().store().finish(
        tid, task_status::failed, {}, error_object(-32603, "Internal error: the task outlived its time to live", {}),
        "the task outlived its time to live");
    runner->impl_->stop_task(tid);
  });
  if (!modern) state.announce(*task);
  return true;
}

std::optional<exchange_result> detail::running_task::settle(std::string_view method, std::string_view,
                                                            std::string& key) {
  const peer_info& peer = *call.peer;
  if (call.state.closed) return refusal(errc::session_ended, "the session ended before the client answered");
  if (const std::string_view cap = capability_for(method); !cap.empty() && !peer.has_capability(cap))
    return refusal(errc::exchange_refused, "the client did not declare the `" + std::string(cap) + "` capability " +
                                               std::string(where_declared(peer)) + ", so its task cannot ask it " +
                                               std::string(method));
  if (!question_refusal.empty()) return refusal(errc::exchange_refused, question_refusal);
  if (modern && !key.empty() && std::find(used_keys.begin(), used_keys.end(), key) != used_keys.end())
    return refusal(errc::exchange_refused,
                   "the question key `" + key + "` was used already in this task (a key names one question)");
  return std::nullopt;
}

void detail::running_task::ask(std::int64_t question, std::string_view method, std::string_view params_json,
                               std::string key) {
  task_question q;
  q.id = question;
  q.method = std::string(method);
  q.params = std::string(params_json.empty() ? std::string_view("{}") : params_json);
  std::string request = R"({"method":)";
  ir::append_json_string(request, method);
  if (modern) {
    if (key.empty()) {
      do key = default_question_key(method, ++ordinal);
      while (std::find(used_keys.begin(), used_keys.end(), key) != used_keys.end());
    }
    used_keys.push_back(key);
    request += R"(,"params":)";
    request += q.params;
  } else {
    // A real request with an id of ours, which the client answers by that id.
    key = std::to_string(question);
    std::string params = with_related_task(q.params, id);
    if (std::optional<std::string> traced = traced_params(params, call.context)) params = std::move(*traced);
    request += R"(,"params":)";
    request += params;
    ir::append_request(q.message, ir::request_id(question), method, params);
  }
  request += '}';
  q.key = key;
  core(call.state.srv).tasks().store().ask(id, std::move(key), std::move(request));
  questions.push_back(std::move(q));
  if (!modern) {
    // A `tasks/result` that waits carries it now; otherwise the next one will.
    if (!watchers.empty() && watchers.front().call->stream) {
      task_question& asked = questions.back();
      asked.sent = true;
      watchers.front().call->stream->send(asked.message);
    }
    call.state.announce(*this);
  }
}

void detail::running_task::answered(std::int64_t question) {
  auto q = std::find_if(questions.begin(), questions.end(), [&](const task_question& e) { return e.id == question; });
  if (q == questions.end()) return;
  (void)core(call.state.srv).tasks().store().answered(id, {q->key});
  questions.erase(q);
}

std::optional<exchange_result> detail::running_task::withdraw(std::int64_t question) {
  auto q = std::find_if(questions.begin(), questions.end(), [&](const task_question& e) { return e.id == question; });
  if (q == questions.end()) return std::nullopt;
  (void)core(call.state.srv).tasks().store().answered(id, {q->key});
  questions.erase(q);
  return refusal(errc::cancelled, "the task was cancelled before the client answered");
}

void runner_call::notify_task(std::string_view method, std::string_view params_json) {
  // The extension carries no progress or log messages for tasks (a `subscriptions/listen`
  // stream carries status only), so a 2026 task's notifications have nowhere to go.
  if (task->modern) return;
  const detail::running_task& t = *task;
  outbound* to = !t.watchers.empty() && t.watchers.front().call->stream ? t.watchers.front().call->stream.get()
                                                                        : state.standalone.get();
  if (!to) return;
  std::string buf;
  ir::append_notification(buf, method, detail::with_related_task(params_json, t.id));
  to->send(std::move(buf));
}

void request_runner::impl::announce(const detail::running_task& t) {
  if (t.modern || !standalone || closed) return;
  std::optional<task_record> record = detail::core(srv).tasks().store().get(t.id, t.owner);
  if (!record) return;
  std::string buf;
  ir::append_notification(buf, "notifications/tasks/status", detail::task_object(*record, false, false));
  standalone->send(std::move(buf));
}

void request_runner::impl::finish_task(runner_call& c, std::exception_ptr failure, detail::reply&& r) {
  detail::running_task& t = *c.task;
  detail::core(srv).tasks().forget(t.id);
  if (t.expiry) t.expiry->cancel();
  if (!c.cancelled) {
    task_store& store = detail::core(srv).tasks().store();
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        srv.diagnose(diagnostic_level::error, "task handler failed", {{"error", e.what()}});
      } catch (...) {
        srv.diagnose(diagnostic_level::error, "task handler failed with a non-standard exception");
      }
      (void)store.finish(t.id, task_status::failed, {}, error_object(-32603, "Internal error", {}));
    } else if (r.is_error()) {
      (void)store.finish(t.id, task_status::failed, {}, error_object(r.code, r.message(), r.data()), r.message());
    } else {
      std::string result = r.framed ? result_of(c.id, std::move(r.result)) : std::move(r.result);
      // 2025-11-25: a tool's own error fails the task; the extension keeps `failed` for
      // protocol errors, so there it is a completed task whose result says isError.
      const bool failed = r.tool_error && !t.modern;
      (void)store.finish(t.id, failed ? task_status::failed : task_status::completed, std::move(result), {},
                         failed ? "the tool reported an error" : "");
    }
  }
  announce(t);
  // Whoever waits in `tasks/result` reads the end from the store (this record is gone
  // by the time their timer's handler runs).
  for (const detail::task_watcher& w : t.watchers) w.bell->cancel();
}

void request_runner::impl::stop_task(const std::string& id) {
  auto it = tasks.find(ir::request_id(id));
  if (it == tasks.end()) return;
  runner_call& c = it->second;
  if (c.cancelled) return;
  c.cancelled = true;
  std::stop_source stop = c.stop;
  stop.request_stop();
}

void request_runner::impl::answer_task(const std::string& id,
                                       std::vector<std::pair<std::string, boost::json::value>>& answers) {
  for (auto& answer : answers) {
    const std::string& key = answer.first;
    boost::json::value& value = answer.second;
    // Looked up for each answer: the tool may have ended with the previous one.
    auto it = tasks.find(ir::request_id(id));
    if (it == tasks.end()) return;
    detail::running_task& t = *it->second.task;
    auto q = std::find_if(t.questions.begin(), t.questions.end(),
                          [&](const detail::task_question& e) { return e.key == key; });
    if (q == t.questions.end()) continue;  // withdrawn meanwhile
    const std::int64_t question = q->id;
    t.questions.erase(q);
    exchanges.resume(question, exchange_result(std::move(value)));
  }
}

void request_runner::impl::end_tasks() {
  std::vector<std::stop_source> stops;
  task_store& store = detail::core(srv).tasks().store();
  for (auto& [key, c] : tasks) {
    detail::running_task& t = *c.task;
    if (t.modern) {
      // Kept as failed, so a client that polls (a store shared with other instances)
      // learns what became of it.
      (void)store.finish(t.id, task_status::failed, {},
                         error_object(-32603, "Internal error: the server stopped before the task finished", {}),
                         "the server stopped before the task finished");
    } else {
      // The session that alone could see it is gone.
      store.remove(t.id);
    }
    detail::core(srv).tasks().forget(t.id);
    c.cancelled = true;
    stops.push_back(c.stop);
  }
  for (std::stop_source& stop : stops) stop.request_stop();
}

task<detail::reply> request_runner::impl::wait_for_task(std::string id, std::string owner, runner_call& rec) {
  asio::steady_timer bell(executor, asio::steady_timer::time_point::max());
  for (;;) {
    auto it = tasks.find(ir::request_id(id));
    if (it == tasks.end() || rec.cancelled) break;
    detail::running_task& t = *it->second.task;
    t.watchers.push_back(detail::task_watcher{&rec, &bell});
    // What the task waits on goes out on this request's stream.
    if (rec.stream)
      for (detail::task_question& q : t.questions)
        if (!q.sent) {
          q.sent = true;
          rec.stream->send(q.message);
        }
    (void)co_await bell.async_wait(use_task(rec.stop.get_token()));
    if (auto again = tasks.find(ir::request_id(id)); again != tasks.end()) {
      auto& ws = again->second.task->watchers;
      ws.erase(std::remove_if(ws.begin(), ws.end(), [&](const detail::task_watcher& w) { return w.bell == &bell; }),
               ws.end());
    }
    bell.expires_at(asio::steady_timer::time_point::max());
  }
  std::optional<task_record> record = detail::core(srv).tasks().store().get(id, owner);
  if (!record) co_return not_found(id);
  if (record->status == task_status::cancelled)
    co_return detail::reply::error(ir::errc::invalid_params,
                                   "Invalid params: task " + id + " was cancelled; it has no result");
  if (!record->error.empty()) {
    // Exactly what the call would have answered: its JSON-RPC error.
    boost::json::value e;
    (void)ir::parse_exact(record->error, e);
    const boost::json::object* o = e.if_object();
    const auto* code = o ? o->if_contains("code") : nullptr;
    const auto* message = o ? o->if_contains("message") : nullptr;
    const auto* data = o ? o->if_contains("data") : nullptr;
    co_return detail::reply::error(code && code->is_int64() ? code->as_int64() : -32603,
                                   message && message->is_string() ? std::string(message->as_string())
                                                                   : std::string("Internal error"),
                                   data ? ir::to_json_text(*data) : std::string());
  }
  co_return detail::reply::ok(detail::with_related_task(record->result, id));
}

std::variant<detail::reply, task<detail::reply>> request_runner::impl::serve_task_method(std::string_view method,
                                                                                          const ir::json_node* params,
                                                                                          runner_call& rec) {
  using detail::reply;
  if (params && params->kind() == ir::json_node::type::null) params = nullptr;
  if (params && params->kind() != ir::json_node::type::object)
    return reply::error(ir::errc::invalid_params, "Invalid params: params must be an object");
  const peer_info& peer = *rec.peer;
  const bool modern = peer.is_modern();
  task_store& store = detail::core(srv).tasks().store();
  const std::string owner = task_owner(peer);

  if (method == "tasks/list") {
    std::string after;
    ir::json_node cursor;
    if (params && params->find("cursor", cursor) && cursor.kind() != ir::json_node::type::null &&
        (cursor.kind() != ir::json_node::type::string || !detail::decode_cursor(cursor.string(), after)))
      return reply::error(ir::errc::invalid_params, "Invalid params: unknown cursor");
    std::optional<task_page> page = store.list(owner, after, srv.options().page_size);
    if (!page) return reply::error(ir::errc::invalid_params, "Invalid params: unknown cursor");
    std::string out = R"({"tasks":[)";
    for (std::size_t i = 0; i < page->tasks.size(); ++i) {
      if (i) out += ',';
      out += detail::task_object(page->tasks[i], false, false);
    }
    out += ']';
    if (!page->next.empty()) {
      out += R"(,"nextCursor":)";
      ir::append_json_string(out, detail::encode_cursor(page->next));
    }
    out += '}';
    return reply::ok(std::move(out));
  }

  const std::string id = task_id_of(params);
  if (id.empty()) return reply::error(ir::errc::invalid_params, "Invalid params: taskId must be a string");
  std::optional<task_record> record = store.get(id, owner);
  if (!record) return not_found(id);

  if (method == "tasks/get") return reply::ok(detail::task_object(*record, modern, modern));

  if (method == "tasks/cancel") {
    if (is_terminal(record->status)) {
      // The extension acknowledges a cancel of an ended task as of any other; 2025-11-25
      // refuses it.
      if (modern) return reply::ok("{}");
      return reply::error(ir::errc::invalid_params, "Invalid params: cannot cancel task " + id +
                                                        ": it is already " + std::string(to_string(record->status)));
    }
    (void)store.finish(id, task_status::cancelled, {}, {}, "The task was cancelled by request.");
    detail::core(srv).tasks().stop_tool(id);
    if (modern) return reply::ok("{}");
    record = store.get(id, owner);
    if (!record) return not_found(id);
    return reply::ok(detail::task_object(*record, false, false));
  }

  if (method == "tasks/update") {
    detail::retry_input input;
    if (!params) return reply::error(ir::errc::invalid_params, "Invalid params: tasks/update needs inputResponses");
    if (std::optional<std::string> why = detail::read_retry_input(*params, input))
      return reply::error(ir::errc::invalid_params, *why);
    if (!input.has_responses)
      return reply::error(ir::errc::invalid_params, "Invalid params: tasks/update needs inputResponses (an object)");
    // Each answer is checked against its question before any is taken; answers for keys
    // the task does not wait on are ignored, as the extension says.
    std::vector<std::string> keys;
    for (const auto& response : input.responses) {
      const std::string& key = response.first;
      const boost::json::value& value = response.second;
      auto asked = std::find_if(record->input_requests.begin(), record->input_requests.end(),
                                [&](const auto& e) { return e.first == key; });
      if (asked == record->input_requests.end()) continue;
      boost::json::value question;
      (void)ir::parse_exact(asked->second, question);
      const boost::json::object* q = question.if_object();
      const auto* m = q ? q->if_contains("method") : nullptr;
      const auto* p = q ? q->if_contains("params") : nullptr;
      if (m && m->is_string() && m->as_string() == "elicitation/create" && p) {
        if (std::optional<std::string> bad = detail::check_elicitation_answer(ir::to_json_text(*p), value))
          return reply::error(ir::errc::invalid_params,
                              "Invalid params: inputResponses." + key + " does not answer the question: " + *bad);
      }
      keys.push_back(key);
    }
    const std::vector<std::string> taken = store.answered(id, keys);
    if (!taken.empty()) {
      std::vector<std::pair<std::string, boost::json::value>> answers;
      for (auto& [key, value] : input.responses)
        if (std::find(taken.begin(), taken.end(), key) != taken.end()) answers.emplace_back(key, std::move(value));
      if (std::shared_ptr<request_runner> runner = detail::core(srv).tasks().runner_of(id))
        asio::post(runner->executor(),
                   [runner, id, a = std::move(answers)]() mutable { runner->answer_task(id, std::move(a)); });
    }
    return reply::ok("{}");
  }

  // tasks/result (2025-11-25): the result once the task has ended.
  if (!is_terminal(record->status) && tasks.contains(ir::request_id(id))) return wait_for_task(id, owner, rec);
  if (!is_terminal(record->status))
    return reply::error(ir::errc::internal_error, "Internal error: task " + id + " is not running on this session");
  return wait_for_task(id, owner, rec);
}

}  // namespace droid
