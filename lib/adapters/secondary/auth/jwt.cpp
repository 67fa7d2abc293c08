// SPDX-License-Identifier: BSL-1.0
#include <droid/adapters/secondary/auth/jwt.hpp>

#include <algorithm>
#include <cctype>
#include <coroutine>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <asio/execution/outstanding_work.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <droid/application/spawn.hpp>

#include "jose.hpp"
#include "jwks_fetch.hpp"

namespace droid::auth {

std::string_view to_string(token_error e) noexcept {
  switch (e) {
    case token_error::none: return "none";
    case token_error::malformed: return "malformed";
    case token_error::bad_signature: return "bad signature";
    case token_error::unknown_key: return "unknown key";
    case token_error::expired: return "expired";
    case token_error::not_yet_valid: return "not yet valid";
    case token_error::wrong_issuer: return "wrong issuer";
    case token_error::wrong_audience: return "wrong audience";
    case token_error::unavailable: return "unavailable";
  }
  return "unknown";
}

namespace {

using detail::jwk;
using detail::key_set;
using detail::key_type;

verification refuse(token_error e, std::string_view why) {
  verification v;
  v.error = e;
  v.description = why;
  return v;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// A token taken apart and its header checked: what key selection and the signature
/// check need, before anything in the claims is trusted.
struct parsed_token {
  std::string signing_input{};
  std::string signature{};
  std::string claims{};
  key_type type = key_type::rsa;
  std::optional<std::string> kid{};
};

/// Splits and decodes `token` and checks its header; on failure `error` says why.
std::optional<parsed_token> parse_token(std::string_view token, std::size_t max_bytes, verification& error) {
  if (token.empty() || token.size() > max_bytes) {
    error = refuse(token_error::malformed, token.empty() ? "the token is empty" : "the token is too large");
    return std::nullopt;
  }
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    error = refuse(token_error::malformed, "the token is not a compact JWS of three segments");
    return std::nullopt;
  }
  parsed_token t;
  std::string header_json;
  if (!detail::base64url_decode(token.substr(0, dot1), header_json) ||
      !detail::base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), t.claims) ||
      !detail::base64url_decode(token.substr(dot2 + 1), t.signature)) {
    error = refuse(token_error::malformed, "the token is not base64url");
    return std::nullopt;
  }
  boost::system::error_code ec;
  const boost::json::value header = boost::json::parse(header_json, ec);
  if (ec || !header.is_object()) {
    error = refuse(token_error::malformed, "the token's header is not a JSON object");
    return std::nullopt;
  }
  const boost::json::object& h = header.get_object();
  const auto* alg = h.if_contains("alg");
  if (!alg || !alg->is_string()) {
    error = refuse(token_error::malformed, "the token's header has no alg");
    return std::nullopt;
  }
  // Only the three asymmetric algorithms: `none` would accept anything, and an HMAC
  // algorithm would let a public key (which anyone has) serve as the secret.
  const auto type = detail::key_type_for_alg(alg->get_string());
  if (!type) {
    error = refuse(token_error::bad_signature, "the token's algorithm is refused (RS256, ES256 or EdDSA only)");
    return std::nullopt;
  }
  t.type = *type;
  // RFC 7515 section 4.1.11: extensions listed in crit must be understood, and this
  // verifier understands none.
  if (h.contains("crit")) {
    error = refuse(token_error::bad_signature, "the token's header has critical extensions");
    return std::nullopt;
  }
  if (const auto* typ = h.if_contains("typ")) {
    // A media type whose `application/` may be left out (RFC 7515 §4.1.9): RFC 9068 §4
    // names `application/at+jwt` and `at+jwt` as the same type, and both must pass.
    std::string_view type_name = typ->is_string() ? std::string_view(typ->get_string()) : std::string_view();
    if (type_name.size() > 12 && iequals(type_name.substr(0, 12), "application/")) type_name.remove_prefix(12);
    if (!typ->is_string() || !(iequals(type_name, "JWT") || iequals(type_name, "at+jwt"))) {
      error = refuse(token_error::malformed, "the token's typ is not JWT or at+jwt");
      return std::nullopt;
    }
  }
  if (const auto* kid = h.if_contains("kid")) {
    if (!kid->is_string()) {
      error = refuse(token_error::malformed, "the token's kid is not a string");
      return std::nullopt;
    }
    t.kid = std::string(kid->get_string());
  }
  t.signing_input = token.substr(0, dot2);
  return t;
}

/// How a key was looked up in a set.
enum class lookup { found, refused, missing };

