// SPDX-License-Identifier: BSL-1.0
/// @file
/// The exchange table (exchange_table.hpp): parking, resuming, routing, withdrawing.
#include "exchange_table.hpp"

#include <charconv>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include <droid/domain/ir/codec.hpp>

namespace droid::detail {

void exchange_table::park(std::int64_t id, exchange_waiter& waiter, question_carrier& carrier) {
  parked_.insert_or_assign(id, parked{&waiter, &carrier});
}

bool exchange_table::resume(std::int64_t id, exchange_result outcome) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return false;
  exchange_waiter* w = it->second.waiter;
  // Out of the table before the tool runs: it may ask again (a new entry) or end its
  // request (its carrier with it) before `resume()` returns.
  parked_.erase(it);
  *w->slot = std::move(outcome);
  w->handle.resume();
  return true;
}

bool exchange_table::route_answer(const ir::message& msg) {
  std::int64_t id = 0;
  const ir::request_id& rid = msg.id();
  bool numeric = rid.is_integer();
  if (numeric) {
    id = rid.integer();
  } else {
    const std::string& text = rid.string();
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    numeric = ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }
  const auto it = numeric ? parked_.find(id) : parked_.end();
  if (it == parked_.end() || !it->second.carrier->answered_by_id()) {
    ++dropped_;
    return false;
  }
  exchange_result outcome;
  if (msg.kind() == ir::message_kind::response) {
    boost::json::value v;
    if (ir::parse_exact(msg.result().text, v))
      outcome = exchange_result(std::move(v));
    else
      outcome = exchange_result(
          exchange_error{make_error_code(errc::peer_error), 0, "the peer's result could not be read", {}});
  } else {
    outcome = exchange_result(exchange_error{make_error_code(errc::peer_error), msg.error_code(),
                                             msg.error_message(), std::string(msg.error_data().text)});
  }
  it->second.carrier->answered(id);
  return resume(id, std::move(outcome));
}

void exchange_table::withdraw(std::int64_t id) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return;  // answered, or ended, meanwhile
  std::optional<exchange_result> outcome = it->second.carrier->withdraw(id);
  if (outcome) resume(id, std::move(*outcome));
}

void exchange_table::end_answered_by_id(std::string_view why) {
  // Ids first, then one resume at a time: a resumed tool may ask again, or end and
  // withdraw its other questions, while this walks.
  std::vector<std::int64_t> ending;
  for (const auto& [id, p] : parked_)
    if (p.carrier->answered_by_id()) ending.push_back(id);
  for (const std::int64_t id : ending)
    resume(id, exchange_result(exchange_error{make_error_code(errc::session_ended), 0, std::string(why), {}}));
}

}  // namespace droid::detail
