// SPDX-License-Identifier: BSL-1.0
/// @file
/// `detail::change_fanout`: who is told when what a server offers changes.
///
/// Application layer, internal. Why apart from the registries (server_core.hpp): a
/// registration changes the catalog and then tells the audience, and the two have
/// nothing else in common. The catalog is read on every request without a lock; the
/// audience (live 2025 sessions, `subscriptions/listen` streams, the scale-out module's
/// relay, the application's roots handlers) changes with connections and has its own
/// lock. Keeping them in one class made every reader of either wade through both.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <droid/application/server/hosting.hpp>
#include <droid/application/server/peer_info.hpp>
#include <droid/application/server/server.hpp>
#include <droid/application/server/visibility.hpp>

namespace droid {

class server;
class session;

namespace detail {

/// Something to tell when what the server offers changes (declared with the transport-facing
/// functions, since the scale-out module listens too).
using change_listener = hosting::change_listener;

/// The entry a change is about, so that a session that cannot see it (server::visible_if)
/// is not told. Shared: it travels to each session's shard, and a removed tool's info
/// must outlive the catalog that dropped it.
struct changed_entry {
  entry_kind kind = entry_kind::tool;
  std::string name;
  std::shared_ptr<const tool_entry> tool;  ///< for a tool, its entry
  [[nodiscard]] static std::shared_ptr<const changed_entry> of(const std::shared_ptr<const tool_entry>& t) {
    return std::make_shared<const changed_entry>(changed_entry{entry_kind::tool, t->info.name, t});
  }
};

/// The audience of one server's changes. Affinity: any thread; each session is told on its
/// own shard (posted). Lifetime: owned by the server's core; holds its audience weakly.
class change_fanout {
 public:
  /// `owner` reports a failing roots handler through its diagnostics.
  explicit change_fanout(const server& owner) : owner_(owner) {}

  /// Registers a live session for list_changed and resources/updated (held weakly).
  void attach(const std::shared_ptr<session>& s);
  /// Registers `l` until it is destroyed (held weakly: dropping the last reference
  /// unsubscribes).
  void listen(const std::shared_ptr<change_listener>& l);
  /// Tells every live session and listener that a list changed (`method`). With `what`,
  /// a 2025 session that the server's visibility predicate hides it from is not told
  /// (2026-07-28 listen streams and the scale-out relay are: their callers' views are
  /// per request, and a listen stream holds no request's origin).
  void list_changed(std::string_view method, std::shared_ptr<const changed_entry> what = nullptr);
  /// Tells the sessions subscribed to `uri`, and every listener, that it changed.
  void resource_updated(std::string_view uri);

  /// Adds a handler run when a client says its roots changed.
  void on_roots_list_changed(std::function<void(const peer_info&)> handler);
  /// Runs the roots handlers for `peer`; a handler that throws is reported, not fatal.
  void roots_list_changed(const peer_info& peer) const;

 private:
  /// Who hears of a change: the live sessions and listeners, taken out from under
  /// `mutex_` (so that telling them holds no lock) and the ended ones forgotten.
  struct audience {
    std::vector<std::shared_ptr<session>> sessions;
    std::vector<std::shared_ptr<change_listener>> listeners;
  };
  [[nodiscard]] audience audience_now();
  /// Whether session `s` sees `what` by `shown` (on `s`'s shard).
  /// Static: it runs posted, when this fanout may be gone.
  [[nodiscard]] static bool sees(const session& s, const visibility_predicate& shown, const changed_entry& what);

  const server& owner_;
  /// Guards the lists below.
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<session>> sessions_;
  /// `sessions_` is swept of ended sessions when it reaches this size, which is then set
  /// to twice the live count: attaching stays O(1) amortised however many sessions live
  /// (stateless HTTP attaches one per request).
  std::size_t sweep_at_ = 64;
  std::vector<std::weak_ptr<change_listener>> listeners_;
  std::vector<std::function<void(const peer_info&)>> roots_handlers_;
};

}  // namespace detail
}  // namespace droid
