// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::redis::client`: one pipelined connection to Redis, driven by Asio on one shard
/// and awaited from `droid::task` coroutines.
///
/// Secondary adapter, private. The shared stores (events, tasks, session records) are
/// built on it; nothing public names it.
///
/// ## Why hiredis only for its reply reader
/// hiredis's asynchronous API wants an event-loop adapter and C callbacks; Asio already is
/// our event loop, and a task that awaits a reply should be resumed by the code that read
/// it, as the exchange table does. So the socket, the pipeline and the timeouts are ours,
/// and hiredis does the part worth a mature library: parsing RESP replies (its
/// `redisReader`). Commands are written in RESP here, which is a length-prefixed array of
/// strings and needs no library.
///
/// ## Failing fast
/// A command never waits for Redis to come back. While the client is down (refused, reset,
/// timed out) a command fails at once with `errc::unavailable`, and a background loop
/// reconnects with a growing delay; a request that needs Redis then answers 503 instead
/// of holding its connection, and nothing else on the shard stalls. A reply that does not
/// come within `command_timeout` marks the connection broken (replies are matched by
/// order, so one lost reply poisons every later one): every command in flight fails with
/// `errc::timeout` and the client reconnects.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/steady_timer.hpp>

#include <droid/domain/result.hpp>

struct redisReader;

namespace droid::redis {

/// Why a command got no reply. A reply that Redis sends as an error (`-ERR ...`) is not
/// one of these: it is a `reply` of kind `error`.
enum class errc : int {
  /// Not connected to Redis (refused, reset, not yet reconnected).
  unavailable = 1,
  /// Redis did not answer within `command_timeout`.
  timeout,
  /// More commands are waiting for replies than `max_pending`.
  overloaded,
  /// The client was closed.
  closed,
};
[[nodiscard]] const std::error_category& category() noexcept;
[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), category()}; }

/// One reply, copied out of the reader's tree so that it outlives the next read.
struct reply {
  enum class kind : std::uint8_t { nil, status, error, integer, string, array };
  kind type = kind::nil;
  std::string str{};  ///< status, error or bulk string text
  long long integer = 0;
  std::vector<reply> elements{};

  [[nodiscard]] bool is_nil() const noexcept { return type == kind::nil; }
  [[nodiscard]] bool is_error() const noexcept { return type == kind::error; }
};

/// Where Redis is: `redis://[[user]:password@]host[:port][/db]` or `unix:///path[?db=N]`.
struct endpoint {
  std::string host{};       ///< empty for a Unix socket
  std::string port{"6379"};
  std::string unix_path{};  ///< empty for TCP
  std::string username{};
  std::string password{};   ///< sent with AUTH when not empty
  int db = 0;               ///< sent with SELECT when not 0
  /// The URL without its password, for messages and logs.
  [[nodiscard]] std::string display() const;
};

/// Parses a Redis URL; nothing, with `error` set to a sentence, when it is not one.
[[nodiscard]] std::optional<endpoint> parse_url(std::string_view url, std::string& error);

/// How a client connects and how long it waits.
struct client_options {
  endpoint where{};
  /// One connection attempt (resolve, connect, AUTH/SELECT) may take this long.
  std::chrono::milliseconds connect_timeout{1000};
  /// A reply may take this long; past it the connection is treated as broken.
  std::chrono::milliseconds command_timeout{1000};
  /// The delay before the first reconnection; it doubles per failure up to `retry_max`.
  std::chrono::milliseconds retry_min{50};
  std::chrono::milliseconds retry_max{1000};
  /// Commands written or queued and not yet answered. Why bounded: a Redis that stalls
  /// while requests keep coming must not grow the pipeline without end; past it commands
  /// fail with `errc::overloaded`.
  std::size_t max_pending = 65536;
};

