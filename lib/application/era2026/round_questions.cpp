// SPDX-License-Identifier: BSL-1.0
/// @file
/// The 2026-07-28 rounds of the request runner: a tool's question becomes an entry of an
/// `input_required` result, the frame that asked is kept, and the retry that carries the
/// answer resumes it; a retry that finds no frame replays the tool.
///
///     round 1: tools/call --> tool --co_await ctx.exchange--> question (pending)
///                                         flush (posted) --> {"resultType":"input_required",
///                                                              "inputRequests":{...}, "requestState":...}
///                                         frame --> kept table (timer: frame_ttl)
///     round 2: tools/call + inputResponses + requestState
///                --> open the state --> kept frame? resume it with the answers (same coroutine)
///                                       none?      replay: run the tool again; questions already
///                                                  answered settle at once from the state's transcript
///
/// ## Why the answer is posted, not sent when the tool suspends
/// A tool that asks two things at once (`when_all` of an elicitation and a sample)
/// suspends on the first before it has asked the second. The round is answered from a
/// posted handler, which runs after everything the tool does in one go; both questions
/// are then outstanding and travel in one `inputRequests`.
///
/// ## Why a replay never asks twice, and never answers a changed question
/// A question is named by its key (the tool's, or the method and its place in the order
/// the tool asks) and checked by a hash of its method and params. The state records each
/// answered question's key, hash and answer; a replayed tool that asks the same question
/// in the same place gets the recorded answer at once, and one whose question changed
/// (another message, another schema) is asked again.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <asio/post.hpp>

#include <droid/application/server/server.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/mcp/schema.hpp>

#include "round_questions.hpp"
#include "application/engine/runner_call.hpp"
#include "application/catalog/server_core.hpp"
#include "application/observe/trace_meta.hpp"

