// SPDX-License-Identifier: BSL-1.0
/// @file
/// The 2025-era session: lifecycle, negotiated version, log level and subscriptions.
///
/// What happens to a request once admitted (its record, its task, its answer) is the
/// request runner's; the session decides only what the 2025 handshake decides: whether
/// the request may be served yet, and with which view of the client. A 2026-07-28
/// request that arrives on the same connection (stdio) goes to the same runner with a
/// view of its own, and never sees the session's state.
#include <droid/application/server/session.hpp>

#include <optional>
#include <set>

#include <droid/application/server/modern_request.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "application/observe/observation.hpp"
#include "application/catalog/server_core.hpp"

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
  for (const std::string_view v : legacy_versions)
    if (v == requested) return v;
  return legacy_versions[0];
}

struct session::impl {
  impl(server& s, asio::any_io_executor e, std::shared_ptr<outbound> o)
      : srv(s), executor(e), out(std::move(o)), runner(request_runner::create(s, std::move(e))) {
    runner->set_standalone(out);
    runner->keep_alive_with(peer_home);
  }

  /// Returns the bytes sent (0 once closed).
  std::size_t send_error(outbound* to, const std::optional<ir::request_id>& id, ir::errc code, std::string_view text,
                         std::string_view data = {}) {
    return closed ? 0 : runner->send_error(to, id, code, text, data);
  }

  server& srv;
  asio::any_io_executor executor;
  std::shared_ptr<outbound> out;
  /// Serves every request of this session, and every 2026 request that arrives on the
  /// same connection (stdio), each with its own view of the client.
  std::shared_ptr<request_runner> runner;
  /// The client as `initialize` described it, owned with the runner: a task's tool (or a
  /// call being cancelled) may resume after the session is gone, and its frame reads the
  /// peer it was served for. Without this a DELETE, a reap or a stop during a task was a
  /// use after free.
  std::shared_ptr<peer_info> peer_home = std::make_shared<peer_info>();
  peer_info& peer = *peer_home;
  bool initialized = false;
  bool closed = false;
  /// See `session::last_origin`.
  std::shared_ptr<const request_origin> last_origin;
  /// Whether `initialize` declared the tools capability: a client that was not told
  /// about tools must not be sent tools/list_changed.
  bool tools_advertised = false;
  /// URIs the client subscribed to (`resources/subscribe`).
  std::set<std::string, std::less<>> subscriptions;
  std::function<void()> on_change;
  void changed() const {
    if (on_change) on_change();
  }
};

session::session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
session::~session() = default;

std::shared_ptr<session> session::create(server& srv, asio::any_io_executor executor, std::shared_ptr<outbound> out,
                                         std::string principal) {
  std::shared_ptr<session> s(new session(std::make_unique<impl>(srv, std::move(executor), std::move(out))));
  s->impl_->peer.principal = std::move(principal);
  detail::core(srv).changes().attach(s);
  return s;
}

std::shared_ptr<session> session::restore(server& srv, asio::any_io_executor executor, std::shared_ptr<outbound> out,
                                          session_state state) {
  auto s = create(srv, std::move(executor), std::move(out), std::move(state.principal));
  impl& i = *s->impl_;
  i.peer.protocol_version = std::move(state.protocol_version);
  // A version this build does not speak (a newer instance wrote it) falls back as
  // `initialize` would have negotiated it here.
  i.peer.protocol_version = std::string(negotiate_version(i.peer.protocol_version));
  i.peer.revision = *parse_revision(i.peer.protocol_version);
  i.peer.client_info = std::move(state.client_info);
  i.peer.capabilities = std::move(state.capabilities);
  i.peer.min_log_level = state.min_log_level;
  i.subscriptions.insert(std::make_move_iterator(state.subscriptions.begin()),
                         std::make_move_iterator(state.subscriptions.end()));
  i.tools_advertised = state.tools_advertised;
  i.initialized = true;
  return s;
}

session_state session::state() const {
  const impl& i = *impl_;
  session_state st;
  st.protocol_version = i.peer.protocol_version;
  st.client_info = i.peer.client_info;
  st.capabilities = i.peer.capabilities;
  st.min_log_level = i.peer.min_log_level;
  st.subscriptions.assign(i.subscriptions.begin(), i.subscriptions.end());
  st.principal = i.peer.principal;
  st.tools_advertised = i.tools_advertised;
  return st;
}

void session::on_state_change(std::function<void()> f) { impl_->on_change = std::move(f); }

std::size_t session::in_flight() const noexcept { return impl_->runner->in_flight(); }
bool session::is_initialized() const noexcept { return impl_->initialized; }
bool session::is_closed() const noexcept { return impl_->closed; }
const peer_info& session::peer() const noexcept { return impl_->peer; }
std::shared_ptr<const request_origin> session::last_origin() const noexcept { return impl_->last_origin; }
const asio::any_io_executor& session::executor() const noexcept { return impl_->executor; }
std::size_t session::dropped_responses() const noexcept { return impl_->runner->dropped_responses(); }

