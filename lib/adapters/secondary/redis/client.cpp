// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Redis connection: RESP out, hiredis's reader in, one watchdog for every deadline.
#include "client.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/write.hpp>
#include <hiredis/hiredis.h>

namespace droid::redis {

namespace {

/// Joins `parts` by appending. Why not `"text" + std::string(...)`: g++ 12 at -O3 warns
/// falsely (-Wrestrict, GCC bug 105329) on a literal added to a temporary string.
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view p : parts) out.append(p);
  return out;
}

class category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redis"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::unavailable: return "Redis is unavailable";
      case errc::timeout: return "Redis did not answer in time";
      case errc::overloaded: return "too many Redis commands are waiting for a reply";
      case errc::closed: return "the Redis client was closed";
    }
    return join({"redis error ", std::to_string(code)});
  }
};

/// Copies hiredis's reply tree into ours (the tree is freed right after).
reply convert(const redisReply& r) {
  reply out;
  switch (r.type) {
    case REDIS_REPLY_STRING: out.type = reply::kind::string; out.str.assign(r.str, r.len); break;
    case REDIS_REPLY_STATUS: out.type = reply::kind::status; out.str.assign(r.str, r.len); break;
    case REDIS_REPLY_ERROR: out.type = reply::kind::error; out.str.assign(r.str, r.len); break;
    case REDIS_REPLY_INTEGER: out.type = reply::kind::integer; out.integer = r.integer; break;
    case REDIS_REPLY_ARRAY:
      out.type = reply::kind::array;
      out.elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(convert(*r.element[i]));
      break;
    default: out.type = reply::kind::nil; break;
  }
  return out;
}

void append_resp(std::string& out, const std::string_view* args, std::size_t count) {
  char digits[24];
  const auto number = [&](char lead, std::size_t n) {
    out.push_back(lead);
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    out.append(digits, end);
    out.append("\r\n");
  };
  number('*', count);
  for (std::size_t i = 0; i < count; ++i) {
    number('$', args[i].size());
    out.append(args[i]);
    out.append("\r\n");
  }
}

/// Why a connection attempt or a read failed, as a sentence for `last_failure`.
std::string describe(const std::error_code& ec) {
  if (ec == asio::error::eof) return "Redis closed the connection";
  return ec.message();
}

}  // namespace

const std::error_category& category() noexcept {
  static const category_impl instance;
  return instance;
}

std::string endpoint::display() const {
  std::string out;
  if (!unix_path.empty()) {
    out = "unix://" + unix_path;
    if (db != 0) out += join({"?db=", std::to_string(db)});
    return out;
  }
  out = "redis://";
  if (!username.empty() || !password.empty()) out += username + (password.empty() ? "@" : ":***@");
  out += host.find(':') != std::string::npos ? join({"[", host, "]"}) : host;
  out += join({":", port});
  if (db != 0) out += join({"/", std::to_string(db)});
  return out;
}

