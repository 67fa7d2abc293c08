// SPDX-License-Identifier: BSL-1.0
/// @file
/// The stdio transport: a line reader feeding the session, one writer draining it.
///
///     stdin --read_some--> reader task --decode--> session --send--> line_writer queue
///                                                                        |
///     stdout <------------------- writer task (one write per batch) <----+
///
/// ## Why one writer coroutine fed by a queue
/// Tools finish in any order and each produces a response; if each wrote to stdout
/// itself, two writes could interleave bytes of two messages. The queue makes the writer
/// the only code that touches stdout, and lets it batch everything queued into one
/// write, which under load is most of the throughput.
#include <droid/adapters/primary/transport/stdio/stdio.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <iostream>
#include <memory>
#include <stop_token>
#include <string>

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid::stdio {
namespace {

/// The session's outbound side: a queue and the one coroutine that writes it.
///
/// Invariants: only `write_loop` writes to the descriptor; `send` never blocks.
/// Affinity: the session's shard.
class line_writer final : public outbound {
 public:
  line_writer(const asio::any_io_executor& ex, int fd, std::size_t max_queued)
      : out_(ex), wake_(ex), max_queued_(max_queued) {
    wake_.expires_at(asio::steady_timer::time_point::max());
    std::error_code ec;
    out_.assign(::dup(fd), ec);
    if (ec) failed_ = true;
  }

  /// stdin carries the client's answers, so every question can be answered.
  [[nodiscard]] std::string exchange_refusal() const override { return {}; }

  void send(std::string message) override {
    if (failed_) return;
    // The cap bounds the backlog waiting for the writer, not one message: a message of any
    // size is taken behind a backlog under the cap (an answer larger than the cap reaches
    // a client that reads it), and what is being written does not count.
    if (queued_bytes_ > max_queued_) {
      // The client stopped reading stdout: treat it as gone (as EPIPE would), rather than
      // queue without bound. Input ends, running tools are cancelled, the run returns.
      failed_ = true;
      overflowed_ = true;
      queue_.clear();
      if (on_failure_) on_failure_->request_stop();
      wake_.cancel();
      // A write stuck on the full pipe would otherwise never complete, and the run would
      // wait for the writer forever.
      std::error_code ignored;
      out_.cancel(ignored);
      return;
    }
    queued_bytes_ += message.size() + 1;
    queue_.push_back(std::move(message));
    wake_.cancel();
  }

  /// Flush what is queued, then stop. (Not `finish()`: that is the per-request hook of
  /// `outbound`, which stdout, carrying every request, ignores.)
  void close_when_flushed() {
    finishing_ = true;
    wake_.cancel();
  }

  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// True when the session ended because `max_queued_bytes` was passed.
  [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }

  task<void> write_loop(std::stop_source& on_failure) {
    on_failure_ = &on_failure;
    std::string batch;
    while (!failed_) {
      if (queue_.empty()) {
        if (finishing_) break;
        // The timer is a condition variable: `send` cancels it. The queue is checked
        // before every wait, so a cancel that happened while writing is not lost.
        (void)co_await wake_.async_wait(use_task);
        continue;
      }
      batch.clear();
      for (std::string& m : queue_) {
        batch += m;
        batch += '\n';
      }
      queue_.clear();
      // Out of the backlog once being written: a write that an unread pipe holds back
      // keeps everything after it queued, and that backlog is what trips the cap.
      queued_bytes_ = 0;
      auto [ec, n] = co_await asio::async_write(out_, asio::buffer(batch), use_task);
      if (ec) {
        // EPIPE and friends: nobody reads our answers any more, so the session is over.
        failed_ = true;
        on_failure.request_stop();
      }
    }
    on_failure_ = nullptr;
    std::error_code ignored;
    out_.close(ignored);
  }

 private:
  asio::posix::stream_descriptor out_;
  asio::steady_timer wake_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t max_queued_;
  /// Where a failure is reported while the write loop runs (it owns the stop source).
  std::stop_source* on_failure_ = nullptr;
  bool finishing_ = false;
  bool failed_ = false;
  bool overflowed_ = false;
};

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

task<void> run(server& srv, asio::any_io_executor executor, int in_fd, int out_fd, options opts,
               std::stop_token stop) {
  auto writer = std::make_shared<line_writer>(executor, out_fd, opts.max_queued_bytes);
  auto s = session::create(srv, executor, writer);

  // Input ends on EOF, on a read error, when the writer fails, or on the caller's stop.
  std::stop_source end_input;
  std::stop_callback forward_stop(stop, [&end_input] { end_input.request_stop(); });

  asio::steady_timer writer_done(executor, asio::steady_timer::time_point::max());
  bool writer_finished = false;
  spawn(executor, writer->write_loop(end_input), [&writer_finished, &writer_done](std::exception_ptr) {
    writer_finished = true;
    writer_done.cancel();
  });

  asio::posix::stream_descriptor in(executor);
  std::error_code ec;
  in.assign(::dup(in_fd), ec);

  std::string buf;
  std::size_t scanned = 0;
  bool discarding = false;  // inside a line that exceeded the limit
  constexpr std::size_t chunk = 64 * 1024;

  auto oversize = [&] {
    s->reject(ir::rejection{ir::errc::invalid_request,
                            "Invalid Request: message exceeds the " + std::to_string(opts.max_message_size) +
                                "-byte limit",
                            std::nullopt, true});
  };

  while (!ec && !end_input.stop_requested()) {
    const std::size_t old = buf.size();
    buf.resize(old + chunk);
    auto [read_ec, n] = co_await in.async_read_some(asio::buffer(buf.data() + old, chunk), use_task(end_input.get_token()));
    buf.resize(old + n);
    if (read_ec) {
      // A last message without its newline is still a message: a peer that writes one
      // and closes its end deserves the answer (if it still reads). So is a last line
      // that was being discarded: it gets the same -32600 as one that had its newline.
      if (read_ec != asio::error::eof) break;
      if (discarding) {
        oversize();
        break;
      }
      if (buf.empty()) break;
      buf += '\n';
      ec = read_ec;
    }

    std::size_t start = 0;
    for (std::size_t nl; (nl = buf.find('\n', scanned)) != std::string::npos; scanned = start) {
      std::string_view line(buf.data() + start, nl - start);
      start = nl + 1;
      if (discarding) {
        discarding = false;
        oversize();
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      // The limit before the blank check: a partial line past the limit is discarded
      // below before anyone can know it is blank, so a blank line over the limit must be
      // refused here too, or the answer would depend on how reads split the input.
      if (line.size() > opts.max_message_size) {
        oversize();
        continue;
      }
      if (is_blank(line)) continue;
      // One allocation with the decoder's padding, which it would otherwise add by copying.
      std::string text;
      text.reserve(line.size() + ir::decode_padding);
      text.assign(line);
      auto decoded = ir::decode(std::move(text));
      if (auto* m = std::get_if<ir::message>(&decoded)) {
        s->receive(std::move(*m));
      } else {
        s->reject(std::get<ir::rejection>(decoded));
      }
    }
    buf.erase(0, start);
    scanned = buf.size();
    // A partial line past the limit is dropped now and its remainder as it arrives, so
    // a hostile peer cannot make us buffer more than one limit plus one read. One byte
    // of slack: a line of exactly the limit may still be followed by the `\r` of its
    // CRLF, and it is accepted when it arrives whole.
    if (discarding || buf.size() > opts.max_message_size + 1) {
      discarding = true;
      buf.clear();
      scanned = 0;
    }
  }

  if (writer->overflowed())
    srv.diagnose(diagnostic_level::warning, "the client stopped reading stdout; ending the session",
                 {{"transport", "stdio"}, {"queued_bytes_limit", std::to_string(opts.max_queued_bytes)}});
  asio::steady_timer tick(executor);
  // Input is over. Requests still running get `answer_grace` to finish and be answered
  // (not when the session was stopped, or stdout is not read: nothing can be answered
  // then); those a client waits on (a question to it) cannot finish and are cancelled.
  if (!writer->overflowed() && !stop.stop_requested()) {
    const auto grace = std::chrono::steady_clock::now() + opts.answer_grace;
    while (s->in_flight() > 0 && std::chrono::steady_clock::now() < grace) {
      tick.expires_after(std::chrono::milliseconds(5));
      (void)co_await tick.async_wait(use_task);
    }
  }
  // Then every running tool is cancelled and given a bounded time to unwind.
  s->close();
  const auto deadline = std::chrono::steady_clock::now() + opts.drain_timeout;
  while (s->in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    tick.expires_after(std::chrono::milliseconds(5));
    (void)co_await tick.async_wait(use_task);
  }
  if (s->in_flight() > 0)
    srv.diagnose(diagnostic_level::warning, "tools still running after the drain timeout were abandoned",
                 {{"transport", "stdio"}});

  writer->close_when_flushed();
  if (!writer_finished) (void)co_await writer_done.async_wait(use_task);
  std::error_code ignored;
  in.close(ignored);
}

int serve(server& srv, options opts) {
  // A closed stdout must surface as EPIPE on the write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // Asio switches the descriptors to non-blocking mode, and stdin may be a terminal
  // shared with the parent shell: restore the flags on the way out.
  const int in_flags = ::fcntl(0, F_GETFL);
  const int out_flags = ::fcntl(1, F_GETFL);

  asio::io_context io(1);
  std::stop_source stop;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&stop](const std::error_code& ec, int) {
    if (!ec) stop.request_stop();
  });

  bool done = false;
  spawn(io.get_executor(), run(srv, io.get_executor(), 0, 1, opts, stop.get_token()),
        [&](std::exception_ptr failure) {
          done = true;
          signals.cancel();
          if (failure) {
            try {
              std::rethrow_exception(failure);
            } catch (const std::exception& e) {
              srv.diagnose(diagnostic_level::error, "transport failed", {{"transport", "stdio"}, {"error", e.what()}});
            }
          }
          // Tools that ignored cancellation past the drain timeout must not keep the
          // process alive.
          io.stop();
        });
  io.run();
  if (in_flags >= 0) ::fcntl(0, F_SETFL, in_flags);
  if (out_flags >= 0) ::fcntl(1, F_SETFL, out_flags);
  return done ? 0 : 1;
}

}  // namespace droid::stdio
