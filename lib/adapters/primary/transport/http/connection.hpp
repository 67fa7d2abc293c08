// SPDX-License-Identifier: BSL-1.0
/// @file
/// The connection core of the HTTP server: shards, the acceptor, each connection's read
/// loop with its deadlines, and the writing of responses and event streams. It knows
/// nothing of MCP: every complete request goes to a `request_handler`, which the
/// listener provides (listener.cpp routes it to the Streamable HTTP or legacy endpoint).
///
///     acceptor (shard 0) --socket--> connection (shard i, in turn)
///     (with options::accept_on_every_shard: acceptor (shard i) --> connection (shard i))
///                                        |  request_parser: one request at a time
///                                        v
///                                   request_handler::handle(connection, request)
///
/// ## Why one request at a time per connection
/// HTTP/1.1 pipelining requires responses in request order. Serving the next request
/// only after the previous response is written gives that order for free, and a client
/// that wants concurrency opens more connections (every MCP client does).
///
/// Primary adapter, private.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/application/server/diagnostic.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/application/task.hpp>

#include "wire/keyed_limits.hpp"
#include "wire/request_parser.hpp"
#include "wire/responses.hpp"
#include "sessions/json_answer.hpp"
#include "sessions/stream.hpp"
#include "wire/tls.hpp"


namespace droid::http::detail {

/// A connection as the deadline sweep sees it: when it must be done by, and how to stop
/// it when it is not.
///
/// Why a sweep and not a timer per connection: re-arming an Asio timer three or four
/// times per request (idle, header, body deadlines) moved the reactor's timerfd each
/// time, one `timerfd_settime` system call per request (strace under wrk), for timeouts
/// measured in seconds. A shard now walks its connections a few times per second; arming
/// a deadline is a store.
/// Invariants: linked into, and swept by, its own shard only.
struct deadline_hook {
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  std::int64_t deadline_ns = never;
  deadline_hook* prev = nullptr;
  deadline_hook* next = nullptr;
  /// Called by the sweep once `deadline_ns` has passed.
  virtual void expire() noexcept = 0;

 protected:
  ~deadline_hook() = default;
};

/// One thread's share of the server: the io_context it runs (the listener's own, or one
/// the application owns and runs) and the connections living there.
///
/// Why shards: every connection, session and sessionless request is touched by one
/// thread only, so none of them needs a lock.
struct shard {
  shard(asio::io_context& context, std::size_t i) : io(context), sweeper(context), index(i) {}

  asio::io_context& io;
  /// Keeps a listener-owned context's run() going while idle (unset when embedded: the
  /// application decides when its contexts stop).
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  /// The thread running `io`, when the listener owns it (shard 0 runs on run()'s caller).
  std::thread thread;
  /// Connections served here (an intrusive list: linking one allocates nothing).
  deadline_hook* live = nullptr;
  asio::steady_timer sweeper;
  /// Cleared when the listener stops: the sweep does not re-arm (shard thread only).
  bool sweeping = true;
  /// This shard's place in the listener's list.
  std::size_t index;

  /// What the follow rule (`connection::should_move`) weighs a shard's work by: the
  /// connections living here (their reading, parsing and writing) and the connections
  /// whose latest request went to a session living here (its dispatch and tool). Read by
  /// every shard, changed only when a connection opens, closes, moves or turns to a
  /// session of another shard: not per request.
  ///
  /// Why: with connections following their session and nothing else, every connection
  /// of one busy session moves to that session's shard, and the server runs on one
  /// thread while the others idle (one session shared by 64 connections on two shards:
  /// the machine 12-14 % idle under load; docs/benchmarks.md, "One session, many
  /// connections").
  struct alignas(64) load_counts {
    std::atomic<std::uint32_t> living{0};
    std::atomic<std::uint32_t> serving{0};
    [[nodiscard]] std::uint32_t weight() const noexcept {
      return living.load(std::memory_order_relaxed) + serving.load(std::memory_order_relaxed);
    }
  } load;

