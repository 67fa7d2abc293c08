// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Streamable HTTP server as users see it (`http::listener`): it owns the shards'
/// contexts or borrows the application's, routes each request to its endpoint after the
/// checks every path shares, reaps idle sessions, and stops gracefully.
///
///     connection_core (connection.hpp): acceptor, connections, deadlines, framing
///          | request
///          v
///     listener::impl::handle: path, Host/Origin
///          |-- streamable_endpoint (streamable.cpp): POST, GET, DELETE on `options::path`
///          \-- legacy_endpoint (legacy_sse.cpp): the 2024-11-05 HTTP+SSE paths
///     endpoint_state (endpoint_state.hpp): session_table (sessions.hpp), per-shard runners
#include <droid/adapters/primary/transport/http/http.hpp>

#include <algorithm>
#include <csignal>
#include <thread>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>

#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>

#include "access/request_rules.hpp"
#include "cluster/cluster.hpp"
#include "connection.hpp"
#include "endpoint_state.hpp"
#include "routes.hpp"
#include "wire/tls.hpp"

namespace droid::http {

namespace detail {

// The composition root of the scale-out: the one place that picks Redis for the port.
store_maker& shared_store_maker() {
  static store_maker maker = make_redis_store;
  return maker;
}

}  // namespace detail

using detail::clock_type;
using detail::now_ns;

/// The io_contexts a listener owns (none when it serves on the application's).
///
/// Why apart from `impl`: the contexts must outlive everything that lives on them, and
/// `impl` may outlive the listener while its last connections finish. Why every one is
/// shut down before any is destroyed: a handler still queued on one shard may hold an
/// object with a timer of another (a GET's sink, posted to its session's shard);
/// destroyed one after the other, the second context's queued handlers would destroy a
/// timer of the first after its timer service was freed (a heap-use-after-free after a
/// SIGTERM with streams open, found by test example-load). A context shut down has
/// destroyed its handlers and keeps its services until its destructor.
struct listener::contexts {
  /// An io_context whose `shutdown()` (which destroys the handlers it still holds) is public.
  struct shard_context final : asio::io_context {
    using asio::io_context::io_context;
    using asio::execution_context::shutdown;
  };
  contexts() = default;
  contexts(const contexts&) = delete;
  contexts& operator=(const contexts&) = delete;
  ~contexts() {
    for (auto& io : owned) io->shutdown();
  }
  std::vector<std::unique_ptr<shard_context>> owned;
};

struct listener::impl final : detail::request_handler, std::enable_shared_from_this<impl> {
  impl(droid::server& s, options o)
      : srv(s),
        opts(std::move(o)),
        state(srv, opts),
        streamable(state),
        legacy(state),
        core(opts, *this, [&s](const diagnostic& d) { s.diagnose(d); }) {}

  /// Routes a request to its endpoint once the checks every path shares have passed.
  task<bool> handle(detail::connection& c, detail::request& req) override;
  task<bool> screen(detail::connection& c, const detail::request& head) override;
  void start_reaper();
  void do_stop(std::function<void()> on_stopped);
  /// After a stop has ended every session: waits for the connections to close (at most
  /// `drain_timeout` more), then tells whoever asked.
  void await_connections(std::shared_ptr<asio::steady_timer> deadline, std::function<void()> on_stopped);

