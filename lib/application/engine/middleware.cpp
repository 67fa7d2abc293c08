// SPDX-License-Identifier: BSL-1.0
// The middleware chain (<droid/application/server/middleware.hpp>): a request's params
// and a response's result, each parsed only for a middleware that reads them, and the
// steps of the chain down to the method.
#include "middleware_chain.hpp"

#include <string>
#include <utility>

#include <droid/application/server/request_origin.hpp>
#include <droid/domain/ir/codec.hpp>
#include <droid/domain/ir/message.hpp>

#include "application/observe/observation.hpp"

namespace droid::middleware {
namespace {

/// The name a request of `method` names in `params` (as `observation::name_of` reads it
/// from the parsed tree), for params a middleware rewrote.
std::string name_in(std::string_view method, const boost::json::object& params) {
  const std::string_view key = droid::detail::observation::name_key(method);
  if (key.empty()) return {};
  const boost::json::value* v = params.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

/// `result` as text with its `_meta` first. Why first: a 2026-07-28 result's `_meta` is
/// merged with the server's identity when the answer is framed, which looks for it there
/// (JSON allows the key once).
std::string result_text(const boost::json::object& result) {
  const boost::json::value* meta = result.if_contains("_meta");
  if (!meta || result.begin()->key() == "_meta") return ir::to_json_text(result);
  boost::json::object ordered;
  ordered.reserve(result.size());
  ordered.emplace("_meta", *meta);
  for (const auto& member : result)
    if (member.key() != "_meta") ordered.emplace(member.key(), member.value());
  return ir::to_json_text(ordered);
}

/// Takes out of a result what framing adds to every result of the 2026-07-28 era, so
/// that a middleware reads the same result in both eras and a rewritten one is not
/// given those members twice.
void strip_era_members(boost::json::object& result) {
  if (const auto* kind = result.if_contains("resultType"); kind && kind->is_string() && kind->as_string() == "complete")
    result.erase("resultType");
  if (auto* meta = result.if_contains("_meta"); meta && meta->is_object()) {
    meta->as_object().erase("io.modelcontextprotocol/serverInfo");
    if (meta->as_object().empty()) result.erase("_meta");
  }
}

}  // namespace

std::string_view request::address() const noexcept {
  return origin_ ? std::string_view(origin_->remote_address) : std::string_view();
}

request::~request() {
  if (live_) *live_ = nullptr;
}

void request::take_text() const {
  if (text_ready_) return;
  text_ready_ = true;
  if (!has_params_) return;
  if (!given_text_.empty()) {
    params_text_ = given_text_;
  } else if (message_) {
    params_text_ = message_->params().text;
  } else if (tree_) {
    boost::json::value v;
    ir::assign_value(*tree_, v);
    params_text_ = ir::to_json_text(v);
  }
}

std::string_view request::name() const {
  if (!name_ready_) {
    name_ready_ = true;
    if (tree_) {
      name_ = droid::detail::observation::name_of(method_, *tree_);
    } else if (has_params_) {
      // After admission, or rewritten: from the text.
      boost::json::value v;
      if (ir::parse_exact(params_text(), v) && v.is_object())
        name_ = name_in(method_, v.as_object());
    }
  }
  return name_;
}

std::string_view request::params_text() const {
  take_text();
  return params_text_;
}

const boost::json::object& request::params() {
  if (!parsed_) {
    take_text();
    boost::json::value v;
    // The text is what the client sent (validated) or what `set_params` wrote.
    if (!params_text_.empty() && ir::parse_exact(params_text_, v) && v.is_object())
      parsed_.emplace(std::move(v.as_object()));
    else
      parsed_.emplace();
  }
  return *parsed_;
}

void request::set_params(boost::json::object params) {
  // The tree no longer says what the method gets.
  if (live_) *live_ = nullptr;
  live_ = nullptr;
  tree_ = nullptr;
  message_ = nullptr;
  given_text_ = {};
  has_params_ = true;
  text_ready_ = true;
  params_text_ = ir::to_json_text(params);
  name_ = name_in(method_, params);
  name_ready_ = true;
  parsed_.emplace(std::move(params));
}

response::response() : reply_(droid::detail::reply::ok("{}")) {}
response::response(droid::detail::reply r) noexcept : reply_(std::move(r)) {}
response::response(response&&) noexcept = default;
response& response::operator=(response&&) noexcept = default;
response::~response() = default;

response response::result(boost::json::object result) {
  response r;
  r.set_result(std::move(result));
  return r;
}

response response::error(std::int64_t code, std::string message, const boost::json::value& data) {
  return response(droid::detail::reply::error(code, std::move(message), data.is_null() ? std::string() : ir::to_json_text(data)));
}

response response::refuse(int http_status, std::int64_t code, std::string message,
                          std::chrono::milliseconds retry_after, const boost::json::value& data) {
  // Whole seconds, rounded up: a client that waits what it was told must find a token.
  const auto seconds = (retry_after.count() + 999) / 1000;
  return response(droid::detail::reply::refusal(http_status, code, std::move(message),
                                                data.is_null() ? std::string() : ir::to_json_text(data),
                                                static_cast<int>(seconds < 1 ? 1 : seconds)));
}

const boost::json::object& response::result() {
  if (parsed_) return *parsed_;
  parsed_.emplace();
  if (reply_.is_error()) return *parsed_;
  boost::json::value v;
  if (!ir::parse_exact(reply_.result, v)) return *parsed_;
  if (reply_.framed) {
    // A whole response message: its `result`.
    if (!v.is_object()) return *parsed_;
    boost::json::value* inner = v.as_object().if_contains("result");
    if (!inner) return *parsed_;
    v = std::move(*inner);
  }
  if (v.is_object()) {
    parsed_.emplace(std::move(v.as_object()));
    strip_era_members(*parsed_);
  }
  return *parsed_;
}

void response::set_result(boost::json::object result) {
  const auto* failed = result.if_contains("isError");
  const bool tool_error = failed && failed->is_bool() && failed->as_bool();
  reply_ = droid::detail::reply::ok(result_text(result));
  reply_.tool_error = tool_error;
  parsed_.emplace(std::move(result));
}

next::awaitable next::operator()(request& req) const {
  for (std::size_t i = index_; i < chain_->links.size(); ++i) {
    const detail::link& l = chain_->links[i];
    if (l.around) return awaitable(std::in_place_index<2>, l.around(req, next(chain_, i + 1)));
    if (std::optional<response> refused = l.check(req)) return awaitable(std::in_place_index<0>, std::move(*refused));
  }
  std::variant<droid::detail::reply, task<droid::detail::reply>> served = detail::access::serve(req);
  if (auto* now = std::get_if<droid::detail::reply>(&served))
    return awaitable(std::in_place_index<0>, response(std::move(*now)));
  return awaitable(std::in_place_index<1>, std::move(std::get<1>(served)));
}

bool next::awaitable::await_suspend(std::coroutine_handle<> awaiting) noexcept {
  // The task's own awaiter holds nothing but its frame's handle: one made here and one
  // made in `await_resume` act on the same frame, which the task in `state_` owns.
  if (state_.index() == 1) return std::move(std::get<1>(state_)).operator co_await().await_suspend(awaiting);
  return std::move(std::get<2>(state_)).operator co_await().await_suspend(awaiting);
}

response next::awaitable::await_resume() {
  switch (state_.index()) {
    case 0: return std::move(std::get<0>(state_));
    case 1: return response(std::move(std::get<1>(state_)).operator co_await().await_resume());
    default: return std::move(std::get<2>(state_)).operator co_await().await_resume();
  }
}

namespace detail {

request access::make(std::shared_ptr<const chain> c, std::string_view method, const ir::json_node* params,
                     const ir::message* message, std::string_view params_text, const ir::request_id& id,
                     const peer_info& peer, const request_origin* origin, terminal last) {
  request r;
  r.method_ = method;
  if (params) {
    r.has_params_ = true;
    r.tree_ = params;
    r.message_ = message;
    r.given_text_ = params_text;
  }
  r.id_ = &id;
  r.peer_ = &peer;
  r.origin_ = origin;
  r.chain_ = std::move(c);
  r.terminal_ = last;
  return r;
}

void access::detach(request& req) {
  (void)req.name();  // from the tree, while it is there
  req.take_text();
  req.tree_ = nullptr;
  req.message_ = nullptr;
  req.given_text_ = {};
  if (req.live_) *req.live_ = nullptr;
  req.live_ = nullptr;
}

std::variant<droid::detail::reply, task<droid::detail::reply>> access::serve(request& req) {
  if (!req.terminal_.run)
    return droid::detail::reply::error(ir::errc::internal_error,
                                       "Internal error: a middleware passed the request on twice");
  // Once: the method runs for one request, whatever a middleware does with `next`.
  const terminal last = std::exchange(req.terminal_, terminal{});
  return last.run(last.host, req);
}

}  // namespace detail
}  // namespace droid::middleware