/// One connection to Redis, with a pipeline of commands in flight.
///
/// Affinity: every function is called on `executor`'s thread (a shard has its own
/// client); waiters are resumed there, directly by the code that read their reply.
/// Lifetime: shared by its I/O loops; `close()` ends them and fails what is pending, and
/// must be called before the executor's io_context stops (the destructor cannot resume a
/// waiter safely once the loop is gone).
class client : public std::enable_shared_from_this<client> {
  struct pending;

 public:
  /// Starts connecting at once; commands issued before the connection is up wait for it
  /// (within `connect_timeout`).
  static std::shared_ptr<client> create(asio::any_io_executor executor, client_options options);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// What `co_await command(...)` awaits.
  ///
  /// Why an awaiter and not a task: every command would otherwise allocate a frame; the
  /// result slot lives here, in the awaiting coroutine's frame, so a reply is delivered
  /// without allocating. Not copyable or movable: the pipeline holds its address.
  /// No stop token: the wait is bounded by `command_timeout`, so a waiter is always
  /// resumed, by a reply, a timeout, a broken connection or `close()`.
  class [[nodiscard]] awaiter {
   public:
    awaiter(client& c, std::initializer_list<std::string_view> args);
    awaiter(client& c, const std::vector<std::string>& args);
    awaiter(const awaiter&) = delete;
    awaiter& operator=(const awaiter&) = delete;
    bool await_ready() const noexcept { return outcome_.has_value(); }
    void await_suspend(std::coroutine_handle<> h) noexcept;
    result<reply> await_resume() noexcept { return std::move(*outcome_); }

   private:
    friend class client;
    client& client_;
    std::coroutine_handle<> waiter_{};
    std::optional<result<reply>> outcome_{};
  };

  /// Sends a command and awaits its reply.
  awaiter command(std::initializer_list<std::string_view> args) { return awaiter(*this, args); }
  awaiter command(const std::vector<std::string>& args) { return awaiter(*this, args); }
  /// Sends a command whose reply nobody awaits (a write behind). Returns false, sending
  /// nothing, when it would fail at once (down, overloaded, closed); an error reply or a
  /// later failure is counted in `failed_writes()`.
  bool send(std::initializer_list<std::string_view> args);
  bool send(const std::vector<std::string>& args);
  /// Runs `f` on this client's shard once every command queued before the call has been
  /// handed to the socket (at once when none waits), or has failed. Why: a caller that
  /// writes a record behind and then tells a client about it (an event id) must not let
  /// the client hear first; once the bytes are the kernel's, the process dying does not
  /// lose them. Callbacks run in the order given.
  void after_sent(std::function<void()> f);

  /// What a subscribed client is given for each message: the channel and the payload.
  /// Both views are valid during the call only.
  using message_handler = std::function<void(std::string_view channel, std::string_view payload)>;
  /// Makes this a subscriber: `on_message` gets every message published on the channels
  /// it subscribes to. Why on the client and not a class of its own: a subscriber is one
  /// more connection with the same reconnection and timeouts; only its replies differ.
  /// A subscribed connection takes no other commands than `subscribe` (Redis's rule);
  /// set it before the first `subscribe`.
  void on_message(message_handler handler) { on_message_ = std::move(handler); }
  /// Called when a subscribed connection that was up breaks. Why: what is published
  /// while it is down never arrives, and a subscriber that counts on a sequence of
  /// messages (a relayed stream) must know that it may have a hole from here on.
  void on_lost(std::function<void()> handler) { on_lost_ = std::move(handler); }
  /// Subscribes to `channel`, now and on every reconnection. Messages published while the
  /// connection is down are lost (pub/sub delivers at most once): what is built on it
  /// must tolerate that (see docs/scale-out.md).
  void subscribe(std::string channel);

