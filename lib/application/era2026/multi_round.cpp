// SPDX-License-Identifier: BSL-1.0
/// @file
/// The data and policy of multi round-trip requests: hashes, the sealed state's payload,
/// the checks on what a retry carries, and the server-wide registry of kept frames.
#include "multi_round.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <random>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <droid/domain/mcp/schema.hpp>

namespace droid::detail {

namespace {

/// One step of the hash: a word folded in, then multiplied and shifted so that every bit
/// of it reaches the high and the low half before the next word comes.
constexpr std::uint64_t fold(std::uint64_t h, std::uint64_t word) noexcept {
  h ^= word;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

/// Eight bytes as a little-endian word, whatever the machine: the hash must be the same
/// on every instance that may check a state.
std::uint64_t load_le(const unsigned char* p, std::size_t n) noexcept {
  std::uint64_t w = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&w, p, n);
  } else {
    for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  }
  return w;
}

}  // namespace

std::uint64_t stable_hash(std::string_view bytes, std::uint64_t seed) noexcept {
  // A word at a time: a byte at a time (FNV-1a, until state version 2) cost about 640
  // instructions of every 2026-07-28 request, which hashes its params (docs/benchmarks.md).
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  std::uint64_t h = fold(seed, n);
  for (; n >= 8; n -= 8, p += 8) h = fold(h, load_le(p, 8));
  // The tail, marked by a bit above it so that "a" and "a\0" differ.
  if (n > 0) h = fold(h, load_le(p, n) | (std::uint64_t{1} << (8 * n)));
  return h;
}

namespace {

std::uint64_t mix(std::uint64_t h, unsigned char tag) noexcept { return fold(h, 0x100u | tag); }

std::uint64_t mix_u64(std::uint64_t h, std::uint64_t v) noexcept { return fold(fold(h, 0x200u), v); }

}  // namespace

std::uint64_t hash_json(const ir::json_node& node, std::uint64_t h) noexcept {
  using t = ir::json_node::type;
  const t k = node.kind();
  h = mix(h, static_cast<unsigned char>(k));
  switch (k) {
    case t::null: break;
    case t::boolean: h = mix(h, node.boolean() ? 1 : 0); break;
    case t::integer: h = mix_u64(h, static_cast<std::uint64_t>(node.integer())); break;
    case t::unsigned_integer: h = mix_u64(h, node.unsigned_integer()); break;
    case t::floating: {
      const double d = node.number();
      std::uint64_t bits = 0;
      static_assert(sizeof bits == sizeof d);
      std::memcpy(&bits, &d, sizeof d);
      h = mix_u64(h, bits);
      break;
    }
    case t::string:
      h = mix_u64(h, node.string().size());
      h = stable_hash(node.string(), h);
      break;
    case t::array:
      h = mix_u64(h, node.size());
      node.for_each_element([&](const ir::json_node& e) { h = hash_json(e, h); });
      break;
    case t::object:
      h = mix_u64(h, node.size());
      node.for_each_member([&](std::string_view key, const ir::json_node& v) {
        h = mix_u64(h, key.size());
        h = stable_hash(key, h);
        h = hash_json(v, h);
      });
      break;
  }
  return h;
}

std::uint64_t request_binding(std::string_view method, const ir::json_node* params) noexcept {
  std::uint64_t h = stable_hash(method);
  h = mix(h, 0);
  if (!params || params->kind() != ir::json_node::type::object) return h;
  params->for_each_member([&](std::string_view key, const ir::json_node& v) {
    if (key == "_meta" || key == "inputResponses" || key == "requestState") return;
    h = mix_u64(h, key.size());
    h = stable_hash(key, h);
    h = hash_json(v, h);
  });
  return h;
}

std::string_view capability_for(std::string_view method) noexcept {
  if (method == "sampling/createMessage") return "sampling";
  if (method == "elicitation/create") return "elicitation";
  if (method == "roots/list") return "roots";
  return {};
}

