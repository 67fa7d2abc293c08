// SPDX-License-Identifier: BSL-1.0
// A typed tool result with a member that has no JSON form (a raw pointer): refused at
// registration with one sentence, before the encoder's own assertion.
// droid-expect-error: droid: a tool's result struct has a member with no JSON form
#include <boost/describe/class.hpp>

#include <droid/application/server/server.hpp>

struct lookup_result {
  int hits = 0;
  const char* first = nullptr;
};
BOOST_DESCRIBE_STRUCT(lookup_result, (), (hits, first))

void register_tools(droid::server& server) {
  server.tool("lookup", "Looks a key up", [](droid::tool_context&) -> droid::task<lookup_result> {
    co_return lookup_result{};
  });
}
