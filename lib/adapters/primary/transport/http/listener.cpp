// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Streamable HTTP server: shards, the acceptor, connections, the MCP endpoint and
/// the session table.
///
///     acceptor (shard 0) --socket--> connection (shard i, round robin)
///                                        |  request_parser: one request at a time
///                                        |  checks: Host/Origin, media types, session id
///                                        v
///     session_table (mutex) --entry--> session (its own shard) --> logical_stream --> response_sink --> socket
///                                                                         |
///                                                                   event_store (resumption)
///
/// ## Why one request at a time per connection
/// HTTP/1.1 pipelining requires responses in request order. Serving the next request
/// only after the previous response is written gives that order for free, and a client
/// that wants concurrency opens more connections (every MCP client does).
///
/// ## Why a session is driven on its own shard
/// The session engine is lock-free because one thread touches it. A request arriving on
/// another shard's connection is handed to the session's shard with one post, and what
/// the session answers comes back through the stream's own dispatch.
#include <droid/adapters/primary/transport/http/http.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <iostream>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <asio/bind_executor.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <droid/application/server/modern_request.hpp>
#include <droid/application/server/request_runner.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/ir/codec.hpp>

#include "checks.hpp"
#include "request_parser.hpp"
#include "routing_headers.hpp"
#include "stream.hpp"