bool may_require_input(std::string_view method) noexcept {
  return method == "tools/call" || method == "prompts/get" || method == "resources/read";
}

std::string default_question_key(std::string_view method, std::uint32_t ordinal) {
  // "sampling/createMessage" -> "sampling", "elicitation/create" -> "elicitation",
  // "roots/list" -> "roots": the word a reader of the result recognises.
  const std::string_view word = method.substr(0, method.find('/'));
  std::string key(word.empty() ? std::string_view("question") : word);
  key += '-';
  key += std::to_string(ordinal);
  return key;
}

const boost::json::value* retry_input::response(std::string_view key) const noexcept {
  for (const auto& [k, v] : responses)
    if (k == key) return &v;
  return nullptr;
}

std::optional<std::string> read_retry_input(const ir::json_node& params, retry_input& out) {
  ir::json_node state, responses;
  if (params.find("requestState", state)) {
    if (state.kind() != ir::json_node::type::string)
      return std::string("Invalid params: requestState must be the string the server sent, echoed unchanged");
    out.state = std::string(state.string());
  }
  if (!params.find("inputResponses", responses)) return std::nullopt;
  if (responses.kind() != ir::json_node::type::object)
    return "Invalid params: inputResponses must be an object that maps each key of the server's inputRequests to "
           "the client's result for it, not " +
           std::string(responses.kind_name());
  out.has_responses = true;
  std::optional<std::string> error;
  responses.for_each_member([&](std::string_view key, const ir::json_node& v) {
    if (error) return;
    if (v.kind() != ir::json_node::type::object) {
      error = "Invalid params: inputResponses." + std::string(key) + " must be the client's result object, not " +
              std::string(v.kind_name());
      return;
    }
    boost::json::value value;
    std::string why;
    if (!decode(v, value, why)) {
      error = "Invalid params: inputResponses." + std::string(key) + ": " + why;
      return;
    }
    out.responses.emplace_back(std::string(key), std::move(value));
  });
  return error;
}

namespace {

std::string hex(std::uint64_t v) {
  char buf[16];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, 16);
  (void)ec;
  return std::string(buf, end);
}

