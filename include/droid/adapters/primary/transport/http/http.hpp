// SPDX-License-Identifier: BSL-1.0
/// @file
/// The Streamable HTTP transport (MCP 2025-03-26 through 2025-11-25).
///
/// Primary adapter. One endpoint (default `/mcp`): POST carries one JSON-RPC message,
/// answered with one JSON document or with an event stream; GET opens the session's
/// standalone event stream; DELETE ends the session. Sessions are named by the
/// `Mcp-Session-Id` header. The server is a multi-threaded HTTP/1.1 server on Asio, one
/// `io_context` per thread ("shard"); a session lives on the shard that accepted its
/// `initialize`.
///
///     droid::http::options opts;            // 127.0.0.1, ephemeral port, /mcp
///     opts.port = 8080;
///     droid::http::listener l(server, opts);
///     std::cout << l.url() << "\n";
///     l.run();                              // until stop() (or SIGINT/SIGTERM via serve())
///
/// Or embedded in an application that already runs Asio: the listener serves on the
/// application's io_contexts and starts no thread (docs/http.md#embedding-serving-on-your-applications-io_contexts).
///
///     droid::http::listener l(server, opts, {&io});
///     l.start();                            // returns at once; io.run() serves
///
/// Security defaults: binds loopback; a request reaching a loopback socket must name a
/// loopback Host and carry no Origin or a loopback one (DNS rebinding protection); a
/// POST must be `application/json` (no CSRF through simple requests).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <droid/adapters/secondary/event_store/event_store.hpp>

namespace asio {
class io_context;
}

namespace droid {
class server;
}

namespace droid::auth {
class token_verifier;
}

namespace droid::http {

/// How a POST that carries a request is answered.
enum class streaming {
  /// `text/event-stream`: the request's notifications (progress, logs) and any question
  /// the tool asks the client travel before the response. The default.
  event_stream,
  /// One `application/json` document: the response only. Tools cannot ask the client
  /// anything and progress is not delivered.
  json,
};

class listener;

/// What an application route answers: a status, a content type and a body.
struct route_response {
  int status = 200;  ///< the HTTP status
  std::string content_type = "text/plain; charset=utf-8";  ///< `Content-Type`
  std::string body{};  ///< the whole body (sent with `Content-Length`)
};

/// A GET path the application serves on the listener beside MCP (`/metrics`, a health
/// check). Why on the same listener: a scraper then reaches the port the server already
/// exposes, with its TLS and its connection limits. These paths keep the Host/Origin
/// checks (a page on another site must not read them through DNS rebinding) but are
/// outside any authentication of the MCP endpoint: scrapers carry no tokens, so serve
/// nothing here that a token would have to protect.
struct route {
  /// The exact path (`/metrics`); the query string is not part of the match.
  std::string path{};
  /// Answers a GET of `path`; `target` is the request target as sent, query included,
  /// and `served_by` the listener (for its gauges: sessions, connections, streams).
  /// Affinity: called on the shard of the connection that carries the request, so from
  /// several threads at once; it must not block (it runs on a shard that serves MCP). An
  /// exception it throws is answered 500 and logged.
  std::function<route_response(const listener& served_by, std::string_view target)> handler{};
};

/// Settings of the HTTP transport. Every limit is on by default; docs/reliability.md
/// lists each one, what exceeding it gets, and the test that proves it.
struct options {
  /// Address to bind. Anything but loopback exposes the server to the network; it is
  /// logged, and Host/Origin checks then rely on `allowed_hosts`/`allowed_origins`.
  std::string host = "127.0.0.1";
  /// Port to bind; 0 picks a free one (see `listener::port()`).
  std::uint16_t port = 0;
  /// The MCP endpoint path.
  std::string path = "/mcp";
  /// Worker threads (shards); 0 means one per hardware thread.
  unsigned threads = 0;
  /// Every shard accepts on a listening socket of its own that shares the port
  /// (`SO_REUSEPORT`, Linux), and serves what it accepts, instead of shard 0 accepting
  /// every connection and dealing them out in turn. Why: a new connection then wakes one
  /// thread, not two (docs/benchmarks.md, "Connections"). Off by default for now: the
  /// kernel places connections by a hash, which changes which shard serves what, and it
  /// is to become the default once the whole test suite has run with it for a while (it
  /// exposed one race already, in the cluster's task records, since fixed). A port in
  /// use still fails the start.
  bool accept_on_every_shard = false;
  /// Moves a keep-alive connection to the shard of the session it keeps asking for
  /// (three requests in a row for sessions on one other shard), so that its next
  /// requests are served without two thread hand-offs each; not when that shard already
  /// carries clearly more work than the connection's own (one session shared by many
  /// connections would otherwise gather them all on one thread). Plain HTTP only: a TLS
  /// connection stays where it was accepted. Turn it off when one connection carries
  /// requests of many sessions in no order (a proxy's pooled connections move little
  /// then, but each move costs two system calls).
  bool follow_sessions = true;
  /// JSON or event-stream answers to requests.
  streaming reply = streaming::event_stream;
  /// Serve every POST on its own, with no session and no `Mcp-Session-Id` at all (the
  /// client's version comes from its MCP-Protocol-Version header).
  bool stateless = false;
  /// Allow GET (the standalone event stream); when false GET gets 405.
  bool standalone_stream = true;
  /// Also serve the legacy HTTP+SSE transport (MCP 2024-11-05): GET `legacy_sse_path`
  /// opens the session's event stream and names the POST URL in an `endpoint` event;
  /// POST `legacy_messages_path?sessionId=...` carries each message (answered with 202,
  /// the answers travel on the event stream). For clients that predate Streamable HTTP.
  bool legacy_sse = false;
  std::string legacy_sse_path = "/sse";  ///< GET here opens a legacy session's event stream
  std::string legacy_messages_path = "/messages";  ///< POST here carries a legacy session's messages