namespace droid::http {

using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

/// The task methods a client polls with: answered at once, never with anything but
/// their response, so one JSON document serves them better than an event stream.
bool is_task_poll(std::string_view method) noexcept {
  return method == "tasks/get" || method == "tasks/list" || method == "tasks/cancel";
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

/// One live session as the transport sees it.
///
/// Invariants: `s` is touched only on `executor`'s thread; the atomics are read by the
/// reaper on another shard.
struct session_entry {
  std::string id;
  std::shared_ptr<session> s;
  asio::any_io_executor executor;
  /// Open POST streams and the GET stream: a session with any is busy, never reaped.
  std::atomic<int> active{0};
  /// Requests not yet answered, whether a connection still carries their stream or not:
  /// a client that lost its connection while a tool runs resumes it later, so the work
  /// keeps the session as an open stream does (it ends with the tool, or its cancellation).
  std::atomic<int> running{0};
  std::atomic<std::int64_t> last_used{0};
  /// The last stream number handed out (0 is the standalone stream).
  std::atomic<std::uint64_t> next_stream{0};
  /// A GET is attached to the standalone stream.
  std::atomic<bool> has_standalone{false};
  /// A session of the legacy HTTP+SSE transport (reachable only through its paths).
  bool legacy = false;

  // ---- the session's shard only -------------------------------------------------------
  /// Every event of the session, for resumption (null in JSON mode: nothing to resume).
  std::unique_ptr<event_store> store;
  /// Streams still being written (requests not yet answered), by number.
  std::unordered_map<std::uint64_t, std::shared_ptr<detail::logical_stream>> streams;
  /// Stream 0: notifications that belong to no request.
  std::shared_ptr<detail::logical_stream> standalone;
  /// Resumed streams (GET with Last-Event-ID of a request stream): they idle after their
  /// request is over and end with the session.
  std::vector<std::shared_ptr<detail::response_sink>> resumed;
};

/// The live sessions, by id.
///
/// Why a mutex and not shard-local maps: any shard's connection may carry any session's
/// request, so lookup is global; it is one short critical section per request.
class session_table {
 public:
  std::shared_ptr<session_entry> find(std::string_view id) const {
    std::lock_guard lock(mutex_);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }
  bool insert(const std::shared_ptr<session_entry>& e, std::size_t cap) {
    std::lock_guard lock(mutex_);
    if (map_.size() >= cap) return false;
    map_.emplace(e->id, e);
    return true;
  }
  std::shared_ptr<session_entry> erase(std::string_view id) {
    std::lock_guard lock(mutex_);
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    auto e = std::move(it->second);
    map_.erase(it);
    return e;
  }
  /// Removes and returns every entry idle since before `cutoff` and not busy (no open
  /// stream, no request being answered).
  std::vector<std::shared_ptr<session_entry>> take_idle(std::int64_t cutoff) {
    std::vector<std::shared_ptr<session_entry>> out;
    std::lock_guard lock(mutex_);
    for (auto it = map_.begin(); it != map_.end();) {
      const session_entry& e = *it->second;
      if (e.active.load() == 0 && e.running.load() == 0 && e.last_used.load() < cutoff) {
        out.push_back(std::move(it->second));
        it = map_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  std::vector<std::shared_ptr<session_entry>> take_all() {
    std::vector<std::shared_ptr<session_entry>> out;
    std::lock_guard lock(mutex_);
    for (auto& [id, e] : map_) out.push_back(std::move(e));
    map_.clear();
    return out;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return map_.size();
  }
  /// True while any session has a POST stream open (a request being answered).
  bool any_answering() const {
    std::lock_guard lock(mutex_);
    for (const auto& [id, e] : map_)
      if (e->active.load() > (e->has_standalone.load() ? 1 : 0)) return true;
    return false;
  }

 private:
  /// Lets `find` take the header's string_view as it is (no key string per request).
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return std::hash<std::string_view>{}(id); }
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<session_entry>, id_hash, std::equal_to<>> map_;
};

/// Ends a session on its own shard: cancels its calls and ends its GET stream. The
/// calls' own streams end as their tasks unwind.
void end_session(const std::shared_ptr<session_entry>& e) {
  asio::post(e->executor, [e] {
    e->s->close();
    if (e->standalone) e->standalone->finish();
    for (auto& sink : std::exchange(e->resumed, {})) sink->finish();
    e->s->set_outbound(nullptr);
  });
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

/// A complete response head plus body.
std::string response(int status, std::string_view content_type, std::string_view body, bool close,
                     std::string_view extra_headers = {}) {
  std::string out;
  out.reserve(160 + body.size());
  out += "HTTP/1.1 ";
  char digits[8];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, status).ptr);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  char length[24];
  out.append(length, std::to_chars(length, length + sizeof length, body.size()).ptr);
  out += "\r\n";
  if (close) out += "Connection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  out += body;
  return out;
}

/// Appends one chunk of a chunked body: hex size, CRLF, data, CRLF.
void append_chunk(std::string& out, std::string_view data) {
  char size[16];
  const auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
  out.append(size, end);
  out += "\r\n";
  out += data;
  out += "\r\n";
}

/// A JSON-RPC error as an HTTP response body (`id: null`).
std::string rpc_error_body(ir::errc code, std::string_view message) {
  std::string body;
  ir::append_error(body, std::nullopt, static_cast<std::int64_t>(code), message);
  return body;
}

bool is_supported_version(std::string_view v) {
  return std::find(std::begin(supported_versions), std::end(supported_versions), v) != std::end(supported_versions);
}

/// A JSON-RPC error for request `id` as an HTTP response body.
std::string rpc_error_body(const ir::request_id& id, ir::errc code, std::string_view message,
                           std::string_view data = {}) {
  std::string body;
  ir::append_error(body, id, static_cast<std::int64_t>(code), message, data);
  return body;
}

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

}  // namespace

struct listener::impl {
  impl(droid::server& s, options o) : srv(s), opts(std::move(o)) {}

  struct shard {
    asio::io_context io{1};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
    std::thread thread;
    /// Connections served here (an intrusive list: linking one allocates nothing).
    deadline_hook* live = nullptr;
    asio::steady_timer sweeper{io};
    /// Serves the requests that belong to no session here: 2026-07-28 requests, and
    /// every request of a stateless 2025 server. Keyed by `next_key`, not by the
    /// peer's id: unrelated clients' POSTs may all be id 1.
    std::shared_ptr<request_runner> runner;
    std::int64_t next_key = 0;
    /// This shard's place among `shard_count`. Why: keys are unique across shards
    /// (`n * shard_count + index`), because a 2026 retry that reaches this shard for a
    /// frame kept on another is served there under the key minted here.
    std::int64_t index = 0;
    std::int64_t shard_count = 1;
    [[nodiscard]] std::int64_t mint_key() noexcept { return ++next_key * shard_count + index; }

    void link(deadline_hook* h) noexcept {
      h->next = live;
      if (live) live->prev = h;
      live = h;
    }
    void unlink(deadline_hook* h) noexcept {
      if (h->prev) h->prev->next = h->next;
      else live = h->next;
      if (h->next) h->next->prev = h->prev;
      h->prev = h->next = nullptr;
    }
  };

  droid::server& srv;
  options opts;
  std::vector<std::unique_ptr<shard>> shards;
  std::optional<tcp::acceptor> acceptor;
  std::uint16_t bound_port = 0;
  session_table sessions;
  std::atomic<std::size_t> connection_count{0};
  /// Sessionless requests being answered (listen streams excluded: they never end by
  /// themselves), so a graceful stop waits for them as it does for sessions' requests.
  std::atomic<std::size_t> sessionless_answering{0};
  std::atomic<std::size_t> next_shard{0};
  std::atomic<bool> stopping{false};
  std::optional<asio::steady_timer> reaper;
  /// Every live connection's "close now" hook, so stop() can end idle keep-alives.
  std::mutex connections_mutex;
  std::list<std::function<void()>> closers;

  shard& pick_shard() { return *shards[next_shard++ % shards.size()]; }
  /// How often each shard looks for expired deadlines: a tenth of the shortest connection
  /// timeout, so a deadline is late by at most that much.
  clock_type::duration sweep_period() const {
    return std::clamp<clock_type::duration>(std::min(opts.idle_timeout, opts.header_timeout) / 10,
                                            std::chrono::milliseconds(10), std::chrono::milliseconds(500));
  }

  void start_accept();
  void start_reaper();
  void start_sweep(shard& s);
  void do_stop();
};

namespace {

/// One accepted TCP connection and the requests it carries.
class connection final : public std::enable_shared_from_this<connection>, private deadline_hook {
 public:
  connection(listener::impl& l, listener::impl::shard& home, tcp::socket socket)
      : l_(l),
        home_(home),
        socket_(std::move(socket)),
        parser_(detail::parser_limits{l.opts.max_request_line, l.opts.max_header_bytes, l.opts.max_header_count,
                                      l.opts.max_body}) {
    std::error_code ec;
    const auto local = socket_.local_endpoint(ec);
    local_is_loopback_ = !ec && local.address().is_loopback();
    socket_.set_option(tcp::no_delay(true), ec);
  }

  ~connection() { --l_.connection_count; }

  task<void> run();

  /// Closes an idle connection at once (shutdown); a busy one finishes its response.
  void close_if_idle() {
    if (!busy_) {
      std::error_code ec;
      socket_.close(ec);
    }
    closing_ = true;
  }

  std::list<std::function<void()>>::iterator closer;

 private:
  /// Sets the connection's one deadline; when the shard's sweep finds it passed, pending
  /// socket operations are cancelled and `timed_out_` says why.
  void arm(clock_type::duration d) noexcept {
    deadline_ns = now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
  void disarm() noexcept { deadline_ns = never; }
  void expire() noexcept override {
    deadline_ns = never;
    timed_out_ = true;
    std::error_code ignored;
    socket_.cancel(ignored);
  }

  /// Writes all of `data`, which the caller keeps alive until this completes.
  task<bool> write(std::string_view data) {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(data), use_task);
    co_return !ec;
  }

  task<bool> handle(detail::request& req);
  task<bool> handle_post(detail::request& req);
  /// A 2026-07-28 request: routing headers and `_meta` checked, then served on this
  /// connection's shard with no session.
  task<bool> handle_modern(detail::request& req, ir::message msg, const std::string_view* version);
  /// A request of a stateless 2025 server (`options::stateless`): served with no session,
  /// the client's version read from the MCP-Protocol-Version header.
  task<bool> handle_stateless(ir::message msg, const std::string_view* version);
  /// A sessionless request on its way: the stream the runner answers it on, and the
  /// sink this connection writes from.
  struct sessionless_call {
    std::shared_ptr<detail::response_sink> sink;
    std::shared_ptr<detail::logical_stream> stream;
    ir::request_id key;
    bool listen = false;
    bool json_mode = false;
  };
  /// Prepares the answer of a sessionless request of `method`; the caller then hands it
  /// to the shard's runner under `key`, on `stream`. Why split from the answering: a
  /// 2026 request is handed over from inside the callback that read its params (one
  /// parse for the checks and the handler), where nothing can be awaited.
  sessionless_call start_sessionless(std::string_view method, std::string_view refusal);
  /// Writes the answer of `call` (an event stream or one JSON document); closing the
  /// connection cancels the request.
  task<bool> answer_sessionless(sessionless_call call);
  task<bool> handle_get(detail::request& req);
  task<bool> handle_delete(detail::request& req);
  task<bool> handle_legacy_stream(detail::request& req);
  task<bool> handle_legacy_message(detail::request& req);
  /// Watches an event-stream connection for the client hanging up (it sends nothing
  /// more on it), so the stream ends at once instead of at the next keep-alive write.
  void watch_for_close(const std::shared_ptr<detail::response_sink>& sink) {
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), sink](const std::error_code& ec) {
      if (ec) return;
      char byte;
      std::error_code peek_ec;
      const std::size_t n = self->socket_.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
      if (n == 0 || peek_ec) {
        sink->kill();
        return;
      }
      // The client sent more (a pipelined request): it stays unread for the next turn of
      // the connection, and watching again would spin on it; a write failure will tell.
    });
  }
  task<bool> serve_json(const std::shared_ptr<detail::response_sink>& sink, const std::string& extra_headers);
  /// Writes an event-stream response from `sink` until it finishes. `headers_sent`: the
  /// caller already wrote the head (the legacy transport, which starts with its endpoint).
  task<bool> serve_events(const std::shared_ptr<detail::response_sink>& sink, const std::string& extra_headers,
                          bool standalone, bool headers_sent = false);
  /// A new session on this connection's shard, with a fresh id and its standalone stream
  /// as its own outbound.
  std::shared_ptr<session_entry> new_entry(std::unique_ptr<event_store> store) {
    auto entry = std::make_shared<session_entry>();
    entry->id = detail::new_session_id();
    entry->executor = socket_.get_executor();
    entry->s = session::create(l_.srv, entry->executor, nullptr);
    entry->store = std::move(store);
    entry->standalone = std::make_shared<detail::logical_stream>(0, entry->store.get(), nullptr);
    entry->s->set_outbound(entry->standalone);
    entry->last_used = now_ns();
    return entry;
  }

