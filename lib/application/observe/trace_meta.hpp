// SPDX-License-Identifier: BSL-1.0
/// @file
/// The request's W3C trace context, carried onto the questions its tool asks the client.
///
/// Application layer, private. Why: a client that traces a `tools/call` and is asked to
/// sample or elicit for it should see that question in the same trace; without the
/// context in the question's `_meta`, its span would start a trace of its own.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <droid/application/server/tool_context.hpp>

namespace droid::detail {

/// `params` with `traceparent`, `tracestate` and `baggage` from `trace` added to its
/// `_meta` wherever the tool did not set that key itself; none when there is nothing to
/// add (no trace, or params that are not an object). Why applied when the question is
/// sent and not when it is asked: a 2026-07-28 question is identified across rounds by
/// the hash of its params, and a retry's trace context may differ from the first
/// round's; the question must stay the same question.
[[nodiscard]] std::optional<std::string> traced_params(std::string_view params, const trace_context& trace);

/// The same for a request's context, which may not exist (a handler that made none).
[[nodiscard]] inline std::optional<std::string> traced_params(std::string_view params,
                                                              const std::optional<tool_context>& context) {
  if (!context || context->trace().empty()) return std::nullopt;
  return traced_params(params, context->trace());
}

}  // namespace droid::detail
