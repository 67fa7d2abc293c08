// SPDX-License-Identifier: BSL-1.0
/// @file
/// Progress, notifications and cancellable sleep for tools.
#include <droid/application/server/tool_context.hpp>

#include <asio/steady_timer.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <droid/application/server/task_store.hpp>
#include <droid/application/use_task.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/json_node.hpp>

#include "application/observe/trace_meta.hpp"

namespace droid {

namespace {

/// Removes the whitespace between the tokens of valid JSON `text`. Why not a parse and
/// a write: that would respell numbers (`1.0` as `1`) and escapes the tool chose, and
/// only the line breaks are a problem. Valid JSON has none inside strings, so after this
/// it has none at all.
void compact(std::string& text) {
  std::size_t out = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      continue;
    } else if (ch == '"') {
      in_string = true;
    }
    text[out++] = ch;
  }
  text.resize(out);
}

/// Makes tool-written params text fit to splice into a frame, or says why it is not: it
/// must be one JSON object (which also makes it UTF-8), and it loses its line breaks.
/// Why here and not in each encoder: this is the one door user text comes in by, and
/// params built with Boost.JSON or our writers are compact already, so they pay one
/// validating parse and a scan for line breaks.
std::string fit_params(std::string& text) {
  std::string_view kind;
  if (ir::visit_json(text, [&](const ir::json_node& n) { kind = n.kind_name(); }))
    return "not a JSON object: they do not parse";
  if (kind != "an object") return "not a JSON object: they are " + std::string(kind);
  if (text.find_first_of("\r\n") != std::string::npos) compact(text);
  return {};
}

}  // namespace

send_awaiter tool_context::progress(double progress, std::optional<double> total, std::string_view message) {
  // No token, no progress: the client did not ask, and MCP forbids inventing a token.
  if (!progress_token_) return {};
  std::string params = R"({"progressToken":)";
  progress_token_->append_json(params);
  params += R"(,"progress":)";
  params += ir::to_json_text(boost::json::value(progress));
  if (total) {
    params += R"(,"total":)";
    params += ir::to_json_text(boost::json::value(*total));
  }
  if (!message.empty()) {
    params += R"(,"message":)";
    ir::append_json_string(params, message);
  }
  params += '}';
  channel_->notify("notifications/progress", std::move(params));
  return {};
}

send_awaiter tool_context::log(log_level level, std::string_view text, std::string_view logger) {
  if (!peer_->min_log_level || level < *peer_->min_log_level) return {};
  boost::json::object params{{"level", to_string(level)}, {"data", text}};
  if (!logger.empty()) params["logger"] = logger;
  channel_->notify("notifications/message", ir::to_json_text(params));
  return {};
}

send_awaiter tool_context::log(log_level level, boost::json::object data, std::string_view logger) {
  if (!peer_->min_log_level || level < *peer_->min_log_level) return {};
  boost::json::object params{{"level", to_string(level)}, {"data", std::move(data)}};
  if (!logger.empty()) params["logger"] = logger;
  channel_->notify("notifications/message", ir::to_json_text(params));
  return {};
}

send_awaiter tool_context::notify(std::string_view method, std::string params_json) {
  if (!params_json.empty()) {
    if (const std::string why = fit_params(params_json); !why.empty()) {
      channel_->log("a tool's " + std::string(method) + " was dropped: its params are " + why);
      return {};
    }
  }
  channel_->notify(method, std::move(params_json));
  return {};
}

exchange_awaiter tool_context::exchange(std::string method, std::string params_json, std::stop_token stop) {
  return exchange_awaiter(*channel_, std::move(method), std::move(params_json), stop_, std::move(stop));
}

exchange_awaiter tool_context::exchange(std::string method, const boost::json::object& params, std::stop_token stop) {
  return exchange(std::move(method), ir::to_json_text(params), std::move(stop));
}

exchange_awaiter tool_context::exchange(std::string method, std::string params_json, ask_options options) {
  return exchange_awaiter(*channel_, std::move(method), std::move(params_json), stop_, std::move(options.stop),
                          std::move(options.key));
}

exchange_awaiter tool_context::exchange(std::string method, const boost::json::object& params, ask_options options) {
  return exchange(std::move(method), ir::to_json_text(params), std::move(options));
}