  std::shared_ptr<detail::response_sink> make_sink() {
    auto sink = std::make_shared<detail::response_sink>(socket_.get_executor(), l_.opts.max_queued_bytes);
    // A client that stops reading: close its connection rather than queue without
    // bound; it can resume from the store.
    sink->on_abort = [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        std::error_code ignored;
        self->socket_.close(ignored);
      }
    };
    return sink;
  }

  task<bool> reply(int status, std::string_view content_type, std::string_view body, bool close = false,
                   std::string_view extra = {}) {
    // Written here rather than through write(): one coroutine frame less per request.
    const std::string text = response(status, content_type, body, close || closing_, extra);
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(text), use_task);
    co_return !ec && !close && !closing_;
  }
  task<bool> reply_rpc_error(int status, ir::errc code, std::string_view message, bool close = false) {
    co_return co_await reply(status, "application/json", rpc_error_body(code, message), close);
  }

  listener::impl& l_;
  listener::impl::shard& home_;
  tcp::socket socket_;
  /// Where reads land before they are appended to the parse buffer.
  std::unique_ptr<char[]> read_buffer_ = std::make_unique_for_overwrite<char[]>(16 * 1024);
  detail::request_parser parser_;
  bool local_is_loopback_ = false;
  bool timed_out_ = false;
  bool busy_ = false;
  bool closing_ = false;
};

task<void> connection::run() {
  std::string buf;
  std::size_t start = 0;  // first unparsed byte
  constexpr std::size_t chunk = 16 * 1024;
  auto self = shared_from_this();
  // Linked here, on the connection's own shard (the constructor runs on the acceptor's).
  home_.link(this);
  struct unlink_on_exit {
    connection* c;
    ~unlink_on_exit() { c->home_.unlink(c); }
  } unlink{this};

  for (;;) {
    // Read and parse until one whole request is here. The deadline is the idle timeout
    // while nothing of a request has arrived, then the header timeout, then a body
    // timeout derived from the minimum body rate.
    bool armed_for_request = false;
    arm(l_.opts.idle_timeout);
    while (!parser_.complete() && !parser_.failed()) {
      if (start < buf.size()) {
        const std::size_t used = parser_.feed(buf.data() + start, buf.size() - start);
        start += used;
        if (!armed_for_request && !parser_.idle()) {
          armed_for_request = true;
          arm(l_.opts.header_timeout);
        }
        if (parser_.headers_complete() && !parser_.failed()) {
          const auto length = parser_.content_length().value_or(l_.opts.max_body);
          arm(l_.opts.body_grace + std::chrono::seconds(length / std::max<std::size_t>(1, l_.opts.min_body_rate)));
          if (const std::string_view* expect = parser_.current().find("expect")) {
            if (detail::media_type_is(*expect, "100-continue")) {
              if ((!parser_.content_length() || *parser_.content_length() > 0) && start == buf.size() &&
                  !co_await write("HTTP/1.1 100 Continue\r\n\r\n"))
                co_return;
            } else {
              co_await reply(417, {}, {}, true);
              co_return;
            }
          }
        }
        if (used > 0 || parser_.complete() || parser_.failed()) continue;
      }
      if (start == buf.size()) {
        buf.clear();
        start = 0;
      } else if (start > chunk) {
        buf.erase(0, start);
        start = 0;
      }
      // Read into a fixed buffer and append what arrived: growing `buf` by a whole chunk
      // before each read zero-fills 16 KiB that is then overwritten, which callgrind showed
      // as a fifth of the instructions of a small request (scripts/bench).
      auto [ec, n] = co_await socket_.async_read_some(asio::buffer(read_buffer_.get(), chunk), use_task);
      buf.append(read_buffer_.get(), n);
      if (ec) {
        if (timed_out_ && !parser_.idle()) co_await reply(408, {}, {}, true);
        co_return;  // EOF, reset, idle timeout, or shutdown
      }
    }
    disarm();
    if (parser_.failed()) {
      // The stream cannot be trusted to be in sync any more (a smuggling attempt looks
      // exactly like this), so the answer is followed by a close.
      co_await reply(parser_.error_status(), "text/plain", std::string(parser_.error_reason()) + "\n", true);
      co_return;
    }
    detail::request req = parser_.take();
    busy_ = true;
    const bool keep = co_await handle(req);
    busy_ = false;
    if (!keep || !req.keep_alive || closing_ || l_.stopping) co_return;
  }
}

