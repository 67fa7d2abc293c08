// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-process test client (client.hpp): a session over a pipe that hands each message
/// the server sends to the client, which matches responses to the requests waiting for
/// them, answers the server's requests with the test's handlers, and keeps notifications.
#include <droid/adapters/primary/testing/client.hpp>

#include <chrono>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid::testing {
namespace {

constexpr std::string_view legacy_version = "2025-11-25";
constexpr std::string_view modern_version = "2026-07-28";

}  // namespace

/// The client's state, shared with the pipe the session sends through (weakly) and with
/// the coroutines answering the server's questions (strongly, until they end): a test may
/// destroy the client while the server still unwinds a tool that talks to it.
class client::impl : public std::enable_shared_from_this<impl> {
 public:
  /// The session's outbound: what the server sends goes straight to the client. Held
  /// weakly, so a tool still unwinding after the client is gone sends into nothing.
  class pipe final : public outbound {
   public:
    explicit pipe(std::weak_ptr<impl> owner) : owner_(std::move(owner)) {}
    void send(std::string message) override {
      if (auto o = owner_.lock()) o->deliver(message);
    }
    // The client answers the server's questions: they may travel.
    [[nodiscard]] std::string exchange_refusal() const override { return {}; }

   private:
    std::weak_ptr<impl> owner_;
  };

  /// A request waiting for its response: the response once it came, and the timer whose
  /// cancellation wakes the waiting coroutine (it never expires by itself).
  struct waiter {
    std::optional<boost::json::object> response;
    std::shared_ptr<asio::steady_timer> bell;
    bool cancelled = false;
  };

  impl(server& srv, asio::any_io_executor executor, client_options options)
      : srv_(srv), executor_(std::move(executor)), options_(std::move(options)) {}

  void start() {
    const auto& who = options_.origin;
    session_ = session::create(srv_, executor_, std::make_shared<pipe>(weak_from_this()),
                               who && who->principal ? who->principal->key() : std::string());
  }

  /// One message from the server.
  void deliver(const std::string& text) {
    boost::json::value v = boost::json::parse(text);
    boost::json::object& m = v.as_object();
    const bool has_method = m.contains("method");
    if (!has_method && m.contains("id")) {
      const auto* id = m.if_contains("id");
      if (!id->is_int64()) return;  // not one of ours (the client numbers its requests)
      auto it = waiting_.find(id->as_int64());
      if (it == waiting_.end()) return;
      it->second->response = std::move(m);
      it->second->bell->cancel();
      return;
    }
    if (has_method && m.contains("id")) {
      // A question: answered off this call, which is inside the session's send.
      asio::post(executor_, [self = shared_from_this(), request = std::move(m)]() mutable {
        spawn(self->executor_, self->answer(std::move(request), self), [](std::exception_ptr) {});
      });
      return;
    }
    if (has_method) {
      notification n{std::string(m.at("method").as_string()), {}};
      if (const auto* p = m.if_contains("params"); p && p->is_object()) n.params = p->as_object();
      notifications_.push_back(std::move(n));
    }
  }

  /// Answers the server's request `request` with the handler for its method. `keep` holds
  /// this state for the coroutine's life (a member coroutine's `this` does not).
  task<void> answer(boost::json::object request, [[maybe_unused]] std::shared_ptr<impl> keep) {
    const std::string method(request.at("method").as_string());
    boost::json::object params;
    if (const auto* p = request.if_contains("params"); p && p->is_object()) params = p->as_object();
    boost::json::object response{{"jsonrpc", "2.0"}, {"id", request.at("id")}};
    try {
      task<boost::json::object> pending = handle(method, std::move(params));
      boost::json::object result = co_await std::move(pending);
      response["result"] = std::move(result);
    } catch (const rpc_error& e) {
      response["error"] = boost::json::object{{"code", e.code()}, {"message", e.what()}, {"data", e.data()}};
    } catch (const std::exception& e) {
      response["error"] = boost::json::object{{"code", -32603}, {"message", e.what()}};
    }
    if (!closed_) feed(boost::json::serialize(response));
  }