std::optional<endpoint> parse_url(std::string_view url, std::string& error) {
  endpoint e;
  const auto parse_db = [&](std::string_view digits) {
    int v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size() || v < 0 || v > 15) return false;
    e.db = v;
    return true;
  };
  if (url.starts_with("unix://")) {
    std::string_view rest = url.substr(7);
    if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      rest = rest.substr(0, q);
      if (!query.starts_with("db=") || !parse_db(query.substr(3))) {
        error = "a unix:// Redis URL takes only ?db=N (0-15)";
        return std::nullopt;
      }
    }
    if (rest.empty() || rest.front() != '/') {
      error = "a unix:// Redis URL needs an absolute socket path (unix:///run/redis.sock)";
      return std::nullopt;
    }
    e.unix_path = std::string(rest);
    return e;
  }
  if (!url.starts_with("redis://")) {
    error = "a Redis URL starts with redis:// or unix:// (TLS, rediss://, is not supported)";
    return std::nullopt;
  }
  std::string_view rest = url.substr(8);
  std::string_view path;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (const std::size_t colon = credentials.find(':'); colon != std::string_view::npos) {
      e.username = std::string(credentials.substr(0, colon));
      e.password = std::string(credentials.substr(colon + 1));
    } else {
      e.password = std::string(credentials);  // redis://secret@host: a password alone
    }
  }
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      error = "unclosed [ in the Redis URL's host";
      return std::nullopt;
    }
    e.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      error = "unexpected text after the Redis URL's host";
      return std::nullopt;
    }
    if (!rest.empty()) e.port = std::string(rest.substr(1));
  } else if (const std::size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    e.host = std::string(rest.substr(0, colon));
    e.port = std::string(rest.substr(colon + 1));
  } else {
    e.host = std::string(rest);
  }
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(e.port.data(), e.port.data() + e.port.size(), port);
  if (e.host.empty() || ec != std::errc() || end != e.port.data() + e.port.size() || port == 0 || port > 65535) {
    error = "a Redis URL needs a host and a port from 1 to 65535 (redis://127.0.0.1:6379)";
    return std::nullopt;
  }
  if (!path.empty() && !parse_db(path)) {
    error = "the Redis URL's database must be a number from 0 to 15 (redis://host:6379/2)";
    return std::nullopt;
  }
  return e;
}

// ---- awaiter -----------------------------------------------------------------------------

client::awaiter::awaiter(client& c, std::initializer_list<std::string_view> args) : client_(c) {
  std::error_code why;
  if (!c.enqueue(args.begin(), args.size(), this, why)) outcome_.emplace(why);
}

client::awaiter::awaiter(client& c, const std::vector<std::string>& args) : client_(c) {
  // A short array of views on the stack is enough for every command the stores send.
  std::vector<std::string_view> views(args.begin(), args.end());
  std::error_code why;
  if (!c.enqueue(views.data(), views.size(), this, why)) outcome_.emplace(why);
}

void client::awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
  // The command is queued already (see the constructor); its reply, a timeout or a
  // failure resumes `h` from the client's own loop, never from inside this call.
  waiter_ = h;
}

// ---- client ------------------------------------------------------------------------------

std::shared_ptr<client> client::create(asio::any_io_executor executor, client_options options) {
  std::shared_ptr<client> c(new client(std::move(executor), std::move(options)));
  c->start_connect();
  return c;
}

client::client(asio::any_io_executor executor, client_options options)
    : executor_(std::move(executor)),
      options_(std::move(options)),
      socket_(executor_),
      retry_timer_(executor_),
      watchdog_(executor_),
      reader_(redisReaderCreate()),
      in_(16 * 1024) {
  retry_delay_ = options_.retry_min;
}

client::~client() {
  if (reader_) redisReaderFree(reader_);
}

bool client::send(std::initializer_list<std::string_view> args) {
  std::error_code why;
  const bool ok = enqueue(args.begin(), args.size(), nullptr, why);
  if (!ok) ++failed_writes_;
  return ok;
}

bool client::send(const std::vector<std::string>& args) {
  std::vector<std::string_view> views(args.begin(), args.end());
  std::error_code why;
  const bool ok = enqueue(views.data(), views.size(), nullptr, why);
  if (!ok) ++failed_writes_;
  return ok;
}

void client::after_sent(std::function<void()> f) {
  // The write that will carry the last command queued: the next one when some wait in
  // `out_` (behind the one in progress, if any), else the one in progress.
  std::uint64_t write = 0;
  if (!out_.empty())
    write = writes_done_ + (write_in_progress_ ? 2 : 1);
  else if (write_in_progress_)
    write = writes_done_ + 1;
  if (write == 0) return f();
  after_sent_.push_back(sent_callback{write, std::move(f)});
}

void client::run_sent_callbacks(bool all) {
  // Taken out before any runs: a callback may queue another.
  std::vector<std::function<void()>> due;
  while (!after_sent_.empty() && (all || after_sent_.front().write <= writes_done_)) {
    due.push_back(std::move(after_sent_.front().f));
    after_sent_.pop_front();
  }
  for (auto& f : due) f();
}