task<bool> connection::handle(detail::request& req) {
  const std::string_view target = req.target;
  const std::string_view path = target.substr(0, target.find('?'));
  const bool legacy_sse = l_.opts.legacy_sse && path == l_.opts.legacy_sse_path;
  const bool legacy_messages = l_.opts.legacy_sse && path == l_.opts.legacy_messages_path;
  if (path != l_.opts.path && !legacy_sse && !legacy_messages) co_return co_await reply(404, "text/plain", "not found\n");

  // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host and
  // Origin; both are checked before anything else can run (docs/reliability.md, A1, A2).
  const std::string_view* host = req.find("host");
  const bool host_ok = host ? detail::host_allowed(*host, local_is_loopback_, l_.opts.allowed_hosts)
                            : req.version_minor == 0 && !local_is_loopback_;
  if (!host_ok || req.count("origin") > 1 || !detail::origin_allowed(req.find("origin"), l_.opts.allowed_origins))
    co_return co_await reply_rpc_error(403, ir::errc::invalid_request, "Forbidden: Host or Origin not allowed");

  if (legacy_sse) {
    if (req.method == "GET") co_return co_await handle_legacy_stream(req);
    co_return co_await reply(405, "text/plain", "method not allowed\n", false, "Allow: GET\r\n");
  }
  if (legacy_messages) {
    if (req.method == "POST") co_return co_await handle_legacy_message(req);
    co_return co_await reply(405, "text/plain", "method not allowed\n", false, "Allow: POST\r\n");
  }
  if (req.method == "POST") co_return co_await handle_post(req);
  if (req.method == "GET") co_return co_await handle_get(req);
  if (req.method == "DELETE") co_return co_await handle_delete(req);
  const char* allow = l_.opts.stateless ? "Allow: POST\r\n"
                      : l_.opts.standalone_stream ? "Allow: GET, POST, DELETE\r\n"
                                                  : "Allow: POST, DELETE\r\n";
  co_return co_await reply(405, "text/plain", "method not allowed\n", false, allow);
}

task<bool> connection::handle_post(detail::request& req) {
  const options& o = l_.opts;
  // CSRF: a browser's simple request (text/plain, form encodings) cannot carry
  // application/json without a preflight, so requiring it closes that door (A4).
  const std::string_view* content_type = req.find("content-type");
  if (!content_type || !detail::media_type_is(*content_type, "application/json"))
    co_return co_await reply_rpc_error(415, ir::errc::invalid_request,
                                       "Unsupported Media Type: Content-Type must be application/json");
  const std::string_view* accept = req.find("accept");
  const bool server_json = o.reply == streaming::json;
  if (!accept || !detail::accepts(*accept, "application/json") ||
      (!server_json && !detail::accepts(*accept, "text/event-stream")))
    co_return co_await reply_rpc_error(
        406, ir::errc::invalid_request,
        "Not Acceptable: Accept must include application/json and text/event-stream");
  const std::string_view* version = req.find("mcp-protocol-version");

  auto decoded = ir::decode(std::move(req.body));
  if (auto* why = std::get_if<ir::rejection>(&decoded)) {
    if (!why->answer) co_return co_await reply(202, {}, {});
    std::string body;
    ir::append_error(body, why->id, static_cast<std::int64_t>(why->code), why->message);
    co_return co_await reply(400, "application/json", body);
  }
  ir::message msg = std::get<ir::message>(std::move(decoded));

  // The era is decided per message: a request whose _meta names a version (or whose
  // method exists only in 2026-07-28) is a 2026 request; so is one under a 2026 header,
  // unless it is `initialize`, which opens a 2025 session whatever the header says.
  // The header is asked first: it settles the question without reading the params.
  const bool modern =
      msg.is_request() &&
      ((version && is_modern_version(*version) && msg.method() != "initialize") || is_modern_request(msg));
  if (modern) co_return co_await handle_modern(req, std::move(msg), version);
  if (version && !is_supported_version(*version)) {
    const request_refusal r = unsupported_version(*version);
    // A named body, not a conditional expression in the co_await: g++ 12 destroys a
    // temporary selected by ?: twice when the full expression spans a suspension.
    std::string body = rpc_error_body(r.code, r.message);
    if (msg.is_request()) body = rpc_error_body(msg.id(), r.code, r.message, r.data);
    co_return co_await reply(400, "application/json", body);
  }
  if (o.stateless) co_return co_await handle_stateless(std::move(msg), version);

  const bool is_initialize = msg.is_request() && msg.method() == "initialize";
  std::shared_ptr<session_entry> entry;
  std::string new_session_header;
  const std::string_view* sid = req.find("mcp-session-id");
  if (is_initialize && !sid) {
    // No store (JSON answers, or a ring of capacity 0): streams cannot be resumed, and a
    // lost connection ends its request.
    std::unique_ptr<event_store> store;
    if (!server_json && (o.event_store || o.event_ring_capacity > 0))
      store = o.event_store ? o.event_store() : std::make_unique<memory_event_store>(o.event_ring_capacity);
    entry = new_entry(std::move(store));
    if (!l_.sessions.insert(entry, o.max_sessions))
      co_return co_await reply_rpc_error(503, ir::errc::internal_error,
                                         "Service Unavailable: too many sessions, try again later");
    new_session_header = "Mcp-Session-Id: " + entry->id + "\r\n";
  } else {
    if (!sid)
      co_return co_await reply_rpc_error(400, ir::errc::invalid_request,
                                         "Bad Request: Mcp-Session-Id header is required");
    entry = detail::valid_session_id(*sid) ? l_.sessions.find(*sid) : nullptr;
    if (entry && entry->legacy) entry = nullptr;  // a legacy session lives on its own paths
    if (!entry)
      co_return co_await reply_rpc_error(404, ir::errc::invalid_request,
                                         "Not Found: unknown or ended session; initialize a new one");
  }
  entry->last_used = now_ns();

  if (!msg.is_request()) {
    // Notifications and responses get 202 as soon as they are handed over.
    asio::dispatch(entry->executor, [s = entry->s, m = std::move(msg)]() mutable { s->receive(std::move(m)); });
    co_return co_await reply(202, {}, {});
  }

  // Polling a task is answered with one JSON document even on an event-stream server:
  // MCP 2025-11-25 asks servers not to upgrade `tasks/get` to a stream (the client is
  // polling), and these answers never carry anything but the response.
  const bool json_mode = server_json || is_task_poll(msg.method());
  const std::uint64_t number = ++entry->next_stream;
  const ir::request_id request_id = msg.id();
  auto sink = make_sink();
  ++entry->active;
  // Counted before the hand-over, while `active` still holds the session: the reaper
  // never sees a moment with neither.
  ++entry->running;
  // Why a tool on this stream could not ask the client anything (empty: it can).
  const std::string_view refusal =
      json_mode ? "this server answers each request with a single JSON document (http::options::reply is "
                  "streaming::json), so a tool cannot ask the client a question: use streaming::event_stream"
                : std::string_view();
  asio::dispatch(entry->executor, [entry, number, sink, json_mode, refusal, m = std::move(msg)]() mutable {
    auto stream = std::make_shared<detail::logical_stream>(
        number, json_mode ? nullptr : entry->store.get(),
        [entry, number] {
          entry->streams.erase(number);
          // The idle clock starts at the answer: a client that lost the stream has the
          // whole timeout to resume it.
          entry->last_used = now_ns();
          --entry->running;
        },
        refusal);
    entry->streams.emplace(number, stream);
    // A client of 2025-11-25 or later gets a priming event first: an id to resume from
    // before any data. Decided by the session's negotiated version, not the request's
    // header (which some clients send as 2025-03-26 regardless).
    if (!json_mode && entry->store && entry->s->peer().revision >= protocol_revision::v2025_11_25)
      sink->push(detail::sse_event{detail::event_id(number, 0), std::string()});
    stream->attach(sink);
    entry->s->receive(std::move(m), stream);
    // The verdict is posted behind the tool's first step (receive() posts that too), so
    // everything a tool that finishes at once says (the priming event, the answer, the
    // end) is queued before it, and the connection writes the response in one write
    // instead of one per event. A tool that suspends gets its head and priming event
    // out at once all the same.
    asio::post(entry->executor, [sink] { sink->accept(); });
  });
  bool keep;
  if (json_mode) {
    keep = co_await serve_json(sink, new_session_header);
  } else {
    watch_for_close(sink);
    co_await sink->wait_settled();
    keep = co_await serve_events(sink, new_session_header, false);
    std::error_code ignored;
    socket_.cancel(ignored);  // drops the close watch, which holds this connection
  }
  if (sink->dead()) {
    // The client went away mid-stream. With a store the request goes on and its events
    // are recorded, so a GET with Last-Event-ID can pick them up; without one nothing
    // could ever reach the client again, so the request is cancelled (and any question
    // its tool waits on is withdrawn) rather than left waiting for the session's end.
    asio::dispatch(entry->executor, [entry, number, sink, request_id] {
      if (auto it = entry->streams.find(number); it != entry->streams.end()) it->second->detach(sink);
      if (!entry->store && !entry->legacy) entry->s->cancel(request_id);
    });
  }
  --entry->active;
  entry->last_used = now_ns();
  co_return keep;
}