  droid::server& srv;
  options opts;
  detail::endpoint_state state;
  detail::streamable_endpoint streamable;
  detail::legacy_endpoint legacy;
  detail::connection_core core;
  std::optional<asio::steady_timer> reaper;
  /// The listener runs its own threads (run()), rather than the application's contexts.
  bool owns_threads = false;
  /// The listener this serves, for application routes (`route::handler` reads it). Set
  /// by its constructors; routes run only while it serves.
  const listener* owner = nullptr;
};

task<bool> listener::impl::handle(detail::connection& c, detail::request& req) {
  const std::string_view target = req.target;
  const std::string_view path = target.substr(0, target.find('?'));
  const bool legacy_sse = opts.legacy_sse && path == opts.legacy_sse_path;
  const bool legacy_messages = opts.legacy_sse && path == opts.legacy_messages_path;
  // The application's own GET paths, outside any authentication (routes.cpp).
  if (const route* r = detail::find_route(opts.routes, path))
    co_return co_await detail::serve_route(c, req, opts, *r, srv, *owner);
  const bool metadata = state.gate.is_metadata_path(path);
  if (path != opts.path && !legacy_sse && !legacy_messages && !metadata)
    co_return co_await c.reply(404, "text/plain", "not found\n");

  // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host and
  // Origin; both are checked before anything else can run (docs/reliability.md, A1, A2).
  const std::string_view* host = req.host();
  const bool host_ok = host ? c.host_passes(*host, opts.allowed_hosts)
                            : req.version_minor == 0 && !c.local_is_loopback();
  // The metadata is public and the same for every page (a browser client reads it
  // before it has a token), so only the Host check applies to it.
  if (metadata && host_ok) co_return co_await state.gate.serve_metadata(c, req);
  if (!host_ok || req.count("origin") > 1 || !detail::origin_allowed(req.find("origin"), opts.allowed_origins))
    co_return co_await c.reply_rpc_error(403, ir::errc::invalid_request, "Forbidden: Host or Origin not allowed");

  // A browser's request from an allowed origin (the check above let it through): every
  // response to it says the page may read it.
  const std::string_view* origin = req.find("origin");
  if (origin) c.set_response_headers(detail::cors_headers(*origin));
  const char* allow = legacy_sse        ? "GET"
                      : legacy_messages ? "POST"
                      : opts.stateless  ? "POST"
                      : opts.standalone_stream ? "GET, POST, DELETE"
                                               : "POST, DELETE";
  if (req.method == "OPTIONS") {
    // A CORS preflight (answered before any authentication: it carries no credentials),
    // or a plain OPTIONS asking what the path allows.
    std::string extra = "Allow: " + std::string(allow) + "\r\n";
    if (origin && req.find("access-control-request-method"))
      extra += detail::preflight_headers(allow, req.find("access-control-request-headers"));
    co_return co_await c.reply(204, {}, {}, false, extra);
  }
  // Every MCP path, every method: one gate (a check in one endpoint and not another is
  // how resource servers get bypassed), then one slot of the caller's request limit.
  detail::caller who;
  if (!state.gate.enabled())
    state.gate.admit_unprotected(c, req, who);
  else if (auto refused = co_await state.gate.admit(c, req, who))
    co_return *refused;
  if (const char* limit = state.gate.take_slot(c, who)) co_return co_await state.gate.refuse_busy(c, req, limit);
  if (legacy_sse && req.method == "GET") co_return co_await legacy.stream(c, req, who);
  if (legacy_messages && req.method == "POST") co_return co_await legacy.message(c, req, who);
  if (!legacy_sse && !legacy_messages) {
    if (req.method == "POST") co_return co_await streamable.post(c, req, who);
    if (req.method == "GET") co_return co_await streamable.get(c, req, who);
    if (req.method == "DELETE") co_return co_await streamable.remove(c, req, who);
  }
  const std::string allow_header = "Allow: " + std::string(allow) + "\r\n";
  co_return co_await c.reply(405, "text/plain", "method not allowed\n", false, allow_header);
}

task<bool> listener::impl::screen(detail::connection& c, const detail::request& head) {
  // Only the token is judged here, and only on the paths that need one: everything else
  // a request is judged by (Host, Origin, its slots, its body) waits for `handle`.
  if (!state.gate.enabled() || head.method == "OPTIONS") co_return true;
  const std::string_view path = head.target.substr(0, head.target.find('?'));
  const bool mcp_path = path == opts.path || (opts.legacy_sse && (path == opts.legacy_sse_path ||
                                                                  path == opts.legacy_messages_path));
  if (!mcp_path) co_return true;
  detail::caller who;
  const std::optional<bool> refused = co_await state.gate.admit(c, head, who);
  co_return !refused;
}

void listener::impl::start_reaper() {
  const auto period = std::clamp<clock_type::duration>(opts.session_idle_timeout / 4, std::chrono::milliseconds(50),
                                                       std::chrono::seconds(5));
  reaper->expires_after(period);
  reaper->async_wait([this, self = shared_from_this()](const std::error_code& ec) {
    if (ec || core.stopping()) return;
    const std::int64_t cutoff =
        now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(opts.session_idle_timeout).count();
    for (auto& e : state.sessions.take_idle(cutoff)) {
      // Ended for good: no other instance may take it over.
      detail::end_session(e);
      if (state.peers) state.peers->forget(*e);
    }
    start_reaper();
  });
}

void listener::impl::do_stop(std::function<void()> on_stopped) {
  if (!core.begin_stop()) return;
  asio::post(core.shards[0]->io, [this, self = shared_from_this(), on_stopped = std::move(on_stopped)]() mutable {
    core.stop_accepting();
    if (reaper) reaper->cancel();
    // Give running calls the drain deadline, then end every session.
    auto drain = std::make_shared<asio::steady_timer>(core.shards[0]->io, opts.drain_timeout);
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [this, self, drain, poll, on_stopped = std::move(on_stopped)]() mutable {
      // Sessions with open POST streams are still answering.
      if ((state.sessions.any_answering() || state.sessionless_answering.load() > 0) &&
          drain->expiry() > clock_type::now()) {
        auto tick = std::make_shared<asio::steady_timer>(core.shards[0]->io, std::chrono::milliseconds(10));
        tick->async_wait([poll, tick](const std::error_code&) { (*poll)(); });
        return;
      }
      // The sessions end here, not everywhere: their records stay in Redis, and the
      // goodbye lets the other instances take them over at the clients' next requests.
      if (state.peers) state.peers->stop();
      for (auto& e : state.sessions.take_all()) detail::end_session(e);
      core.close_connections();
      for (auto& s : core.shards) {
        asio::post(s->io, [this, self, s = s.get()] {
          // Sessionless requests (listen streams above all) end here; their streams
          // finish and their connections close.
          state.sessionless[s->index]->runner->close();
          s->guard.reset();
          core.stop_sweep(*s);
        });
      }
      if (on_stopped) {
        drain->expires_after(opts.drain_timeout);
        await_connections(drain, std::move(on_stopped));
      }
      *poll = nullptr;  // break the self-reference
    };
    (*poll)();
  });
}

void listener::impl::await_connections(std::shared_ptr<asio::steady_timer> deadline,
                                       std::function<void()> on_stopped) {
  if (core.connections() == 0 || deadline->expiry() <= clock_type::now()) {
    on_stopped();
    return;
  }
  auto tick = std::make_shared<asio::steady_timer>(core.shards[0]->io, std::chrono::milliseconds(10));
  tick->async_wait([this, self = shared_from_this(), tick, deadline,
                    on_stopped = std::move(on_stopped)](const std::error_code&) mutable {
    await_connections(deadline, std::move(on_stopped));
  });
}

namespace {

/// `http://host:port/path` (https with TLS), as the listener is bound.
std::string url_of(const listener::impl& l) {
  const std::string& h = l.opts.host;
  const bool v6 = h.find(':') != std::string::npos;
  std::string out = l.core.tls() ? "https://" : "http://";
  if (v6) out.append("[").append(h).append("]");
  else out += h;
  out.append(":").append(std::to_string(l.core.port())).append(l.opts.path);
  return out;
}

/// Builds the shards and the per-shard runners over `contexts`, and binds.
void set_up(listener::impl& l, const std::vector<asio::io_context*>& contexts) {
  if (contexts.empty()) throw std::invalid_argument("http::listener: no io_context to serve on");
  const auto n = static_cast<std::int64_t>(contexts.size());
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    l.core.shards.push_back(std::make_unique<detail::shard>(*contexts[i], i));
    auto local = std::make_unique<detail::sessionless_shard>();
    local->runner = request_runner::create(l.srv, contexts[i]->get_executor());
    local->index = static_cast<std::int64_t>(i);
    local->shard_count = n;
    l.state.sessionless.push_back(std::move(local));
    l.state.shard_executors.push_back(contexts[i]->get_executor());
  }
  l.state.sessions.spread_over(contexts.size());
  // Before binding: a bad certificate is a start-up error, not a port that refuses
  // every handshake.
  const bool chain = !l.opts.tls_certificate_chain.empty(), key = !l.opts.tls_private_key.empty();
  if (chain != key)
    throw std::invalid_argument("http::listener: TLS needs both tls_certificate_chain and tls_private_key");
  if (chain) l.core.set_tls(detail::make_tls_context(l.opts.tls_certificate_chain, l.opts.tls_private_key));
  l.core.bind();
  l.state.gate.prepare(contexts.size(), url_of(l));
  l.reaper.emplace(*contexts.front());
  if (!l.opts.cluster.redis_url.empty()) {
    std::vector<asio::any_io_executor> executors;
    for (asio::io_context* io : contexts) executors.push_back(io->get_executor());
    std::shared_ptr<detail::shared_store> store = detail::shared_store_maker()(
        l.opts.cluster, executors, l.opts.session_idle_timeout, std::max<std::size_t>(l.opts.event_ring_capacity, 16));
    l.state.peers = std::make_shared<detail::cluster>(l.state, l.opts.cluster, std::move(executors), std::move(store));
    l.state.peers->on_request = [&l](std::vector<std::string_view> fields) {
      l.streamable.serve_forwarded(std::move(fields));
    };
  }
}

}  // namespace

