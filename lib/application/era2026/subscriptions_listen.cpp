// SPDX-License-Identifier: BSL-1.0
/// @file
/// `subscriptions/listen`: the filter, the acknowledgement, and the forwarding.
///
///     server registry --list_changed(m)--> subscription (any thread)
///                                              | post to the request's shard
///                                              v
///                                         channel.notify(m + subscriptionId) --> the listen request's stream
///
/// ## Why the subscription holds the channel by pointer and forgets it
/// The registry may call a subscription from any thread at any time, including after the
/// listen request ended; the posted work then finds `channel` null and sends nothing.
/// The pointer is read and cleared only on the request's shard, so no lock is needed.
///
/// ## Task status
/// A listen that names tasks (`taskIds`, the tasks extension) also hears of them: the
/// task engine tells the subscription of every change made through this process's store,
/// and the subscription, on its shard, reads the task again and sends it whole
/// (`notifications/tasks`, what `tasks/get` would answer) unless it is what it sent last.
///
/// ## Bounded by the stream, not here
/// A client that stops reading a listen stream is cut off by the transport's queue limit
/// (HTTP: `http::options::max_queued_bytes` closes the connection, which cancels the
/// request and so the subscription), not buffered here without end.
#include "subscriptions_listen.hpp"
#include "application/catalog/server_core.hpp"
#include "application/engine/dispatcher.hpp"
#include "application/tasks/task_engine.hpp"

#include <coroutine>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <string>

#include <asio/post.hpp>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

namespace droid::detail {
namespace {

/// What a listen request asked for, as the server agreed to honour it.
struct filter {
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  std::set<std::string, std::less<>> uris;
  /// Tasks whose status to push (the caller's own, that exist).
  std::set<std::string, std::less<>> task_ids;
  /// Whose tasks those are (`modern_task_owner`).
  std::string owner;
};

/// One open listen request as the registry sees it.
/// Invariants: the filter and `tag` never change after construction (read from any
/// thread); `channel` is touched only on `executor`'s thread.
class subscription final : public change_listener,
                           public task_listener,
                           public std::enable_shared_from_this<subscription> {
 public:
  subscription(asio::any_io_executor executor, filter f, std::string tag, task_engine& tasks)
      : executor_(std::move(executor)), filter_(std::move(f)), tag_(std::move(tag)), tasks_(tasks) {}

  void task_changed(std::string_view id) override {
    if (!filter_.task_ids.contains(id)) return;
    asio::post(executor_, [self = shared_from_this(), id = std::string(id)] { self->send_task(id); });
  }

  /// Shard only: sends task `id` as it is now, unless that is what was sent last.
  void send_task(const std::string& id) {
    if (!channel_) return;
    const std::optional<task_record> record = tasks_.store().get(id, filter_.owner);
    if (!record) return;
    std::string params = task_object(*record, true, true);
    std::string& last = sent_[id];
    if (params == last) return;
    last = params;
    params.pop_back();
    params += ',';
    params += tag_;
    params += '}';
    channel_->notify("notifications/tasks", std::move(params));
  }
  /// Shard only: every task's current state (a task may have ended before the listen).
  void send_tasks() {
    for (const std::string& id : filter_.task_ids) send_task(id);
  }

  void list_changed(std::string_view method) override {
    const bool wanted = (method == "notifications/tools/list_changed" && filter_.tools) ||
                        (method == "notifications/prompts/list_changed" && filter_.prompts) ||
                        (method == "notifications/resources/list_changed" && filter_.resources);
    if (wanted) forward(std::string(method), "{" + tag_ + "}");
  }

  void resource_updated(std::string_view uri) override {
    if (!filter_.uris.contains(uri)) return;
    std::string params = R"({"uri":)";
    ir::append_json_string(params, uri);
    params += ',';
    params += tag_;
    params += '}';
    forward("notifications/resources/updated", std::move(params));
  }

  /// Shard only: from now on (`c`) or never again (null) notifications go to `c`.
  void attach(request_channel* c) noexcept { channel_ = c; }

 private:
  void forward(std::string method, std::string params) {
    asio::post(executor_, [self = shared_from_this(), m = std::move(method), p = std::move(params)]() mutable {
      if (self->channel_) self->channel_->notify(m, std::move(p));
    });
  }

  asio::any_io_executor executor_;
  const filter filter_;
  const std::string tag_;
  task_engine& tasks_;
  request_channel* channel_ = nullptr;
  /// Shard only: the last state sent of each task, so a change that changes nothing a
  /// client sees (a message set twice) is not sent again.
  std::map<std::string, std::string, std::less<>> sent_;
};

/// Suspends until `stop` is requested. Why not a timer or a channel: nothing but the
/// stop token ends a listen, and its callback resumes the frame with no allocation.
/// Not copyable or movable: the callback holds its address.
class stop_awaiter {
 public:
  explicit stop_awaiter(std::stop_token t) : token_(std::move(t)) {}
  stop_awaiter(const stop_awaiter&) = delete;
  stop_awaiter& operator=(const stop_awaiter&) = delete;
  bool await_ready() const noexcept { return token_.stop_requested(); }
  // void: the frame is parked until the callback resumes it; the callback may run inside
  // this very call (a stop requested meanwhile), which resumes the frame at once.
  void await_suspend(std::coroutine_handle<> h) { on_stop_.emplace(token_, resumer{h}); }
  // Destroys the callback from inside its own invocation when it resumed us: allowed on
  // the same thread (the destructor does not wait for itself).
  void await_resume() noexcept { on_stop_.reset(); }

