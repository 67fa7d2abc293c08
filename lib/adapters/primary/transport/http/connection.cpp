// SPDX-License-Identifier: BSL-1.0
#include "connection.hpp"

#include <algorithm>
#include <coroutine>
#include <tuple>

#include <cerrno>

#include <sys/socket.h>
#include <unistd.h>

#include <asio/post.hpp>
#include <asio/write.hpp>

#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>

#include "access/request_rules.hpp"
#include "wire/drained_read.hpp"

namespace droid::http::detail {

using asio::ip::tcp;

namespace {

/// Suspends a coroutine and resumes it on `io`'s thread: how a connection's `run()`
/// follows its socket to another shard. Why not `co_await asio::post(io, use_task)`:
/// `use_task`'s awaiter is touched after its operation starts, which is safe only when
/// the operation completes on the awaiting thread. Like any coroutine suspended on an
/// io_context, it relies on the listener running its loops dry before destroying them.
struct resume_on {
  asio::io_context& io;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const { asio::post(io, [h] { h.resume(); }); }
  void await_resume() const noexcept {}
};

/// Read buffers kept for the next connection of the same thread, at most this many.
///
/// Why: a 16 KiB block is past malloc's per-thread caches, so a connection that carries
/// one request paid a slow allocation and a free that consolidated the heap (about 1,500
/// instructions, callgrind). Behind a proxy that opens upstream connections beyond its
/// keep-alive pool, one request in six or seven comes on a new connection. The bound
/// keeps what an idle thread holds at 256 KiB.
constexpr std::size_t kept_read_buffers = 16;

/// This thread's kept buffers. A plain array, not a vector: a `thread_local` with a
/// destructor is reached through a guard on every access, and whatever is kept when a
/// thread ends is given back by `read_buffer_keeper` below.
struct read_buffer_stock {
  char* kept[kept_read_buffers];
  std::size_t count;
};
thread_local read_buffer_stock stock{};

/// Frees what `stock` holds when its thread ends. Touched only when a buffer goes into an
/// empty stock, which registers its destructor; the guard that costs is not paid per
/// buffer.
struct read_buffer_keeper {
  bool armed = false;
  ~read_buffer_keeper() {
    while (stock.count > 0) delete[] stock.kept[--stock.count];
  }
};
thread_local read_buffer_keeper keeper;

}  // namespace

std::unique_ptr<char[]> take_read_buffer() {
  if (stock.count > 0) return std::unique_ptr<char[]>(stock.kept[--stock.count]);
  return std::make_unique_for_overwrite<char[]>(read_buffer_size);
}

void give_back_read_buffer(std::unique_ptr<char[]> buffer) noexcept {
  if (!buffer) return;
  if (stock.count == kept_read_buffers) return;  // freed here, as before
  if (stock.count == 0) keeper.armed = true;
  stock.kept[stock.count++] = buffer.release();
}


void connection_core::set_tls(std::shared_ptr<asio::ssl::context> tls) {
  std::lock_guard lock(tls_mutex_);
  tls_ = std::move(tls);
}

std::shared_ptr<asio::ssl::context> connection_core::tls() const {
  std::lock_guard lock(tls_mutex_);
  return tls_;
}

namespace {

/// A peer's address as text. IPv4, what nearly every connection has, is written by hand:
/// `address::to_string` goes through `inet_ntop`, whose `sprintf` was an eighth of the
/// user-space instructions of a connection that carries one request (callgrind).
std::string address_text(const asio::ip::address& a) {
  if (!a.is_v4()) return a.to_string();
  const asio::ip::address_v4::bytes_type b = a.to_v4().to_bytes();
  char out[16];
  char* p = out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i > 0) *p++ = '.';
    const unsigned v = b[i];
    if (v >= 100) *p++ = static_cast<char>('0' + v / 100);
    if (v >= 10) *p++ = static_cast<char>('0' + v / 10 % 10);
    *p++ = static_cast<char>('0' + v % 10);
  }
  return std::string(out, p);
}

}  // namespace

void connection_core::open_listening(tcp::acceptor& a, const tcp::endpoint& ep, bool share) {
  a.open(ep.protocol());
  a.set_option(tcp::acceptor::reuse_address(true));
#ifdef SO_REUSEPORT
  if (share) a.set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true));
#else
  (void)share;
#endif
  a.bind(ep);
  a.listen(asio::socket_base::max_listen_connections);
}

