// SPDX-License-Identifier: BSL-1.0
/// @file
/// The stdio transport: newline-delimited JSON-RPC on two file descriptors.
///
/// Primary adapter. This is how desktop clients (and the TypeScript SDK's
/// `StdioClientTransport`) run a local server: they spawn it and talk over its stdin and
/// stdout. stdout carries protocol only; diagnostics go to stderr.
///
/// Behaviour worth knowing:
/// - Requests are served concurrently: a slow tool does not hold up the next line.
/// - A line longer than `max_message_size` is answered with -32600 (`id: null`) and
///   skipped without being buffered, and the stream stays in sync at the next newline.
/// - End of input (or a closed stdout) ends the session: running tools are cancelled,
///   and `serve` returns once they have finished or `drain_timeout` has passed.
#pragma once

#include <chrono>
#include <cstddef>
#include <stop_token>

#include <asio/any_io_executor.hpp>

#include <droid/application/task.hpp>

namespace droid {
class server;
}

namespace droid::stdio {

/// Settings of the stdio transport.
struct options {
  /// The longest line accepted, in bytes (excluding the newline).
  std::size_t max_message_size = 4u << 20;
  /// How long requests still running when input ends (and stdout is still writable) may
  /// take to finish and be answered, before they are cancelled. Why: a client that pipes
  /// its requests and closes stdin (`echo ... | server`) expects their answers.
  std::chrono::milliseconds answer_grace{250};
  /// How long to wait for cancelled tools to finish after that.
  std::chrono::milliseconds drain_timeout{2000};
  /// Bytes queued for stdout before the server gives up on a client that stopped reading
  /// it: the session then ends as if stdout had closed. Why a bound: notifications (a
  /// `subscriptions/listen` stream, logs, progress) keep coming whether or not anyone
  /// reads them, and an unread pipe must not grow the server's memory without end. A
  /// backlog, not a message size: a message of any size is taken behind a backlog under
  /// it (what is being written does not count).
  std::size_t max_queued_bytes = 32u << 20;
};

/// Serves `srv` on file descriptors `in` and `out` until `in` ends, `out` fails or `stop`
/// is requested; the returned task completes when the session is drained (or
/// `drain_timeout` passed).
///
/// Why a task and not a blocking call: tests run it on their own io_context over pipes,
/// and a host program can serve stdio next to other work on the same loop.
/// Lifetime: `srv` must outlive the task. `executor` must be single-threaded (a shard).
[[nodiscard]] task<void> run(server& srv, asio::any_io_executor executor, int in, int out, options opts = {},
                             std::stop_token stop = {});

/// Serves `srv` on this process's stdin and stdout until input ends; blocks. SIGINT and
/// SIGTERM end the session the same way. Returns the process exit status (0 after a
/// clean end of input).
int serve(server& srv, options opts = {});

}  // namespace droid::stdio