task<bool> connection::handle_modern(detail::request& req, ir::message msg, const std::string_view* version) {
  // Checked before anything runs: a proxy may have routed on these headers, and a body
  // that says otherwise must not be served (SEP-2243).
  if (!version)
    co_return co_await reply(400, "application/json",
                             rpc_error_body(msg.id(), ir::errc::header_mismatch,
                                            "Header mismatch: the MCP-Protocol-Version header is required"));
  // One read of the params for both checks (and the tool they name) and for the handler
  // that serves the request, not one each.
  std::optional<std::string> mismatch;
  std::optional<request_refusal> refused;
  std::optional<sessionless_call> call;
  const auto check = [&](const ir::json_node* params) {
    std::shared_ptr<const droid::detail::tool_entry> tool;
    ir::json_node name;
    if (params && msg.method() == "tools/call" && params->find("name", name) &&
        name.kind() == ir::json_node::type::string)
      tool = l_.srv.find_tool(name.string());
    mismatch = detail::check_routing_headers(req, msg.method(), params, tool.get());
    if (mismatch) return;
    peer_info peer;
    refused = admit_modern(l_.srv, msg.method(), params, *version, peer);
    if (refused) return;
    call = start_sessionless(msg.method(), {});
    home_.runner->serve_parsed(call->key, msg.method(), msg.id(), params, call->stream, true, std::move(peer));
  };
  if (const ir::raw_json params = msg.params(); params.kind == ir::json_kind::object) {
    (void)ir::visit_json(params.text, [&](const ir::json_node& p) { check(&p); });
  } else {
    check(nullptr);
  }
  if (mismatch)
    co_return co_await reply(400, "application/json", rpc_error_body(msg.id(), ir::errc::header_mismatch, *mismatch));
  if (refused)
    co_return co_await reply(refused->http_status, "application/json",
                             rpc_error_body(msg.id(), refused->code, refused->message, refused->data));
  co_return co_await answer_sessionless(std::move(*call));
}

task<bool> connection::handle_stateless(ir::message msg, const std::string_view* version) {
  // Nothing to hand a notification or an answer to: no session holds a request that
  // could be cancelled or a question that waits.
  if (!msg.is_request()) co_return co_await reply(202, {}, {});
  if (msg.method() == "initialize") {
    const initialize_answer answer = answer_initialize(l_.srv, msg.params());
    std::string body;
    if (answer.error) {
      ir::append_error(body, msg.id(), static_cast<std::int64_t>(ir::errc::invalid_params), *answer.error);
    } else {
      ir::append_result(body, msg.id(), answer.result);
    }
    co_return co_await reply(200, "application/json", body);
  }
  peer_info peer;
  // No header: a client older than 2025-06-18, which did not send one (the spec's rule).
  peer.protocol_version = version ? std::string(*version) : "2025-03-26";
  peer.revision = parse_revision(peer.protocol_version).value_or(protocol_revision::v2025_03_26);
  sessionless_call call = start_sessionless(
      msg.method(),
      "this server is stateless (http::options::stateless), so the client's answer could not find the question: "
      "serve with sessions to let tools ask the client");
  ir::request_id key = call.key;
  home_.runner->serve(std::move(key), std::move(msg), call.stream, true, std::move(peer));
  co_return co_await answer_sessionless(std::move(call));
}