void session::notify(std::string_view method, std::string params_json) {
  if (!impl_->initialized || impl_->closed || !impl_->out) return;
  if (method == "notifications/tools/list_changed" && !impl_->tools_advertised) return;
  std::string buf;
  ir::append_notification(buf, method, params_json);
  impl_->out->send(std::move(buf));
}

void session::set_outbound(std::shared_ptr<outbound> out) {
  impl_->runner->set_standalone(out);
  impl_->out = std::move(out);
}

void session::reject(const ir::rejection& why) {
  if (why.answer) impl_->send_error(impl_->out.get(), why.id, why.code, why.message);
}

void session::close() {
  impl& s = *impl_;
  if (s.closed) return;
  s.closed = true;
  auto keep_alive = shared_from_this();
  s.runner->close();
}

void session::cancel(const ir::request_id& id) {
  auto keep_alive = shared_from_this();
  impl_->runner->cancel(id);
}

bool session::is_subscribed(std::string_view uri) const { return impl_->subscriptions.contains(uri); }

std::size_t session::outstanding_exchanges() const noexcept { return impl_->runner->outstanding_exchanges(); }

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

std::string initialize_result(const server& srv, protocol_revision revision) {
  const server_info& info = srv.info();
  boost::json::object result{{"protocolVersion", to_string(revision)},
                             {"capabilities", detail::core(srv).capabilities(revision)},
                             {"serverInfo", detail::core(srv).identity(revision)}};
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

initialize_answer answer_initialize(const server& srv, ir::raw_json params) {
  initialize_answer a;
  std::string error;
  auto requested = read_initialize(params, a.peer, error);
  if (!requested) {
    a.error = std::move(error);
    return a;
  }
  const std::string_view version = negotiate_version(*requested);
  a.peer.protocol_version = std::string(version);
  a.peer.revision = *parse_revision(version);
  a.result = initialize_result(srv, a.peer.revision);
  return a;
}

void session::route_answer(ir::message msg) {
  auto keep_alive = shared_from_this();
  impl_->runner->route_answer(msg);
}

void session::receive(ir::message msg, std::shared_ptr<outbound> stream, std::shared_ptr<const request_origin> origin) {
  impl& s = *impl_;
  // Every request ends the stream it was given exactly once, however it ends. The
  // session's own outbound (stdout, a legacy event stream) serves every request and is
  // never ended by one.
  const bool own_stream = stream != nullptr;
  if (!stream) stream = s.out;
  outbound* to = stream.get();
  struct finisher {
    outbound* to;
    ~finisher() {
      if (to) to->finish();
    }
  } done{msg.is_request() && own_stream ? to : nullptr};
  if (s.closed) return;

  if (msg.is_response()) {
    route_answer(std::move(msg));
    return;
  }
  // Kept only for a server that may hide entries (what it is kept for).
  if (origin && origin != s.last_origin && detail::core(s.srv).may_hide()) s.last_origin = origin;

  if (msg.is_notification()) {
    const std::string& m = msg.method();
    // Notification middleware first: it may drop any notification, the engine's own too.
    if (!detail::core(s.srv).pass_notification(msg, s.peer, origin.get())) return;
    if (m == "notifications/initialized") return;
    if (m == "notifications/roots/list_changed") {
      if (s.initialized) detail::core(s.srv).changes().roots_list_changed(s.peer);
      return;
    }
    if (m == "notifications/cancelled") {
      // Unknown, completed or malformed cancellations are ignored (docs/reliability.md,
      // 2.28).
      if (auto id = cancelled_id(msg.params())) cancel(*id);
      return;
    }
    // An extension's notification, to its handler (server::on_notification), once the
    // session knows what the client declared.
    if (s.initialized) (void)detail::core(s.srv).deliver_notification(msg, s.peer);
    // Every other notification, known or not, gets no output (docs/reliability.md, 2.11).
    return;
  }

  // What the session answers itself (lifecycle methods, refusals) is reported to the
  // observer here, in one moment; what the runner serves, by the runner.
  const auto answered = [&](const peer_info& who, std::int64_t code, std::size_t bytes_out) {
    if (auto seen = detail::observe(s.srv, msg.method(), nullptr, who, msg.text().size()))
      seen->end(code ? request_outcome::error : request_outcome::ok, code, bytes_out);
  };
  const auto code_of = [](ir::errc c) { return static_cast<std::int64_t>(c); };

  // A request reusing the id of one in flight is refused before anything else reads it,
  // with id null as the runner refuses one: any answer carrying the id (a refusal of its
  // _meta, a session method answered at once) would be taken for the first one's.
  if (s.runner->is_in_flight(msg.id())) {
    answered(s.peer, code_of(ir::errc::invalid_request),
             s.send_error(to, std::nullopt, ir::errc::invalid_request,
                          "Invalid Request: request id " + msg.id().to_json() + " is already in flight"));
    return;
  }

  // A 2026-07-28 request on the same connection (stdio carries both eras): it brings its
  // own view of the client and touches nothing of the session's. Its params are parsed
  // once, for telling it from a 2025 request, for its _meta and for its handler.
  if (const bool only_modern = is_modern_only(msg.method()); only_modern || may_name_version(msg)) {
    bool modern = false;
    const auto serve_modern = [&](const ir::json_node* params) {
      // The rule HTTP applies too (the key's text may be inside an argument of a 2025
      // request: then it is not one).
      modern = is_modern_request(msg, nullptr, params);
      if (!modern) return;
      peer_info peer;
      // Who the transport said sent it (a session bound to a principal sends that one).
      peer.principal = s.peer.principal;
      peer.origin = origin;
      if (auto refused = admit_modern(s.srv, msg.method(), params, std::nullopt, peer)) {
        answered(peer, static_cast<std::int64_t>(refused->code),
                 s.send_error(to, msg.id(), refused->code, refused->message, refused->data));
        return;
      }
      done.to = nullptr;
      s.runner->serve_parsed(msg.id(), msg.method(), msg.id(), params, std::move(stream), own_stream,
                             std::move(peer), msg.text().size(), &msg);
    };
    if (const ir::json_kind kind = msg.params_kind(); kind == ir::json_kind::object || kind == ir::json_kind::array) {
      std::string_view detail;
      if (ir::visit_params(msg, [&](const ir::json_node& p) { serve_modern(&p); }, &detail) && only_modern) {
        // Validated text that still does not parse (a lone surrogate escape).
        s.send_error(to, msg.id(), ir::errc::invalid_params, "Invalid params: " + std::string(detail));
        return;
      }
    } else {
      serve_modern(nullptr);
    }
    if (modern) return;
  }

  const ir::request_id& id = msg.id();
  const std::string& method = msg.method();

  if (method == "initialize") {
    if (s.initialized) {
      answered(s.peer, code_of(ir::errc::invalid_request),
               s.send_error(to, id, ir::errc::invalid_request, "Invalid Request: the session is already initialized"));
      return;
    }
    initialize_answer answer = answer_initialize(s.srv, msg.params());
    if (answer.error) {
      answered(s.peer, code_of(ir::errc::invalid_params), s.send_error(to, id, ir::errc::invalid_params, *answer.error));
      return;
    }
    // The handshake replaces the view of the client, not whom the session belongs to.
    answer.peer.principal = std::move(s.peer.principal);
    s.peer = std::move(answer.peer);
    s.initialized = true;
    s.tools_advertised = s.srv.tool_count() > 0;
    // Written out before the answer leaves: a client's next request may reach another
    // instance that must find the session.
    s.changed();
    answered(s.peer, 0, s.closed ? 0 : s.runner->send_result(to, id, answer.result, s.peer));
    return;
  }

  if ((method == "resources/subscribe" || method == "resources/unsubscribe") && s.initialized) {
    // Per-session state, like the log level.
    std::optional<std::string> uri = ir::string_member(msg.params(), "uri");
    if (!uri) {
      answered(s.peer, code_of(ir::errc::invalid_params),
               s.send_error(to, id, ir::errc::invalid_params, "Invalid params: uri must be a string"));
      return;
    }
    if (method == "resources/subscribe") {
      if (!s.subscriptions.contains(*uri) && s.subscriptions.size() >= s.srv.options().max_subscriptions) {
        answered(s.peer, code_of(ir::errc::invalid_params),
                 s.send_error(to, id, ir::errc::invalid_params,
                              "Invalid params: this session holds " + std::to_string(s.subscriptions.size()) +
                                  " subscriptions, the most it may (server_options::max_subscriptions)"));
        return;
      }
      s.subscriptions.insert(std::move(*uri));
    } else {
      if (auto it = s.subscriptions.find(*uri); it != s.subscriptions.end()) s.subscriptions.erase(it);
    }
    s.changed();
    answered(s.peer, 0, s.runner->send_result(to, id, "{}", s.peer));
    return;
  }

  if (method == "logging/setLevel" && s.initialized) {
    // Session state, so handled here: in the stateless era the level comes with each
    // request's _meta instead.
    std::optional<log_level> level;
    log_level parsed{};
    if (auto name = ir::string_member(msg.params(), "level"); name && parse_log_level(*name, parsed)) level = parsed;
    if (!level) {
      answered(s.peer, code_of(ir::errc::invalid_params),
               s.send_error(to, id, ir::errc::invalid_params,
                            "Invalid params: level must be one of debug, info, notice, warning, error, critical, "
                            "alert, emergency"));
      return;
    }
    s.peer.min_log_level = level;
    s.changed();
    answered(s.peer, 0, s.runner->send_result(to, id, "{}", s.peer));
    return;
  }

  // Before the handshake only ping is served: the spec says so, and a server that
  // answered tools/list here would be promising capabilities it has not negotiated.
  if (!s.initialized && method != "ping") {
    answered(s.peer, code_of(ir::errc::invalid_request),
             s.send_error(to, id, ir::errc::invalid_request,
                          "Invalid Request: the session is not initialized; send initialize first"));
    return;
  }

  // The runner ends the stream from here on.
  done.to = nullptr;
  ir::request_id key = id;
  s.runner->serve(std::move(key), std::move(msg), std::move(stream), own_stream, s.peer, std::move(origin));
}

}  // namespace droid
