// SPDX-License-Identifier: BSL-1.0
// A resource handler returning text instead of resource contents.
// droid-expect-error: droid: a resource handler returns droid::task<droid::resource_contents>
#include <string>

#include <droid/application/server/server.hpp>

void register_resources(droid::server& server) {
  server.resource({.uri = "memo://today", .name = "today"},
                  [](droid::resource_context&) -> droid::task<std::string> { co_return "not contents"; });
}