connection::sessionless_call connection::start_sessionless(std::string_view method, std::string_view refusal) {
  sessionless_call call;
  call.listen = method == "subscriptions/listen";
  // A listen is answered as a stream whatever `options::reply` says: as one JSON document
  // it could only be sent when the listen ends, and nothing it carries would ever arrive.
  call.json_mode = (l_.opts.reply == streaming::json || is_task_poll(method)) && !call.listen;
  call.key = ir::request_id(home_.mint_key());
  // A listen stream is open until the client leaves; it must not hold up a graceful stop.
  if (!call.listen) ++l_.sessionless_answering;
  call.sink = make_sink();
  // No store: a sessionless stream cannot be resumed, and its events carry no ids.
  call.stream = std::make_shared<detail::logical_stream>(
      0, nullptr, nullptr,
      call.json_mode ? std::string_view("this server answers each request with a single JSON document "
                                        "(http::options::reply is streaming::json), so a tool cannot ask the "
                                        "client a question")
                     : refusal);
  call.stream->attach(call.sink);
  return call;
}

task<bool> connection::answer_sessionless(sessionless_call call) {
  const std::shared_ptr<detail::response_sink>& sink = call.sink;
  // Behind whatever the request's first step queued, as for a session's request.
  asio::post(socket_.get_executor(), [sink] { sink->accept(); });
  // The verdict is posted behind the request's first step, so a request answered by it
  // (most are) is finished here already.
  co_await sink->wait_settled();
  // Hanging up is the client's cancellation, whichever way the answer comes, so a request
  // still running is watched. One answered already is not: the watch costs an epoll
  // registration and a cancel per request (measured: about 15% of a stateless request's
  // CPU time), for a request that can no longer be cancelled.
  const bool watched = !sink->finished();
  if (watched) watch_for_close(sink);
  bool keep;
  if (call.json_mode) {
    keep = co_await serve_json(sink, {});
  } else {
    // A listen stream idles like the 2025 standalone stream it replaces, so it carries
    // the same keep-alive comments: proxies and client timers would close it otherwise.
    keep = co_await serve_events(sink, {}, call.listen);
  }
  if (watched) {
    std::error_code ignored;
    socket_.cancel(ignored);  // drops the close watch, which holds this connection
  }
  // A closed stream is the client's cancellation (2026-07-28 has no other on HTTP); a
  // request that is over already is not found and nothing happens. The stream is not
  // detached from its dead sink here: a retry handed to the shard that keeps its frame
  // uses the stream there, and a dead sink drops what it is given anyway.
  if (sink->dead()) home_.runner->cancel(call.key);
  if (!call.listen) --l_.sessionless_answering;
  co_return keep;
}

task<bool> connection::serve_json(const std::shared_ptr<detail::response_sink>& sink, const std::string& extra) {
  // One document: everything but the last message (the response) has nowhere to go.
  std::string last;
  std::vector<detail::sse_event> batch;
  for (;;) {
    sink->drain(batch);
    for (detail::sse_event& e : batch) last = std::move(e.data);
    if (sink->finished() || sink->dead()) break;
    co_await sink->wait();
  }
  if (sink->dead()) co_return false;
  if (last.empty()) co_return co_await reply(202, {}, {}, false, extra);
  co_return co_await reply(200, "application/json", last, false, extra);
}

task<bool> connection::serve_events(const std::shared_ptr<detail::response_sink>& sink, const std::string& extra,
                                    bool standalone, bool headers_sent) {
  std::string out;
  if (!headers_sent) {
    // X-Accel-Buffering: a proxy in front (nginx) would otherwise hold events back.
    out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
          "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n";
    out += extra;
    out += "\r\n";
  }
  std::string events;
  std::vector<detail::sse_event> batch;
  const std::string retry = std::to_string(l_.opts.retry_interval.count());
  for (;;) {
    sink->drain(batch);
    for (detail::sse_event& e : batch) {
      if (e.data.empty()) {
        // The priming event: an id, how long to wait before reconnecting, no data.
        events += "id: ";
        events += e.id;
        events += "\nretry: ";
        events += retry;
        events += "\ndata: \n\n";
      } else {
        detail::append_sse_event(events, e.id, e.data);
      }
    }
    // An idle standalone stream carries a comment now and then, so proxies and the
    // client's own timers see it alive (and a vanished client is noticed on write).
    if (events.empty() && standalone && !sink->finished() && out.empty()) events = ": keep-alive\n\n";
    if (!events.empty()) {
      append_chunk(out, events);
      events.clear();
    }
    const bool ending = sink->finished() || (closing_ && standalone);
    if (ending) out += "0\r\n\r\n";
    if (sink->dead() || (!out.empty() && !co_await write(out))) {
      sink->kill();
      co_return false;
    }
    out.clear();
    if (ending) co_return !closing_;
    co_await sink->wait(standalone ? clock_type::duration(l_.opts.keep_alive_interval) : detail::response_sink::forever);
  }
}