bool unhex(const boost::json::value* v, std::uint64_t& out) {
  if (!v || !v->is_string()) return false;
  const boost::json::string& s = v->get_string();
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

std::string encode_state(const round_state& state) {
  // Hashes and names as hex strings: JSON numbers above 2^53 do not survive every
  // parser, and this payload may one day be read by another implementation.
  boost::json::object o;
  o["v"] = state_version;
  o["exp"] = state.expires_ms;
  o["b"] = hex(state.binding);
  o["p"] = hex(state.principal);
  o["i"] = hex(state.instance);
  o["f"] = hex(state.frame);
  o["r"] = state.round;
  if (state.frame_only) o["fo"] = true;
  boost::json::array answers;
  for (const recorded_answer& a : state.answers)
    answers.push_back(boost::json::array{boost::json::string(a.key), boost::json::string(hex(a.hash)), a.value});
  o["a"] = std::move(answers);
  boost::json::array onces;
  for (const auto& [k, v] : state.onces) onces.push_back(boost::json::array{boost::json::string(k), v});
  o["o"] = std::move(onces);
  boost::json::array asked;
  for (const auto& [k, h] : state.asked) asked.push_back(boost::json::array{boost::json::string(k), boost::json::string(hex(h))});
  o["q"] = std::move(asked);
  return boost::json::serialize(o);
}

bool decode_state(std::string_view payload, round_state& out) {
  boost::json::value v;
  if (!ir::parse_exact(payload, v) || !v.is_object()) return false;
  const boost::json::object& o = v.get_object();
  const boost::json::value* version = o.if_contains("v");
  const boost::json::value* expires = o.if_contains("exp");
  const boost::json::value* round = o.if_contains("r");
  if (!version || !version->is_int64() || version->get_int64() != state_version) return false;
  if (!expires || !expires->is_int64() || !round || !(round->is_int64() || round->is_uint64())) return false;
  out.expires_ms = expires->get_int64();
  out.round = static_cast<std::uint32_t>(round->is_int64() ? round->get_int64() : round->get_uint64());
  if (!unhex(o.if_contains("b"), out.binding) || !unhex(o.if_contains("p"), out.principal) ||
      !unhex(o.if_contains("i"), out.instance) || !unhex(o.if_contains("f"), out.frame))
    return false;
  const boost::json::value* fo = o.if_contains("fo");
  out.frame_only = fo && fo->is_bool() && fo->get_bool();
  const auto array_of = [&](const char* key) -> const boost::json::array* {
    const boost::json::value* a = o.if_contains(key);
    return a && a->is_array() ? &a->get_array() : nullptr;
  };
  const boost::json::array* answers = array_of("a");
  const boost::json::array* onces = array_of("o");
  const boost::json::array* asked = array_of("q");
  if (!answers || !onces || !asked) return false;
  for (const boost::json::value& a : *answers) {
    if (!a.is_array() || a.get_array().size() != 3 || !a.get_array()[0].is_string()) return false;
    recorded_answer r;
    r.key = std::string(a.get_array()[0].get_string());
    if (!unhex(&a.get_array()[1], r.hash)) return false;
    r.value = a.get_array()[2];
    out.answers.push_back(std::move(r));
  }
  for (const boost::json::value& a : *onces) {
    if (!a.is_array() || a.get_array().size() != 2 || !a.get_array()[0].is_string()) return false;
    out.onces.emplace_back(std::string(a.get_array()[0].get_string()), a.get_array()[1]);
  }
  for (const boost::json::value& a : *asked) {
    std::uint64_t h = 0;
    if (!a.is_array() || a.get_array().size() != 2 || !a.get_array()[0].is_string() ||
        !unhex(&a.get_array()[1], h))
      return false;
    out.asked.emplace_back(std::string(a.get_array()[0].get_string()), h);
  }
  return true;
}

namespace {

/// Why `value` does not fit the elicitation field schema `field` (a primitive: string,
/// number, integer, boolean, or an array of enumerated strings), or nothing.
std::optional<std::string> check_field(std::string_view name, const boost::json::object& field,
                                       const boost::json::value& value) {
  const boost::json::value* type = field.if_contains("type");
  const std::string_view t = type && type->is_string() ? std::string_view(type->get_string()) : std::string_view();
  const auto wrong = [&](std::string_view what) {
    return "field `" + std::string(name) + "` must be " + std::string(what);
  };
  const auto in_enum = [&](const boost::json::value& v, const boost::json::object& schema) {
    const boost::json::value* e = schema.if_contains("enum");
    if (!e || !e->is_array()) return true;
    const boost::json::array& options = e->get_array();
    return std::find(options.begin(), options.end(), v) != options.end();
  };
  if (t == "string") {
    if (!value.is_string()) return wrong("a string");
    if (!in_enum(value, field)) return wrong("one of its enum values");
    const std::size_t size = value.get_string().size();
    const boost::json::value* min = field.if_contains("minLength");
    const boost::json::value* max = field.if_contains("maxLength");
    if (min && min->is_int64() && static_cast<std::int64_t>(size) < min->get_int64()) return wrong("longer");
    if (max && max->is_int64() && static_cast<std::int64_t>(size) > max->get_int64()) return wrong("shorter");
  } else if (t == "number") {
    if (!value.is_number()) return wrong("a number");
  } else if (t == "integer") {
    if (!value.is_int64() && !value.is_uint64() &&
        !(value.is_double() && value.get_double() == static_cast<double>(static_cast<std::int64_t>(value.get_double()))))
      return wrong("an integer");
  } else if (t == "boolean") {
    if (!value.is_bool()) return wrong("a boolean");
  } else if (t == "array") {
    if (!value.is_array()) return wrong("an array");
    const boost::json::value* items = field.if_contains("items");
    if (items && items->is_object())
      for (const boost::json::value& e : value.get_array())
        if (!in_enum(e, items->get_object())) return wrong("an array of its enum values");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_elicitation_answer(std::string_view question_params,
                                                    const boost::json::value& answer) {
  const boost::json::object* result = answer.if_object();
  const boost::json::value* action = result ? result->if_contains("action") : nullptr;
  if (!action || !action->is_string())
    return std::string("the elicitation result has no action (accept, decline or cancel)");
  const boost::json::string& a = action->get_string();
  if (a == "decline" || a == "cancel") return std::nullopt;
  if (a != "accept") return "the elicitation action `" + std::string(a) + "` is not accept, decline or cancel";
  boost::json::value params;
  const boost::json::object* p = ir::parse_exact(question_params, params) ? params.if_object() : nullptr;
  const boost::json::value* mode = p ? p->if_contains("mode") : nullptr;
  if (mode && mode->is_string() && mode->get_string() == "url") return std::nullopt;  // nothing comes back
  const boost::json::value* schema = p ? p->if_contains("requestedSchema") : nullptr;
  if (!schema || !schema->is_object()) return std::nullopt;
  const boost::json::value* content = result->if_contains("content");
  if (!content || !content->is_object()) return std::string("an accepted form elicitation must carry its content object");
  const boost::json::object& fields = content->get_object();
  const boost::json::value* required = schema->get_object().if_contains("required");
  if (required && required->is_array())
    for (const boost::json::value& r : required->get_array())
      if (r.is_string() && !fields.contains(r.get_string()))
        return "the required field `" + std::string(r.get_string()) + "` is missing";
  const boost::json::value* properties = schema->get_object().if_contains("properties");
  if (!properties || !properties->is_object()) return std::nullopt;
  for (const auto& [name, field] : properties->get_object()) {
    const boost::json::value* v = fields.if_contains(name);
    if (!v || !field.is_object()) continue;
    if (auto why = check_field(name, field.get_object(), *v)) return why;
  }
  return std::nullopt;
}

multi_round_context::multi_round_context(const server_options::multi_round_options& options)
    : options_(options), sealer_(options.state_secrets), instance_(0) {
  std::random_device rd;
  instance_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  if (instance_ == 0) instance_ = 1;
}

std::uint64_t multi_round_context::mint_frame() noexcept {
  std::lock_guard lock(mutex_);
  return next_frame_++;
}

std::vector<multi_round_context::eviction> multi_round_context::keep(std::uint64_t frame,
                                                                     std::weak_ptr<request_runner> owner) {
  std::vector<eviction> out;
  std::lock_guard lock(mutex_);
  const std::uint64_t order = next_order_++;
  auto [it, fresh] = frames_.try_emplace(frame);
  if (!fresh) by_age_.erase(it->second.order);
  it->second = entry{std::move(owner), order};
  by_age_.emplace(order, frame);
  while (frames_.size() > options_.max_kept_frames && !by_age_.empty()) {
    const auto oldest = by_age_.begin();
    auto victim = frames_.find(oldest->second);
    out.push_back(eviction{std::move(victim->second.owner), victim->first});
    frames_.erase(victim);
    by_age_.erase(oldest);
  }
  return out;
}

std::shared_ptr<request_runner> multi_round_context::claim(std::uint64_t frame) {
  std::lock_guard lock(mutex_);
  auto it = frames_.find(frame);
  if (it == frames_.end()) return nullptr;
  std::shared_ptr<request_runner> owner = it->second.owner.lock();
  by_age_.erase(it->second.order);
  frames_.erase(it);
  return owner;
}

bool multi_round_context::forget(std::uint64_t frame) {
  std::lock_guard lock(mutex_);
  auto it = frames_.find(frame);
  if (it == frames_.end()) return false;
  by_age_.erase(it->second.order);
  frames_.erase(it);
  return true;
}

std::size_t multi_round_context::kept() const {
  std::lock_guard lock(mutex_);
  return frames_.size();
}

}  // namespace droid::detail