void connection_core::bind() {
  asio::io_context& io0 = shards.front()->io;
  tcp::resolver resolver(io0);
  const auto results = resolver.resolve(opts_.host, std::to_string(opts_.port), tcp::resolver::numeric_service);
  tcp::endpoint ep = *results.begin();
  if (!ep.address().is_unspecified()) local_loopback_ = ep.address().is_loopback();
#ifdef SO_REUSEPORT
  const bool per_shard = opts_.accept_on_every_shard && shards.size() > 1;
#else
  const bool per_shard = false;
#endif
  if (per_shard) {
    // Sockets that share a port would also share it with any other process of this user
    // that asked to, so a second server started on the same port would silently take
    // half the connections instead of failing. A plain socket bound first, and closed,
    // settles that: it fails as a lone server would when the port is taken. (For port 0
    // it also picks the port the shards then share.)
    tcp::acceptor probe(io0);
    probe.open(ep.protocol());
    probe.set_option(tcp::acceptor::reuse_address(true));
    probe.bind(ep);
    ep.port(probe.local_endpoint().port());
    probe.close();
    for (auto& s : shards) {
      auto at = std::make_unique<accept_point>();
      at->home = s.get();
      at->acceptor.emplace(s->io);
      open_listening(*at->acceptor, ep, true);
      accept_points_.push_back(std::move(at));
    }
  } else {
    auto at = std::make_unique<accept_point>();
    at->acceptor.emplace(io0);
    open_listening(*at->acceptor, ep, false);
    accept_points_.push_back(std::move(at));
  }
  port_ = accept_points_.front()->acceptor->local_endpoint().port();
  if (!ep.address().is_loopback()) {
    const diagnostic_field fields[] = {{"transport", "http"}, {"host", opts_.host}};
    log_(diagnostic{diagnostic_level::warning,
                    "listening on a non-loopback address: the server is reachable from the network", fields});
  }
}

void connection_core::start(std::weak_ptr<void> keep) {
  keep_ = std::move(keep);
  for (auto& at : accept_points_) {
    asio::io_context& io = at->home ? at->home->io : shards.front()->io;
    asio::post(io, [this, at = at.get(), hold = hold()] { start_accept(*at); });
  }
  for (auto& s : shards) asio::post(s->io, [this, s = s.get(), hold = hold()] { start_sweep(*s); });
}

void connection_core::start_accept(accept_point& at) {
  shard* home = at.home ? at.home : shards[next_shard_++ % shards.size()].get();
  at.acceptor->async_accept(home->io, at.peer, [this, &at, home, hold = hold()](const std::error_code& ec,
                                                                                 tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping_) return;
      // Out of descriptors and the like: try again shortly instead of spinning.
      auto timer = std::make_shared<asio::steady_timer>(at.acceptor->get_executor(), std::chrono::milliseconds(50));
      timer->async_wait([this, &at, timer, hold](const std::error_code&) {
        if (!stopping_) start_accept(at);
      });
      return;
    }
    std::string address = address_text(at.peer.address());
    keyed_limits::slot address_slot;
    // Past either cap the connection is closed before a byte is read: the client sees a
    // reset or an EOF, as from any full server, and retries later. Why not a 503: writing
    // it would cost what the flood is meant to cost us, and a flood reads no answers.
    if (++connection_count_ > opts_.max_connections || stopping_ ||
        !connections_by_address_.acquire(address, opts_.max_connections_per_address, address_slot)) {
      --connection_count_;
      std::error_code ignored;
      socket.close(ignored);
    } else {
      auto exec = socket.get_executor();
      auto c = std::make_shared<connection>(*this, *home, std::move(socket), tls(), std::move(address),
                                            std::move(address_slot), local_loopback_);
      {
        std::lock_guard lock(closers_mutex_);
        c->closer_next = closers_;
        if (closers_) closers_->closer_prev = c.get();
        closers_ = c.get();
      }
      spawn(exec, c->run(), [this, c](std::exception_ptr failure) {
        {
          std::lock_guard lock(closers_mutex_);
          if (c->closer_prev) c->closer_prev->closer_next = c->closer_next;
          else closers_ = c->closer_next;
          if (c->closer_next) c->closer_next->closer_prev = c->closer_prev;
        }
        if (failure) {
          try {
            std::rethrow_exception(failure);
          } catch (const std::exception& e) {
            const diagnostic_field fields[] = {{"transport", "http"}, {"error", e.what()}};
            log_(diagnostic{diagnostic_level::error, "connection failed", fields});
          }
        }
      });
    }
    start_accept(at);
  });
}