  /// Connected, and the last connection has answered AUTH/SELECT.
  [[nodiscard]] bool connected() const noexcept { return state_ == state::up; }
  /// Why the client is not connected (empty while it is): "connection refused", ...
  [[nodiscard]] const std::string& last_failure() const noexcept { return last_failure_; }
  /// Fire-and-forget commands that failed, for logs and metrics.
  [[nodiscard]] std::uint64_t failed_writes() const noexcept { return failed_writes_; }
  /// Counts a write its caller awaited and saw fail among `failed_writes()`. Why: a write
  /// whose reply its caller must read (a conditional one) is still a write that a barrier
  /// behind it must know failed.
  void count_failed_write() noexcept { ++failed_writes_; }
  /// Commands written or queued whose reply has not come.
  [[nodiscard]] std::size_t in_flight() const noexcept { return pending_.size(); }
  [[nodiscard]] const endpoint& where() const noexcept { return options_.where; }
  /// Ends the connection and the reconnection loop; everything pending fails with
  /// `errc::closed`, and every later command too.
  void close();

 private:
  enum class state : std::uint8_t { connecting, up, down, closed };
  /// One command waiting for its reply, in the order written.
  struct pending {
    awaiter* waiter = nullptr;  ///< null for `send` and for the AUTH/SELECT preamble
    std::chrono::steady_clock::time_point deadline{};
  };

  client(asio::any_io_executor executor, client_options options);
  /// Appends `args` to the output as a RESP array. False when the command must fail now
  /// (`why` says with what).
  bool enqueue(const std::string_view* args, std::size_t count, awaiter* waiter, std::error_code& why);
  void start_connect();
  void on_connected();
  void start_read();
  void on_read(std::size_t n);
  void start_write();
  /// Starts a write of what is queued once the current handler is done.
  void schedule_write();
  /// Marks the connection broken: fails everything pending with `why`, closes the socket
  /// and schedules a reconnection (unless closed).
  void fail(std::error_code why, std::string failure);
  void arm_watchdog();
  /// When the watchdog must next look: the connection attempt's deadline, else the
  /// oldest pending command's.
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> next_deadline() const;
  void complete_front(std::optional<result<reply>> outcome);
  /// Runs the `after_sent` callbacks whose commands are written (all of them when
  /// `all`: what was queued will never be, after a failure).
  void run_sent_callbacks(bool all);

  asio::any_io_executor executor_;
  client_options options_;
  asio::generic::stream_protocol::socket socket_;
  asio::steady_timer retry_timer_;
  /// Fires at the oldest pending command's deadline (or the connection attempt's).
  asio::steady_timer watchdog_;
  redisReader* reader_ = nullptr;
  state state_ = state::connecting;
  /// Only the first connection queues commands while it comes up (a server starting with
  /// its application); a reconnection refuses them until it is up (see the file comment).
  bool first_attempt_ = true;
  /// The socket is connected and may be written.
  bool socket_ready_ = false;
  bool watchdog_armed_ = false;
  bool write_scheduled_ = false;
  /// Bumped per connection: a completion from an earlier socket finds a newer generation
  /// and does nothing.
  std::uint64_t generation_ = 0;
  std::chrono::milliseconds retry_delay_{0};
  std::chrono::steady_clock::time_point connect_deadline_{};
  std::string last_failure_{};
  std::uint64_t failed_writes_ = 0;
  /// Bytes queued for the socket, and those being written (swapped, never reallocated).
  std::string out_{};
  std::string writing_{};
  bool write_in_progress_ = false;
  /// Writes completed since the client was made; an `after_sent` callback waits until it
  /// reaches `sent_callback::write` (the write that carries the last command queued
  /// before the callback).
  std::uint64_t writes_done_ = 0;
  struct sent_callback {
    std::uint64_t write;
    std::function<void()> f;
  };
  std::deque<sent_callback> after_sent_{};
  std::vector<char> in_;
  std::deque<pending> pending_{};
  /// Commands of the preamble (AUTH, SELECT, SUBSCRIBE, PING) still unanswered on this
  /// connection.
  std::size_t preamble_ = 0;
  message_handler on_message_{};
  std::function<void()> on_lost_{};
  /// Channels subscribed to, sent again on every connection.
  std::vector<std::string> channels_{};
};

}  // namespace droid::redis

template <>
struct std::is_error_code_enum<droid::redis::errc> : std::true_type {};