  /// What the handler for `method` answers `params` (-32601 without one).
  task<boost::json::object> handle(const std::string& method, boost::json::object params) {
    auto it = handlers_.find(method);
    if (it == handlers_.end())
      throw rpc_error(-32601, "Method not found: this test client has no handler for " + method, nullptr);
    ++answered_;
    task<boost::json::object> work = it->second(std::move(params));
    co_return co_await std::move(work);
  }

  /// Sends one request and returns the whole response message.
  task<boost::json::object> roundtrip(std::string method, boost::json::object params) {
    const std::int64_t id = next_id_++;
    auto w = std::make_shared<waiter>();
    w->bell = std::make_shared<asio::steady_timer>(executor_, asio::steady_timer::time_point::max());
    waiting_.emplace(id, w);
    feed(boost::json::serialize(
        boost::json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}));
    if (!w->response) (void)co_await w->bell->async_wait(use_task);
    waiting_.erase(id);
    if (w->cancelled) throw request_cancelled("droid::testing::client: " + method + " was cancelled");
    if (!w->response) throw std::runtime_error("droid::testing::client: no response to " + method);
    co_return std::move(*w->response);
  }

  /// The request as the era sends it: a 2026 one carries its `_meta` (with the tasks
  /// extension declared for the task helpers' requests).
  boost::json::object envelope(const std::string& method, boost::json::object params) const {
    if (options_.protocol != era::v2026) return params;
    boost::json::object meta;
    if (const auto* m = params.if_contains("_meta"); m && m->is_object()) meta = m->as_object();
    meta["io.modelcontextprotocol/protocolVersion"] = modern_version;
    boost::json::object capabilities = options_.capabilities;
    if (method.starts_with("tasks/") || (method == "tools/call" && params.contains("task"))) {
      boost::json::value& ext = capabilities["extensions"];
      if (!ext.is_object()) ext = boost::json::object{};
      ext.as_object()["io.modelcontextprotocol/tasks"] = boost::json::object{};
    }
    meta["io.modelcontextprotocol/clientCapabilities"] = std::move(capabilities);
    meta["io.modelcontextprotocol/clientInfo"] = options_.client_info;
    params["_meta"] = std::move(meta);
    return params;
  }

  task<boost::json::object> request(std::string method, boost::json::object params) {
    for (std::uint32_t round = 0; round <= options_.max_rounds; ++round) {
      task<boost::json::object> sent = roundtrip(method, envelope(method, params));
      boost::json::object response = co_await std::move(sent);
      if (const auto* e = response.if_contains("error")) {
        const boost::json::object& err = e->as_object();
        throw rpc_error(err.at("code").to_number<std::int64_t>(), std::string(err.at("message").as_string()),
                        err.contains("data") ? err.at("data") : boost::json::value(nullptr));
      }
      boost::json::object result = response.at("result").as_object();
      const auto* type = result.if_contains("resultType");
      if (options_.protocol != era::v2026 || !type || *type != "input_required") co_return result;
      // The server asked questions: answer each with its handler, then retry with the
      // answers and the state the server sealed.
      task<boost::json::object> answering = answer_all(result);
      params["inputResponses"] = co_await std::move(answering);
      if (const auto* state = result.if_contains("requestState")) params["requestState"] = *state;
      else params.erase("requestState");
    }
    throw std::runtime_error("droid::testing::client: " + method + " took more than " +
                             std::to_string(options_.max_rounds) + " rounds");
  }

  /// Answers every question of a 2026 `inputRequests` member of `asked` with the handlers:
  /// the `inputResponses` to send back.
  task<boost::json::object> answer_all(const boost::json::object& asked) {
    boost::json::object answers;
    if (const auto* questions = asked.if_contains("inputRequests"); questions && questions->is_object()) {
      for (const auto& [key, question] : questions->as_object()) {
        const boost::json::object& q = question.as_object();
        boost::json::object qp;
        if (const auto* p = q.if_contains("params"); p && p->is_object()) qp = p->as_object();
        // Named, not temporaries of the co_await's expression (g++ 12 mishandles those).
        const std::string asked_method(q.at("method").as_string());
        task<boost::json::object> pending = handle(asked_method, std::move(qp));
        boost::json::object answer = co_await std::move(pending);
        answers[key] = std::move(answer);
      }
    }
    co_return answers;
  }

  void cancel(std::int64_t id, const std::string& reason) {
    auto it = waiting_.find(id);
    if (it == waiting_.end()) return;
    const std::shared_ptr<waiter> w = it->second;
    feed(boost::json::serialize(boost::json::object{
        {"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", id}, {"reason", reason}}}}));
    w->cancelled = true;
    w->bell->cancel();
  }

  void feed(std::string text) {
    if (!session_) return;
    auto decoded = ir::decode(std::move(text));
    if (auto* m = std::get_if<ir::message>(&decoded)) session_->receive(std::move(*m), nullptr, options_.origin);
    else session_->reject(std::get<ir::rejection>(decoded));
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (session_) session_->close();
    for (auto& [id, w] : waiting_) w->bell->cancel();
  }

  server& srv_;
  asio::any_io_executor executor_;
  client_options options_;
  std::shared_ptr<session> session_;
  std::map<std::string, handler> handlers_;
  std::map<std::int64_t, std::shared_ptr<waiter>> waiting_;
  std::vector<notification> notifications_;
  std::int64_t next_id_ = 1;
  std::size_t answered_ = 0;
  bool closed_ = false;
};