/// Finds the key for `t` in `set` (which may be null: no keys yet).
///
/// The key's type must be the algorithm's: a `kid` naming a key of another type is
/// refused rather than tried, which is what stops an RS256 header from being checked
/// against an EC key or the reverse. A token without `kid` is only matched when the set
/// has exactly one key of the type, since guessing among several would let the token
/// choose.
lookup find_key(const key_set* set, const parsed_token& t, const jwk*& key, verification& error) {
  key = nullptr;
  if (!set) {
    error = refuse(token_error::unavailable, "no keys are available to verify the token");
    return lookup::missing;
  }
  bool kid_of_other_type = false;
  std::size_t of_type = 0;
  for (const jwk& k : set->keys) {
    if (t.kid) {
      if (k.kid != *t.kid) continue;
      if (k.type != t.type) {
        kid_of_other_type = true;
        continue;
      }
      key = &k;
      return lookup::found;
    }
    if (k.type == t.type) {
      ++of_type;
      key = &k;
    }
  }
  if (kid_of_other_type) {
    error = refuse(token_error::bad_signature, "the token's algorithm does not match its key's type");
    return lookup::refused;
  }
  if (t.kid) {
    error = refuse(token_error::unknown_key, "the token's kid names no known key");
    return lookup::missing;
  }
  if (of_type == 1) return lookup::found;
  key = nullptr;
  error = refuse(token_error::unknown_key, of_type == 0 ? "no key of the token's algorithm is known"
                                                        : "the token has no kid and several keys could sign it");
  return lookup::refused;  // a refresh cannot make a kid-less choice unambiguous
}

/// A claim that must be a number of seconds, if present.
std::optional<double> seconds_claim(const boost::json::object& o, std::string_view name, bool& malformed) {
  const auto* v = o.if_contains(name);
  if (!v) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double()) return v->get_double();
  malformed = true;
  return std::nullopt;
}

/// Checks the claims of a token whose signature verified, and makes the principal.
verification check_claims(const jwt_options& o, std::string_view claims_json) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(claims_json, ec);
  if (ec || !doc.is_object()) return refuse(token_error::malformed, "the token's claims are not a JSON object");
  boost::json::object& c = doc.get_object();
  bool bad = false;
  const auto exp = seconds_claim(c, "exp", bad);
  const auto nbf = seconds_claim(c, "nbf", bad);
  const auto iat = seconds_claim(c, "iat", bad);
  if (bad) return refuse(token_error::malformed, "the token's exp, nbf or iat is not a number");
  // An access token without an expiry would be good forever once leaked.
  if (!exp) return refuse(token_error::malformed, "the token has no exp");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto leeway = static_cast<double>(o.leeway.count());
  if (now > *exp + leeway) return refuse(token_error::expired, "the token has expired");
  if ((nbf && *nbf > now + leeway) || (iat && *iat > now + leeway))
    return refuse(token_error::not_yet_valid, "the token is not valid yet");
  const auto* iss = c.if_contains("iss");
  if (!iss || !iss->is_string() || iss->get_string() != o.issuer)
    return refuse(token_error::wrong_issuer, "the token is from another issuer");
  // Audience binding (RFC 8707, RFC 9068 section 4): a token the client obtained for
  // another resource server must not be replayable here. Only `aud` counts: RFC 9068 §4
  // has the resource server check that the audience names it, and a `resource` claim
  // beside another audience says what the client asked for, not whom the token is for.
  bool for_us = false;
  if (const auto* aud = c.if_contains("aud")) {
    if (aud->is_string()) {
      for_us = aud->get_string() == o.audience;
    } else if (aud->is_array()) {
      for (const auto& a : aud->get_array()) for_us = for_us || (a.is_string() && a.get_string() == o.audience);
    }
  }
  if (!for_us) return refuse(token_error::wrong_audience, "the token is not for this server");
  const auto* sub = c.if_contains("sub");
  if (!sub || !sub->is_string() || sub->get_string().empty())
    return refuse(token_error::malformed, "the token has no sub");

  auto who = std::make_shared<principal>();
  who->issuer = o.issuer;
  who->subject = sub->get_string();
  for (const char* name : {"client_id", "azp"}) {
    const auto* id = c.if_contains(name);
    if (id && id->is_string() && who->client_id.empty()) who->client_id = id->get_string();
  }
  auto add_scope = [&](std::string_view s) {
    if (!s.empty() && !who->has_scope(s)) who->scopes.emplace_back(s);
  };
  if (const auto* scope = c.if_contains("scope"); scope && scope->is_string()) {
    const std::string_view all = scope->get_string();
    std::size_t pos = 0;
    while (pos <= all.size()) {
      const std::size_t space = std::min(all.find(' ', pos), all.size());
      add_scope(all.substr(pos, space - pos));
      pos = space + 1;
    }
  }
  if (const auto* scp = c.if_contains("scp"); scp && scp->is_array()) {
    for (const auto& s : scp->get_array())
      if (s.is_string()) add_scope(s.get_string());
  }
  // Clamped to year 9999 so that an absurd exp cannot overflow the clock's range.
  const double clamped = std::clamp(*exp, 0.0, 253402300799.0);
  who->expires_at = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(clamped)));
  who->claims = std::move(c);
  verification v;
  v.who = std::move(who);
  return v;
}