namespace detail {

std::string_view where_declared(const peer_info& peer) noexcept {
  return peer.is_modern() ? "in the request's _meta" : "in initialize";
}

exchange_error malformed_answer(std::string what) {
  return exchange_error{make_error_code(errc::peer_error), 0, "the client's answer was malformed: " + what, {}};
}

std::optional<exchange_error> form_elicitation_refusal(const peer_info& peer) {
  const boost::json::value* e = peer.capabilities.if_contains("elicitation");
  if (!e || !e->is_object()) return std::nullopt;  // the exchange names the missing capability
  const boost::json::object& modes = e->get_object();
  if (modes.contains("form") || !modes.contains("url")) return std::nullopt;
  return exchange_error{make_error_code(errc::exchange_refused), 0,
                        "the client declared only URL-mode elicitation (`elicitation.url`), so it cannot be shown a "
                        "form: it must declare `elicitation.form`",
                        {}};
}

bool parse_elicit_action(const boost::json::value& result, elicit_action& action) {
  const boost::json::value* a = result.is_object() ? result.get_object().if_contains("action") : nullptr;
  if (!a || !a->is_string()) return false;
  const boost::json::string& s = a->get_string();
  if (s == "accept") action = elicit_action::accept;
  else if (s == "decline") action = elicit_action::decline;
  else if (s == "cancel") action = elicit_action::cancel;
  else return false;
  return true;
}

}  // namespace detail

namespace {
exchange_error malformed(std::string what) { return detail::malformed_answer(std::move(what)); }
}  // namespace

task<exchange_outcome<elicit_action>> tool_context::elicit_url(std::string message, std::string url,
                                                               std::string elicitation_id, std::stop_token stop) {
  return elicit_url(std::move(message), std::move(url), std::move(elicitation_id), ask_options(std::string(), std::move(stop)));
}

task<exchange_outcome<elicit_action>> tool_context::elicit_url(std::string message, std::string url,
                                                               std::string elicitation_id, ask_options options) {
  using outcome = exchange_outcome<elicit_action>;
  const boost::json::value* e = peer_->capabilities.if_contains("elicitation");
  if (!e || !e->is_object() || !e->get_object().contains("url"))
    co_return outcome(exchange_error{make_error_code(errc::exchange_refused), 0,
                                     "the client did not declare `elicitation.url` " +
                                         std::string(detail::where_declared(*peer_)) +
                                         ", so it cannot be sent to a URL",
                                     {}});
  boost::json::object params{{"mode", "url"}, {"message", message}, {"url", url}, {"elicitationId", elicitation_id}};
  exchange_result answer = co_await exchange("elicitation/create", params, std::move(options));
  if (!answer) co_return outcome(answer.error());
  elicit_action action{};
  if (!detail::parse_elicit_action(answer.value(), action))
    co_return outcome(malformed("the elicitation action is not accept, decline or cancel"));
  co_return outcome(action);
}

send_awaiter tool_context::elicitation_complete(std::string_view elicitation_id) {
  std::string params = R"({"elicitationId":)";
  ir::append_json_string(params, elicitation_id);
  params += '}';
  channel_->notify("notifications/elicitation/complete", std::move(params));
  return {};
}

task<exchange_outcome<sampling_result>> tool_context::sample(sampling_request request, std::stop_token stop) {
  return sample(std::move(request), ask_options(std::string(), std::move(stop)));
}

task<exchange_outcome<sampling_result>> tool_context::sample(sampling_request request, ask_options options) {
  using outcome = exchange_outcome<sampling_result>;
  if (!request.tools.empty()) {
    const boost::json::value* sampling = peer_->capabilities.if_contains("sampling");
    if (!sampling || !sampling->is_object() || !sampling->get_object().contains("tools"))
      co_return outcome(exchange_error{make_error_code(errc::exchange_refused), 0,
                                       "the client did not declare `sampling.tools` " +
                                           std::string(detail::where_declared(*peer_)) +
                                           ", so a sampling request cannot offer tools",
                                       {}});
  }
  exchange_result answer = co_await exchange("sampling/createMessage", to_json(request), std::move(options));
  if (!answer) co_return outcome(answer.error());
  sampling_result result;
  std::string error;
  if (!from_json(answer.value(), result, error)) co_return outcome(malformed(error));
  co_return outcome(std::move(result));
}

task<exchange_outcome<std::vector<root>>> tool_context::list_roots(std::stop_token stop) {
  return list_roots(ask_options(std::string(), std::move(stop)));
}

