// SPDX-License-Identifier: BSL-1.0
/// @file
/// Multi round-trip requests (2026-07-28, `input_required`): what a round carries across
/// the client, and what the server's shards share about the frames they keep.
///
/// Application layer, private. In 2026-07-28 a server cannot send requests; a tool that
/// asks the client something makes its request answer `input_required` with the
/// questions (`inputRequests`) and an opaque `requestState`, and the client retries the
/// request with the answers (`inputResponses`) and the state echoed back. The runner
/// (request_runner.cpp) does the asking and resuming; this file holds the parts that are
/// pure data and policy:
///
/// - `round_state`: what `requestState` seals. The kept frame's name and round (so a
///   retry resumes the very coroutine that asked), the request it belongs to (a state
///   presented on another request is refused), an expiry, and a transcript (every answer
///   so far and every `once` value), so that a retry that finds no frame replays the tool
///   from the start without asking anything twice.
/// - `retry_input`: what a retry carries, read and checked once at admission.
/// - `multi_round_context`: per server, shared by its shards: the sealer, and the
///   registry of kept frames that bounds their number server-wide and tells a shard which
///   shard a retry's frame waits on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include <droid/application/server/server.hpp>
#include <droid/domain/ir/json_node.hpp>
#include <droid/domain/ir/request_id.hpp>

#include "sealed_state.hpp"

namespace droid {
class request_runner;
}

namespace droid::detail {

/// A 64-bit hash that reads a word at a time (a multiply and a shift per eight bytes).
/// Why this and not `std::hash`: a state made by one instance is checked by another
/// (another build, another machine), so the hash must be the same everywhere; what it
/// guards against is accident (a question that changed, another request's state), not an
/// adversary, because the state it sits in is sealed. Changing it changes every hash in
/// a state, so it goes with a new `state_version`.
inline constexpr std::uint64_t hash_seed = 14695981039346656037ull;
[[nodiscard]] std::uint64_t stable_hash(std::string_view bytes, std::uint64_t seed = hash_seed) noexcept;
/// A hash of a parsed JSON value's content (member order counts: a retry re-sends the
/// request as it was).
[[nodiscard]] std::uint64_t hash_json(const ir::json_node& node, std::uint64_t seed = hash_seed) noexcept;
/// What names a request for its state: the method and every member of its params except
/// `_meta`, `inputResponses` and `requestState` (the tool or prompt name, the arguments,
/// the resource URI).
[[nodiscard]] std::uint64_t request_binding(std::string_view method, const ir::json_node* params) noexcept;

/// The capability a client must declare before it may be asked `method` (empty: none).
[[nodiscard]] std::string_view capability_for(std::string_view method) noexcept;

/// True for the methods a 2026-07-28 server may answer `input_required` (tools/call,
/// prompts/get, resources/read); every other method must never.
[[nodiscard]] bool may_require_input(std::string_view method) noexcept;
/// The name a question goes by when its tool gave none: the method's last word and the
/// question's place among the questions the request asked (`elicitation-1`). Stable
/// across rounds, because a tool asks in the same order each time it runs.
[[nodiscard]] std::string default_question_key(std::string_view method, std::uint32_t ordinal);

/// What a retry carries, owned (the params' parse does not outlive admission).
struct retry_input {
  std::optional<std::string> state{};
  /// `inputResponses`, key by key, in the order sent.
  std::vector<std::pair<std::string, boost::json::value>> responses{};
  bool has_responses = false;
  [[nodiscard]] bool empty() const noexcept { return !state && !has_responses; }
  [[nodiscard]] const boost::json::value* response(std::string_view key) const noexcept;
};
/// Reads `inputResponses` and `requestState` from a request's params. Returns the
/// -32602 message for a malformed one (`inputResponses` not an object, or one of its
/// values not an object; `requestState` not a string); nothing when they are absent or
/// well formed.
[[nodiscard]] std::optional<std::string> read_retry_input(const ir::json_node& params, retry_input& out);

/// An answer the client gave in an earlier round, as the state records it.
struct recorded_answer {
  std::string key;
  std::uint64_t hash = 0;  ///< of the question it answered (`stable_hash` of method and params)
  boost::json::value value;
};

/// What `requestState` seals.
struct round_state {
  /// Milliseconds since the Unix epoch after which the state is refused.
  std::int64_t expires_ms = 0;
  std::uint64_t binding = 0;    ///< `request_binding` of the request that made it
  std::uint64_t principal = 0;  ///< `stable_hash` of the authenticated principal ("" when none)
  std::uint64_t instance = 0;   ///< the server instance that keeps the frame
  std::uint64_t frame = 0;      ///< the kept frame's name there (0: none was kept)
  std::uint32_t round = 0;      ///< rounds answered `input_required` so far, this one included
  /// The answers were too large for `max_state_bytes` and were left out: without its
  /// frame this state cannot be replayed.
  bool frame_only = false;
  std::vector<recorded_answer> answers{};
  std::vector<std::pair<std::string, boost::json::value>> onces{};
  /// The questions outstanding when it was sealed: key and question hash. Why: an answer
  /// in `inputResponses` counts only for the question it was asked for.
  std::vector<std::pair<std::string, std::uint64_t>> asked{};
};
/// The version a sealed state's payload carries (`"v"`). 2: `stable_hash` reads words (1
/// hashed bytes); a state of another version is refused as one this server cannot read,
/// and the client sends its request again without it.
inline constexpr std::int64_t state_version = 2;
[[nodiscard]] std::string encode_state(const round_state& state);
/// False for a payload this code did not write (another version's).
[[nodiscard]] bool decode_state(std::string_view payload, round_state& out);

/// Checks an answer to `elicitation/create` (whose params were `question_params`) before
/// the tool sees it: an action of accept, decline or cancel, and for an accepted form
/// the content the requested schema asks for (required fields present, each field of its
/// declared type and among its `enum`). Returns why it does not fit, or nothing.
[[nodiscard]] std::optional<std::string> check_elicitation_answer(std::string_view question_params,
                                                                  const boost::json::value& answer);

/// What the multi round-trip machinery shares across one server's shards.
///
/// Why per server and locked: a retry may reach any shard (HTTP accepts round-robin)
/// while the frame it resumes waits on the shard that ran it; and the bound on kept
/// frames is one number for the whole server. The lock is taken once per round, never
/// on a request that asks nothing.
/// Affinity: any thread.
class multi_round_context {
 public:
  explicit multi_round_context(const server_options::multi_round_options& options);