  void link(deadline_hook* h) noexcept {
    h->next = live;
    if (live) live->prev = h;
    live = h;
    load.living.fetch_add(1, std::memory_order_relaxed);
  }
  void unlink(deadline_hook* h) noexcept {
    if (!h->prev && live != h) return;  // not linked here (a connection between shards)
    if (h->prev) h->prev->next = h->next;
    else live = h->next;
    if (h->next) h->next->prev = h->prev;
    h->prev = h->next = nullptr;
    load.living.fetch_sub(1, std::memory_order_relaxed);
  }
};

class connection;

/// The size of a connection's read buffer: a read takes at most this much.
constexpr std::size_t read_buffer_size = 16 * 1024;
/// A read buffer of `read_buffer_size`, one this thread kept if it has one.
[[nodiscard]] std::unique_ptr<char[]> take_read_buffer();
/// Keeps `buffer` for this thread's next connection, or frees it past the bound.
void give_back_read_buffer(std::unique_ptr<char[]> buffer) noexcept;

/// What the core hands each complete, well-formed request to. Returns whether the
/// connection may carry another request.
class request_handler {
 public:
  virtual task<bool> handle(connection& c, request& req) = 0;
  /// Looks at a request's head before its body is read, when the body has not all
  /// arrived yet: true to read it, false when an answer was written (the connection then
  /// closes, the body unread). What it is for: a request that will be refused for its
  /// headers (no valid token) must not get to pin a body's worth of memory first.
  virtual task<bool> screen(connection& c, const request& head) = 0;

 protected:
  ~request_handler() = default;
};

/// The acceptor, the shards' deadline sweeps and the set of live connections.
///
/// Why apart from the endpoints: TLS, limits and graceful close concern every request
/// alike, and an endpoint should not have to know how bytes reach it.
/// Affinity: each accept point is used from its shard's thread (shard 0's when there is
/// one point); the closers' list is shared under its mutex; counters are atomics read
/// anywhere.
class connection_core {
 public:
  connection_core(const options& opts, request_handler& handler, std::function<void(const diagnostic&)> log)
      : opts_(opts), handler_(handler), log_(std::move(log)) {}

  /// Binds and listens on `opts.host:opts.port`: one listening socket on shard 0, or one
  /// per shard with `options::accept_on_every_shard` (see `accept_point`).
  /// Throws `std::system_error` when it cannot, as when another process holds the port.
  void bind();
  /// Starts accepting and sweeping deadlines. `keep` is held by every connection and
  /// pending handler, so what they refer to outlives them.
  void start(std::weak_ptr<void> keep);
  /// From shard 0: no new connections (each shard's listening socket is closed on its
  /// own thread).
  void stop_accepting();
  /// Closes every idle connection now and the busy ones after their response.
  void close_connections();
  /// From shard `s`: its sweep ends (the shard can go idle).
  void stop_sweep(shard& s) {
    s.sweeping = false;
    s.sweeper.cancel();
  }

  [[nodiscard]] const options& opts() const noexcept { return opts_; }
  [[nodiscard]] request_handler& handler() noexcept { return handler_; }
  [[nodiscard]] bool stopping() const noexcept { return stopping_.load(); }
  /// Marks the core as stopping; true the first time only.
  bool begin_stop() noexcept { return !stopping_.exchange(true); }
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] std::size_t connections() const noexcept { return connection_count_.load(); }
  /// The keep-alive token of `start`, for what the endpoints post (may be empty once the
  /// listener is gone).
  [[nodiscard]] std::shared_ptr<void> hold() const { return keep_.lock(); }
  /// The TLS context new connections get (null: plain HTTP). Swapped by a reload; each
  /// connection keeps the one it was accepted with.
  void set_tls(std::shared_ptr<asio::ssl::context> tls);
  [[nodiscard]] std::shared_ptr<asio::ssl::context> tls() const;

  std::vector<std::unique_ptr<shard>> shards;

 private:
  friend class connection;

  /// Where connections are accepted: a listening socket, the shard whose thread accepts
  /// on it, and the peer address each accept reports.
  ///
  /// Why one per shard can be asked for (`options::accept_on_every_shard`): with a single
  /// socket on shard 0, every new connection wakes shard 0 and then, for half of them,
  /// the other shard it is handed to (a cross-thread post, an epoll wake-up and a context
  /// switch). With `SO_REUSEPORT` the kernel spreads connections over the shards'
  /// sockets, and each is served where it was accepted (docs/benchmarks.md,
  /// "Connections"). Why the peer address is kept here: the accept reports it, which
  /// saves a `getpeername` per connection.
  struct accept_point {
    /// The shard that accepts here and keeps what it accepts; null for the single
    /// socket, which deals connections out to the shards in turn.
    shard* home = nullptr;
    std::optional<asio::ip::tcp::acceptor> acceptor;
    /// Filled by each accept: the peer's address without a `getpeername`.
    asio::ip::tcp::endpoint peer;
  };
  void start_accept(accept_point& at);
  /// Opens, binds and listens one socket on `io` (sharing the port when `share`).
  void open_listening(asio::ip::tcp::acceptor& a, const asio::ip::tcp::endpoint& ep, bool share);
  void start_sweep(shard& s);
  /// How often each shard looks for expired deadlines: a tenth of the shortest connection
  /// timeout, so a deadline is late by at most that much.
  [[nodiscard]] clock_type::duration sweep_period() const;