  /// HTTPS on the same listener: the PEM files of the certificate chain (leaf first) and
  /// of its private key. Both empty (the default): plain HTTP. TLS 1.2 or later, ALPN
  /// `http/1.1`; `listener::reload_tls()` (SIGHUP under `serve()`) reads them again.
  std::string tls_certificate_chain{};
  std::string tls_private_key{};  ///< see `tls_certificate_chain`

  /// Bearer-token protection of every MCP path: the server as an OAuth 2.1 resource
  /// server (the MCP authorization specification). Off while `verifier` is null.
  /// docs/security.md explains each setting.
  struct authorization {
    /// Verifies each request's token (`auth::make_jwt_verifier`, or an introspection
    /// verifier of your own).
    std::shared_ptr<auth::token_verifier> verifier{};
    /// This server's resource identifier (RFC 8707): its canonical URL as clients reach
    /// it, e.g. "https://mcp.example.com/mcp", which its tokens' audience must name (give
    /// the verifier the same value). Empty: the listener's own `url()`, right only when
    /// no proxy stands in front.
    std::string resource{};
    /// The authorization servers that issue tokens for it (Protected Resource Metadata,
    /// RFC 9728); at least one.
    std::vector<std::string> authorization_servers{};
    /// The scopes it knows, listed in the metadata.
    std::vector<std::string> scopes_supported{};
    /// Scopes every request needs, whatever it asks (a token without them: 403
    /// `insufficient_scope`); a 401's challenge asks for these. Empty: any valid token
    /// may use the server, and a client asks for what the metadata lists.
    std::vector<std::string> required_scopes{};
    std::string resource_name{};  ///< a human-readable name for the metadata, or empty
    std::string resource_documentation{};  ///< a URL of its documentation, or empty
    /// Verified tokens each shard remembers (by hash), so a client's next request does
    /// not pay for a signature check again. An entry lasts until the principal's
    /// `expires_at`: a verifier whose verdicts may change sooner (introspection, which
    /// sees revocations) sets that earlier, or this is 0 (none).
    std::size_t token_cache = 1024;
  };
  authorization auth{};  ///< see `authorization`