namespace droid {
namespace {

std::uint64_t question_hash(std::string_view method, std::string_view params) noexcept {
  return detail::stable_hash(params, detail::stable_hash(method));
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

constexpr std::string_view frame_only_refusal =
    "Invalid params: the tool this requestState belongs to is no longer suspended on this server, and its answers "
    "were too large to travel in the state (server_options::multi_round.max_state_bytes): send the request again "
    "without it";

ir::request_id frame_key(std::uint64_t frame) { return ir::request_id(static_cast<std::int64_t>(frame)); }

/// Gives a replay the `once` values of the frame it replaces. Why: a client that sends an
/// older round's state back replays from before side effects the frame has since done;
/// while the frame is at hand, its record says they happened.
void inherit_onces(detail::round_memory& into, const runner_call& frame) {
  if (!frame.round_side.remembered) return;
  for (const auto& once : frame.round_side.remembered->onces) {
    const bool known =
        std::any_of(into.onces.begin(), into.onces.end(), [&](const auto& o) { return o.first == once.first; });
    if (!known) into.onces.push_back(once);
  }
}

}  // namespace

detail::round_memory& runner_call::memory() {
  if (!round_side.remembered) round_side.remembered = std::make_unique<detail::round_memory>();
  return *round_side.remembered;
}

std::optional<exchange_result> detail::round_questions::settle(std::string_view method, std::string_view params_json,
                                                               std::string& key) {
  const peer_info& peer = *call.peer;
  if (call.state.closed) return refusal(errc::session_ended, "the session ended before the peer answered");
  if (!rounds)
    return refusal(errc::exchange_refused, "this request cannot ask the client anything: in MCP " +
                                               peer.protocol_version +
                                               " only tools/call, prompts/get and resources/read may answer "
                                               "input_required");
  if (const std::string_view cap = capability_for(method); !cap.empty() && !peer.has_capability(cap))
    return refusal(errc::exchange_refused, "the client did not declare the `" + std::string(cap) + "` capability " +
                                               std::string(where_declared(peer)) + ", so it cannot be asked " +
                                               std::string(method));
  ++ordinal;
  if (key.empty()) key = default_question_key(method, ordinal);
  for (const pending_question& q : pending)
    if (q.key == key)
      return refusal(errc::exchange_refused,
                     "two questions of this request are named `" + key + "` at once: a key names one question of a request");
  if (!remembered) return std::nullopt;
  round_memory& m = *remembered;
  const std::uint64_t hash = question_hash(method, params_json);
  // Answered in an earlier round (a replay): the same answer, without asking again.
  if (auto it = m.recorded.find(key); it != m.recorded.end() && it->second.hash == hash) {
    boost::json::value value = it->second.value;
    m.answers.push_back(std::move(it->second));
    m.recorded.erase(it);
    return exchange_result(std::move(value));
  }
  // Answered by this retry, for this very question.
  if (const boost::json::value* given = m.input.response(key)) {
    const auto asked = m.stated_asked.find(key);
    if (asked == m.stated_asked.end() || asked->second == hash) {
      if (method == "elicitation/create") {
        if (auto why = check_elicitation_answer(params_json, *given)) {
          // The round ends with an error instead (flush): the tool never sees it.
          m.input_error = "Invalid params: inputResponses." + key + " does not answer the question: " + *why;
          return std::nullopt;
        }
      }
      m.answers.push_back(recorded_answer{key, hash, *given});
      return exchange_result(*given);
    }
  }
  return std::nullopt;
}

void detail::round_questions::ask(std::int64_t id, std::string_view method, std::string_view params, std::string key) {
  pending.push_back(pending_question{std::move(key), method, params, question_hash(method, params), id});
  call.schedule_flush();
}

void detail::round_questions::take_binding(std::string_view method, const ir::json_node* params) {
  if (rounds && !binding) binding = detail::request_binding(method, params);
}

void runner_call::schedule_flush() {
  if (round_side.flush_posted) return;
  round_side.flush_posted = true;
  asio::post(state.executor,
             [self = owner.shared_from_this(), k = *key_in_table, rec = this] { self->impl_->flush(k, rec); });
}

std::optional<exchange_result> detail::round_questions::withdraw(std::int64_t id) {
  auto it = std::find_if(pending.begin(), pending.end(), [&](const pending_question& q) { return q.id == id; });
  if (it == pending.end()) return std::nullopt;
  pending.erase(it);
  return refusal(errc::cancelled, "the request was cancelled before the client answered");
}

const boost::json::value* runner_call::recorded_once(std::string_view key) {
  if (!round_side.remembered) return nullptr;
  for (const auto& [k, v] : round_side.remembered->onces)
    if (k == key) return &v;
  return nullptr;
}

void runner_call::record_once(std::string_view key, const boost::json::value& value) {
  // Recorded only where a replay could repeat it: a 2025 session has no replay.
  if (!round_side.rounds) return;
  memory().onces.emplace_back(std::string(key), value);
}

namespace {

/// The stream of a retry served by another shard: it tells the shard that received the
/// retry when the retry is over, so that shard forgets where it sent it.
/// Affinity: used on the serving shard; `finish` posts back to the receiving one.
class forwarded_stream final : public outbound {
 public:
  forwarded_stream(std::shared_ptr<outbound> inner, std::weak_ptr<request_runner> from, ir::request_id key)
      : inner_(std::move(inner)), from_(std::move(from)), key_(std::move(key)) {}
  forwarded_stream(const forwarded_stream&) = delete;
  forwarded_stream& operator=(const forwarded_stream&) = delete;
  /// A stream that serves more than this retry (stdio's) is never finished by it: the
  /// retry is over when the serving runner lets go of it, and the receiving runner must
  /// forget it then all the same.
  ~forwarded_stream() override {
    if (!finished_) forget();
  }
  void send(std::string message) override { inner_->send(std::move(message)); }
  void finish() override;
  void interrupt() override { inner_->interrupt(); }
  [[nodiscard]] std::string exchange_refusal() const override { return inner_->exchange_refusal(); }