  const options& opts_;
  request_handler& handler_;
  std::function<void(const diagnostic&)> log_;
  std::weak_ptr<void> keep_;
  std::vector<std::unique_ptr<accept_point>> accept_points_;
  /// Whether every connection's local address is loopback, known when the listening
  /// sockets are bound to one address (not a wildcard): then no `getsockname` per
  /// connection.
  std::optional<bool> local_loopback_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> connection_count_{0};
  /// Connections per remote address (`options::max_connections_per_address`): one
  /// address must not take every connection the server has.
  keyed_limits connections_by_address_;
  std::atomic<std::size_t> next_shard_{0};
  std::atomic<bool> stopping_{false};
  /// Every live connection, so a stop can end idle keep-alives: an intrusive list, so
  /// that a connection costs no allocation to be found.
  std::mutex closers_mutex_;
  connection* closers_ = nullptr;
  mutable std::mutex tls_mutex_;
  std::shared_ptr<asio::ssl::context> tls_;
};


/// One accepted TCP connection and the requests it carries, and what endpoints use to
/// answer them: plain responses, one JSON document from a sink, an event stream.
///
/// Lifetime: shared; its `run()` holds it, and so does a close watch. Affinity: its
/// shard's thread.
class connection final : public std::enable_shared_from_this<connection>, private deadline_hook {
 public:
  /// `tls`, when not null, makes this an HTTPS connection: the handshake comes first,
  /// within the header timeout.
  /// `remote_address` and `address_slot`: the peer's address as the accept read it, and
  /// its place under `options::max_connections_per_address`, held for the connection's
  /// life.
  /// `local_loopback`: whether the local address is loopback, when the listener knows
  /// (else the socket is asked).
  connection(connection_core& core, shard& home, asio::ip::tcp::socket socket,
             std::shared_ptr<asio::ssl::context> tls, std::string remote_address, keyed_limits::slot address_slot,
             std::optional<bool> local_loopback = std::nullopt);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  task<void> run();

  /// Closes an idle connection at once (shutdown); a busy one finishes its response.
  /// From any thread: it runs on the connection's current shard.
  void close_soon();

  /// The shard the connection lives on now (it may move: `prefer_shard`).
  [[nodiscard]] shard& home() noexcept { return *home_.load(std::memory_order_relaxed); }
  /// Tells the connection which shard served the request it just carried (the shard of
  /// its session). Three in a row on one other shard, and the connection moves there
  /// before it reads its next request (`options::follow_sessions`); more for a
  /// connection that moved a short while ago (`move_socket`), and none onto a shard
  /// that already carries clearly more work (`should_move`).
  void prefer_shard(std::size_t index) noexcept {
    if (served_since_move_ < ~0u) ++served_since_move_;
    if (index != serving_) count_serving(index);
    if (index == home().index) {
      streak_ = 0;
    } else if (index == preferred_) {
      ++streak_;
    } else {
      preferred_ = index;
      streak_ = 1;
    }
  }
  [[nodiscard]] asio::any_io_executor executor() { return socket_.get_executor(); }
  /// Whether the socket's local address is loopback (the Host check follows the socket).
  [[nodiscard]] bool local_is_loopback() const noexcept { return local_is_loopback_; }
  /// The peer's IP address as text (empty when the socket could not say), for the
  /// per-address request limit and the tool's view of where a request came from.
  [[nodiscard]] const std::string& remote_address() const noexcept { return remote_address_; }
  /// Whether `host` (a request's Host) passes the DNS-rebinding check (`host_allowed`
  /// with this socket's loopback-ness and the listener's `allowed`, fixed for the
  /// listener's life), remembering the last value that passed. Why: a keep-alive
  /// client sends the same Host on every request, and the check (its name and port
  /// split, the allowed list, the loopback names) cost about 200 instructions a
  /// request where comparing with the remembered value costs a tenth of it.
  [[nodiscard]] bool host_passes(std::string_view host, const std::vector<std::string>& allowed);
  /// What the auth gate made of this connection's previous request, reused while it
  /// still describes the next one (auth_gate.cpp), so that a keep-alive connection costs
  /// one allocation for it, not one per request.
  std::shared_ptr<const request_origin> last_origin;
  /// This connection's address in the auth gate's count of requests per address, held
  /// from its first request on (auth_gate::take_slot), so that each request takes its
  /// slot there without looking the address up.
  keyed_limits::key_hold address_requests;