clock_type::duration connection_core::sweep_period() const {
  return std::clamp<clock_type::duration>(std::min({opts_.idle_timeout, opts_.header_timeout, opts_.write_timeout}) / 10,
                                          std::chrono::milliseconds(10), std::chrono::milliseconds(500));
}

void connection_core::start_sweep(shard& s) {
  s.sweeper.expires_after(sweep_period());
  s.sweeper.async_wait([this, &s, hold = hold()](const std::error_code& ec) {
    if (ec || !s.sweeping) return;
    const std::int64_t now = now_ns();
    for (deadline_hook* h = s.live; h;) {
      deadline_hook* next = h->next;  // expire() never unlinks, but stay safe if it did
      if (h->deadline_ns <= now) h->expire();
      h = next;
    }
    start_sweep(s);
  });
}

void connection_core::stop_accepting() {
  for (auto& at : accept_points_) {
    if (!at->home || at->home == shards.front().get()) {
      std::error_code ignored;
      at->acceptor->close(ignored);
      continue;
    }
    asio::post(at->home->io, [at = at.get(), hold = hold()] {
      std::error_code ignored;
      at->acceptor->close(ignored);
    });
  }
}

void connection_core::close_connections() {
  std::lock_guard lock(closers_mutex_);
  // A connection is unlinked only once its run() has ended, and its owner (the run's
  // completion) holds it until then, so every one listed is alive.
  for (connection* c = closers_; c; c = c->closer_next) c->close_soon();
}

connection::connection(connection_core& core, shard& home, tcp::socket socket,
                       std::shared_ptr<asio::ssl::context> tls, std::string remote_address,
                       keyed_limits::slot address_slot, std::optional<bool> local_loopback)
    : core_(core),
      keep_(core.hold()),
      home_(&home),
      socket_(std::move(socket)),
      read_buffer_(take_read_buffer()),
      parser_(parser_limits{core.opts().max_request_line, core.opts().max_header_bytes,
                            core.opts().max_header_count, core.opts().max_body}),
      remote_address_(std::move(remote_address)),
      address_slot_(std::move(address_slot)) {
  std::error_code ec;
  if (local_loopback) {
    local_is_loopback_ = *local_loopback;
  } else {
    const auto local = socket_.local_endpoint(ec);
    local_is_loopback_ = !ec && local.address().is_loopback();
  }
  socket_.set_option(tcp::no_delay(true), ec);
  if (tls) tls_ = make_tls_session(socket_, std::move(tls));
}

connection::~connection() {
  count_serving(~std::size_t{0});  // gives its count back; counted nowhere now
  give_back_read_buffer(std::move(read_buffer_));
  --core_.connection_count_;
}

bool connection::host_passes(std::string_view host, const std::vector<std::string>& allowed) {
  if (!passed_host_.empty() && host == passed_host_) return true;
  if (!host_allowed(host, local_is_loopback_, allowed)) return false;
  passed_host_.assign(host);
  return true;
}

void connection::close_soon() {
  // Posted to where the connection lives now. It may move before the post runs; then
  // close_if_idle finds itself on the wrong shard and follows it.
  asio::post(home().io, [weak = weak_from_this()] {
    if (auto c = weak.lock()) c->close_if_idle();
  });
}

void connection::close_if_idle() {
  if (!home().io.get_executor().running_in_this_thread()) return close_soon();
  if (!busy_) {
    std::error_code ec;
    socket_.close(ec);
  }
  closing_ = true;
}

void connection::expire() noexcept {
  deadline_ns = never;
  timed_out_ = true;
  std::error_code ignored;
  socket_.cancel(ignored);
}

std::size_t connection::send_now(std::string_view data, bool& failed) noexcept {
#if defined(MSG_DONTWAIT) && defined(MSG_NOSIGNAL)
  if (tls_ || data.empty()) return 0;
  for (;;) {
    // MSG_DONTWAIT whatever the descriptor's mode (Asio's own synchronous send would wait
    // for room on a socket it does not know to be non-blocking, as one moved between
    // shards); MSG_NOSIGNAL: a peer that hung up is an error here, not a SIGPIPE.
    const ssize_t n = ::send(socket_.native_handle(), data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) failed = true;
    return 0;
  }
#else
  (void)data;
  (void)failed;
  return 0;
#endif
}

