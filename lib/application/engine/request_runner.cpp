// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request runner: admission, cancellation, spawning, reply framing, the exchange.
///
/// ## Why the in-flight table is keyed exactly
/// A key is all a `notifications/cancelled` names. Keyed by anything looser (a string
/// form), `7` and `"7"` would collide; keyed by nothing, a second request reusing an id
/// while the first runs would get the first one's answer or cancellation. So a duplicate
/// is refused outright and exactly one
/// response ever carries a given id.
///
/// ## Why a cancelled request is still awaited
/// Cancelling requests the tool's stop token; it does not destroy the frame. The tool
/// unwinds at its next await (which completes as cancelled), its task ends normally,
/// and only then is the entry erased. Destroying a suspended frame from outside would
/// leave Asio holding a handler into freed memory.
#include <droid/application/server/request_runner.hpp>

#include <atomic>
#include <exception>
#include <stop_token>
#include <unordered_map>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <droid/application/server/server.hpp>
#include <droid/application/spawn.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "dispatcher.hpp"
#include "runner_call.hpp"
#include "application/catalog/server_core.hpp"
#include "application/observe/trace_meta.hpp"

namespace droid {
namespace {

/// Starts a request's task on the runner's executor: its first step runs now when the
/// caller is on that executor's thread, else it is posted there.
///
/// Why at once: a transport hands a request over on the session's thread, and a tool
/// that answers without suspending (most do) then has its answer queued before the
/// transport looks for it, so the response goes out without a trip through the event
/// loop; posting the first step cost a post, a wake-up and a queue lock per request
/// (docs/benchmarks.md, "Where a request's time goes"). The admission is complete
/// before the step runs (the record is in the table), as for a chain of middleware.
/// Why not `spawn` on the `any_io_executor` alone: posting through the type-erased
/// executor wraps the driver in one more function object (an allocation, and an indirect
/// call) before the io_context wraps it in its own operation. Shards are io_contexts, so
/// the usual executor is unwrapped and posted to directly; any other kind still works.
template <class Handler>
void start(const asio::any_io_executor& executor, task<detail::reply> work, Handler&& on_done) {
  if (const auto* io = executor.target<asio::io_context::executor_type>()) {
    if (io->running_in_this_thread()) {
      detail::drive(std::move(work), std::forward<Handler>(on_done)).handle.resume();
      return;
    }
    spawn(*io, std::move(work), std::forward<Handler>(on_done));
  } else {
    spawn(executor, std::move(work), std::forward<Handler>(on_done));
  }
}

}  // namespace

std::size_t request_runner::impl::send_reply(outbound* to, const ir::request_id& id, detail::reply&& r,
                                             bool modern) const {
  if (r.framed) {
    const std::size_t n = r.result.size();
    send(to, std::move(r.result));
    return n;
  }
  std::string buf;
  if (r.is_error()) {
    if (to && !closed && r.http_status() != 0) to->refuse_with_status(r.http_status(), r.retry_after());
    ir::append_error(buf, id, r.code, r.message(), r.data());
  } else {
    frame_result(buf, id, r.result, modern);
  }
  const std::size_t n = buf.size();
  send(to, std::move(buf));
  return n;
}

std::size_t request_runner::impl::send_error_to(outbound* to, const ir::request_id& id, ir::errc code,
                                                std::string_view text) const {
  std::string buf;
  ir::append_error(buf, id, static_cast<std::int64_t>(code), text);
  const std::size_t n = buf.size();
  send(to, std::move(buf));
  return n;
}

/// `{"jsonrpc":"2.0","id":...,"result":...}`, where a 2026 result gains the members
/// every result of that revision carries. Why here and not in each handler: it is one
/// rule for every method, and a handler that forgot it would make a result the
/// client's schema rejects.
void request_runner::impl::frame_result(std::string& buf, const ir::request_id& id, std::string_view result,
                                        bool modern) const {
  const std::string_view head = modern ? detail::core(srv).modern_result_members() : std::string_view();
  buf.reserve(result.size() + head.size() + 40);
  if (head.empty() || result.size() < 2 || result.front() != '{') {
    ir::append_result(buf, id, result);
    return;
  }
  ir::append_result_head(buf, id);
  buf += '{';
  constexpr std::string_view own_meta = R"({"_meta":{)";
  if (result.starts_with(own_meta) && result.size() > own_meta.size() && result[own_meta.size()] != '}') {
    // The result has `_meta` of its own (first, by convention): one object for both,
    // since JSON forbids the key twice. `head` ends with the `}` of its `_meta`.
    buf.append(head.substr(0, head.size() - 1));
    buf += ',';
    result.remove_prefix(own_meta.size());
  } else {
    buf += head;
    result.remove_prefix(1);
    // `{}` becomes `{<head>}`; anything else `{<head>,<members>}`.
    if (result.front() != '}') buf += ',';
  }
  buf += result;
  buf += '}';
}

/// Serves `msg`, parsing its params once (a request whose params are absent or null
/// is served with none; params that do not parse get -32602).
void request_runner::impl::admit(request_runner& self, ir::request_id key, const ir::message& msg,
                                 std::shared_ptr<outbound> stream, bool finish_stream, const peer_info* peer,
                                 peer_info* own_peer, std::shared_ptr<const request_origin> origin) {
  if (const ir::json_kind kind = msg.params_kind(); kind == ir::json_kind::absent || kind == ir::json_kind::null) {
    admit(self, std::move(key), msg.method(), msg.id(), nullptr, std::move(stream), finish_stream, peer, own_peer,
          std::nullopt, msg.text().size(), std::move(origin));
    return;
  }
  std::string_view detail;
  bool ran = false;
  const std::error_code ec = ir::visit_params(
      msg,
      [&](const ir::json_node& node) {
        ran = true;
        admit(self, std::move(key), msg.method(), msg.id(), &node, std::move(stream), finish_stream, peer, own_peer,
              std::nullopt, msg.text().size(), std::move(origin), &msg);
      },
      &detail);
  if (ec && !ran) {
    // Validated text that still does not parse (a lone surrogate escape in a string).
    stream_finisher done{finish_stream ? stream.get() : nullptr};
    std::string buf;
    ir::append_error(buf, msg.id(), static_cast<std::int64_t>(ir::errc::invalid_params),
                     "Invalid params: " + std::string(detail));
    const std::size_t n = buf.size();
    send(stream.get(), std::move(buf));
    if (auto seen = detail::observe(srv, msg.method(), nullptr, own_peer ? *own_peer : *peer, msg.text().size()))
      seen->end(request_outcome::error, static_cast<std::int64_t>(ir::errc::invalid_params), n);
  }
}

void runner_call::notify(std::string_view method, std::string params_json) {
  // A cancelled request is silent from then on: MCP says the sender of the cancellation
  // no longer expects anything about it.
  if (cancelled || state.closed) return;
  if (task) {
    notify_task(method, params_json);
    return;
  }
  if (!stream) return;
  std::string buf;
  ir::append_notification(buf, method, params_json);
  stream->send(std::move(buf));
}

void runner_call::log(std::string_view line) { state.srv.diagnose(diagnostic_level::warning, line); }

std::optional<exchange_result> detail::wire_questions::settle(std::string_view method, std::string_view,
                                                              std::string&) {
  if (call.state.closed) return refusal(errc::session_ended, "the session ended before the peer answered");
  if (!call.stream) return refusal(errc::exchange_refused, "this request has no stream to carry a question to the client");
  if (std::string why = call.stream->exchange_refusal(); !why.empty()) return refusal(errc::exchange_refused, std::move(why));
  const peer_info& peer = *call.peer;
  if (const std::string_view cap = capability_for(method); !cap.empty() && !peer.has_capability(cap))
    return refusal(errc::exchange_refused, "the client did not declare the `" + std::string(cap) + "` capability " +
                                               std::string(where_declared(peer)) + ", so it cannot be asked " +
                                               std::string(method));
  return std::nullopt;
}

void detail::wire_questions::ask(std::int64_t id, std::string_view method, std::string_view params, std::string) {
  std::string buf;
  const std::optional<std::string> traced = traced_params(params, call.context);
  ir::append_request(buf, ir::request_id(id), method, traced ? std::string_view(*traced) : params);
  // Last: the caller touches nothing after this, so a transport may even answer at once.
  call.stream->send(std::move(buf));
}

std::optional<exchange_result> detail::wire_questions::withdraw(std::int64_t id) {
  // The peer may still be working on the question (a person filling in a form): tell it
  // to stop, on the same stream the question went out on.
  if (!call.state.closed && call.stream) {
    std::string buf;
    ir::append_notification(buf, "notifications/cancelled",
                            R"({"requestId":)" + std::to_string(id) + R"(,"reason":"the tool's request was cancelled"})");
    call.stream->send(std::move(buf));
  }
  return refusal(errc::cancelled, "the request was cancelled before the peer answered");
}

std::int64_t runner_call::mint_exchange_id() { return state.exchanges.mint(); }

void runner_call::begin_exchange(detail::exchange_waiter& waiter, std::string_view method,
                                 std::string_view params_json, std::string key, std::int64_t exchange_id) {
  // Parked before it travels: a transport may answer at once, inside `ask`.
  state.exchanges.park(exchange_id, waiter, *carrier);
  carrier->ask(exchange_id, method, params_json, std::move(key));
}

void runner_call::cancel_exchange(std::int64_t exchange_id) {
  // Possibly another thread (whoever requested the stop): only immutable members are
  // read here, and the withdrawal runs on the shard. The runner is held through it: the
  // resumed tool may end the runner's last other reference.
  asio::post(state.executor, [weak = owner.weak_from_this(), exchange_id] {
    if (const std::shared_ptr<request_runner> runner = weak.lock()) runner->impl_->exchanges.withdraw(exchange_id);
  });
}

void request_runner::impl::admit(request_runner& self, ir::request_id key, std::string_view method,
                                 const ir::request_id& id, const ir::json_node* params,
                                 std::shared_ptr<outbound> stream, bool finish_stream, const peer_info* peer,
                                 peer_info* own_peer, std::optional<retry_plan> preplanned,
                                 std::size_t bytes_in, std::shared_ptr<const request_origin> origin,
                                 const ir::message* source, std::string_view params_text) {
  // The stream is kept here until the request is over, whatever the path below; declared
  // before `done`, so that it is destroyed after `done` has finished the stream (a stream
  // that nothing else holds, as a legacy HTTP+SSE request's, was freed first).
  std::shared_ptr<outbound> holding = stream;
  outbound* to = stream.get();
  stream_finisher done{finish_stream ? to : nullptr};
  if (closed) return;
  // A request that ends before it has a record (refused) is observed in one moment.
  const auto observe_refusal = [&](ir::errc code, std::size_t bytes_out) {
    if (auto seen = detail::observe(srv, method, params, own_peer ? *own_peer : *peer, bytes_in))
      seen->end(request_outcome::error, static_cast<std::int64_t>(code), bytes_out);
  };
  const auto refuse_duplicate = [&] {
    // id null: answering with the id would make two responses carry it, and the peer
    // could not tell which request each one ends.
    std::string buf;
    ir::append_error(buf, std::nullopt, static_cast<std::int64_t>(ir::errc::invalid_request),
                     "Invalid Request: request id " + id.to_json() + " is already in flight");
    const std::size_t n = buf.size();
    send(to, std::move(buf));
    observe_refusal(ir::errc::invalid_request, n);
  };
  // A 2026 request that may answer `input_required` has its retry's input read and its
  // state checked before anything is admitted; a retry whose frame is kept resumes it.
  std::optional<retry_plan> plan = std::move(preplanned);
  if (!plan && own_peer && own_peer->is_modern() && detail::may_require_input(method))
    plan.emplace(plan_retry(self, method, params, *own_peer));
  if (plan) {
    if (plan->refusal) {
      observe_refusal(ir::errc::invalid_params, send_error_to(to, id, ir::errc::invalid_params, *plan->refusal));
      return;
    }
    if (!plan->resume.empty()) {
      if (in_flight.contains(key)) {
        keep(std::move(plan->resume));
        refuse_duplicate();
        return;
      }
      done.to = nullptr;  // the resumed request finishes its stream
      // The retry is a request of its own to the observer; the frame's record carries it.
      plan->resume.mapped().observed = detail::observe(srv, method, params, *own_peer, bytes_in);
      resume(self, std::move(plan->resume), std::move(key), id, detail::progress_token_of(params), std::move(stream),
             finish_stream, std::move(*own_peer), *plan->memory);
      return;
    }
    if (plan->forward_to) {
      if (in_flight.contains(key) || forwarded.contains(key)) {
        // Claimed but not handed over: its keeper lets it go (a later retry replays).
        std::shared_ptr<request_runner> holder = plan->forward_to;
        asio::post(holder->executor(), [holder, frame = plan->frame] { holder->let_go_frame(frame); });
        refuse_duplicate();
        return;
      }
      done.to = nullptr;  // the runner it goes to finishes its stream
      forward(self, *plan, std::move(key), method, id, params, std::move(stream), finish_stream,
              std::move(*own_peer));
      return;
    }
  }
  // One lookup admits the request or finds the duplicate; on a duplicate nothing is
  // constructed and nothing is moved from.
  auto [slot, admitted] = in_flight.try_emplace(std::move(key), self, *this, id, std::move(stream), finish_stream);
  if (!admitted) {
    refuse_duplicate();
    return;
  }
  runner_call& record = slot->second;
  record.key_in_table = &slot->first;
  if (plan) {
    record.round_side.rounds = true;
    record.round_side.binding = plan->binding;
    record.round_side.round = plan->round;
    record.round_side.remembered = std::move(plan->memory);
  }
  const ir::request_id& node_key = slot->first;
  if (own_peer) {
    record.own_peer = std::move(*own_peer);
    record.peer = &*record.own_peer;
  } else {
    record.peer = peer;
    record.origin_of_request = std::move(origin);
  }
  // The era decides how the request's questions travel, once, here.
  if (record.peer->is_modern()) record.carrier = &record.round_side;
  record.observed = detail::observe(srv, method, params, *record.peer, bytes_in);
  // A request answered at once leaves the table before its answer goes out, as one
  // answered later does; what framing needs of its peer is read first (`id` is the
  // caller's and stays valid).
  auto retire_and_reply = [&](detail::reply r) {
    const bool modern = record.peer->is_modern();
    std::unique_ptr<detail::observation> seen = std::move(record.observed);
    in_flight.erase(node_key);
    const request_outcome outcome = detail::outcome_of(r.is_error(), r.tool_error);
    const std::int64_t code = r.code;
    const std::size_t n = send_reply(to, id, std::move(r), modern);
    if (seen) seen->end(outcome, code, n);
  };
  std::shared_ptr<const middleware::detail::chain> chain = detail::core(srv).middleware();
  if (chain && chain->guards_only) {
    // Guards alone: run now, in order, and the request is served as without middleware.
    middleware::request req = middleware::detail::access::make(std::move(chain), method, params, source, params_text,
                                                               record.id, *record.peer, record.origin(), {});
    std::optional<middleware::response> refused;
    try {
      refused = middleware::detail::access::check(req);
    } catch (const std::exception& e) {
      srv.diagnose(diagnostic_level::error, "a guard failed", {{"method", method}, {"error", e.what()}});
      retire_and_reply(detail::reply::error(ir::errc::internal_error, "Internal error"));
      return;
    } catch (...) {
      srv.diagnose(diagnostic_level::error, "a guard failed with a non-standard exception", {{"method", method}});
      retire_and_reply(detail::reply::error(ir::errc::internal_error, "Internal error"));
      return;
    }
    if (refused) {
      retire_and_reply(middleware::detail::access::release(std::move(*refused)));
      return;
    }
  } else if (chain) {
    // A chain may pass the request on after the params are gone: the binding is taken
    // now.
    record.round_side.take_binding(method, params);
    // With middleware, the chain runs as a task of its own and ends in `serve_method`.
    const middleware::detail::terminal last{&record, [](void* host, middleware::request& req) {
                                              runner_call& rec = *static_cast<runner_call*>(host);
                                              return rec.state.serve_chained(req, rec);
                                            }};
    middleware::request req = middleware::detail::access::make(std::move(chain), method, params, source, params_text,
                                                               record.id, *record.peer, record.origin(), last);
    done.to = nullptr;
    // Started here, not posted: a chain that passes the request on before it suspends
    // has the method served from this parse of the message. Whatever is still waiting
    // when admission ends keeps the params as text from then on.
    struct admission_end {
      middleware::request* live = nullptr;
      ~admission_end() {
        if (live) middleware::detail::access::detach(*live);
      }
    } admission;
    detail::spawn_driver driver =
        detail::drive(through_chain(std::move(req), record, &admission.live),
                      [self = self.shared_from_this(), key_in_node = &node_key, rec = &record](std::exception_ptr failure,
                                                                                              detail::reply r) {
                        finish_spawned(self, key_in_node, rec, std::move(failure), std::move(r));
                      });
    driver.handle.resume();
    return;
  }
  std::optional<std::variant<detail::reply, task<detail::reply>>> dispatched;
  try {
    dispatched.emplace(serve_method(method, params, record));
  } catch (const std::exception& e) {
    // A handler of ours failed before any task existed: same rule as after, a generic
    // answer for the peer and the detail for the log; the runner goes on.
    srv.diagnose(diagnostic_level::error, "handler failed", {{"method", method}, {"error", e.what()}});
    retire_and_reply(detail::reply::error(ir::errc::internal_error, "Internal error"));
    return;
  }
  auto& outcome = *dispatched;

  if (auto* now = std::get_if<detail::reply>(&outcome)) {
    retire_and_reply(std::move(*now));
    return;
  }

  // The task finishes the stream itself, later.
  done.to = nullptr;
  // The completion finds its entry by the key in the table's own node: only it erases
  // the entry of a spawned request, so the key is there until then (and copying it
  // would allocate for a long string id).
  runner_call* const outer = std::exchange(admitting, &record);
  start(executor, std::move(std::get<1>(outcome)),
        [self = self.shared_from_this(), key_in_node = &node_key, rec = &record](std::exception_ptr failure,
                                                                                 detail::reply r) {
          finish_spawned(self, key_in_node, rec, std::move(failure), std::move(r));
        });
  const bool running = admitting == &record;
  admitting = outer;
  // Still running (it waits, or its first step was posted): its state may be sealed
  // later, when the params are gone, so the binding is taken from them now.
  if (running) record.round_side.take_binding(method, params);
}

std::variant<detail::reply, task<detail::reply>> request_runner::impl::serve_method(std::string_view method,
                                                                                    const ir::json_node* params,
                                                                                    runner_call& record) {
  if (detail::dispatcher::is_task_method(method) && detail::dispatcher::serves(srv, method, record.peer->revision))
    return serve_task_method(method, params, record);
  return dispatch.dispatch(method, params,
                           detail::request_scope{*record.peer, record, record.id, record.stop.get_token(), executor,
                                                 record.context, &record.offer});
}

std::variant<detail::reply, task<detail::reply>> request_runner::impl::serve_chained(middleware::request& req,
                                                                                     runner_call& record) {
  bool admitting = false;
  const ir::json_node* tree = middleware::detail::access::live_tree(req, admitting);
  if (admitting) return serve_method(req.method(), tree, record);
  const std::string_view text = middleware::detail::access::method_params(req);
  if (text.empty()) return serve_method(req.method(), nullptr, record);
  // Parsed again: the tree the request arrived as was gone once the chain was spawned.
  std::optional<std::variant<detail::reply, task<detail::reply>>> served;
  std::string_view why;
  const std::error_code ec =
      ir::visit_json(text, [&](const ir::json_node& params) { served.emplace(serve_method(req.method(), &params, record)); }, &why);
  if (served) return std::move(*served);
  (void)ec;
  return detail::reply::error(ir::errc::invalid_params, "Invalid params: " + std::string(why));
}

task<detail::reply> request_runner::impl::through_chain(middleware::request req, runner_call& record,
                                                        middleware::request** live) {
  middleware::detail::access::admitting(req, live);
  const middleware::next chain = middleware::detail::access::first(req);
  detail::reply r = middleware::detail::access::release(co_await chain(req));
  if (!r.is_error() && !r.framed && req.method() == "tools/call") {
    // A rewritten tool result: framed for the request, as the tool's own is (a task's
    // record takes it out of the same frame).
    std::string buf;
    frame_result(buf, record.id, r.result, record.peer->is_modern());
    r = detail::reply::framed_result(std::move(buf), r.tool_error);
  }
  co_return r;
}

void request_runner::impl::finish_spawned(const std::shared_ptr<request_runner>& self,
                                          const ir::request_id* key_in_node, runner_call* rec,
                                          std::exception_ptr failure, detail::reply r) {
  impl& st = *self->impl_;
  if (st.admitting == rec) st.admitting = nullptr;  // it ended in its first step
  // Out of the table first (as before any answer), but kept alive until the answer is
  // sent: the node holds the id and peer the answer needs. A frame kept for a retry
  // that never came ends in the kept table.
  auto entry = rec->round_side.kept ? st.kept.extract(*key_in_node)
               : rec->task         ? st.tasks.extract(*key_in_node)
                                   : st.in_flight.extract(*key_in_node);
  runner_call& c = entry.mapped();
  if (c.task) {
    st.finish_task(c, failure, std::move(r));
    return;
  }
  const std::shared_ptr<outbound> to = std::move(c.stream);
  stream_finisher finished{c.finish_stream ? to.get() : nullptr};
  if (c.cancelled) {
    c.observe_end(request_outcome::cancelled);
    return;
  }
  if (failure) {
    // The dispatcher turns tool exceptions into results, so this is a handler of ours
    // (or a middleware) failing: a generic answer for the peer, the detail for the log.
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      st.srv.diagnose(diagnostic_level::error, "handler failed", {{"error", e.what()}});
    } catch (...) {
      st.srv.diagnose(diagnostic_level::error, "handler failed with a non-standard exception");
    }
    c.observe_end(request_outcome::error, static_cast<std::int64_t>(ir::errc::internal_error),
                  st.send_reply(to.get(), c.id, detail::reply::error(ir::errc::internal_error, "Internal error"),
                                c.peer->is_modern()));
    return;
  }
  const request_outcome outcome = detail::outcome_of(r.is_error(), r.tool_error);
  const std::int64_t code = r.code;
  c.observe_end(outcome, code, st.send_reply(to.get(), c.id, std::move(r), c.peer->is_modern()));
}

request_runner::request_runner(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
request_runner::~request_runner() = default;

std::shared_ptr<request_runner> request_runner::create(server& srv, asio::any_io_executor executor) {
  // A serial per runner names a 2025 session's tasks as its own; an atomic because
  // shards create runners concurrently.
  static std::atomic<std::uint64_t> serials{0};
  auto state = std::make_unique<impl>(srv, std::move(executor));
  state->serial = ++serials;
  return std::shared_ptr<request_runner>(new request_runner(std::move(state)));
}

void request_runner::serve(ir::request_id key, ir::message msg, std::shared_ptr<outbound> stream, bool finish_stream,
                           const peer_info& peer, std::shared_ptr<const request_origin> origin) {
  impl_->admit(*this, std::move(key), msg, std::move(stream), finish_stream, &peer, nullptr, std::move(origin));
}

void request_runner::serve(ir::request_id key, ir::message msg, std::shared_ptr<outbound> stream, bool finish_stream,
                           peer_info&& peer) {
  impl_->admit(*this, std::move(key), msg, std::move(stream), finish_stream, nullptr, &peer);
}

void request_runner::serve_parsed(ir::request_id key, std::string_view method, const ir::request_id& id,
                                  const ir::json_node* params, std::shared_ptr<outbound> stream, bool finish_stream,
                                  peer_info&& peer, std::size_t bytes_in, const ir::message* source) {
  impl_->admit(*this, std::move(key), method, id, params, std::move(stream), finish_stream, nullptr, &peer,
               std::nullopt, bytes_in, {}, source);
}

std::size_t request_runner::send_error(outbound* to, const std::optional<ir::request_id>& id, ir::errc code,
                                       std::string_view text, std::string_view data_json) const {
  std::string buf;
  ir::append_error(buf, id, static_cast<std::int64_t>(code), text, data_json);
  const std::size_t n = buf.size();
  impl_->send(to, std::move(buf));
  return n;
}

std::size_t request_runner::send_result(outbound* to, const ir::request_id& id, std::string_view result_json,
                                        const peer_info& peer) const {
  std::string buf;
  impl_->frame_result(buf, id, result_json, peer.is_modern());
  const std::size_t n = buf.size();
  impl_->send(to, std::move(buf));
  return n;
}

void request_runner::cancel(const ir::request_id& key) {
  auto it = impl_->in_flight.find(key);
  if (it == impl_->in_flight.end()) {
    // A retry handed to the shard that keeps its frame is cancelled there.
    if (auto f = impl_->forwarded.find(key); f != impl_->forwarded.end()) {
      if (std::shared_ptr<request_runner> holder = f->second.lock())
        asio::post(holder->executor(), [holder, key] { holder->cancel(key); });
      impl_->forwarded.erase(f);
    }
    return;
  }
  it->second.cancelled = true;
  // Copied first: the stop callbacks may resume the tool, which may finish and erase
  // its own entry.
  std::stop_source stop = it->second.stop;
  auto keep_alive = shared_from_this();
  stop.request_stop();
}

void request_runner::close() {
  impl& s = *impl_;
  if (s.closed) return;
  // Closed first, so that new exchanges refuse and anything resumed below sees a runner
  // that no longer sends. Then every waiting exchange is resumed with "ended", from a
  // table swapped out first (a resumed tool may finish and touch the runner). Then every
  // tool is told to stop, from a snapshot of the stop sources (a tool that finishes
  // inline erases its own entry).
  auto keep_alive = shared_from_this();
  // Requests that answer when the server ends them (listen streams) are told first,
  // while answers still go out; they finish inline (their stop callback resumes them),
  // from a snapshot because finishing erases their entries.
  std::vector<std::stop_source> answering;
  for (auto& [id, c] : s.in_flight)
    if (c.graceful && !c.cancelled) answering.push_back(c.stop);
  for (std::stop_source& stop : answering) stop.request_stop();
  s.closed = true;
  s.exchanges.end_answered_by_id("the session ended before the peer answered");
  // Frames kept for a retry will not get one from this runner; nor will its tasks run on.
  s.let_go_all();
  s.end_tasks();
  std::vector<std::stop_source> stops;
  for (auto& [id, c] : s.in_flight) {
    c.cancelled = true;
    stops.push_back(c.stop);
  }
  for (std::stop_source& stop : stops) stop.request_stop();
}

void request_runner::let_go_frame(std::uint64_t frame) {
  auto keep_alive = shared_from_this();
  impl_->let_go(frame);
}

std::size_t request_runner::kept_frames() const noexcept { return impl_->kept.size(); }
std::size_t request_runner::running_tasks() const noexcept { return impl_->tasks.size(); }
void request_runner::set_standalone(std::shared_ptr<outbound> out) { impl_->standalone = std::move(out); }
void request_runner::keep_alive_with(std::shared_ptr<const void> owner) { impl_->referenced = std::move(owner); }

void request_runner::answer_task(const std::string& id,
                                 std::vector<std::pair<std::string, boost::json::value>> answers) {
  auto keep_alive = shared_from_this();
  impl_->answer_task(id, answers);
}

void request_runner::stop_task(const std::string& id) {
  auto keep_alive = shared_from_this();
  impl_->stop_task(id);
}

void request_runner::forget_forwarded(const ir::request_id& key) { impl_->forwarded.erase(key); }

bool request_runner::is_closed() const noexcept { return impl_->closed; }

void request_runner::route_answer(const ir::message& msg) {
  // The resumed tool may finish and end this runner's last reference.
  auto keep_alive = shared_from_this();
  (void)impl_->exchanges.route_answer(msg);
}

std::size_t request_runner::in_flight() const noexcept { return impl_->in_flight.size(); }
bool request_runner::is_in_flight(const ir::request_id& key) const { return impl_->in_flight.contains(key); }
std::size_t request_runner::outstanding_exchanges() const noexcept { return impl_->exchanges.size(); }
std::size_t request_runner::dropped_responses() const noexcept { return impl_->exchanges.dropped(); }
const asio::any_io_executor& request_runner::executor() const noexcept { return impl_->executor; }

}  // namespace droid