  /// Writes all of `data`, which the caller keeps alive until this completes.
  task<bool> write(std::string_view data);
  /// Writes what the socket takes of `data` at once, without waiting, and returns how
  /// much that was (0 when its buffer is full, and always over TLS); sets `failed` when
  /// the connection is broken.
  ///
  /// Why before every asynchronous write: an answer almost always fits in the socket's
  /// buffer, and Asio completes even a write that succeeds at once through the event
  /// loop (a post, a suspension and a resumption of the connection's coroutine, and a
  /// turn of the loop that polls epoll), which was a tenth of a JSON request's
  /// instructions (docs/benchmarks.md, "Where a request's time goes").
  std::size_t send_now(std::string_view data, bool& failed) noexcept;
  /// Writes one whole response; false when the connection must not carry another.
  task<bool> reply(int status, std::string_view content_type, std::string_view body, bool close = false,
                   std::string_view extra = {});
  /// A JSON-RPC error (`id: null`) as the body of an HTTP error.
  /// `extra`: more header lines (each ending in CRLF), such as a 503's Retry-After.
  task<bool> reply_rpc_error(int status, ir::errc code, std::string_view message, bool close = false,
                             std::string_view extra = {}) {
    co_return co_await reply(status, "application/json", rpc_error_body(code, message), close, extra);
  }

  /// Header lines (each ending in CRLF) every response to the current request carries,
  /// whoever writes it: the CORS headers of a browser's request. Cleared when the
  /// request is done.
  void set_response_headers(std::string lines) { response_headers_ = std::move(lines); }
  [[nodiscard]] const std::string& response_headers() const noexcept { return response_headers_; }

  /// A sink for one response on this connection; one that overflows closes the socket.
  [[nodiscard]] std::shared_ptr<response_sink> make_sink();
  /// Watches an event-stream connection for the client hanging up (it sends nothing
  /// more on it), so the stream ends at once instead of at the next keep-alive write.
  /// `stop_watching` drops the watch (which holds this connection).
  void watch_for_close(const std::shared_ptr<response_sink>& sink);
  /// The same for a JSON answer still being worked on: a hang-up ends its wait.
  void watch_for_close(const std::shared_ptr<json_answer>& answer);
  void stop_watching();
  /// Writes `sink`'s last message as one JSON document (202 when it carried none).
  task<bool> serve_json(const std::shared_ptr<response_sink>& sink, const std::string& extra_headers);
  /// Writes `answer`'s answer as `serve_json` would. Precondition: its request ended
  /// (`co_await answer.done()`) and the client did not hang up meanwhile. Why the caller
  /// waits: this is no coroutine (see `reply_document`), and the caller is one already.
  task<bool> reply_answer(json_answer& answer, const std::string& extra_headers);
  /// Writes an event-stream response from `sink` until it finishes. `headers_sent`: the
  /// caller already wrote the head (the legacy transport, which starts with its endpoint).
  /// A `standalone` stream idles with keep-alive comments and ends when the server stops.
  task<bool> serve_events(const std::shared_ptr<response_sink>& sink, const std::string& extra_headers,
                          bool standalone, bool headers_sent = false);

  /// Links in the core's list of live connections (under its mutex).
  connection* closer_prev = nullptr;
  connection* closer_next = nullptr;