task<exchange_outcome<std::vector<root>>> tool_context::list_roots(ask_options options) {
  using outcome = exchange_outcome<std::vector<root>>;
  exchange_result answer = co_await exchange("roots/list", std::string("{}"), std::move(options));
  if (!answer) co_return outcome(answer.error());
  std::vector<root> roots;
  std::string error;
  if (!from_json(answer.value(), roots, error)) co_return outcome(malformed(error));
  co_return outcome(std::move(roots));
}

exchange_awaiter::exchange_awaiter(detail::request_channel& channel, std::string method, std::string params_json,
                                   std::stop_token call_stop, std::stop_token extra_stop, std::string key)
    : channel_(&channel),
      method_(std::move(method)),
      params_(std::move(params_json)),
      key_(std::move(key)),
      call_stop_(std::move(call_stop)),
      extra_stop_(std::move(extra_stop)) {
  // Empty text would leave a 2026 `inputRequests` entry with no params value at all.
  if (params_.empty()) params_ = "{}";
  if (std::string why = fit_params(params_); !why.empty())
    params_refusal_ = "the params of " + method_ + " are " + std::move(why);
}

bool exchange_awaiter::await_ready() {
  if (!params_refusal_.empty()) {
    result_ = exchange_result(exchange_error{make_error_code(errc::exchange_refused), 0, params_refusal_, {}});
    return true;
  }
  if (call_stop_.stop_requested() || extra_stop_.stop_requested()) {
    result_ = exchange_result(exchange_error{make_error_code(errc::cancelled), 0,
                                             "the request was cancelled before the question was asked", {}});
    return true;
  }
  if (auto settled = channel_->settle_now(method_, params_, key_)) {
    result_ = std::move(*settled);
    return true;
  }
  return false;
}

void exchange_awaiter::await_suspend(std::coroutine_handle<> h) {
  waiter_.handle = h;
  waiter_.slot = &result_;
  // Mint, arm cancellation, then record and publish, last. A stop (requested already, or
  // from another thread now) only posts the withdrawal to the shard, which runs after
  // this returns; and nothing here is touched once `begin_exchange` has published, so
  // whatever the transport does with the question (even answer it at once) is safe.
  id_ = channel_->mint_exchange_id();
  if (call_stop_.stop_possible()) on_call_stop_.emplace(call_stop_, canceller{channel_, id_});
  if (extra_stop_.stop_possible()) on_extra_stop_.emplace(extra_stop_, canceller{channel_, id_});
  channel_->begin_exchange(waiter_, method_, params_, std::move(key_), id_);
}

exchange_result exchange_awaiter::await_resume() {
  // When a stop callback resumed us, this destroys that callback from inside its own
  // invocation: allowed on the same thread (the destructor does not wait for itself).
  on_call_stop_.reset();
  on_extra_stop_.reset();
  return std::move(result_);
}

void exchange_awaiter::canceller::operator()() const noexcept { channel->cancel_exchange(id); }

task<bool> tool_context::continue_as_task() {
  task_refusal refusal;
  const bool detached = channel_->become_task(refusal);
  if (!refusal.message.empty()) channel_->log("a tool could not continue as a task: " + refusal.message);
  co_return detached;
}

task<std::error_code> tool_context::sleep(std::chrono::steady_clock::duration duration) {
  asio::steady_timer timer(executor_, duration);
  const std::error_code ec = co_await timer.async_wait(use_task(stop_));
  // The timer reports cancellation as operation_aborted; tools compare against our
  // condition so they need not know which Asio operation was interrupted.
  if (ec || stop_.stop_requested()) co_return make_error_code(errc::cancelled);
  co_return std::error_code{};
}

std::optional<std::string> detail::traced_params(std::string_view params, const trace_context& trace) {
  if (trace.empty()) return std::nullopt;
  boost::json::value v;
  if (!ir::parse_exact(params, v) || !v.is_object()) return std::nullopt;
  boost::json::object& o = v.as_object();
  boost::json::value& meta = o["_meta"];
  if (meta.is_null()) meta.emplace_object();
  if (!meta.is_object()) return std::nullopt;  // the tool's own `_meta`, whatever it is, stays
  boost::json::object& m = meta.as_object();
  const auto carry = [&m](std::string_view key, const std::string& value) {
    if (!value.empty() && !m.contains(key)) m[key] = value;
  };
  carry("traceparent", trace.traceparent);
  carry("tracestate", trace.tracestate);
  carry("baggage", trace.baggage);
  return boost::json::serialize(v);
}

}  // namespace droid