bool client::enqueue(const std::string_view* args, std::size_t count, awaiter* waiter, std::error_code& why) {
  if (state_ == state::closed) {
    why = errc::closed;
    return false;
  }
  // Only a connection on its way up takes commands to send later; a down one fails them
  // now (see the file comment).
  if (state_ == state::down || (state_ == state::connecting && !first_attempt_)) {
    why = errc::unavailable;
    return false;
  }
  if (pending_.size() >= options_.max_pending) {
    why = errc::overloaded;
    return false;
  }
  append_resp(out_, args, count);
  const auto now = std::chrono::steady_clock::now();
  // A command queued while connecting has the connection's time and then its own.
  const auto start = state_ == state::connecting ? std::max(now, connect_deadline_) : now;
  pending_.push_back(pending{waiter, start + options_.command_timeout});
  arm_watchdog();
  schedule_write();
  return true;
}

void client::schedule_write() {
  if (write_scheduled_ || write_in_progress_ || !socket_ready_) return;
  // Written at the end of this turn of the loop, not now: the commands a request issues
  // together (an event's XADD and PEXPIRE, a forward's PUBLISH behind a lookup) then go
  // out in one write instead of one system call each (measured with perf on bench row
  // droid-cluster-2: the forwarding path was mostly send() and recv()).
  write_scheduled_ = true;
  asio::post(executor_, [self = shared_from_this(), gen = generation_] {
    if (gen != self->generation_) return;
    self->write_scheduled_ = false;
    self->start_write();
  });
}

void client::start_connect() {
  state_ = state::connecting;
  ++generation_;
  connect_deadline_ = std::chrono::steady_clock::now() + options_.connect_timeout;
  arm_watchdog();
  const std::uint64_t gen = generation_;
  auto self = shared_from_this();
  const auto connected = [self, gen](const std::error_code& ec) {
    if (gen != self->generation_ || self->state_ != state::connecting) return;
    if (ec) {
      self->fail(errc::unavailable, join({"cannot connect to ", self->options_.where.display(), ": ", describe(ec)}));
      return;
    }
    self->on_connected();
  };
  if (!options_.where.unix_path.empty()) {
    socket_.async_connect(
        asio::generic::stream_protocol::endpoint(asio::local::stream_protocol::endpoint(options_.where.unix_path)),
        connected);
    return;
  }
  // A numeric host needs no resolver; names go through one (its result is the first
  // address that answers).
  std::error_code ec;
  const auto address = asio::ip::make_address(options_.where.host, ec);
  unsigned short port = 0;
  std::from_chars(options_.where.port.data(), options_.where.port.data() + options_.where.port.size(), port);
  if (!ec) {
    socket_.async_connect(asio::generic::stream_protocol::endpoint(asio::ip::tcp::endpoint(address, port)), connected);
    return;
  }
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(executor_);
  resolver->async_resolve(
      options_.where.host, options_.where.port,
      [self, gen, resolver, connected](const std::error_code& rec, asio::ip::tcp::resolver::results_type found) {
        if (gen != self->generation_ || self->state_ != state::connecting) return;
        if (rec || found.empty()) {
          self->fail(errc::unavailable, join({"cannot resolve ", self->options_.where.display(), ": ",
                                              rec ? rec.message() : std::string("no address")}));
          return;
        }
        self->socket_.async_connect(asio::generic::stream_protocol::endpoint(found.begin()->endpoint()), connected);
      });
}

