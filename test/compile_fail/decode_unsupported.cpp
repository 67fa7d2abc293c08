// SPDX-License-Identifier: BSL-1.0
// Decoding JSON into a type the decoder does not support (a raw pointer).
// droid-expect-error: droid: this type cannot be decoded from JSON
#include <string>

#include <droid/domain/mcp/schema.hpp>

bool read(const droid::ir::json_node& node) {
  int* out = nullptr;
  std::string error;
  return droid::decode(node, out, error);
}
