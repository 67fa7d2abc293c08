// SPDX-License-Identifier: BSL-1.0
/// @file
/// Progress, notifications and cancellable sleep for tools.
#include <droid/application/server/tool_context.hpp>

#include <asio/steady_timer.hpp>

#include <boost/json/value.hpp>

#include <droid/application/use_task.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid {

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

send_awaiter tool_context::notify(std::string_view method, std::string params_json) {
  channel_->notify(method, std::move(params_json));
  return {};
}

task<std::error_code> tool_context::sleep(std::chrono::steady_clock::duration duration) {
  asio::steady_timer timer(executor_, duration);
  const std::error_code ec = co_await timer.async_wait(use_task(stop_));
  // The timer reports cancellation as operation_aborted; tools compare against our
  // condition so they need not know which Asio operation was interrupted.
  if (ec || stop_.stop_requested()) co_return make_error_code(errc::cancelled);
  co_return std::error_code{};
}

}  // namespace droid