void client::on_connected() {
  socket_ready_ = true;
  if (options_.where.unix_path.empty()) {
    // Pipelined commands are small and a waiter waits for each: Nagle's delay would sit
    // between every write and its reply.
    std::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  }
  // The preamble goes before anything queued while connecting: AUTH and SELECT must
  // precede every command, and PING proves that Redis answers (a stopped server still
  // accepts connections into its backlog) before the client calls itself up.
  std::string preamble;
  std::size_t count = 0;
  if (!options_.where.password.empty()) {
    if (options_.where.username.empty()) {
      const std::string_view args[] = {"AUTH", options_.where.password};
      append_resp(preamble, args, 2);
    } else {
      const std::string_view args[] = {"AUTH", options_.where.username, options_.where.password};
      append_resp(preamble, args, 3);
    }
    ++count;
  }
  if (options_.where.db != 0) {
    const std::string db = std::to_string(options_.where.db);
    const std::string_view args[] = {"SELECT", db};
    append_resp(preamble, args, 2);
    ++count;
  }
  for (const std::string& channel : channels_) {
    const std::string_view args[] = {"SUBSCRIBE", channel};
    append_resp(preamble, args, 2);
    ++count;
  }
  const std::string_view ping[] = {"PING"};
  append_resp(preamble, ping, 1);
  ++count;
  preamble_ = count;
  for (std::size_t i = 0; i < count; ++i) pending_.push_front(pending{nullptr, connect_deadline_});
  out_.insert(0, preamble);
  start_read();
  start_write();
}

void client::start_write() {
  if (write_in_progress_ || out_.empty() || !socket_ready_) return;
  write_in_progress_ = true;
  writing_.clear();
  std::swap(out_, writing_);
  const std::uint64_t gen = generation_;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this(), gen](const std::error_code& ec, std::size_t) {
                      if (gen != self->generation_) return;
                      self->write_in_progress_ = false;
                      if (ec) {
                        self->fail(errc::unavailable,
                                   join({"writing to ", self->options_.where.display(), ": ", describe(ec)}));
                        return;
                      }
                      ++self->writes_done_;
                      self->start_write();
                      self->run_sent_callbacks(false);
                    });
}

void client::start_read() {
  const std::uint64_t gen = generation_;
  socket_.async_read_some(asio::buffer(in_), [self = shared_from_this(), gen](const std::error_code& ec, std::size_t n) {
    if (gen != self->generation_) return;
    if (ec) {
      self->fail(errc::unavailable, join({"reading from ", self->options_.where.display(), ": ", describe(ec)}));
      return;
    }
    self->on_read(n);
  });
}

void client::on_read(std::size_t n) {
  const auto keep = shared_from_this();  // a resumed waiter may drop the last reference
  const std::uint64_t gen = generation_;
  if (redisReaderFeed(reader_, in_.data(), n) != REDIS_OK) {
    fail(errc::unavailable, join({"reading from ", options_.where.display(), ": out of memory"}));
    return;
  }
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
      fail(errc::unavailable, "Redis sent a reply that is not RESP");
      return;
    }
    if (raw == nullptr) break;
    reply r = convert(*static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    // A published message is no reply to anything: it goes to the handler.
    if (on_message_ && r.type == reply::kind::array && r.elements.size() == 3 && r.elements[0].str == "message") {
      on_message_(r.elements[1].str, r.elements[2].str);
      if (gen != generation_ || state_ == state::closed) return;
      continue;
    }
    if (pending_.empty()) {
      fail(errc::unavailable, "Redis sent a reply nobody asked for");
      return;
    }
    if (preamble_ > 0) {
      --preamble_;
      pending_.pop_front();
      if (r.is_error()) {
        fail(errc::unavailable, join({"Redis refused the connection's setup: ", r.str}));
        return;
      }
      if (preamble_ == 0) {
        state_ = state::up;
        first_attempt_ = false;
        last_failure_.clear();
        retry_delay_ = options_.retry_min;
      }
      continue;
    }
    complete_front(result<reply>(std::move(r)));
    // A resumed waiter may have closed the client or broken the connection.
    if (gen != generation_ || state_ == state::closed) return;
  }
  arm_watchdog();
  start_write();  // what was queued behind the preamble, and what waiters just sent
  start_read();
}

void client::complete_front(std::optional<result<reply>> outcome) {
  const pending p = pending_.front();
  pending_.pop_front();
  if (p.waiter == nullptr) {
    if (!outcome || !*outcome || (*outcome)->is_error()) ++failed_writes_;
    return;
  }
  p.waiter->outcome_ = std::move(outcome);
  // Resumed here, by the code that read the reply: no post, no hop (the waiter is on
  // this shard by the class's affinity).
  if (const auto h = std::exchange(p.waiter->waiter_, {})) h.resume();
}