  /// Requests on the MCP paths one principal may have in progress at once (open event
  /// streams count, and a call whose client hung up counts until it ends); past it: 429
  /// with Retry-After. `max_requests_per_address` caps every remote address the same
  /// way, authenticated or not (behind a proxy, name it in `trusted_proxies`, or every
  /// client has the proxy's address). 0: no limit. docs/security.md, "Limits per tenant".
  std::size_t max_requests_per_principal = 64;
  std::size_t max_requests_per_address = 256;  ///< see `max_requests_per_principal`
  /// Request headers (names in lower case) a tool may read through
  /// `tool_context::origin()`, e.g. "user-agent" or a proxy's "x-forwarded-for". Only
  /// these are copied, each at most 1 KiB.
  std::vector<std::string> forwarded_headers{};
  /// Reverse proxies in front of this server, as addresses ("10.0.0.7") or networks
  /// ("10.0.0.0/8", "fd00::/8"). A request from one of them is counted, for every
  /// per-address limit and for `tool_context::origin()`, as coming from the client its
  /// `X-Forwarded-For` names: the rightmost entry that is not itself a trusted proxy
  /// (what the proxy appended; entries left of it are the client's own words and never
  /// believed). From any other peer the header is ignored. Without it, behind a proxy
  /// every client shares the proxy's address and so one share of each limit. The
  /// connection caps still count the proxy's own connections. Empty: trust none.
  std::vector<std::string> trusted_proxies{};

  /// Host names accepted besides `localhost`, `127.0.0.1` and `[::1]` (any port).
  std::vector<std::string> allowed_hosts{};
  /// Origins accepted besides loopback ones (e.g. "https://app.example.com").
  std::vector<std::string> allowed_origins{};

