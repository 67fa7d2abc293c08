// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::middleware::rate_limiter`: a token bucket per tenant, as request middleware.
///
/// Application layer, free of I/O.
///
///     droid::middleware::rate_limit_options o;
///     o.per_second = 20;  // each tenant: 20 requests a second, bursts of 40
///     o.burst = 40;
///     server.use(droid::middleware::rate_limit(o));
///
/// A request over its tenant's share is refused with -32600 and `data.retryAfterMs`; over
/// HTTP the answer is 429 with Retry-After (docs/middleware.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <droid/application/server/middleware.hpp>

namespace droid::middleware {

/// How a `rate_limiter` shares requests out.
struct rate_limit_options {
  /// Requests a tenant may make per second, on average.
  double per_second = 10;
  /// Requests a tenant may make at once after a quiet spell (the bucket's size); 0: the
  /// same as `per_second` (at least one).
  double burst = 0;
  /// Tenants whose buckets are kept at once; past it the least recently seen goes (and
  /// starts full if it comes back). Why bounded: a tenant is any principal or address,
  /// and each costs memory for as long as it is remembered.
  std::size_t max_tenants = 100'000;
  /// Whom a request counts against, or nothing to let it through uncounted. Unset: the
  /// request's `tenant()` (the principal when authenticated, else the client's address;
  /// on stdio the one client, "").
  std::function<std::optional<std::string>(const request&)> key{};
  /// The clock; unset: `std::chrono::steady_clock`. For tests, which then need no sleep.
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

/// Token buckets by tenant.
///
/// Why a bucket and not a count per window: a window lets a tenant send twice its share
/// across the boundary, and a bucket's refusal can say exactly when the next request will
/// pass (Retry-After). Why sharded locks: every shard asks at once, and a tenant's bucket
/// lives in one of sixteen maps, each behind its own mutex, so two shards rarely wait on
/// each other. Affinity: any thread.
class rate_limiter {
 public:
  /// Throws `std::invalid_argument` for a rate or burst that is not positive.
  explicit rate_limiter(rate_limit_options options);
  ~rate_limiter();
  rate_limiter(const rate_limiter&) = delete;
  rate_limiter& operator=(const rate_limiter&) = delete;

  /// Takes a token from `tenant`'s bucket at `now`: zero when the request may go on,
  /// otherwise how long until one would be there (nothing is taken then).
  [[nodiscard]] std::chrono::nanoseconds take(std::string_view tenant, std::chrono::steady_clock::time_point now);
  /// Tenants whose buckets are remembered now.
  [[nodiscard]] std::size_t tenants() const;
  /// The limiter as a guard for `server::use` (holds this limiter).
  [[nodiscard]] guard middleware(std::shared_ptr<rate_limiter> self) const;

 private:
  struct shard;
  rate_limit_options options_;
  double burst_;
  std::unique_ptr<shard[]> shards_;
};

/// A `rate_limiter` with `options`, as a guard for `server::use` (it only refuses or
/// lets on, so it runs with no coroutine frame: `middleware::guard`).
[[nodiscard]] guard rate_limit(rate_limit_options options);

}  // namespace droid::middleware