listener::listener(droid::server& srv, options opts)
    : owned_(std::make_unique<contexts>()), impl_(std::make_shared<impl>(srv, std::move(opts))) {
  const unsigned n = impl_->opts.threads ? impl_->opts.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<asio::io_context*> raw;
  for (unsigned i = 0; i < n; ++i) {
    owned_->owned.push_back(std::make_unique<contexts::shard_context>(1));
    raw.push_back(owned_->owned.back().get());
  }
  set_up(*impl_, raw);
  impl_->owner = this;
  impl_->owns_threads = true;
  for (auto& s : impl_->core.shards) s->guard.emplace(s->io.get_executor());
}

listener::listener(droid::server& srv, options opts, std::vector<asio::io_context*> io_contexts)
    : owned_(std::make_unique<contexts>()), impl_(std::make_shared<impl>(srv, std::move(opts))) {
  set_up(*impl_, io_contexts);
  impl_->owner = this;
}

listener::~listener() {
  stop();
  if (impl_->owns_threads) {
    for (auto& s : impl_->core.shards)
      if (s->thread.joinable()) s->thread.join();
  }
  // An embedded listener's last connections may still be closing on the application's
  // contexts: they hold `impl` until they are done.
  impl_.reset();
}

std::uint16_t listener::port() const noexcept { return impl_->core.port(); }