client::client(server& srv, asio::any_io_executor executor, client_options options)
    : impl_(std::make_shared<impl>(srv, std::move(executor), std::move(options))) {
  impl_->start();
}

client::~client() { close(); }

void client::on(std::string method, handler h) { impl_->handlers_[std::move(method)] = std::move(h); }

task<boost::json::object> client::connect() {
  if (impl_->options_.protocol == era::v2026) {
    task<boost::json::object> discover = impl_->request("server/discover", {});
    co_return co_await std::move(discover);
  }
  boost::json::object params{{"protocolVersion", legacy_version},
                             {"capabilities", impl_->options_.capabilities},
                             {"clientInfo", impl_->options_.client_info}};
  task<boost::json::object> initialize = impl_->request("initialize", std::move(params));
  boost::json::object result = co_await std::move(initialize);
  notify("notifications/initialized");
  co_return result;
}

task<boost::json::object> client::request(std::string method, boost::json::object params) {
  return impl_->request(std::move(method), std::move(params));
}

task<boost::json::object> client::call_tool(std::string name, boost::json::object arguments) {
  return request("tools/call", boost::json::object{{"name", std::move(name)}, {"arguments", std::move(arguments)}});
}

task<boost::json::object> client::call_tool(std::string name, boost::json::object arguments, call_options options) {
  boost::json::object params{{"name", std::move(name)}, {"arguments", std::move(arguments)}};
  if (!options.progress_token.empty()) params["_meta"] = boost::json::object{{"progressToken", options.progress_token}};
  return request("tools/call", std::move(params));
}

task<boost::json::object> client::start_task(std::string name, boost::json::object arguments,
                                             std::chrono::milliseconds ttl) {
  boost::json::object asked;
  if (ttl.count() > 0) asked["ttl"] = ttl.count();
  task<boost::json::object> sent = request(
      "tools/call", boost::json::object{{"name", std::move(name)}, {"arguments", std::move(arguments)}, {"task", asked}});
  boost::json::object result = co_await std::move(sent);
  // 2025-11-25 wraps the task in `task`; 2026-07-28's result is the task.
  if (auto* wrapped = result.if_contains("task"); wrapped && wrapped->is_object()) co_return wrapped->as_object();
  co_return result;
}

