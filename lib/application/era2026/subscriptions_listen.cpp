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
/// ## Bounded by the stream, not here
/// A client that stops reading a listen stream is cut off by the transport's queue limit
/// (HTTP: `http::options::max_queued_bytes` closes the connection, which cancels the
/// request and so the subscription), not buffered here without end.
#include "subscriptions_listen.hpp"
#include "application/catalog/server_core.hpp"

#include <coroutine>
#include <memory>
#include <optional>
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
};

/// One open listen request as the registry sees it.
/// Invariants: the filter and `tag` never change after construction (read from any
/// thread); `channel` is touched only on `executor`'s thread.
class subscription final : public change_listener, public std::enable_shared_from_this<subscription> {
 public:
  subscription(asio::any_io_executor executor, filter f, std::string tag)
      : executor_(std::move(executor)), filter_(std::move(f)), tag_(std::move(tag)) {}

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
  request_channel* channel_ = nullptr;
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
  co_await stop_awaiter(std::move(stop));
  sub->attach(nullptr);
  // Sent when the server ends the listen on its own (shutdown, end of input): a cancelled
  // request is silent.
  co_return reply::ok("{" + tag + "}");
}

}  // namespace

std::variant<reply, task<reply>> listen(server& srv, const ir::json_node* params, request_channel& channel,
                                        const ir::request_id& id, std::stop_token stop,
                                        const asio::any_io_executor& executor) {
  filter f;
  bool ok = false;
  bool bad_uri = false;
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
    }(*params);
  }
  if (!ok)
    return reply::error(ir::errc::invalid_params,
                        "Invalid params: subscriptions/listen needs a `notifications` filter object");
  if (bad_uri)
    return reply::error(ir::errc::invalid_params, "Invalid params: resourceSubscriptions must be an array of URIs");
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
  if (!f.uris.empty()) {
    member(R"("resourceSubscriptions":[)");
    bool first_uri = true;
    for (const std::string& u : f.uris) {
      if (!first_uri) ack += ',';
      first_uri = false;
      ir::append_json_string(ack, u);
    }
    ack += ']';
  }
  ack += "},";
  ack += tag;
  ack += '}';
  auto sub = std::make_shared<subscription>(executor, std::move(f), tag);
  return run_listen(srv, std::move(sub), channel, std::move(ack), std::move(stop), std::move(tag));
}

}  // namespace droid::detail