  [[nodiscard]] const server_options::multi_round_options& options() const noexcept { return options_; }
  [[nodiscard]] const state_sealer& sealer() const noexcept { return sealer_; }
  /// Random per server object: a state naming another instance's frame is replayed.
  [[nodiscard]] std::uint64_t instance() const noexcept { return instance_; }
  [[nodiscard]] std::uint64_t mint_frame() noexcept;

  /// A frame to let go because the bound was reached: its owner and its name.
  struct eviction {
    std::weak_ptr<request_runner> owner;
    std::uint64_t frame = 0;
  };
  /// Registers `frame`, kept by `owner`; returns the frames that must go to stay within
  /// `max_kept_frames` (the oldest first), which the caller tells their owners about.
  [[nodiscard]] std::vector<eviction> keep(std::uint64_t frame, std::weak_ptr<request_runner> owner);
  /// Takes `frame` out of the registry for a retry and returns who kept it (null: it is
  /// not kept any more). Only the taker may resume the frame.
  [[nodiscard]] std::shared_ptr<request_runner> claim(std::uint64_t frame);
  /// Takes `frame` out of the registry for its owner (its time to live passed, or it
  /// ended); false when a retry claimed it first.
  bool forget(std::uint64_t frame);
  [[nodiscard]] std::size_t kept() const;

 private:
  server_options::multi_round_options options_;
  state_sealer sealer_;
  std::uint64_t instance_;
  mutable std::mutex mutex_;
  std::uint64_t next_frame_ = 1;
  std::uint64_t next_order_ = 0;
  struct entry {
    std::weak_ptr<request_runner> owner;
    std::uint64_t order = 0;
  };
  std::unordered_map<std::uint64_t, entry> frames_;
  /// Keep order to frame, oldest first: who goes when the bound is reached.
  std::map<std::uint64_t, std::uint64_t> by_age_;
};

}  // namespace droid::detail