 private:
  /// Sets the connection's one deadline; when the shard's sweep finds it passed, pending
  /// socket operations are cancelled and `timed_out_` says why.
  void arm(clock_type::duration d) noexcept {
    deadline_ns = now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
  void disarm() noexcept { deadline_ns = never; }
  void expire() noexcept override;
  void close_if_idle();
  /// Writes one JSON document answering a request, as `serve_json` and `reply_answer`
  /// both do: 202 when there is none, else 200, or `status` with Retry-After (at least
  /// one second) when the engine refused the request for a limit.
  task<bool> reply_document(std::string_view body, int status, int retry_after, const std::string& extra);
  /// The refusal branch of `reply_document`, a coroutine of its own: its headers are
  /// made here and must live until the write ends.
  task<bool> reply_refused(std::string_view body, int status, int retry_after, std::string extra);
  /// Runs `on_close(target)` when the client hangs up (see the public overloads).
  void watch_for_close(std::shared_ptr<void> target, void (*on_close)(void* target));
  /// Ends a connection whose request was answered with its body unread, so that the
  /// answer reaches the client (see the definition).
  task<void> linger();
  /// Whether to move to `preferred_` now: asked between requests, with nothing of the
  /// next one read yet.
  [[nodiscard]] bool should_move() const noexcept;
  /// Hands the socket to `preferred_`'s reactor (on the old shard's thread); false when
  /// the socket could not be moved and the connection must end. The caller then resumes
  /// on the new shard (`resume_on`).
  bool move_socket();

  connection_core& core_;
  /// What the core's owner lent to every connection: it outlives them all.
  std::shared_ptr<void> keep_;
  /// Written on the connection's own thread when it moves; read there, and by
  /// `close_soon` from any thread.
  std::atomic<shard*> home_;
  std::size_t preferred_ = 0;
  unsigned streak_ = 0;
  /// Requests in a row for one other shard that move the connection there. Doubled (up
  /// to 64) each time the connection moves again within 32 requests of its last move,
  /// back to 3 when it moves after longer.
  ///
  /// Why: a proxy's pooled connection carries sessions of every shard in no order, and
  /// with two shards three in a row on the other one come every eight requests or so:
  /// such a connection moved about once in seven requests (the proxied bench row: 0.36
  /// `epoll_ctl` per request), two system calls and a post each, for nothing. A
  /// connection that carries one client's session moves once and never again.
  unsigned move_after_ = 3;
  unsigned served_since_move_ = ~0u;
  /// The shard of the session this connection's latest request went to, counted in
  /// that shard's `load.serving` (none yet: the listener's shard count).
  std::size_t serving_ = ~std::size_t{0};
  /// Moves this connection's count in `shard::load_counts::serving` to shard `index`
  /// (an index past the shards: counted nowhere, as when the connection ends).
  void count_serving(std::size_t index) noexcept;
  asio::ip::tcp::socket socket_;
  /// Where the close watch's peek lands (the byte stays in the socket).
  char watch_byte_ = 0;
  /// The TLS session over `socket_`, or null for plain HTTP. Why a pointer beside the
  /// socket and not a second connection type: deadlines, the close watch and closing
  /// all work on the TCP socket either way, and only reading and writing differ.
  tls_session_ptr tls_;
  /// Where reads land before they are appended to the parse buffer.
  std::unique_ptr<char[]> read_buffer_;
  request_parser parser_;
  std::string response_headers_;
  /// The response `reply` writes, kept from one request to the next up to
  /// `kept_response_capacity` (an allocation per request otherwise).
  std::string out_;
  /// Frees `out_` when an answer or a stream grew it past `kept_response_capacity`: a
  /// large buffer is not kept for the next answer (an idle connection would hold it).
  void give_back_large_buffer() noexcept {
    if (out_.capacity() > kept_response_capacity) std::string().swap(out_);
  }
  /// The event vector of the last event stream written here, emptied, lent to the next
  /// sink (`make_sink`, `serve_events`): one allocation less per event-stream request.
  std::vector<sse_event> spare_events_;
  /// Larger vectors are not kept (an idle connection would hold them).
  static constexpr std::size_t kept_event_capacity = 4;
  static constexpr std::size_t kept_response_capacity = 16 * 1024;
  bool local_is_loopback_ = false;
  std::string remote_address_;
  /// The last Host value that passed `host_passes` (empty: none yet).
  std::string passed_host_;
  keyed_limits::slot address_slot_;
  bool timed_out_ = false;
  bool busy_ = false;
  /// The request being answered is a HEAD: `reply` writes the head alone.
  bool head_ = false;
  /// The handler's screen runs on a head whose body is not read: an answer closes.
  bool unread_body_ = false;
  bool closing_ = false;
};

}  // namespace droid::http::detail
