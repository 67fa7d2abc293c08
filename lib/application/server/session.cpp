// SPDX-License-Identifier: BSL-1.0
/// @file
/// The 2025-era session: lifecycle, the peer's in-flight ids, cancellation.
///
/// ## Why the in-flight table is keyed by the peer's id exactly
/// The id is all a `notifications/cancelled` names, and all a response carries. Keyed by
/// anything looser (a string form), `7` and `"7"` would collide; keyed by nothing, a
/// second request reusing an id while the first runs would get the first one's answer or
/// cancellation. So a duplicate is refused outright (RELIABILITY decision 5) and exactly
/// one response ever carries a given id.
///
/// ## Why a cancelled request is still awaited
/// Cancelling requests the tool's stop token; it does not destroy the frame. The tool
/// unwinds at its next await (which completes as cancelled), its task ends normally,
/// and only then is the entry erased. Destroying a suspended frame from outside would
/// leave Asio holding a handler into freed memory.
#include <droid/application/server/session.hpp>

#include <charconv>
#include <exception>
#include <optional>
#include <stop_token>
#include <set>
#include <unordered_map>

#include <asio/io_context.hpp>

#include <droid/application/server/server.hpp>
#include <droid/application/spawn.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "dispatcher.hpp"

namespace droid {

namespace {
constexpr std::string_view level_names[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
}  // namespace

std::string_view to_string(log_level level) noexcept { return level_names[static_cast<std::size_t>(level)]; }

bool parse_log_level(std::string_view name, log_level& out) noexcept {
  for (std::size_t i = 0; i < std::size(level_names); ++i) {
    if (level_names[i] == name) {
      out = static_cast<log_level>(i);
      return true;
    }
  }
  return false;
}

std::string_view negotiate_version(std::string_view requested) noexcept {
  for (const std::string_view v : supported_versions)
    if (v == requested) return v;
  return supported_versions[0];
}

namespace {

/// Calls `finish()` on a request's stream when it goes out of scope, so that every exit
/// path of a request (answered, refused, cancelled, thrown through) ends its stream.
struct stream_finisher {
  outbound* to;
  ~stream_finisher() {
    if (to) to->finish();
  }
};

/// Starts a request's task on the session's executor.
///
/// Why not `spawn` on the `any_io_executor` alone: posting through the type-erased
/// executor wraps the driver in one more function object (an allocation, and an indirect
/// call) before the io_context wraps it in its own operation. Shards are io_contexts, so
/// the usual executor is unwrapped and posted to directly; any other kind still works.
template <class Handler>
void start(const asio::any_io_executor& executor, task<detail::reply> work, Handler&& on_done) {
  if (const auto* io = executor.target<asio::io_context::executor_type>()) {
    spawn(*io, std::move(work), std::forward<Handler>(on_done));
  } else {
    spawn(executor, std::move(work), std::forward<Handler>(on_done));
  }
}

/// One request being served: its stop source and the context its tool sees. Lives in the
/// in-flight table's node, under the request's id, so admitting a request allocates once.
struct call final : detail::request_channel {
  call(session& s, session::impl& st, std::shared_ptr<outbound> o, bool finish)
      : owner(s), state(st), stream(std::move(o)), finish_stream(finish) {}
  void notify(std::string_view method, std::string params_json) override;
  void close_stream() override {
    if (stream && !cancelled) stream->interrupt();
  }
  std::optional<exchange_error> exchange_refusal(std::string_view method) override;
  std::int64_t begin_exchange(detail::exchange_waiter& waiter, std::string_view method,
                              std::string_view params_json) override;
  void cancel_exchange(std::int64_t id) override;
  session& owner;
  session::impl& state;
  /// Where this request's notifications and response go (the POST's stream on HTTP).
  std::shared_ptr<outbound> stream;
  std::stop_source stop;
  bool cancelled = false;
  /// The stream was given for this request alone and ends with it.
  bool finish_stream = false;
  std::optional<tool_context> context;
};

}  // namespace

struct session::impl {
  impl(server& s, asio::any_io_executor e, std::shared_ptr<outbound> o)
      : srv(s), executor(std::move(e)), out(std::move(o)), dispatch(s) {}