/// A caller waiting for the key set fetch in progress, and where to resume it.
struct waiter {
  /// Tracks outstanding work: a parked caller is work its event loop still has to do,
  /// and without it a loop with nothing else pending would return from `run()` and never
  /// resume the caller.
  asio::any_io_executor executor;
  std::coroutine_handle<> handle;
};

/// What the verifier and its fetches share. Why a separate object: a fetch may outlive
/// the verifier that started it (the server shut down meanwhile), and must find its
/// state alive when it ends.
struct shared_state {
  jwt_options opts;
  std::optional<detail::fetch_target> remote{};  ///< set for jwks_url
  std::shared_ptr<asio::ssl::context> tls{};

  std::mutex mutex;
  /// The current key set; null until the first successful fetch. Guarded by `mutex`,
  /// which is held only to copy or swap the pointer.
  std::shared_ptr<const key_set> keys{};
  bool fetching = false;  ///< a fetch is in progress; callers that need one wait for it
  /// Which fetch is the current one. A fetch whose shard stopped before it ended would
  /// otherwise leave `fetching` set for good; a later caller takes over from it after
  /// `stale_after()`, and the stale one, should it still end, only offers its keys.
  std::uint64_t fetch_id = 0;
  std::optional<std::chrono::steady_clock::time_point> last_fetch{};  ///< when the last fetch began
  std::vector<waiter> waiters{};

  /// A live fetch ends within its timeout (its timer closes the connection), give or take
  /// a slow DNS lookup; twice that and a second more means its shard is gone, or its
  /// lookup hangs, and a new fetch is the better bet.
  [[nodiscard]] std::chrono::steady_clock::duration stale_after() const {
    return 2 * opts.fetch_timeout + std::chrono::seconds(1);
  }

  std::shared_ptr<const key_set> snapshot() {
    std::lock_guard lock(mutex);
    return keys;
  }
};

task<void> run_fetch(std::shared_ptr<shared_state> s, asio::any_io_executor executor, std::uint64_t id);

/// Waits for a fresh key set: joins the fetch in progress, or starts one unless the last
/// began less than `min_refresh_interval` ago (then it does not suspend). Why one fetch
/// for everyone: a rotation makes every shard see the new `kid` at once, and each
/// fetching for itself would multiply the load on the authorization server by the
/// number of concurrent requests.
struct refresh_awaiter {
  std::shared_ptr<shared_state> s;
  asio::any_io_executor executor;
  const key_set* seen;  ///< the set the caller looked in

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    bool start = false;
    std::uint64_t id = 0;
    {
      std::lock_guard lock(s->mutex);
      const auto now = std::chrono::steady_clock::now();
      const bool stale = s->fetching && now - *s->last_fetch > s->stale_after();
      if (!s->fetching || stale) {
        // Another caller's fetch replaced the set since this one looked: look again.
        if (!stale && s->keys.get() != seen) return false;
        if (!stale && s->last_fetch && now - *s->last_fetch < s->opts.min_refresh_interval) return false;
        s->fetching = true;
        s->last_fetch = now;
        id = ++s->fetch_id;
        start = true;
      }
      s->waiters.push_back(waiter{asio::prefer(executor, asio::execution::outstanding_work.tracked), h});
    }
    // Copies: once the lock is released, this awaiter may be resumed and gone.
    if (start) {
      std::shared_ptr<shared_state> state = s;
      asio::any_io_executor ex = executor;
      spawn(ex, run_fetch(state, ex, id), [](std::exception_ptr) {});
    }
    return true;
  }
  void await_resume() const noexcept {}
};