task<bool> connection::handle_get(detail::request& req) {
  const options& o = l_.opts;
  if (o.stateless || !o.standalone_stream)
    co_return co_await reply(405, "text/plain", "method not allowed\n", false,
                             o.stateless ? "Allow: POST\r\n" : "Allow: POST, DELETE\r\n");
  const std::string_view* accept = req.find("accept");
  if (!accept || !detail::accepts(*accept, "text/event-stream"))
    co_return co_await reply_rpc_error(406, ir::errc::invalid_request,
                                       "Not Acceptable: Accept must include text/event-stream");
  const std::string_view* sid = req.find("mcp-session-id");
  if (!sid)
    co_return co_await reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: Mcp-Session-Id header is required");
  auto entry = detail::valid_session_id(*sid) ? l_.sessions.find(*sid) : nullptr;
  if (entry && entry->legacy) entry = nullptr;
  if (!entry)
    co_return co_await reply_rpc_error(404, ir::errc::invalid_request, "Not Found: unknown or ended session");

  // Which stream, and from where: no Last-Event-ID opens the standalone stream afresh;
  // one names a stream of this session and the last event the client saw on it.
  std::uint64_t number = 0, after = 0;
  const std::string_view* last = req.find("last-event-id");
  if (last && !detail::parse_event_id(*last, number, after))
    co_return co_await reply_rpc_error(400, ir::errc::invalid_request,
                                       "Bad Request: Last-Event-ID was not issued by this server");
  const bool standalone = number == 0;
  if (standalone && entry->has_standalone.exchange(true))
    co_return co_await reply_rpc_error(409, ir::errc::invalid_request,
                                       "Conflict: this session already has a standalone stream open");

  auto sink = make_sink();
  ++entry->active;
  asio::dispatch(entry->executor, [entry, sink, number, after, resume = last != nullptr] {
    const auto refuse = [&] {
      sink->reject(400, "Bad Request: Last-Event-ID is unknown or its events have expired; they cannot be replayed");
    };
    if (number == 0) {
      if (resume && !entry->standalone->replay(after, *sink)) return refuse();
      entry->standalone->attach(sink);
      sink->accept();
      return;
    }
    if (number > entry->next_stream.load() || entry->s->is_closed()) return refuse();
    if (auto it = entry->streams.find(number); it != entry->streams.end()) {
      if (!it->second->replay(after, *sink)) return refuse();
      it->second->attach(sink, true);
    } else {
      // The request is over; its events may still be in the store.
      const bool ok = entry->store && entry->store->replay(number, after, [&](std::uint64_t seq, std::string_view data) {
        sink->push(detail::sse_event{detail::event_id(number, seq), std::string(data)});
      });
      if (!ok) return refuse();
    }
    entry->resumed.push_back(sink);
    sink->accept();
  });
  co_await sink->wait_settled();
  bool keep = false;
  if (sink->rejected_status() != 0) {
    keep = co_await reply_rpc_error(sink->rejected_status(), ir::errc::invalid_request, sink->rejected_message());
  } else if (!sink->dead()) {
    // Resumed request streams idle with keep-alives like the standalone one (see
    // logical_stream::attach).
    watch_for_close(sink);
    keep = co_await serve_events(sink, {}, true);
    std::error_code ignored;
    socket_.cancel(ignored);
  }
  asio::dispatch(entry->executor, [entry, sink, number] {
    if (number == 0) {
      entry->standalone->detach(sink);
    } else {
      if (auto it = entry->streams.find(number); it != entry->streams.end()) it->second->detach(sink);
      std::erase(entry->resumed, sink);
    }
  });
  if (standalone) entry->has_standalone = false;
  --entry->active;
  entry->last_used = now_ns();
  co_return keep;
}

task<bool> connection::handle_delete(detail::request& req) {
  if (l_.opts.stateless) co_return co_await reply(405, "text/plain", "method not allowed\n", false, "Allow: POST\r\n");
  const std::string_view* sid = req.find("mcp-session-id");
  if (!sid)
    co_return co_await reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: Mcp-Session-Id header is required");
  auto found = detail::valid_session_id(*sid) ? l_.sessions.find(*sid) : nullptr;
  auto entry = found && !found->legacy ? l_.sessions.erase(*sid) : nullptr;
  if (!entry)
    co_return co_await reply_rpc_error(404, ir::errc::invalid_request, "Not Found: unknown or ended session");
  end_session(entry);
  co_return co_await reply(200, {}, {});
}

task<bool> connection::handle_legacy_stream(detail::request& req) {
  const std::string_view* accept = req.find("accept");
  if (accept && !detail::accepts(*accept, "text/event-stream"))
    co_return co_await reply_rpc_error(406, ir::errc::invalid_request,
                                       "Not Acceptable: Accept must include text/event-stream");
  // The session begins with its stream and ends with it: in this transport the stream is
  // the only way anything reaches the client.
  auto entry = new_entry(nullptr);
  entry->legacy = true;
  entry->active = 1;
  if (!l_.sessions.insert(entry, l_.opts.max_sessions))
    co_return co_await reply_rpc_error(503, ir::errc::internal_error,
                                       "Service Unavailable: too many sessions, try again later");
  auto sink = make_sink();
  entry->standalone->attach(sink);
  // The endpoint event tells the client where to POST; relative, so it resolves against
  // whatever host name the client used.
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n";
  const std::string endpoint =
      "event: endpoint\ndata: " + l_.opts.legacy_messages_path + "?sessionId=" + entry->id + "\n\n";
  append_chunk(head, endpoint);
  bool keep = false;
  if (co_await write(head)) {
    watch_for_close(sink);
    keep = co_await serve_events(sink, {}, true, true);
    std::error_code ignored;
    socket_.cancel(ignored);  // drops the close watch, which holds this connection
  }
  // The stream is gone: so is the session (docs/reliability.md, A12).
  if (auto gone = l_.sessions.erase(entry->id)) end_session(gone);
  co_return keep && false;  // an event stream's connection is not reused
}

task<bool> connection::handle_legacy_message(detail::request& req) {
  const std::string_view target = req.target;
  const auto query = target.find('?');
  std::string_view sid;
  if (query != std::string_view::npos) {
    std::string_view q = target.substr(query + 1);
    while (!q.empty()) {
      const auto amp = q.find('&');
      const std::string_view pair = q.substr(0, amp);
      if (pair.starts_with("sessionId=")) sid = pair.substr(10);
      q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    }
  }
  if (sid.empty() || !detail::valid_session_id(sid))
    co_return co_await reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: sessionId is missing or malformed");
  auto entry = l_.sessions.find(sid);
  if (!entry || !entry->legacy)
    co_return co_await reply_rpc_error(404, ir::errc::invalid_request, "Not Found: unknown or ended session");
  const std::string_view* content_type = req.find("content-type");
  if (!content_type || !detail::media_type_is(*content_type, "application/json"))
    co_return co_await reply_rpc_error(415, ir::errc::invalid_request,
                                       "Unsupported Media Type: Content-Type must be application/json");
  auto decoded = ir::decode(std::move(req.body));
  if (auto* why = std::get_if<ir::rejection>(&decoded)) {
    if (!why->answer) co_return co_await reply(202, {}, {});
    std::string body;
    ir::append_error(body, why->id, static_cast<std::int64_t>(why->code), why->message);
    co_return co_await reply(400, "application/json", body);
  }
  entry->last_used = now_ns();
  // Everything the session says (the answer included) goes on its event stream.
  asio::dispatch(entry->executor, [s = entry->s, m = std::get<ir::message>(std::move(decoded))]() mutable {
    s->receive(std::move(m));
  });
  co_return co_await reply(202, {}, {});
}

}  // namespace