  void send(outbound* to, std::string text) {
    if (!closed && to) to->send(std::move(text));
  }
  void send_error(outbound* to, const std::optional<ir::request_id>& id, ir::errc code, std::string_view text) {
    std::string buf;
    ir::append_error(buf, id, static_cast<std::int64_t>(code), text);
    send(to, std::move(buf));
  }
  void send_reply(outbound* to, const ir::request_id& id, detail::reply&& r) {
    if (r.framed) {
      send(to, std::move(r.result));
      return;
    }
    std::string buf;
    if (r.is_error()) {
      ir::append_error(buf, id, r.code, r.message, r.data);
    } else {
      buf.reserve(r.result.size() + 40);
      ir::append_result(buf, id, r.result);
    }
    send(to, std::move(buf));
  }

  server& srv;
  asio::any_io_executor executor;
  std::shared_ptr<outbound> out;
  detail::dispatcher dispatch;
  peer_info peer;
  bool initialized = false;
  bool closed = false;
  /// Whether `initialize` declared the tools capability: a client that was not told
  /// about tools must not be sent tools/list_changed.
  bool tools_advertised = false;
  /// URIs the client subscribed to (`resources/subscribe`).
  std::set<std::string, std::less<>> subscriptions;
  std::size_t dropped = 0;
  /// The peer's requests being served. Node-based on purpose: a call's address (its
  /// tool's context points at it) and its key (its task reads the id) must not move
  /// when the table grows.
  std::unordered_map<ir::request_id, call> in_flight;

  /// Server-to-client requests awaiting the peer's answer, by the id we minted.
  ///
  /// Why ids start at 2^40: they share one JSON-RPC channel with the peer's own ids, and
  /// a minted id that met one of the peer's would make the in-flight check above report
  /// a duplicate the peer never sent. Peers count from 0 or 1; 2^40 is far from both and
  /// still exact in a JavaScript number.
  std::unordered_map<std::int64_t, detail::exchange_waiter*> waiters;
  std::int64_t next_exchange_id = std::int64_t{1} << 40;