task<boost::json::object> client::get_task(std::string task_id) {
  return request("tasks/get", boost::json::object{{"taskId", std::move(task_id)}});
}

task<boost::json::object> client::cancel_task(std::string task_id) {
  return request("tasks/cancel", boost::json::object{{"taskId", std::move(task_id)}});
}

task<boost::json::object> client::task_result(std::string task_id, std::chrono::milliseconds poll) {
  if (impl_->options_.protocol == era::v2025) {
    task<boost::json::object> waited = request("tasks/result", boost::json::object{{"taskId", task_id}});
    co_return co_await std::move(waited);
  }
  const std::shared_ptr<impl> keep = impl_;
  for (;;) {
    task<boost::json::object> polled = get_task(task_id);
    boost::json::object now = co_await std::move(polled);
    const std::string status(now.at("status").as_string());
    if (status == "completed") co_return now.at("result").as_object();
    if (status == "failed") {
      const boost::json::object& err = now.at("error").as_object();
      throw rpc_error(err.at("code").to_number<std::int64_t>(), std::string(err.at("message").as_string()),
                      err.contains("data") ? err.at("data") : boost::json::value(nullptr));
    }
    if (status == "cancelled") throw request_cancelled("droid::testing::client: task " + task_id + " was cancelled");
    if (status == "input_required") {
      task<boost::json::object> answering = keep->answer_all(now);
      boost::json::object answers = co_await std::move(answering);
      task<boost::json::object> updated =
          request("tasks/update", boost::json::object{{"taskId", task_id}, {"inputResponses", std::move(answers)}});
      (void)co_await std::move(updated);
      continue;
    }
    asio::steady_timer wait(keep->executor_, poll);
    (void)co_await wait.async_wait(use_task);
  }
}

std::vector<std::int64_t> client::pending() const {
  std::vector<std::int64_t> ids;
  for (const auto& [id, w] : impl_->waiting_) ids.push_back(id);
  return ids;
}

void client::cancel(std::int64_t id, std::string reason) { impl_->cancel(id, reason); }

std::vector<boost::json::object> client::progress(std::string_view token) const {
  std::vector<boost::json::object> out;
  for (const notification& n : impl_->notifications_) {
    if (n.method != "notifications/progress") continue;
    const auto* t = n.params.if_contains("progressToken");
    if (t && t->is_string() && t->as_string() == token) out.push_back(n.params);
  }
  return out;
}

task<boost::json::array> client::list_tools() {
  boost::json::array all;
  boost::json::object params;
  while (true) {
    task<boost::json::object> listing = request("tools/list", params);
    boost::json::object page = co_await std::move(listing);
    for (auto& t : page.at("tools").as_array()) all.push_back(std::move(t));
    const auto* next = page.if_contains("nextCursor");
    if (!next || !next->is_string()) break;
    params["cursor"] = *next;
  }
  co_return all;
}

task<boost::json::object> client::read_resource(std::string uri) {
  return request("resources/read", boost::json::object{{"uri", std::move(uri)}});
}

task<boost::json::object> client::get_prompt(std::string name, boost::json::object arguments) {
  return request("prompts/get", boost::json::object{{"name", std::move(name)}, {"arguments", std::move(arguments)}});
}

void client::notify(std::string method, boost::json::object params) {
  boost::json::object m{{"jsonrpc", "2.0"}, {"method", std::move(method)}};
  if (!params.empty()) m["params"] = std::move(params);
  impl_->feed(boost::json::serialize(m));
}

const std::vector<notification>& client::notifications() const noexcept { return impl_->notifications_; }

std::size_t client::questions_answered() const noexcept { return impl_->answered_; }

void client::close() {
  if (impl_) impl_->close();
}

}  // namespace droid::testing
