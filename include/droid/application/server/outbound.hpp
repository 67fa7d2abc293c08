// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::outbound`: where a session's messages go, as the transport sees it.
///
/// Application layer port, implemented by transports (stdio's stdout writer, an HTTP
/// request's SSE stream). The engine never knows which transport carries it; this
/// interface is the whole of what it knows.
#pragma once

#include <string>

namespace droid {

/// A sink for complete JSON-RPC messages, one per call, in order.
///
/// Why an interface and not a callback: a transport keeps per-stream state (a queue, a
/// single writer coroutine, an event id counter) behind it, and the session holds it by
/// `shared_ptr` so a stream outlives any in-flight tool that still reports to it.
/// Affinity: called only on the session's shard. Implementations must not block: they
/// enqueue for their own writer.
class outbound {
 public:
  virtual ~outbound() = default;
  /// Queues one serialised JSON-RPC message (no trailing newline).
  virtual void send(std::string message) = 0;
  /// The request this stream was opened for is over (answered, refused or cancelled):
  /// nothing more will be sent on its behalf. Called exactly once per request stream.
  /// Why: an HTTP POST answered as an event stream must end its response then; a stream
  /// that is not per request (stdout) ignores it.
  virtual void finish() {}
  /// The message sent next answers the request with an error that refuses it for a
  /// limit, and `http_status` (429: the client's share; 503: the server is full) says
  /// which. Why: a transport with a status line answers such a refusal with that status
  /// and Retry-After when it has not started its response, so that clients and proxies
  /// back off as they do for the transport's own limits; others ignore it.
  /// `retry_after`: the seconds to wait, for Retry-After (0: the transport's usual one).
  virtual void refuse_with_status(int http_status, int retry_after) {
    (void)http_status;
    (void)retry_after;
  }
  /// Ends the connection currently carrying this stream, if the transport can resume it
  /// later (`tool_context::close_stream`); otherwise nothing.
  virtual void interrupt() {}
  /// Empty when requests to the peer (sampling, elicitation, roots) can travel on this
  /// stream and be answered; otherwise a sentence naming the setting that would allow
  /// it. Why asked of the stream: only the transport knows whether anything will read
  /// the question (a single-JSON HTTP answer has no room for it).
  ///
  /// Why the default refuses: a stream that has not said something reads the peer's
  /// answers has not established that anything does, and a question nobody can answer
  /// is a tool that hangs with no error.
  [[nodiscard]] virtual std::string exchange_refusal() const {
    return "this transport does not say it can carry questions to the client (its outbound does not override "
           "exchange_refusal)";
  }
};

}  // namespace droid
