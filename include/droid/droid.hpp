// SPDX-License-Identifier: BSL-1.0
/// @file
/// The umbrella header: exactly the supported public surface of protocol_droid.
#pragma once

// What BOOST_DESCRIBE_STRUCT and BOOST_DESCRIBE_ENUM need, so that a tool's argument
// struct is described with this header alone (the narrow headers, not <boost/describe.hpp>).
#include <boost/describe/class.hpp>
#include <boost/describe/enum.hpp>

#include <droid/adapters/primary/transport/http/http.hpp>
#include <droid/adapters/primary/transport/http/metrics_route.hpp>
#include <droid/adapters/primary/transport/stdio/stdio.hpp>
#include <droid/adapters/secondary/auth/jwt.hpp>
#include <droid/adapters/secondary/auth/token_verifier.hpp>
#include <droid/adapters/secondary/event_store/event_store.hpp>
#include <droid/application/middleware/access_log.hpp>
#include <droid/application/middleware/map_errors.hpp>
#include <droid/application/middleware/rate_limit.hpp>
#include <droid/application/server/metrics.hpp>
#include <droid/application/server/middleware.hpp>
#include <droid/application/server/observer.hpp>
#include <droid/application/server/principal.hpp>
#include <droid/application/server/request_origin.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/session.hpp>
#include <droid/application/server/task_store.hpp>
#include <droid/application/server/tool_context.hpp>
#include <droid/application/deadline.hpp>
#include <droid/application/spawn.hpp>
#include <droid/application/task.hpp>
#include <droid/application/use_task.hpp>
#include <droid/application/when_all.hpp>
#include <droid/domain/errc.hpp>
#include <droid/domain/mcp/content.hpp>
#include <droid/domain/mcp/elicitation.hpp>
#include <droid/domain/mcp/pattern.hpp>
#include <droid/domain/mcp/prompt.hpp>
#include <droid/domain/mcp/resource.hpp>
#include <droid/domain/mcp/sampling.hpp>
#include <droid/domain/mcp/schema.hpp>
#include <droid/domain/mcp/tool.hpp>
#include <droid/domain/mcp/uri_template.hpp>
#include <droid/domain/result.hpp>
#include <droid/version.hpp>
