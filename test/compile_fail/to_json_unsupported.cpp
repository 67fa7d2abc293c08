// SPDX-License-Identifier: BSL-1.0
// Converting a type with no JSON form (a raw pointer) for structuredContent.
// droid-expect-error: droid: this type cannot be converted to JSON
#include <droid/domain/mcp/schema.hpp>

boost::json::value convert() {
  const int* p = nullptr;
  return droid::to_json_value(p);
}