void client::fail(std::error_code why, std::string failure) {
  if (state_ == state::closed && why != errc::closed) return;
  // A resumed waiter may drop the last reference to the client.
  const auto keep = shared_from_this();
  // A connection that got as far as its socket may have subscribed and been sent
  // messages: from here on some may be lost.
  const bool subscription_lost = socket_ready_ && !channels_.empty();
  ++generation_;
  first_attempt_ = false;
  socket_ready_ = false;
  watchdog_armed_ = false;
  write_scheduled_ = false;
  last_failure_ = std::move(failure);
  std::error_code ignored;
  socket_.close(ignored);
  watchdog_.cancel();
  redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  out_.clear();
  write_in_progress_ = false;
  preamble_ = 0;
  // What was queued will never be written: nobody waits for it.
  run_sent_callbacks(true);
  if (state_ != state::closed) state_ = state::down;
  // Everything in flight fails now; a resumed waiter may issue a new command, which
  // fails at once while the client is down, so this loop ends.
  auto failed = std::move(pending_);
  pending_.clear();
  for (const pending& p : failed) {
    if (p.waiter == nullptr) {
      ++failed_writes_;
      continue;
    }
    p.waiter->outcome_.emplace(why);
    if (const auto h = std::exchange(p.waiter->waiter_, {})) h.resume();
  }
  if (state_ == state::closed) return;
  if (subscription_lost && on_lost_) on_lost_();
  if (state_ == state::closed) return;
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, options_.retry_max);
  retry_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->state_ != state::down) return;
    self->start_connect();
  });
}

std::optional<std::chrono::steady_clock::time_point> client::next_deadline() const {
  if (state_ == state::connecting && preamble_ == 0 && !socket_ready_) return connect_deadline_;
  if (!pending_.empty()) return pending_.front().deadline;
  return std::nullopt;
}

void client::arm_watchdog() {
  // One wait at a time: a reply does not re-arm it (that would be a cancelled wait and a
  // new one per reply); when it fires early for a command since answered, it re-arms for
  // the new oldest one.
  if (watchdog_armed_ || state_ == state::closed) return;
  const auto when = next_deadline();
  if (!when) return;
  watchdog_armed_ = true;
  watchdog_.expires_at(*when);
  const std::uint64_t gen = generation_;
  watchdog_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
    if (gen != self->generation_) return;  // fail() bumped it and cleared the flag
    self->watchdog_armed_ = false;
    if (ec || self->state_ == state::closed) return;
    const auto due = self->next_deadline();
    if (!due) return;
    if (*due > std::chrono::steady_clock::now()) {
      self->arm_watchdog();
      return;
    }
    const bool connecting = self->state_ == state::connecting;
    self->fail(connecting ? errc::unavailable : errc::timeout,
               connecting ? join({"connecting to ", self->options_.where.display(), " took longer than ",
                                  std::to_string(self->options_.connect_timeout.count()), " ms"})
                          : join({self->options_.where.display(), " did not answer within ",
                                  std::to_string(self->options_.command_timeout.count()), " ms"}));
  });
}

void client::subscribe(std::string channel) {
  if (std::find(channels_.begin(), channels_.end(), channel) != channels_.end()) return;
  channels_.push_back(std::move(channel));
  // Connected: subscribe now. Otherwise the next connection's preamble does.
  if (!socket_ready_) return;
  const std::string_view args[] = {"SUBSCRIBE", channels_.back()};
  append_resp(out_, args, 2);
  pending_.push_back(pending{nullptr, std::chrono::steady_clock::now() + options_.command_timeout});
  arm_watchdog();
  start_write();
}

void client::close() {
  if (state_ == state::closed) return;
  state_ = state::closed;
  retry_timer_.cancel();
  fail(errc::closed, "closed");
}

}  // namespace droid::redis
