// SPDX-License-Identifier: BSL-1.0
/// @file
/// The legacy HTTP+SSE endpoint (endpoint_state.hpp), for clients that predate Streamable
/// HTTP: the session is its one event stream, and messages arrive by POST.
#include "endpoint_state.hpp"

#include <memory>
#include <string>

#include <asio/dispatch.hpp>

#include <droid/application/server/outbound.hpp>
#include <droid/application/server/session.hpp>
#include <droid/domain/ir/codec.hpp>

#include "access/request_rules.hpp"
#include "connection.hpp"

namespace droid::http::detail {

namespace {

/// A legacy request's own outbound: what it says goes on the session's one event stream,
/// as it would without it; what it adds is an end. Why: this transport answers a POST
/// 202 at once while its work runs on, and without an end to wait for the request's slots
/// under the server's limits went back at the 202, so one client could keep any number of
/// calls running (docs/security.md, "Limits per tenant").
class held_request final : public outbound {
 public:
  held_request(std::shared_ptr<outbound> session_stream, std::shared_ptr<const void> held)
      : stream_(std::move(session_stream)), held_(std::move(held)) {}
  void send(std::string message) override { stream_->send(std::move(message)); }
  /// The request is over: its slots go back.
  void finish() override { held_.reset(); }
  // interrupt() stays a no-op: the session's one stream is not a request's to end.
  [[nodiscard]] std::string exchange_refusal() const override { return stream_->exchange_refusal(); }

 private:
  std::shared_ptr<outbound> stream_;
  std::shared_ptr<const void> held_;
};

}  // namespace

task<bool> legacy_endpoint::stream(connection& c, request& req, const caller& who) {
  const std::string_view* accept = req.find("accept");
  if (accept && !accepts(*accept, "text/event-stream"))
    co_return co_await c.reply_rpc_error(406, ir::errc::invalid_request,
                                       "Not Acceptable: Accept must include text/event-stream");
  // The session begins with its stream and ends with it: in this transport the stream is
  // the only way anything reaches the client.
  auto entry = session_entry::create(st_.srv, c.executor(), nullptr, who.principal);
  entry->shard = c.home().index;
  entry->legacy = true;
  entry->active = 1;
  entry->tenant = who.tenant;
  if (const auto admitted = st_.sessions.insert(entry, st_.opts.max_sessions, st_.opts.max_sessions_per_tenant);
      admitted != session_table::admission::admitted)
    co_return co_await refuse_session(c, admitted, std::nullopt);
  auto sink = c.make_sink();
  entry->standalone->attach(sink);
  // The endpoint event tells the client where to POST; relative, so it resolves against
  // whatever host name the client used.
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     "Transfer-Encoding: chunked\r\n";
  head += c.response_headers();
  head += "\r\n";
  const std::string endpoint =
      "event: endpoint\ndata: " + st_.opts.legacy_messages_path + "?sessionId=" + entry->id + "\n\n";
  append_chunk(head, endpoint);
  bool keep = false;
  if (co_await c.write(head)) {
    c.watch_for_close(sink);
    keep = co_await c.serve_events(sink, {}, true, true);
    c.stop_watching();  // drops the close watch, which holds this connection
  }
  // The stream is gone: so is the session (docs/reliability.md, A12).
  if (auto gone = st_.sessions.erase(entry->id)) end_session(gone);
  co_return keep && false;  // an event stream's connection is not reused
}

task<bool> legacy_endpoint::message(connection& c, request& req, const caller& who) {
  const std::string_view sid = query_param(req.target, "sessionId").value_or(std::string_view());
  if (sid.empty() || !valid_session_id(sid))
    co_return co_await c.reply_rpc_error(400, ir::errc::invalid_request, "Bad Request: sessionId is missing or malformed");
  auto entry = st_.sessions.find(sid);
  if (!entry || !entry->legacy)
    co_return co_await c.reply_rpc_error(404, ir::errc::invalid_request, "Not Found: unknown or ended session");
  if (!belongs_to(*entry, who)) co_return co_await refuse_foreign_session(c);
  const std::string_view* content_type = req.find("content-type");
  if (!content_type || !media_type_is(*content_type, "application/json"))
    co_return co_await c.reply_rpc_error(415, ir::errc::invalid_request,
                                       "Unsupported Media Type: Content-Type must be application/json");
  auto decoded = ir::decode(std::move(req.body));
  if (auto* why = std::get_if<ir::rejection>(&decoded)) co_return co_await reply_rejection(c, *why);
  ir::message msg = std::get<ir::message>(std::move(decoded));
  if (may_lack_scopes(st_, msg))
    if (auto refused = co_await refuse_unscoped(st_, c, who, msg)) co_return *refused;
  entry->last_used = now_ns();
  // Everything the session says (the answer included) goes on its event stream.
  // A request holds its slots until it is over; the rest (answers to the server's
  // questions, notifications) are over when received.
  std::shared_ptr<outbound> own;
  if (msg.is_request()) own = std::make_shared<held_request>(entry->standalone, std::move(who.slots));
  asio::dispatch(entry->executor, [s = entry->s, m = std::move(msg), origin = who.origin, own = std::move(own)]() mutable {
    s->receive(std::move(m), std::move(own), std::move(origin));
  });
  co_return co_await c.reply(202, {}, {});
}

}  // namespace droid::http::detail