 private:
  struct resumer {
    std::coroutine_handle<> h;
    void operator()() const noexcept { h.resume(); }
  };
  std::stop_token token_;
  std::optional<std::stop_callback<resumer>> on_stop_;
};

task<reply> run_listen(server& srv, std::shared_ptr<subscription> sub, request_channel& channel,
                       std::string ack_params, std::stop_token stop, std::string tag) {
  // The acknowledgement is the first message of the stream, before anything the
  // registry could forward (the subscription is attached to the channel only after).
  channel.notify("notifications/subscriptions/acknowledged", std::move(ack_params));
  channel.answer_when_ended();
  sub->attach(&channel);
  detail::core(srv).changes().listen(sub);
  detail::core(srv).tasks().listen(sub);
  sub->send_tasks();
  co_await stop_awaiter(std::move(stop));
  sub->attach(nullptr);
  // Sent when the server ends the listen on its own (shutdown, end of input): a cancelled
  // request is silent.
  co_return reply::ok("{" + tag + "}");
}

}  // namespace

std::variant<reply, task<reply>> listen(server& srv, const ir::json_node* params, const peer_info& peer,
                                        request_channel& channel, const ir::request_id& id, std::stop_token stop,
                                        const asio::any_io_executor& executor) {
  filter f;
  bool ok = false;
  bool bad_uri = false;
  bool bad_task = false;
  if (params) {
    [&](const ir::json_node& p) {
      ir::json_node n, v;
      if (!p.find("notifications", n) || n.kind() != ir::json_node::type::object) return;
      ok = true;
      auto flag = [&](const char* key) {
        return n.find(key, v) && v.kind() == ir::json_node::type::boolean && v.boolean();
      };
      f.tools = flag("toolsListChanged");
      f.prompts = flag("promptsListChanged");
      f.resources = flag("resourcesListChanged");
      if (n.find("resourceSubscriptions", v)) {
        if (v.kind() != ir::json_node::type::array) {
          bad_uri = true;
          return;
        }
        v.for_each_element([&](const ir::json_node& u) {
          if (u.kind() == ir::json_node::type::string) f.uris.emplace(u.string());
          else bad_uri = true;
        });
      }
      if (n.find("taskIds", v)) {
        if (v.kind() != ir::json_node::type::array) {
          bad_task = true;
          return;
        }
        v.for_each_element([&](const ir::json_node& t) {
          if (t.kind() == ir::json_node::type::string) f.task_ids.emplace(t.string());
          else bad_task = true;
        });
      }
    }(*params);
  }
  if (!ok)
    return reply::error(ir::errc::invalid_params,
                        "Invalid params: subscriptions/listen needs a `notifications` filter object");
  if (bad_uri)
    return reply::error(ir::errc::invalid_params, "Invalid params: resourceSubscriptions must be an array of URIs");
  if (bad_task)
    return reply::error(ir::errc::invalid_params, "Invalid params: taskIds must be an array of task ids");
  if (!f.task_ids.empty() && !peer.has_extension(tasks_extension))
    return reply::error(ir::errc::missing_client_capability,
                        "Missing required client capability: task status notifications (taskIds) need the " +
                            std::string(tasks_extension) + " extension, which this request's _meta does not declare",
                        missing_extension_data(tasks_extension));
  // Only the caller's own tasks that exist are acknowledged: an id of another's is
  // indistinguishable from an unknown one, as tasks/get has it.
  f.owner = modern_task_owner(peer);
  std::erase_if(f.task_ids, [&](const std::string& t) {
    return !detail::core(srv).tasks().store().get(t, f.owner).has_value();
  });
  // Only what this server can send is acknowledged (and then honoured).
  f.tools = f.tools && srv.tool_count() > 0;
  f.prompts = f.prompts && srv.prompt_count() > 0;
  f.resources = f.resources && srv.resource_count() > 0;
  if (srv.resource_count() == 0) f.uris.clear();

  std::string tag = R"("_meta":{"io.modelcontextprotocol/subscriptionId":)";
  id.append_json(tag);
  tag += '}';
  std::string ack = R"({"notifications":{)";
  bool first = true;
  auto member = [&](std::string_view text) {
    if (!first) ack += ',';
    first = false;
    ack += text;
  };
  if (f.tools) member(R"("toolsListChanged":true)");
  if (f.prompts) member(R"("promptsListChanged":true)");
  if (f.resources) member(R"("resourcesListChanged":true)");
  // `"name":["a","b"]`, for a list the server agreed to.
  const auto strings = [&](std::string_view name, const std::set<std::string, std::less<>>& list) {
    if (list.empty()) return;
    member(name);
    char separator = '[';
    for (const std::string& item : list) {
      ack += separator;
      separator = ',';
      ir::append_json_string(ack, item);
    }
    ack += ']';
  };
  strings(R"("resourceSubscriptions":)", f.uris);
  strings(R"("taskIds":)", f.task_ids);
  ack += "},";
  ack += tag;
  ack += '}';
  auto sub = std::make_shared<subscription>(executor, std::move(f), tag, detail::core(srv).tasks());
  return run_listen(srv, std::move(sub), channel, std::move(ack), std::move(stop), std::move(tag));
}

}  // namespace droid::detail
