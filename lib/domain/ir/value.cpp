// SPDX-License-Identifier: BSL-1.0
// JSON text to a boost::json::value through the library's own parser (ir/codec.hpp says
// why not boost::json::parse).
#include <droid/domain/ir/codec.hpp>

#include <boost/json/value.hpp>

#include <droid/domain/ir/json_node.hpp>

namespace droid::ir {

// Filled in place: a value built on the side and moved into an object costs a copy per
// member (Boost.JSON moves between storages by copying).
void assign_value(const json_node& n, boost::json::value& out) {
  using K = json_node::type;
  switch (n.kind()) {
    case K::null: out = nullptr; return;
    case K::boolean: out = n.boolean(); return;
    case K::integer: out = n.integer(); return;
    case K::unsigned_integer: out = n.unsigned_integer(); return;
    case K::floating: out = n.number(); return;
    case K::string: out.emplace_string().assign(n.string()); return;
    case K::array: {
      boost::json::array& a = out.emplace_array();
      a.reserve(n.size());
      n.for_each_element([&](const json_node& e) { assign_value(e, a.emplace_back(nullptr)); });
      return;
    }
    case K::object: {
      boost::json::object& o = out.emplace_object();
      o.reserve(n.size());
      n.for_each_member([&](std::string_view k, const json_node& e) { assign_value(e, o[k]); });
      return;
    }
  }
}

bool parse_exact(std::string_view text, boost::json::value& out) {
  const std::error_code ec = visit_json(text, [&](const json_node& n) { assign_value(n, out); });
  return !ec;
}

}  // namespace droid::ir