std::string listener::url() const { return url_of(*impl_); }

void listener::reload_tls() {
  if (!impl_->core.tls()) throw std::logic_error("http::listener::reload_tls: this listener serves plain HTTP");
  impl_->core.set_tls(detail::make_tls_context(impl_->opts.tls_certificate_chain, impl_->opts.tls_private_key));
}

void listener::start() {
  if (impl_->state.peers) impl_->state.peers->start();
  impl_->core.start(impl_);
  asio::post(impl_->core.shards[0]->io, [l = impl_] { l->start_reaper(); });
}

void listener::run() {
  if (!impl_->owns_threads)
    throw std::logic_error("http::listener::run: this listener serves on the application's io_contexts; call start()");
  start();
  auto& shards = impl_->core.shards;
  for (std::size_t i = 1; i < shards.size(); ++i) {
    detail::shard* s = shards[i].get();
    s->thread = std::thread([s] { s->io.run(); });
  }
  shards[0]->io.run();
  for (std::size_t i = 1; i < shards.size(); ++i)
    if (shards[i]->thread.joinable()) shards[i]->thread.join();
}

void listener::stop() { impl_->do_stop(nullptr); }

void listener::stop(std::function<void()> on_stopped) { impl_->do_stop(std::move(on_stopped)); }

std::size_t listener::sessions() const { return impl_->state.sessions.size(); }
std::size_t listener::connections() const { return impl_->core.connections(); }
std::size_t listener::kept_bytes() const { return impl_->state.kept->used(); }
std::size_t listener::kept_squeezed() const { return impl_->state.kept->squeezed(); }
std::size_t listener::streams() const {
  return impl_->state.sessions.open_streams() + impl_->state.sessionless_answering.load();
}

int serve(droid::server& srv, options opts, void (*on_ready)(const listener&)) {
  std::signal(SIGPIPE, SIG_IGN);
  const bool tls = !opts.tls_certificate_chain.empty();
  listener l(srv, std::move(opts));
  if (on_ready) on_ready(l);
  // Signals are watched on a thread of their own so that every shard stays a plain
  // io_context::run().
  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  signals.async_wait([&l](const std::error_code& ec, int) {
    if (!ec) l.stop();
  });
  // SIGHUP, the usual "reread your configuration", renews the certificate.
  asio::signal_set reloads(signal_io);
  std::function<void()> await_reload = [&] {
    reloads.async_wait([&](const std::error_code& ec, int) {
      if (ec) return;
      try {
        l.reload_tls();
        srv.diagnose(diagnostic_level::info, "TLS certificate reloaded", {{"transport", "http"}});
      } catch (const std::exception& e) {
        srv.diagnose(diagnostic_level::error, "TLS reload failed, keeping the old certificate",
                     {{"transport", "http"}, {"error", e.what()}});
      }
      await_reload();
    });
  };
  if (tls) {
    reloads.add(SIGHUP);
    await_reload();
  }
  std::thread watcher([&signal_io] { signal_io.run(); });
  l.run();
  signals.cancel();
  reloads.cancel();
  signal_io.stop();
  watcher.join();
  return 0;
}

}  // namespace droid::http