void listener::impl::start_accept() {
  shard* home = &pick_shard();
  acceptor->async_accept(home->io, [this, home](const std::error_code& ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping) return;
      // Out of descriptors and the like: try again shortly instead of spinning.
      auto timer = std::make_shared<asio::steady_timer>(acceptor->get_executor(), std::chrono::milliseconds(50));
      timer->async_wait([this, timer](const std::error_code&) {
        if (!stopping) start_accept();
      });
      return;
    }
    if (++connection_count > opts.max_connections || stopping) {
      --connection_count;
      std::error_code ignored;
      socket.close(ignored);
    } else {
      auto exec = socket.get_executor();
      auto c = std::make_shared<connection>(*this, *home, std::move(socket));
      {
        std::lock_guard lock(connections_mutex);
        c->closer = closers.insert(closers.end(), [exec, weak = std::weak_ptr<connection>(c)] {
          asio::post(exec, [weak] {
            if (auto c = weak.lock()) c->close_if_idle();
          });
        });
      }
      spawn(exec, c->run(), [this, c](std::exception_ptr failure) {
        {
          std::lock_guard lock(connections_mutex);
          closers.erase(c->closer);
        }
        if (failure) {
          try {
            std::rethrow_exception(failure);
          } catch (const std::exception& e) {
            srv.log(std::string("http connection failed: ") + e.what());
          }
        }
      });
    }
    start_accept();
  });
}

void listener::impl::start_reaper() {
  const auto period = std::clamp<clock_type::duration>(opts.session_idle_timeout / 4, std::chrono::milliseconds(50),
                                                       std::chrono::seconds(5));
  reaper->expires_after(period);
  reaper->async_wait([this](const std::error_code& ec) {
    if (ec || stopping) return;
    const std::int64_t cutoff =
        now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(opts.session_idle_timeout).count();
    for (auto& e : sessions.take_idle(cutoff)) end_session(e);
    start_reaper();
  });
}

void listener::impl::start_sweep(shard& s) {
  s.sweeper.expires_after(sweep_period());
  s.sweeper.async_wait([this, &s](const std::error_code& ec) {
    if (ec) return;
    const std::int64_t now = now_ns();
    for (deadline_hook* h = s.live; h;) {
      deadline_hook* next = h->next;  // expire() never unlinks, but stay safe if it did
      if (h->deadline_ns <= now) h->expire();
      h = next;
    }
    if (s.guard) start_sweep(s);
  });
}

void listener::impl::do_stop() {
  if (stopping.exchange(true)) return;
  asio::post(shards[0]->io, [this] {
    std::error_code ignored;
    acceptor->close(ignored);
    if (reaper) reaper->cancel();
    // Give running calls the drain deadline, then end every session.
    auto drain = std::make_shared<asio::steady_timer>(shards[0]->io, opts.drain_timeout);
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [this, drain, poll] {
      // Sessions with open POST streams are still answering.
      if ((sessions.any_answering() || sessionless_answering.load() > 0) && drain->expiry() > clock_type::now()) {
        auto tick = std::make_shared<asio::steady_timer>(shards[0]->io, std::chrono::milliseconds(10));
        tick->async_wait([poll, tick](const std::error_code&) { (*poll)(); });
        return;
      }
      for (auto& e : sessions.take_all()) end_session(e);
      {
        std::lock_guard lock(connections_mutex);
        for (auto& close : closers) close();
      }
      for (auto& s : shards) {
        asio::post(s->io, [s = s.get()] {
          // Sessionless requests (listen streams above all) end here; their streams
          // finish and their connections close.
          s->runner->close();
          s->guard.reset();
          s->sweeper.cancel();
        });
      }
      *poll = nullptr;  // break the self-reference
    };
    (*poll)();
  });
}

listener::listener(droid::server& srv, options opts) : impl_(std::make_unique<impl>(srv, std::move(opts))) {
  unsigned n = impl_->opts.threads ? impl_->opts.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) {
    impl_->shards.push_back(std::make_unique<impl::shard>());
    impl_->shards.back()->guard.emplace(impl_->shards.back()->io.get_executor());
    impl_->shards.back()->runner = request_runner::create(srv, impl_->shards.back()->io.get_executor());
    impl_->shards.back()->index = i;
    impl_->shards.back()->shard_count = n;
  }
  asio::io_context& io0 = impl_->shards[0]->io;
  tcp::resolver resolver(io0);
  const auto results = resolver.resolve(impl_->opts.host, std::to_string(impl_->opts.port),
                                        tcp::resolver::numeric_service);
  const tcp::endpoint ep = *results.begin();
  impl_->acceptor.emplace(io0);
  impl_->acceptor->open(ep.protocol());
  impl_->acceptor->set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor->bind(ep);
  impl_->acceptor->listen(asio::socket_base::max_listen_connections);
  impl_->bound_port = impl_->acceptor->local_endpoint().port();
  if (!ep.address().is_loopback())
    srv.log("http: listening on a non-loopback address (" + impl_->opts.host +
            "): the server is reachable from the network");
  impl_->reaper.emplace(io0);
}

listener::~listener() {
  stop();
  for (auto& s : impl_->shards)
    if (s->thread.joinable()) s->thread.join();
}

std::uint16_t listener::port() const noexcept { return impl_->bound_port; }

std::string listener::url() const {
  const std::string& h = impl_->opts.host;
  const bool v6 = h.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(impl_->bound_port) + impl_->opts.path;
}

void listener::run() {
  impl_->start_accept();
  impl_->start_reaper();
  for (auto& s : impl_->shards) asio::post(s->io, [this, s = s.get()] { impl_->start_sweep(*s); });
  for (std::size_t i = 1; i < impl_->shards.size(); ++i) {
    impl::shard* s = impl_->shards[i].get();
    s->thread = std::thread([s] { s->io.run(); });
  }
  impl_->shards[0]->io.run();
  for (std::size_t i = 1; i < impl_->shards.size(); ++i)
    if (impl_->shards[i]->thread.joinable()) impl_->shards[i]->thread.join();
}

void listener::stop() { impl_->do_stop(); }

std::size_t listener::sessions() const { return impl_->sessions.size(); }
std::size_t listener::connections() const { return impl_->connection_count.load(); }

int serve(droid::server& srv, options opts, void (*on_ready)(const listener&)) {
  std::signal(SIGPIPE, SIG_IGN);
  listener l(srv, std::move(opts));
  if (on_ready) on_ready(l);
  // Signals are watched on a thread of their own so that every shard stays a plain
  // io_context::run().
  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  signals.async_wait([&l](const std::error_code& ec, int) {
    if (!ec) l.stop();
  });
  std::thread watcher([&signal_io] { signal_io.run(); });
  l.run();
  signals.cancel();
  signal_io.stop();
  watcher.join();
  return 0;
}

}  // namespace droid::http