  std::size_t max_request_line = 8 * 1024;   ///< over: 414
  std::size_t max_header_bytes = 16 * 1024;  ///< over: 431
  std::size_t max_header_count = 100;        ///< over: 431
  std::size_t max_body = 4u << 20;           ///< over: 413 (before reading, when Content-Length says so)
  /// Time allowed from a request's first byte to the end of its headers; over: 408.
  std::chrono::milliseconds header_timeout{10'000};
  /// A body must arrive at least this fast (bytes per second) after `body_grace`; else 408.
  std::size_t min_body_rate = 240;
  /// Time a body gets before `min_body_rate` counts: once N bytes of it have arrived, the
  /// rest must follow by `body_grace + N / min_body_rate` seconds from the end of its
  /// headers. Each byte received extends the deadline; the declared length does not.
  std::chrono::milliseconds body_grace{5'000};
  /// The most a body may take from the end of its headers, however fast its start came
  /// (a body sent at full speed but for its last byte would otherwise have earned hours
  /// under `min_body_rate`); over: 408. A full 4 MiB body within it needs about 70 KB/s.
  std::chrono::milliseconds body_timeout{60'000};
  /// A keep-alive connection with no request in progress is closed after this long.
  std::chrono::milliseconds idle_timeout{60'000};
  /// A write to the client that makes no progress for this long means the client stopped
  /// reading: its connection is closed (a resumable stream stays resumable). Progress is
  /// the kernel taking more of the answer, which it does once the client has read about
  /// half a socket buffer: as nginx's `send_timeout`, this bounds a reader that stalls,
  /// and one that reads a few bytes a second, not a reader that is merely slow.
  std::chrono::milliseconds write_timeout{60'000};
  /// Connections beyond this are closed at once.
  std::size_t max_connections = 10'240;
  /// Connections one remote address may hold at once; a new one past it is closed at
  /// once, so one address cannot take every connection of `max_connections` from other
  /// clients. Behind a proxy every client has the proxy's address: raise it there
  /// (above the proxy's upstream connections), or 0 for no limit.
  std::size_t max_connections_per_address = 1'024;
  /// A session with no open stream and no traffic for this long is ended, and the calls
  /// it still runs (their client hung up without resuming) are cancelled.
  std::chrono::milliseconds session_idle_timeout{300'000};
  /// Live sessions beyond this refuse new `initialize` with 503.
  std::size_t max_sessions = 10'000;
  /// Live sessions one tenant (the principal when authenticated, the remote address
  /// otherwise) may hold; past it `initialize` gets 429 with Retry-After. 0: no share.
  std::size_t max_sessions_per_tenant = 1'000;
  /// An idle event stream carries a `:` comment this often, so proxies keep it open.
  std::chrono::milliseconds keep_alive_interval{15'000};
  /// On shutdown, how long in-flight calls may take to finish before they are cancelled.
  std::chrono::milliseconds drain_timeout{2'000};

  /// Events each session keeps for resumption (`Last-Event-ID`), oldest evicted first.
  std::size_t event_ring_capacity = 1024;
  /// Bytes of events each session keeps, oldest evicted first: what bounds the ring
  /// when answers are large. An event larger than this is not kept (not resumable).
  std::size_t event_ring_bytes = 8u << 20;
  /// Bytes of events all sessions' rings keep together, and one tenant's share of them
  /// (the principal when authenticated, the remote address otherwise). Past a share, a
  /// session makes room by evicting its own oldest events, or does not keep the new one
  /// (which is then not resumable): without them a tenant holding a thousand sessions
  /// could make the server keep 8 GB for resumes that never come. 0: that limit is off.
  /// Not applied to a store made by `event_store`.
  std::size_t max_kept_bytes = 1u << 30;
  std::size_t max_kept_bytes_per_tenant = 64u << 20;  ///< see `max_kept_bytes`
  /// Makes each session's event store; empty means the in-memory ring above.
  event_store_factory event_store{};
  /// Bytes queued for one client-facing stream before the server gives up on a client
  /// that stopped reading and closes that connection (the stream stays resumable). A
  /// backlog, not a message size: a message of any size is taken behind a backlog under
  /// it, and a resume's replay does not count.
  std::size_t max_queued_bytes = 1u << 20;
  /// The `retry:` (milliseconds) a 2025-11-25 client is told to wait before reconnecting.
  std::chrono::milliseconds retry_interval{1'000};

  /// Several instances of one server behind a load balancer, sharing their sessions
  /// through Redis (docs/scale-out.md). Off while `redis_url` is empty.
  struct scale_out {
    /// `redis://[[user]:password@]host[:port][/db]` or `unix:///path[?db=N]`.
    std::string redis_url{};
    /// This instance's name among the others; unique while it runs. Empty: the host
    /// name, the process id and random bits.
    std::string instance_id{};
    /// Prepended to every Redis key and channel, so that several deployments can share
    /// one Redis.
    std::string key_prefix = "droid:";
    /// How often an instance renews its lease (and says it is alive). Must be under 2/5
    /// of `instance_ttl`, so that the lease is renewed at least twice before it may end.
    std::chrono::milliseconds heartbeat{1'000};
    /// The lease: an instance whose lease has not been renewed for this long is gone,
    /// and its sessions and tasks are taken over by whichever instance their next request
    /// reaches. The instance itself stops serving them `instance_ttl/5` earlier, on its
    /// own clock, so that two instances never serve one session (docs/scale-out.md, "The
    /// lease").
    std::chrono::milliseconds instance_ttl{3'000};
    /// A Redis reply may take this long; past it (or with Redis down) a request that
    /// needs Redis is answered 503 with Retry-After.
    std::chrono::milliseconds redis_timeout{1'000};
    /// A request handed to the instance that owns its session must be taken up within
    /// this long; past it the owner is asked to give it up unstarted, and it is served
    /// wherever the session is then (or answered 503, saying it did not run).
    std::chrono::milliseconds forward_timeout{2'000};
  };
  scale_out cluster{};  ///< see `scale_out`

  /// GET paths the application serves itself, matched before the MCP endpoint (a path
  /// equal to `path` or a legacy path is never reached). See `route`.
  std::vector<route> routes{};
};

/// A bound, ready-to-run HTTP server for one `droid::server`.
///
/// Why bind in the constructor and run separately: the caller learns the port (and can
/// print the URL) before serving, and tests start it on a thread of their own.
/// Affinity: `run()` on one thread; `stop()` from any thread.
/// Lifetime: the `server` must outlive the listener, and, when the listener serves on the
/// application's contexts, the contexts' last `run()` (connections that were closing
/// when the listener was destroyed finish there).
class listener {
 public:
  /// Binds `opts.host:opts.port`, with `opts.threads` contexts of its own that `run()`
  /// serves on. Throws `std::system_error` when it cannot bind.
  listener(droid::server& srv, options opts);
  /// Binds `opts.host:opts.port` and serves on `io_contexts`, which the application owns
  /// and runs (`opts.threads` is ignored): one shard per context, each of which must be
  /// run by one thread at a time. The listener starts no thread; `start()` begins
  /// serving. Throws `std::system_error` when it cannot bind, `std::invalid_argument`
  /// when `io_contexts` is empty.
  listener(droid::server& srv, options opts, std::vector<asio::io_context*> io_contexts);
  ~listener();
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  /// The bound port.
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// `http://host:port/path`, or `https://` with TLS.
  [[nodiscard]] std::string url() const;
  /// Reads `tls_certificate_chain` and `tls_private_key` again, for a renewed
  /// certificate: new connections get it, live ones keep the one they began with, so
  /// nothing is dropped. Throws `std::runtime_error` (and keeps serving the old one) when
  /// the files are unreadable or do not match, `std::logic_error` without TLS.
  void reload_tls();

  /// Serves until `stop()`; returns once every shard has drained. Only for a listener
  /// with contexts of its own (throws `std::logic_error` otherwise).
  void run();
  /// Begins serving on the application's contexts and returns at once: the contexts'
  /// `run()` does the work. (`run()` calls it for a listener's own contexts.)
  void start();
  /// Graceful stop: stop accepting, end sessions (cancelling their calls after
  /// `drain_timeout`), end event streams, close connections, and let `run()` return.
  /// An embedded listener leaves its contexts with no work of its own once it is done,
  /// so their `run()` returns when the application's work is done too.
  void stop();
  /// As `stop()`, then calls `on_stopped` on the first context once every session has
  /// ended and every connection has closed (or `drain_timeout` more has passed).
  void stop(std::function<void()> on_stopped);

  /// Live sessions (for diagnostics and tests).
  [[nodiscard]] std::size_t sessions() const;
  /// Open connections (for diagnostics and tests).
  [[nodiscard]] std::size_t connections() const;
  /// Open streams: sessions' POST and GET event streams, and sessionless requests being
  /// answered (for diagnostics and metrics; a snapshot that may be stale at once).
  [[nodiscard]] std::size_t streams() const;
  /// Bytes of events the sessions' in-memory rings keep for resumption, and how many events
  /// were evicted early or not kept because a share of `max_kept_bytes` was full.
  [[nodiscard]] std::size_t kept_bytes() const;
  [[nodiscard]] std::size_t kept_squeezed() const;  ///< see `kept_bytes`

  /// The implementation; opaque (declared public only so its translation unit's helpers
  /// can name it).
  struct impl;

 private:
  struct contexts;
  /// Declared first, destroyed last: everything on the contexts goes before them.
  std::unique_ptr<contexts> owned_;
  /// Shared with the connections and handlers still pending on the contexts.
  std::shared_ptr<impl> impl_;
};

/// Binds, prints nothing, serves until SIGINT or SIGTERM, then stops gracefully; with TLS,
/// SIGHUP reloads the certificate (`listener::reload_tls`; a failed reload is logged and
/// the old certificate kept). Returns the process exit status (0 after a clean stop).
int serve(droid::server& srv, options opts, void (*on_ready)(const listener&) = nullptr);

}  // namespace droid::http