task<bool> connection::write(std::string_view data) {
  bool failed = false;
  data.remove_prefix(send_now(data, failed));
  if (failed) co_return false;
  // Piece by piece, each under the write deadline (see `reply`, which does the same).
  const std::int64_t saved = deadline_ns;
  while (!data.empty()) {
    arm(core_.opts().write_timeout);
    std::error_code ec;
    std::size_t n = 0;
    if (tls_) std::tie(ec, n) = co_await tls_write_some(*tls_, asio::buffer(data));
    else std::tie(ec, n) = co_await socket_.async_write_some(asio::buffer(data), use_task);
    if (ec) co_return false;
    data.remove_prefix(n);
  }
  deadline_ns = saved;
  co_return true;
}

task<bool> connection::reply(int status, std::string_view content_type, std::string_view body, bool close,
                             std::string_view extra) {
  // Written here rather than through write(): one coroutine frame less per request.
  std::string joined;
  if (!response_headers_.empty()) {
    joined.reserve(extra.size() + response_headers_.size());
    joined.append(extra).append(response_headers_);
    extra = joined;
  }
  // An answer written while a body is unread ends the connection: what follows on it is
  // the rest of that body, not a next request.
  close = close || unread_body_;
  write_response(out_, status, content_type, body, close || closing_, extra, head_);
  const std::string_view text = out_;
  // A client that accepts no byte for `write_timeout` has stopped reading: the deadline
  // closes it. Re-armed for each piece the peer takes, so a slow reader that reads at all
  // is served however long its answer (docs/reliability.md#slow-clients-under-slowhttptest).
  // The loop is write()'s, repeated: one coroutine frame less per request.
  std::string_view rest = text;
  bool failed = false;
  rest.remove_prefix(send_now(rest, failed));
  if (failed) co_return false;
  const std::int64_t saved = deadline_ns;
  while (!rest.empty()) {
    arm(core_.opts().write_timeout);
    std::error_code ec;
    std::size_t n = 0;
    if (tls_) std::tie(ec, n) = co_await tls_write_some(*tls_, asio::buffer(rest));
    else std::tie(ec, n) = co_await socket_.async_write_some(asio::buffer(rest), use_task);
    if (ec) co_return false;
    rest.remove_prefix(n);
  }
  deadline_ns = saved;
  give_back_large_buffer();
  co_return !close && !closing_;
}

std::shared_ptr<response_sink> connection::make_sink() {
  auto sink = std::make_shared<response_sink>(socket_.get_executor(), core_.opts().max_queued_bytes);
  if (spare_events_.capacity() != 0) sink->lend_queue(std::move(spare_events_));
  // A client that stops reading: close its connection rather than queue without bound;
  // it can resume from the store.
  sink->on_abort.target = weak_from_this();
  sink->on_abort.abort = [](void* target) {
    std::error_code ignored;
    static_cast<connection*>(target)->socket_.close(ignored);
  };
  return sink;
}

void connection::watch_for_close(const std::shared_ptr<response_sink>& sink) {
  watch_for_close(sink, [](void* target) { static_cast<response_sink*>(target)->kill(); });
}

void connection::watch_for_close(const std::shared_ptr<json_answer>& answer) {
  watch_for_close(answer, [](void* target) { static_cast<json_answer*>(target)->hang_up(); });
}

void connection::watch_for_close(std::shared_ptr<void> target, void (*on_close)(void*)) {
  // A one-byte peek rather than `async_wait(wait_read)`: asio starts a wait by
  // re-registering the socket with epoll (an `epoll_ctl` per watched request, about a
  // third of a syscall per request of the SSE row), while a receive queues behind the
  // registration the socket already has; and after a read that told the reactor the
  // socket is drained (wire/drained_read.hpp) it does not even try the peek first. The
  // peek leaves a pipelined request unread.
  socket_.async_receive(asio::buffer(&watch_byte_, 1), tcp::socket::message_peek,
                        [self = shared_from_this(), target = std::move(target), on_close](const std::error_code& ec,
                                                                                         std::size_t) {
                          if (ec == asio::error::operation_aborted) return;  // stop_watching
                          // End of stream (asio says eof for a stream that read nothing) or a
                          // reset: the client hung up. A byte read instead is more from the
                          // client (a pipelined request): it stays unread for the next turn of
                          // the connection, and watching again would spin on it; a write
                          // failure will tell.
                          if (ec) on_close(target.get());
                        });
}

