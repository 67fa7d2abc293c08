// SPDX-License-Identifier: BSL-1.0
// <droid/application/middleware/map_errors.hpp>: every error and every exception after it
// in the chain, through one mapper.
#include <droid/application/middleware/map_errors.hpp>

#include <optional>
#include <utility>

#include <droid/application/server/tool_context.hpp>
#include <droid/domain/ir/codec.hpp>

namespace droid::middleware {

handler map_errors(error_mapper mapper) {
  auto shared = std::make_shared<const error_mapper>(std::move(mapper));
  return [shared](request& req, next pass) -> task<response> {
    std::optional<response> answer;
    error_info e;
    try {
      answer.emplace(co_await pass(req));
    } catch (const protocol_error& x) {
      e.code = x.code();
      e.message = x.what();
      if (!x.data().empty()) (void)ir::parse_exact(x.data(), e.data);
      e.thrown = std::current_exception();
    } catch (const std::exception& x) {
      e.code = -32603;
      e.message = x.what();
      e.thrown = std::current_exception();
    } catch (...) {
      e.code = -32603;
      e.message = "an exception that is not a std::exception";
      e.thrown = std::current_exception();
    }
    if (answer) {
      if (!answer->is_error()) co_return std::move(*answer);
      e.code = answer->error_code();
      e.message = std::string(answer->error_message());
      if (!answer->error_data().empty()) (void)ir::parse_exact(answer->error_data(), e.data);
      e.http_status = answer->http_status();
    }
    const std::chrono::seconds wait = answer ? answer->retry_after() : std::chrono::seconds(0);
    (*shared)(req, e);
    if (e.http_status != 0)
      co_return response::refuse(e.http_status, e.code, std::move(e.message),
                                 wait.count() > 0 ? wait : std::chrono::seconds(1), e.data);
    co_return response::error(e.code, std::move(e.message), e.data);
  };
}

void hide_internal_details(const request&, error_info& e) {
  if (e.code != -32603) return;
  e.message = "Internal error";
  e.data = nullptr;
}

}  // namespace droid::middleware
