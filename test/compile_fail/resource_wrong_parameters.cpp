// SPDX-License-Identifier: BSL-1.0
// A resource handler that forgot the context parameter.
// droid-expect-error: droid: a resource handler takes (droid::resource_context&)
#include <droid/application/server/server.hpp>

void register_resources(droid::server& server) {
  server.resource({.uri = "memo://today", .name = "today"},
                  [](droid::resource_request) -> droid::task<droid::resource_contents> { co_return {}; });
}