  /// Takes the waiter for `id` out of the table and resumes it with `outcome`. After
  /// `resume()` returns, nothing here may be touched that the tool could have ended
  /// (the caller holds the session alive).
  bool resolve(std::int64_t id, exchange_result outcome) {
    auto it = waiters.find(id);
    if (it == waiters.end()) return false;
    detail::exchange_waiter* w = it->second;
    waiters.erase(it);
    *w->slot = std::move(outcome);
    w->handle.resume();
    return true;
  }
};

session::session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
session::~session() = default;

std::shared_ptr<session> session::create(server& srv, asio::any_io_executor executor, std::shared_ptr<outbound> out) {
  std::shared_ptr<session> s(new session(std::make_unique<impl>(srv, std::move(executor), std::move(out))));
  srv.attach(s);
  return s;
}

std::size_t session::in_flight() const noexcept { return impl_->in_flight.size(); }
bool session::is_initialized() const noexcept { return impl_->initialized; }
bool session::is_closed() const noexcept { return impl_->closed; }
const peer_info& session::peer() const noexcept { return impl_->peer; }
const asio::any_io_executor& session::executor() const noexcept { return impl_->executor; }
std::size_t session::dropped_responses() const noexcept { return impl_->dropped; }

void session::notify(std::string_view method, std::string params_json) {
  if (!impl_->initialized) return;
  if (method == "notifications/tools/list_changed" && !impl_->tools_advertised) return;
  std::string buf;
  ir::append_notification(buf, method, params_json);
  impl_->send(impl_->out.get(), std::move(buf));
}

void session::set_outbound(std::shared_ptr<outbound> out) { impl_->out = std::move(out); }

void session::assume_initialized(peer_info peer) {
  impl_->peer = std::move(peer);
  impl_->initialized = true;
  impl_->tools_advertised = impl_->srv.tool_count() > 0;
}

void session::reject(const ir::rejection& why) {
  if (why.answer) impl_->send_error(impl_->out.get(), why.id, why.code, why.message);
}

void call::notify(std::string_view method, std::string params_json) {
  // A cancelled request is silent from then on: MCP says the sender of the cancellation
  // no longer expects anything about it.
  if (cancelled || owner.is_closed() || !stream) return;
  std::string buf;
  ir::append_notification(buf, method, params_json);
  stream->send(std::move(buf));
}

void session::close() {
  impl& s = *impl_;
  if (s.closed) return;
  // Closed first, so that new exchanges refuse and anything resumed below sees a session
  // that no longer sends. Then every waiting exchange is resumed with "ended", from a
  // table swapped out first (a resumed tool may finish and touch the session). Then every
  // tool is told to stop, from a snapshot of the stop sources (a tool that finishes
  // inline erases its own entry).
  s.closed = true;
  auto keep_alive = shared_from_this();
  for (auto& [id, w] : std::exchange(s.waiters, {})) {
    *w->slot = exchange_result(exchange_error{make_error_code(errc::session_ended), 0,
                                              "the session ended before the peer answered", {}});
    w->handle.resume();
  }
  std::vector<std::stop_source> stops;
  for (auto& [id, c] : s.in_flight) {
    c.cancelled = true;
    stops.push_back(c.stop);
  }
  for (std::stop_source& stop : stops) stop.request_stop();
}

void session::cancel(const ir::request_id& id) {
  auto it = impl_->in_flight.find(id);
  if (it == impl_->in_flight.end()) return;
  it->second.cancelled = true;
  // Copied first: the stop callbacks may resume the tool, which may finish and erase
  // its own entry.
  std::stop_source stop = it->second.stop;
  auto keep_alive = shared_from_this();
  stop.request_stop();
}

bool session::is_subscribed(std::string_view uri) const { return impl_->subscriptions.contains(uri); }

std::size_t session::outstanding_exchanges() const noexcept { return impl_->waiters.size(); }

namespace {
/// The capability a client must declare before it may be asked `method`.
std::string_view capability_for(std::string_view method) noexcept {
  if (method == "sampling/createMessage") return "sampling";
  if (method == "elicitation/create") return "elicitation";
  if (method == "roots/list") return "roots";
  return {};
}
}  // namespace

std::optional<exchange_error> call::exchange_refusal(std::string_view method) {
  if (owner.is_closed())
    return exchange_error{make_error_code(errc::session_ended), 0, "the session ended before the peer answered", {}};
  if (!stream)
    return exchange_error{make_error_code(errc::exchange_refused), 0,
                          "this request has no stream to carry a question to the client", {}};
  if (std::string why = stream->exchange_refusal(); !why.empty())
    return exchange_error{make_error_code(errc::exchange_refused), 0, std::move(why), {}};
  if (const std::string_view cap = capability_for(method); !cap.empty() && !owner.peer().has_capability(cap))
    return exchange_error{make_error_code(errc::exchange_refused), 0,
                          "the client did not declare the `" + std::string(cap) +
                              "` capability in initialize, so it cannot be asked " + std::string(method),
                          {}};
  return std::nullopt;
}

std::int64_t call::begin_exchange(detail::exchange_waiter& waiter, std::string_view method,
                                  std::string_view params_json) {
  session::impl& s = state;
  const std::int64_t id = s.next_exchange_id++;
  s.waiters.emplace(id, &waiter);
  std::string buf;
  ir::append_request(buf, ir::request_id(id), method, params_json);
  // Only queues the message for the stream's writer: nothing can answer it, and so
  // nothing can resume the waiter, before the caller's await_suspend has returned.
  stream->send(std::move(buf));
  return id;
}

void call::cancel_exchange(std::int64_t id) {
  session::impl& s = state;
  if (!s.waiters.contains(id)) return;
  // The peer may still be working on the question (a person filling in a form): tell it
  // to stop, on the same stream the question went out on.
  if (!s.closed && stream) {
    std::string buf;
    ir::append_notification(buf, "notifications/cancelled",
                            R"({"requestId":)" + std::to_string(id) + R"(,"reason":"the tool's request was cancelled"})");
    stream->send(std::move(buf));
  }
  auto keep_alive = owner.shared_from_this();
  s.resolve(id, exchange_result(exchange_error{make_error_code(errc::cancelled), 0,
                                               "the request was cancelled before the peer answered", {}}));
}

namespace {

/// Handles `initialize`: negotiates the version and records what the client declared.
/// Why parsed here and not in the dispatcher: the handshake *is* the 2025 session; the
/// 2026-07-28 era has none, and the dispatcher must not depend on it.
std::optional<std::string> read_initialize(ir::raw_json params, peer_info& peer, std::string& error) {
  if (params.kind != ir::json_kind::object) {
    error = "Invalid params: initialize needs protocolVersion, capabilities and clientInfo";
    return std::nullopt;
  }
  std::optional<std::string> requested;
  std::string_view detail;
  const std::error_code ec = ir::visit_json(
      params.text,
      [&](const ir::json_node& p) {
        ir::json_node version, caps, info;
        if (!p.find("protocolVersion", version) || version.kind() != ir::json_node::type::string) {
          error = "Invalid params: \"protocolVersion\" must be a string";
          return;
        }
        boost::json::value v;
        if (p.find("capabilities", caps) && caps.kind() == ir::json_node::type::object && decode(caps, v, error))
          peer.capabilities = std::move(v.as_object());
        if (p.find("clientInfo", info) && info.kind() == ir::json_node::type::object && decode(info, v, error))
          peer.client_info = std::move(v.as_object());
        requested = std::string(version.string());
      },
      &detail);
  if (ec) error = "Invalid params: " + std::string(detail);
  return requested;
}

std::string initialize_result(const server& srv, std::string_view version) {
  const server_info& info = srv.info();
  boost::json::object caps;
  if (srv.tool_count() > 0) caps["tools"] = boost::json::object{{"listChanged", true}};
  // Every tool can log (ctx.log), so the capability is always there.
  caps["logging"] = boost::json::object{};
  if (srv.resource_count() > 0)
    caps["resources"] = boost::json::object{{"subscribe", true}, {"listChanged", true}};
  if (srv.prompt_count() > 0) caps["prompts"] = boost::json::object{{"listChanged", true}};
  if (srv.has_completers()) caps["completions"] = boost::json::object{};
  boost::json::object server_info_json{{"name", info.name}, {"version", info.version}};
  if (!info.title.empty()) server_info_json["title"] = info.title;
  if (!info.website_url.empty()) server_info_json["websiteUrl"] = info.website_url;
  if (!info.icons.empty()) server_info_json["icons"] = to_json(info.icons);
  boost::json::object result{{"protocolVersion", version}, {"capabilities", std::move(caps)},
                             {"serverInfo", std::move(server_info_json)}};
  if (!info.instructions.empty()) result["instructions"] = info.instructions;
  return ir::to_json_text(result);
}

/// The request id a `notifications/cancelled` names, if it is well formed.
std::optional<ir::request_id> cancelled_id(ir::raw_json params) {
  if (params.kind != ir::json_kind::object) return std::nullopt;
  std::optional<ir::request_id> id;
  (void)ir::visit_json(params.text, [&](const ir::json_node& p) {
    ir::json_node rid;
    if (!p.find("requestId", rid)) return;
    if (rid.kind() == ir::json_node::type::integer) id = ir::request_id(rid.integer());
    if (rid.kind() == ir::json_node::type::string) id = ir::request_id(std::string(rid.string()));
  });
  return id;
}

}  // namespace

void session::route_answer(ir::message msg) {
  impl& s = *impl_;
  // Our ids are integers; a peer that echoes one as a string ("1099511627776") still
  // means ours (RELIABILITY decision 6: TypeScript and Python peers do this).
  std::int64_t id = 0;
  const ir::request_id& rid = msg.id();
  bool numeric = rid.is_integer();
  if (numeric) {
    id = rid.integer();
  } else {
    const std::string& text = rid.string();
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    numeric = ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }
  if (!numeric || !s.waiters.contains(id)) {
    // An answer to a question we gave up on, never asked, or asked of another session:
    // dropped, counted, never dispatched and never answered (RELIABILITY 2.16).
    ++s.dropped;
    return;
  }
  exchange_result outcome;
  if (msg.kind() == ir::message_kind::response) {
    boost::json::value v;
    std::string error;
    const std::error_code ec =
        ir::visit_json(msg.result().text, [&](const ir::json_node& n) { (void)decode(n, v, error); });
    outcome = ec ? exchange_result(exchange_error{make_error_code(errc::peer_error), 0,
                                                  "the peer's result could not be read", {}})
                 : exchange_result(std::move(v));
  } else {
    outcome = exchange_result(exchange_error{make_error_code(errc::peer_error), msg.error_code(),
                                             msg.error_message(), std::string(msg.error_data().text)});
  }
  // The resumed tool may finish and end this session's last reference.
  auto keep_alive = shared_from_this();
  s.resolve(id, std::move(outcome));
}

void session::receive(ir::message msg, std::shared_ptr<outbound> stream) {
  impl& s = *impl_;
  // Every request ends the stream it was given exactly once, however it ends. The
  // session's own outbound (stdout, a legacy event stream) serves every request and is
  // never ended by one.
  const bool own_stream = stream != nullptr;
  if (!stream) stream = s.out;
  stream_finisher done{msg.is_request() && own_stream ? stream.get() : nullptr};
  if (s.closed) return;
  outbound* to = stream.get();

  if (msg.is_response()) {
    route_answer(std::move(msg));
    return;
  }

  if (msg.is_notification()) {
    const std::string& m = msg.method();
    if (m == "notifications/initialized") return;
    if (m == "notifications/roots/list_changed") {
      if (s.initialized) s.srv.roots_list_changed(s.peer);
      return;
    }
    if (m == "notifications/cancelled") {
      // Unknown, completed or malformed cancellations are ignored (RELIABILITY 2.28).
      if (auto id = cancelled_id(msg.params())) cancel(*id);
    }
    // Every other notification, known or not, gets no output (RELIABILITY 2.11).
    return;
  }

  const ir::request_id& id = msg.id();
  const std::string& method = msg.method();

  if (method == "initialize") {
    if (s.initialized) {
      s.send_error(to, id, ir::errc::invalid_request, "Invalid Request: the session is already initialized");
      return;
    }
    std::string error;
    peer_info peer;
    auto requested = read_initialize(msg.params(), peer, error);
    if (!requested) {
      s.send_error(to, id, ir::errc::invalid_params, error);
      return;
    }
    const std::string_view version = negotiate_version(*requested);
    peer.protocol_version = std::string(version);
    s.peer = std::move(peer);
    s.initialized = true;
    s.tools_advertised = s.srv.tool_count() > 0;
    s.send_reply(to, id, detail::reply::ok(initialize_result(s.srv, version)));
    return;
  }

  if ((method == "resources/subscribe" || method == "resources/unsubscribe") && s.initialized) {
    // Per-session state, like the log level.
    std::optional<std::string> uri = ir::string_member(msg.params(), "uri");
    if (!uri) {
      s.send_error(to, id, ir::errc::invalid_params, "Invalid params: uri must be a string");
      return;
    }
    if (method == "resources/subscribe") {
      s.subscriptions.insert(std::move(*uri));
    } else {
      if (auto it = s.subscriptions.find(*uri); it != s.subscriptions.end()) s.subscriptions.erase(it);
    }
    s.send_reply(to, id, detail::reply::ok("{}"));
    return;
  }

  if (method == "logging/setLevel" && s.initialized) {
    // Session state, so handled here: in the stateless era the level comes with each
    // request's _meta instead.
    std::optional<log_level> level;
    log_level parsed{};
    if (auto name = ir::string_member(msg.params(), "level"); name && parse_log_level(*name, parsed)) level = parsed;
    if (!level) {
      s.send_error(to, id, ir::errc::invalid_params,
                   "Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency");
      return;
    }
    s.peer.min_log_level = level;
    s.send_reply(to, id, detail::reply::ok("{}"));
    return;
  }

  // Before the handshake only ping is served: the spec says so, and a server that
  // answered tools/list here would be promising capabilities it has not negotiated.
  if (!s.initialized && method != "ping") {
    s.send_error(to, id, ir::errc::invalid_request, "Invalid Request: the session is not initialized; send initialize first");
    return;
  }

  // One lookup admits the request or finds the duplicate; on a duplicate nothing is
  // constructed and `stream` is not moved from.
  auto [slot, admitted] = s.in_flight.try_emplace(id, *this, s, std::move(stream), own_stream);
  if (!admitted) {
    // id null: answering with the id would make two responses carry it, and the peer
    // could not tell which request each one ends (RELIABILITY decision 5).
    s.send_error(to, std::nullopt, ir::errc::invalid_request,
                 "Invalid Request: request id " + id.to_json() + " is already in flight");
    return;
  }
  call& record = slot->second;
  const ir::request_id& key = slot->first;
  // A request answered at once leaves the table before its answer goes out, as one
  // answered later does; its stream comes back here first, so that `to` and `done`
  // outlive the entry.
  auto retire = [&] {
    stream = std::move(record.stream);
    s.in_flight.erase(id);
  };
  std::optional<std::variant<detail::reply, task<detail::reply>>> dispatched;
  try {
    dispatched.emplace(s.dispatch.dispatch(
        method, msg.params(),
        detail::request_scope{s.peer, record, key, record.stop.get_token(), s.executor, record.context}));
  } catch (const std::exception& e) {
    // A handler of ours failed before any task existed: same rule as after, a generic
    // answer for the peer and the detail for the log; the session goes on.
    retire();
    s.srv.log(std::string("handler for ") + method + " failed: " + e.what());
    s.send_error(to, id, ir::errc::internal_error, "Internal error");
    return;
  }
  auto& outcome = *dispatched;

  if (auto* now = std::get_if<detail::reply>(&outcome)) {
    retire();
    s.send_reply(to, id, std::move(*now));
    return;
  }

  // The task finishes the stream itself, later.
  done.to = nullptr;
  // The completion finds its entry by the key in the table's own node: only it erases
  // the entry of a spawned request, so the key is there until then (and copying it
  // would allocate for a long string id).
  start(s.executor, std::move(std::get<1>(outcome)),
        [self = shared_from_this(), id_in_node = &key](std::exception_ptr failure, detail::reply r) {
          impl& st = *self->impl_;
          // Out of the table first (as before any answer), but kept alive until the
          // answer is sent: the node holds the id the answer carries.
          auto entry = st.in_flight.extract(*id_in_node);
          call& c = entry.mapped();
          const std::shared_ptr<outbound> to = std::move(c.stream);
          stream_finisher done{c.finish_stream ? to.get() : nullptr};
          if (c.cancelled) return;
          if (failure) {
            // The dispatcher turns tool exceptions into results, so this is a handler of
            // ours failing: a generic answer for the peer, the detail for the log.
            try {
              std::rethrow_exception(failure);
            } catch (const std::exception& e) {
              st.srv.log(std::string("handler failed: ") + e.what());
            } catch (...) {
              st.srv.log("handler failed with a non-standard exception");
            }
            st.send_error(to.get(), entry.key(), ir::errc::internal_error, "Internal error");
            return;
          }
          st.send_reply(to.get(), entry.key(), std::move(r));
        });
}

}  // namespace droid