 private:
  void forget() noexcept;
  std::shared_ptr<outbound> inner_;
  std::weak_ptr<request_runner> from_;
  ir::request_id key_;
  /// Told once: a second forget could erase a later retry's entry under the same key.
  bool finished_ = false;
};

}  // namespace

request_runner::impl::retry_plan request_runner::impl::plan_retry(request_runner& self, std::string_view method,
                                                                  const ir::json_node* params,
                                                                  const peer_info& peer) {
  retry_plan plan;
  if (!params) return plan;
  detail::retry_input input;
  if (auto bad = detail::read_retry_input(*params, input)) {
    plan.refusal = std::move(*bad);
    return plan;
  }
  if (input.empty()) return plan;
  auto memory = std::make_unique<detail::round_memory>();
  if (input.state) {
    const server_options::multi_round_options& o = rounds.options();
    detail::open_failure why{};
    const std::optional<std::string> payload = rounds.sealer().open(*input.state, o.max_state_bytes, why);
    detail::round_state st;
    if (!payload) {
      plan.refusal = "Invalid params: " + std::string(detail::describe(why));
      return plan;
    }
    if (!detail::decode_state(*payload, st)) {
      plan.refusal = "Invalid params: requestState was sealed by this server but is not a state this version reads";
      return plan;
    }
    if (now_ms() > st.expires_ms) {
      plan.refusal = "Invalid params: requestState expired (a client has " +
                     std::to_string(o.state_ttl.count() / 1000) +
                     " s to answer, server_options::multi_round.state_ttl): send the request again without it";
      return plan;
    }
    plan.binding = detail::request_binding(method, params);
    if (st.binding != *plan.binding) {
      plan.refusal = "Invalid params: requestState belongs to another request (its method, name, arguments or URI "
                     "differ): a state may only come back with the request it answered";
      return plan;
    }
    if (st.principal != detail::stable_hash(peer.principal)) {
      plan.refusal = "Invalid params: requestState was issued to another principal";
      return plan;
    }
    plan.round = st.round;
    // The replay book, in case the frame is gone: the answers and `once` values so far,
    // and the questions outstanding when the state was sealed.
    for (detail::recorded_answer& a : st.answers) {
      std::string key = a.key;
      memory->recorded.emplace(std::move(key), std::move(a));
    }
    memory->onces = std::move(st.onces);
    for (auto& [key, hash] : st.asked) memory->stated_asked.emplace(std::move(key), hash);
    plan.frame_only = st.frame_only;
    // The frame it names, when this instance still keeps it: only the shard that took it
    // out of the registry may resume it.
    if (st.instance == rounds.instance() && st.frame != 0) {
      if (std::shared_ptr<request_runner> holder = rounds.claim(st.frame)) {
        if (holder.get() == &self) {
          auto it = kept.find(frame_key(st.frame));
          if (it != kept.end() && it->second.round_side.round == st.round && !it->second.cancelled) {
            memory->input = std::move(input);
            plan.memory = std::move(memory);
            plan.resume = kept.extract(it);
            return plan;
          }
          // An older round's state: the frame has moved on, so the state is replayed.
          if (it != kept.end()) inherit_onces(*memory, it->second);
          let_go(st.frame);
        } else {
          // Kept by another shard: the retry goes there (forward), which resumes it.
          memory->input = std::move(input);
          plan.memory = std::move(memory);
          plan.forward_to = std::move(holder);
          plan.frame = st.frame;
          return plan;
        }
      }
    }
    if (plan.frame_only) {
      plan.refusal = std::string(frame_only_refusal);
      return plan;
    }
  }
  memory->input = std::move(input);
  plan.memory = std::move(memory);
  return plan;
}

void request_runner::impl::resume(request_runner& self, table::node_type node, ir::request_id key,
                                  const ir::request_id& id, std::optional<ir::request_id> progress,
                                  std::shared_ptr<outbound> stream, bool finish_stream, peer_info&& peer,
                                  detail::round_memory& retry) {
  runner_call& c = node.mapped();
  if (c.round_side.expiry) c.round_side.expiry->cancel();
  // The frame now serves the retry: its id, stream and view of the client.
  c.round_side.kept = false;
  node.key() = std::move(key);
  c.id = id;
  c.stream = std::move(stream);
  c.finish_stream = finish_stream;
  *c.own_peer = std::move(peer);
  if (c.context) detail::context_rebind::to(*c.context, id, std::move(progress));
  auto inserted = in_flight.insert(std::move(node));
  runner_call& rec = inserted.position->second;
  const ir::request_id here = inserted.position->first;

  // Every answer is checked before any is given: the tool never sees one that does not
  // fit, and the frame waits on for a retry that fixes it.
  std::vector<std::pair<std::int64_t, const boost::json::value*>> answers;
  for (const detail::pending_question& q : rec.round_side.pending) {
    const boost::json::value* given = retry.input.response(q.key);
    if (!given) continue;
    if (q.method == "elicitation/create") {
      if (auto why = detail::check_elicitation_answer(q.params, *given)) {
        const std::size_t n =
            send_error_to(rec.stream.get(), rec.id, ir::errc::invalid_params,
                          "Invalid params: inputResponses." + q.key + " does not answer the question: " + *why);
        rec.observe_end(request_outcome::error, static_cast<std::int64_t>(ir::errc::invalid_params), n);
        if (rec.finish_stream && rec.stream) rec.stream->finish();
        rec.stream.reset();
        keep(in_flight.extract(inserted.position));
        return;
      }
    }
    answers.emplace_back(q.id, given);
  }
  detail::round_memory& m = rec.memory();
  for (const auto& [question, given] : answers)
    for (const detail::pending_question& q : rec.round_side.pending)
      if (q.id == question) m.answers.push_back(detail::recorded_answer{q.key, q.hash, *given});

  auto keep_alive = self.shared_from_this();
  // One at a time, as the answers of 2025 questions arrive: each resumed branch runs
  // until it waits again. The record is looked up after each, since the tool may have
  // finished (and its record gone) with the last one.
  for (const auto& answer : answers) {
    const std::int64_t question = answer.first;
    auto it = in_flight.find(here);
    if (it == in_flight.end() || &it->second != &rec) return;
    auto q = std::find_if(rec.round_side.pending.begin(), rec.round_side.pending.end(),
                          [&](const detail::pending_question& p) { return p.id == question; });
    if (q == rec.round_side.pending.end()) continue;
    rec.round_side.pending.erase(q);
    exchanges.resume(question, exchange_result(*answer.second));
  }
  auto it = in_flight.find(here);
  if (it == in_flight.end() || &it->second != &rec) return;
  // Questions the retry did not answer are asked again (the client may answer what it
  // can and retry; MCP: re-request, do not fail).
  if (!rec.round_side.pending.empty() && !rec.round_side.flush_posted) {
    rec.round_side.flush_posted = true;
    asio::post(executor, [self = self.shared_from_this(), here, r = &rec] { self->impl_->flush(here, r); });
  }
}

void forwarded_stream::finish() {
  inner_->finish();
  if (std::exchange(finished_, true)) return;
  forget();
}

void forwarded_stream::forget() noexcept {
  try {
    if (std::shared_ptr<request_runner> from = from_.lock())
      asio::post(from->executor(), [from, key = std::move(key_)] { from->forget_forwarded(key); });
  } catch (...) {
    // Out of memory for the post: the entry stays until the receiving runner closes,
    // which is better than ending the process from a destructor.
  }
}

void request_runner::impl::forward(request_runner& self, retry_plan& plan, ir::request_id key,
                                   std::string_view method, const ir::request_id& id, const ir::json_node* params,
                                   std::shared_ptr<outbound> stream, bool finish_stream, peer_info&& peer) {
  // Owned copies of what the other shard needs: the parsed params do not outlive this
  // call. Only a retry whose frame waits on another shard pays for this.
  std::string params_text;
  if (params) {
    boost::json::value v;
    std::string error;
    (void)decode(*params, v, error);
    params_text = ir::to_json_text(v);
  }
  forwarded.emplace(key, plan.forward_to);
  auto wrapped = std::make_shared<forwarded_stream>(std::move(stream), self.weak_from_this(), key);
  std::shared_ptr<request_runner> holder = plan.forward_to;
  asio::post(holder->executor(), [holder, frame = plan.frame, round = plan.round, key = std::move(key),
                                  method = std::string(method), id, params_text = std::move(params_text),
                                  stream = std::move(wrapped), finish_stream, peer = std::move(peer),
                                  memory = std::move(plan.memory), frame_only = plan.frame_only]() mutable {
    holder->impl_->take_forwarded(*holder, frame, round, std::move(key), method, id, params_text, std::move(stream),
                                  finish_stream, std::move(peer), std::move(memory), frame_only);
  });
}

void request_runner::impl::take_forwarded(request_runner& self, std::uint64_t frame, std::uint32_t round,
                                          ir::request_id key, const std::string& method, const ir::request_id& id,
                                          const std::string& params_text, std::shared_ptr<outbound> stream,
                                          bool finish_stream, peer_info&& peer,
                                          std::unique_ptr<detail::round_memory> memory, bool frame_only) {
  auto keep_alive = self.shared_from_this();
  const auto serve = [&](const ir::json_node* params) {
    auto it = kept.find(frame_key(frame));
    if (!closed && it != kept.end() && it->second.round_side.round == round && !it->second.cancelled &&
        !in_flight.contains(key)) {
      table::node_type node = kept.extract(it);
      // The retry is a request of its own to the observer, here as on the shard it reached.
      node.mapped().observed = detail::observe(srv, method, params, peer, 0);
      resume(self, std::move(node), std::move(key), id, detail::progress_token_of(params), std::move(stream),
             finish_stream, std::move(peer), *memory);
      return;
    }
    // The frame went meanwhile (or moved on a round): the retry is replayed here from
    // its state, with what the frame recorded since.
    if (it != kept.end()) {
      inherit_onces(*memory, it->second);
      let_go(frame);
    }
    retry_plan plan;
    plan.binding = detail::request_binding(method, params);
    plan.round = round;
    if (frame_only) plan.refusal = std::string(frame_only_refusal);
    plan.memory = std::move(memory);
    admit(self, std::move(key), method, id, params, std::move(stream), finish_stream, nullptr, &peer,
          std::move(plan), 0, {}, nullptr, params_text);
  };
  if (params_text.empty()) {
    serve(nullptr);
    return;
  }
  (void)ir::visit_json(params_text, [&](const ir::json_node& node) { serve(&node); });
}

void request_runner::impl::flush(const ir::request_id& key, runner_call* expected) {
  auto it = in_flight.find(key);
  if (it == in_flight.end() || &it->second != expected) return;
  runner_call& c = it->second;
  if (!c.round_side.flush_posted) return;
  c.round_side.flush_posted = false;
  if (c.cancelled || closed || c.round_side.pending.empty()) return;
  const server_options::multi_round_options& o = rounds.options();
  // Ends the request with an error instead of a round, and lets its frame go.
  const auto fail = [&](ir::errc code, std::string text) {
    c.observe_end(request_outcome::error, static_cast<std::int64_t>(code), send_error_to(c.stream.get(), c.id, code, text));
    if (c.finish_stream && c.stream) c.stream->finish();
    c.stream.reset();
    c.cancelled = true;
    std::stop_source stop = c.stop;
    stop.request_stop();
  };
  detail::round_memory& m = c.memory();
  if (!m.input_error.empty()) {
    fail(ir::errc::invalid_params, std::move(m.input_error));
    return;
  }
  if (c.round_side.round >= o.max_rounds) {
    fail(ir::errc::invalid_params, "Invalid params: the request took " + std::to_string(c.round_side.round) +
                                       " rounds of input_required without completing (at most " +
                                       std::to_string(o.max_rounds) + ", server_options::multi_round.max_rounds)");
    return;
  }
  ++c.round_side.round;
  const bool keeping = o.max_kept_frames > 0;
  if (keeping && c.round_side.frame == 0) c.round_side.frame = rounds.mint_frame();

  detail::round_state st;
  st.expires_ms = now_ms() + o.state_ttl.count();
  // Always taken by now: a question is asked by a request still running once admitted,
  // and a replayed or resumed one brings it (`admit`).
  assert(c.round_side.binding);
  st.binding = c.round_side.binding.value_or(0);
  st.principal = detail::stable_hash(c.peer->principal);
  st.instance = rounds.instance();
  st.frame = keeping ? c.round_side.frame : 0;
  st.round = c.round_side.round;
  st.answers = m.answers;
  st.onces = m.onces;
  for (const detail::pending_question& q : c.round_side.pending) st.asked.emplace_back(q.key, q.hash);
  std::string token = rounds.sealer().seal(detail::encode_state(st));
  if (token.size() > o.max_state_bytes) {
    // Without its transcript the state still names the frame; only a replay needs it.
    st.answers.clear();
    st.onces.clear();
    st.frame_only = true;
    token = rounds.sealer().seal(detail::encode_state(st));
    if (!keeping || token.size() > o.max_state_bytes) {
      fail(ir::errc::internal_error, "Internal error: the request's state outgrew "
                                     "server_options::multi_round.max_state_bytes and no frame is kept to hold it");
      return;
    }
  }

  std::string buf;
  ir::append_result_head(buf, c.id);
  buf += R"({"resultType":"input_required","inputRequests":{)";
  bool first = true;
  for (const detail::pending_question& q : c.round_side.pending) {
    if (!first) buf += ',';
    first = false;
    ir::append_json_string(buf, q.key);
    buf += R"(:{"method":)";
    ir::append_json_string(buf, q.method);
    buf += R"(,"params":)";
    const std::optional<std::string> traced = detail::traced_params(q.params, c.context);
    buf += traced ? std::string_view(*traced) : q.params;
    buf += '}';
  }
  buf += R"(},"requestState":)";
  ir::append_json_string(buf, token);
  // The members every 2026 result carries, after the resultType they begin with.
  constexpr std::string_view complete = R"("resultType":"complete")";
  buf += detail::core(srv).modern_result_members().substr(complete.size());
  buf += "}}";
  const std::size_t sent = buf.size();
  send(c.stream.get(), std::move(buf));
  c.observe_end(request_outcome::input_required, 0, sent);
  if (c.finish_stream && c.stream) c.stream->finish();
  c.stream.reset();

  if (!keeping) {
    // Nothing is kept: the retry replays, and this frame unwinds now.
    c.cancelled = true;
    std::stop_source stop = c.stop;
    stop.request_stop();
    return;
  }
  keep(in_flight.extract(it));
}

void request_runner::impl::keep(table::node_type node) {
  runner_call& c = node.mapped();
  c.round_side.kept = true;
  const std::uint64_t frame = c.round_side.frame;
  const std::uint32_t round = c.round_side.round;
  node.key() = frame_key(frame);
  kept.insert(std::move(node));
  c.round_side.expiry.emplace(executor, rounds.options().frame_ttl);
  c.round_side.expiry->async_wait([weak = c.owner.weak_from_this(), frame, round](const std::error_code& ec) {
    if (ec) return;
    const std::shared_ptr<request_runner> self = weak.lock();
    if (!self) return;
    impl& st = *self->impl_;
    auto it = st.kept.find(frame_key(frame));
    // A retry claimed the frame (and maybe kept it again, a round later) meanwhile.
    if (it == st.kept.end() || it->second.round_side.round != round) return;
    if (st.rounds.forget(frame)) st.let_go(frame);
  });
  for (detail::multi_round_context::eviction& e : rounds.keep(frame, c.owner.weak_from_this())) {
    if (std::shared_ptr<request_runner> holder = e.owner.lock())
      asio::post(holder->executor(), [holder, frame = e.frame] { holder->let_go_frame(frame); });
  }
}

void request_runner::impl::let_go(std::uint64_t frame) {
  auto it = kept.find(frame_key(frame));
  if (it == kept.end() || it->second.cancelled) return;
  runner_call& c = it->second;
  c.cancelled = true;
  if (c.round_side.expiry) c.round_side.expiry->cancel();
  // Its questions resume as cancelled; the tool unwinds and its completion frees the
  // node (nothing is sent: the round was answered already).
  std::stop_source stop = c.stop;
  stop.request_stop();
}

void request_runner::impl::let_go_all() {
  std::vector<std::uint64_t> frames;
  for (auto& [key, c] : kept) frames.push_back(c.round_side.frame);
  for (const std::uint64_t frame : frames) {
    (void)rounds.forget(frame);
    let_go(frame);
  }
}

}  // namespace droid