void connection::stop_watching() {
  std::error_code ignored;
  socket_.cancel(ignored);
}

task<void> connection::run() {
  std::string buf;
  std::size_t start = 0;  // first unparsed byte
  constexpr std::size_t chunk = read_buffer_size;
  auto self = shared_from_this();
  const options& opts = core_.opts();
  // Linked here, on the connection's own shard (the constructor runs on the acceptor's).
  home().link(this);
  struct unlink_on_exit {
    connection* c;
    ~unlink_on_exit() { c->home().unlink(c); }
  } unlink{this};

  if (tls_) {
    // The handshake is part of the first request's headers as far as time goes: a
    // client that stalls in it (or speaks plain HTTP to this port, which OpenSSL refuses
    // at once) is closed within the header timeout, without an HTTP answer it could not
    // read anyway.
    arm(opts.header_timeout);
    const std::error_code ec = co_await tls_handshake(*tls_);
    if (ec) co_return;
  }

  const std::int64_t grace_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opts.body_grace).count();
  const std::int64_t rate = static_cast<std::int64_t>(std::max<std::size_t>(1, opts.min_body_rate));
  const std::int64_t cap_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(opts.body_timeout).count();
  for (;;) {
    // Read and parse until one whole request is here. The deadline is the idle timeout
    // while nothing of a request has arrived, then the header timeout, then the body's.
    bool armed_for_request = false;
    std::int64_t body_start_ns = -1;  // when the current request's headers ended
    arm(opts.idle_timeout);
    while (!parser_.complete() && !parser_.failed()) {
      if (start < buf.size()) {
        const std::size_t used = parser_.feed(buf.data() + start, buf.size() - start);
        start += used;
        if (!armed_for_request && !parser_.idle()) {
          armed_for_request = true;
          arm(opts.header_timeout);
        }
        if (parser_.headers_complete() && !parser_.failed()) {
          // A body still to come is read only once the head has passed the handler's
          // screen (the token, when tokens are checked): a refused request pins at most
          // its head and one read's worth of body. A body already here in full costs
          // nothing more to keep, and is not screened (the request's own handling checks
          // the same things a moment later).
          const std::size_t buffered = buf.size() - start;
          if (!parser_.complete() && (!parser_.content_length() || *parser_.content_length() > buffered)) {
            unread_body_ = true;
            const bool go_on = co_await core_.handler().screen(*this, parser_.current());
            unread_body_ = false;
            if (!go_on) {
              co_await linger();
              co_return;
            }
          }
          body_start_ns = now_ns();
          if (const std::string_view* expect = parser_.current().find("expect")) {
            if (media_type_is(*expect, "100-continue")) {
              if ((!parser_.content_length() || *parser_.content_length() > 0) && start == buf.size() &&
                  !co_await write("HTTP/1.1 100 Continue\r\n\r\n"))
                co_return;
            } else {
              co_await reply(417, {}, {}, true);
              co_return;
            }
          }
        }
        if (body_start_ns >= 0 && !parser_.complete() && !parser_.failed()) {
          // Each byte received buys 1/min_body_rate seconds more, so the body must keep
          // arriving at that rate on average once the grace is spent. Why not a deadline
          // computed once from Content-Length: a client that declared 4 MiB would get
          // grace + 4 MiB / 240 B/s, almost five hours, to trickle it a byte a minute
          // (and so would every chunked body, whose length is not known): a slow-body
          // attack held its connections for hours.
          // And a hard cap (`body_timeout`) from the end of the headers: without it, a body
          // sent fast but for its last byte had earned hours (4 MiB / 240 B/s).
          const auto received = static_cast<std::int64_t>(parser_.current().body.size());
          deadline_ns = std::min(body_start_ns + grace_ns + received * 1'000'000'000 / rate, body_start_ns + cap_ns);
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
      std::error_code ec;
      std::size_t n = 0;
      if (!read_buffer_) read_buffer_ = take_read_buffer();  // see serve_events
      if (tls_) std::tie(ec, n) = co_await tls_read_some(*tls_, asio::buffer(read_buffer_.get(), chunk));
      else std::tie(ec, n) = co_await socket_.async_read_some(drained_read_buffer(read_buffer_.get(), chunk), use_task);
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
    request req = parser_.take();
    busy_ = true;
    head_ = req.method == "HEAD";
    const bool keep = co_await core_.handler().handle(*this, req);
    busy_ = false;
    response_headers_.clear();
    const bool again = keep && req.keep_alive;
    parser_.recycle(std::move(req));
    if (!again || closing_ || core_.stopping()) co_return;
    if (start == buf.size() && should_move()) {
      // Unlinked from the old shard's sweep on its thread, linked into the new one's on
      // the new thread: each list is only ever touched by its own shard.
      home().unlink(this);
      if (!move_socket()) co_return;
      co_await resume_on{home().io};
      home().link(this);
    }
  }
}

task<void> connection::linger() {
  // Closing a socket with unread bytes in its receive buffer sends a reset, and a reset
  // makes the client's kernel drop what it had not yet read: the answer just written.
  // So the sending side is shut (the client sees the answer end), and what the client
  // still sends is read and dropped for a moment, as nginx's lingering close does. Not
  // over TLS, whose shutdown is a conversation of its own; a TLS client may lose the
  // answer this way.
  if (tls_) co_return;
  std::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  constexpr std::size_t most = 1u << 20;
  arm(std::chrono::seconds(2));
  if (!read_buffer_) read_buffer_ = take_read_buffer();
  for (std::size_t drained = 0; drained < most;) {
    const auto [read_ec, n] = co_await socket_.async_read_some(asio::buffer(read_buffer_.get(), read_buffer_size), use_task);
    if (read_ec) break;
    drained += n;
  }
  disarm();
}

bool connection::should_move() const noexcept {
  if (!(streak_ >= move_after_ && !tls_ && core_.opts().follow_sessions && preferred_ < core_.shards.size() && !closing_))
    return false;
  // Following saves each request two hand-offs, but not when it piles work onto a shard
  // already carrying clearly more than this one: then the other thread idles (one
  // session shared by every connection). "Clearly": by more than an eighth, and by more
  // than a few connections, so that a lightly used server always follows. Event-stream
  // answers too: since their sink's calls from afar travel in one post
  // (`response_sink::from_afar`), handing them off beat following onto the busier shard
  // (docs/benchmarks.md, "Event streams handed off in one post").
  const std::uint32_t there = core_.shards[preferred_]->load.weight();
  const std::uint32_t here = home_.load(std::memory_order_relaxed)->load.weight();
  return there < here + std::max<std::uint32_t>(4, here / 8);
}

void connection::count_serving(std::size_t index) noexcept {
  if (serving_ < core_.shards.size()) core_.shards[serving_]->load.serving.fetch_sub(1, std::memory_order_relaxed);
  if (index < core_.shards.size()) core_.shards[index]->load.serving.fetch_add(1, std::memory_order_relaxed);
  serving_ = index;
}

bool connection::move_socket() {
  shard* to = core_.shards[preferred_].get();
  streak_ = 0;
  move_after_ = served_since_move_ < 32 ? std::min(move_after_ * 2, 64u) : 3u;
  served_since_move_ = 0;
  std::error_code ec;
  const tcp::endpoint local = socket_.local_endpoint(ec);
  if (ec) return false;
  // release() takes the descriptor out of the old shard's reactor (nothing is pending
  // between requests); assign() registers it with the new one's, which is thread-safe.
  const tcp::socket::native_handle_type fd = socket_.release(ec);
  if (ec) return false;
  tcp::socket moved(to->io);
  moved.assign(local.protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return false;
  }
  socket_ = std::move(moved);
  home_.store(to, std::memory_order_release);
  return true;
}

task<bool> connection::serve_json(const std::shared_ptr<response_sink>& sink, const std::string& extra) {
  // Held until what the answer names is in Redis (response_sink::hold).
  if (sink->held()) co_await sink->wait_settled();
  // One document: everything but the last message (the response) has nowhere to go.
  std::string last;
  std::vector<sse_event> batch;
  for (;;) {
    sink->drain(batch);
    for (sse_event& e : batch) last = std::move(e.data);
    if (sink->finished() || sink->dead()) break;
    co_await sink->wait();
  }
  if (sink->dead()) co_return false;
  co_return co_await reply_document(last, sink->answer_status(), sink->answer_retry_after(), extra);
}

task<bool> connection::reply_document(std::string_view body, int status, int retry_after, const std::string& extra) {
  // Not a coroutine: it only chooses how to call reply(), whose task it hands back (a
  // frame less per request). What the task reads (`body`, `extra`) is the caller's, who
  // awaits it at once.
  if (body.empty()) return reply(202, {}, {}, false, extra);
  if (status != 0) return reply_refused(body, status, retry_after, extra);
  return reply(200, "application/json", body, false, extra);
}

task<bool> connection::reply_refused(std::string_view body, int status, int retry_after, std::string extra) {
  // A refusal for a limit the engine found (outbound::refuse_with_status): the client
  // backs off as for the transport's own 429 and 503.
  extra += "Retry-After: ";
  extra += std::to_string(std::max(1, retry_after));
  extra += "\r\n";
  co_return co_await reply(status, "application/json", body, false, extra);
}

task<bool> connection::reply_answer(json_answer& answer, const std::string& extra) {
  return reply_document(answer.body(), answer.status(), answer.retry_after(), extra);
}

task<bool> connection::serve_events(const std::shared_ptr<response_sink>& sink, const std::string& extra,
                                    bool standalone, bool headers_sent) {
  const options& opts = core_.opts();
  // A standalone stream holds its connection for as long as the session lives and reads
  // nothing meanwhile: its read buffer goes back to the heap until the next read (one
  // allocation when the stream ends, against 16 KiB held by every idle stream).
  if (standalone) give_back_read_buffer(std::move(read_buffer_));
  // A request refused for a limit before its stream began is answered with the status
  // that says so (429, 503), as one JSON document: the client offered both kinds, and a
  // 200 event stream would hide the refusal from every proxy and retry policy.
  if (!headers_sent && sink->answer_status() != 0 && sink->finished()) co_return co_await serve_json(sink, extra);
  // X-Accel-Buffering: a proxy in front (nginx) would otherwise hold events back.
  constexpr std::string_view head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                    "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n";
  constexpr std::string_view keep_alive = ": keep-alive\n\n";
  constexpr std::size_t chunk_framing = 16 + 2 + 2;  // hex size, CRLF, CRLF
  constexpr std::string_view last_chunk = "0\r\n\r\n";
  // What one write sends (the head the first time, then the events drained as one chunk)
  // is sized first and built in one buffer: appending to strings that grew as they went,
  // and gathering the events apart before framing them, cost an answer on an event
  // stream six allocations and a copy of every event (docs/benchmarks.md). The buffer is
  // the connection's own, which `reply` keeps between answers: one response is written
  // at a time, and a buffer of the stream's own cost an allocation per request.
  std::string& out = out_;
  out.clear();
  bool head_pending = !headers_sent;
  std::vector<sse_event> batch;
  const std::string retry = std::to_string(opts.retry_interval.count());
  for (;;) {
    sink->drain(batch);
    std::size_t events = 0;
    for (const sse_event& e : batch)
      events += e.data.empty() ? priming_event_size(e.id, retry) : sse_event_size(e.id, e.data);
    // An idle standalone stream carries a comment now and then, so proxies and the
    // client's own timers see it alive (and a vanished client is noticed on write).
    const bool comment = events == 0 && standalone && !sink->finished() && !head_pending;
    if (comment) events = keep_alive.size();
    const bool ending = sink->finished() || (closing_ && standalone);
    out.reserve((head_pending ? head.size() + extra.size() + response_headers_.size() + 2 : 0) +
                (events ? events + chunk_framing : 0) + (ending ? last_chunk.size() : 0));
    if (head_pending) {
      out += head;
      out += extra;
      out += response_headers_;
      out += "\r\n";
      head_pending = false;
    }
    if (events != 0) {
      append_chunk_head(out, events);
      if (comment) out += keep_alive;
      for (const sse_event& e : batch) {
        // The priming event: an id, how long to wait before reconnecting, no data.
        if (e.data.empty()) append_priming_event(out, e.id, retry);
        else append_sse_event(out, e.id, e.data);
      }
      out += "\r\n";
    }
    if (ending) out += last_chunk;
    if (sink->dead() || (!out.empty() && !co_await write(out))) {
      sink->kill();
      give_back_large_buffer();
      co_return false;
    }
    out.clear();
    if (ending) {
      give_back_large_buffer();
      // The vector the sink's events came in, for the next sink (see `make_sink`).
      if (batch.capacity() != 0 && batch.capacity() <= kept_event_capacity) {
        batch.clear();
        spare_events_ = std::move(batch);
      }
      co_return !closing_;
    }
    co_await sink->wait(standalone ? clock_type::duration(opts.keep_alive_interval) : response_sink::forever);
  }
}

}  // namespace droid::http::detail