task<void> run_fetch(std::shared_ptr<shared_state> s, asio::any_io_executor executor, std::uint64_t id) {
  detail::fetch_result fetched;
  detail::fetch_target target = *s->remote;
  try {
    fetched = co_await detail::fetch_jwks(executor, target, s->tls, s->opts.fetch_timeout, s->opts.max_jwks_bytes);
  } catch (const std::exception& e) {
    fetched.ok = false;
    fetched.error = e.what();
  }
  std::shared_ptr<const key_set> fresh;
  if (fetched.ok) {
    std::string error;
    fresh = detail::parse_jwks(fetched.body, error);
  }
  std::vector<waiter> waiters;
  {
    std::lock_guard lock(s->mutex);
    // A failed fetch keeps the keys there were: an authorization server's bad minute
    // must not turn every valid token into a refusal. A superseded fetch's answer may be
    // older than its successor's, so it only fills an empty cache.
    if (fresh && (id == s->fetch_id || !s->keys)) s->keys = std::move(fresh);
    if (id == s->fetch_id) {
      s->fetching = false;
      waiters.swap(s->waiters);
    }
  }
  // Each on its own executor: the waiters are on other shards, and resuming one here
  // would run its connection on this thread.
  for (waiter& w : waiters) asio::post(w.executor, [h = w.handle] { h.resume(); });
}

/// The `token_verifier` over a key set from a file or a URL.
class jwt_verifier final : public token_verifier {
 public:
  explicit jwt_verifier(std::shared_ptr<shared_state> s) : s_(std::move(s)) {}

  task<verification> verify(std::string token, asio::any_io_executor executor) override {
    std::shared_ptr<shared_state> s = s_;
    verification error;
    const std::optional<parsed_token> t = parse_token(token, s->opts.max_token_bytes, error);
    if (!t) co_return error;
    std::shared_ptr<const key_set> keys = s->snapshot();
    const jwk* key = nullptr;
    lookup found = find_key(keys.get(), *t, key, error);
    if (found == lookup::missing && s->remote) {
      const key_set* seen = keys.get();
      // Named: g++ 12 miscompiles aggregate temporaries inside coroutines.
      refresh_awaiter refreshed{s, executor, seen};
      co_await refreshed;
      keys = s->snapshot();
      found = find_key(keys.get(), *t, key, error);
    }
    if (found != lookup::found) co_return error;
    if (!detail::verify_signature(*key, t->signing_input, t->signature))
      co_return refuse(token_error::bad_signature, "the token's signature does not verify");
    co_return check_claims(s->opts, t->claims);
  }

 private:
  std::shared_ptr<shared_state> s_;
};

[[noreturn]] void bad_config(std::string_view what, std::string_view detail = {}) {
  std::string message = "make_jwt_verifier: ";
  message.append(what).append(detail);
  throw std::invalid_argument(message);
}

}  // namespace

std::shared_ptr<token_verifier> make_jwt_verifier(jwt_options opts) {
  if (opts.issuer.empty()) bad_config("jwt_options::issuer is empty");
  if (opts.audience.empty())
    bad_config("jwt_options::audience is empty (this server's resource identifier; audience binding is mandatory)");
  if (opts.jwks_file.empty() == opts.jwks_url.empty())
    bad_config("exactly one of jwt_options::jwks_file and jwt_options::jwks_url must be set");
  if (opts.leeway.count() < 0 || opts.min_refresh_interval.count() < 0 || opts.fetch_timeout.count() <= 0)
    bad_config("jwt_options: leeway and min_refresh_interval must not be negative, fetch_timeout must be positive");
  auto s = std::make_shared<shared_state>();
  if (!opts.jwks_file.empty()) {
    if (!opts.ca_file.empty()) bad_config("jwt_options::ca_file is set, but only jwks_url uses it");
    std::ifstream in(opts.jwks_file, std::ios::binary);
    std::string text;
    if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) bad_config("cannot read jwks_file ", opts.jwks_file);
    if (text.size() > opts.max_jwks_bytes) bad_config("jwks_file is larger than max_jwks_bytes: ", opts.jwks_file);
    std::string error;
    s->keys = detail::parse_jwks(text, error);
    if (!s->keys) {
      std::string detail = opts.jwks_file;
      detail.append(": ").append(error);
      bad_config("jwks_file ", detail);
    }
  } else {
    std::string error;
    s->remote = detail::parse_jwks_url(opts.jwks_url, error);
    if (!s->remote) bad_config(error);
    // The key set is fetched on first use, not here: a constructor has no executor to
    // await on, and blocking in it would make the server's start depend on the
    // authorization server being up; until the first fetch succeeds, tokens are
    // answered `unavailable`, which clients retry.
    s->tls = detail::make_client_tls_context(opts.ca_file);
  }
  s->opts = std::move(opts);
  return std::make_shared<jwt_verifier>(std::move(s));
}

}  // namespace droid::auth
