// SPDX-License-Identifier: BSL-1.0
// <droid/application/middleware/rate_limit.hpp>: sixteen maps of buckets, each kept in
// least-recently-seen order so that the bound evicts the tenant idle longest.
#include <droid/application/middleware/rate_limit.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <list>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <boost/json/object.hpp>

#include <droid/domain/errc.hpp>

namespace droid::middleware {
namespace {

constexpr std::size_t shard_count = 16;

/// Hashes `std::string_view` and `std::string` alike, so a lookup by view allocates
/// nothing.
struct text_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// `rate` as a person writes it ("10", "0.5").
std::string rate_text(double rate) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, rate);
  return std::string(buf, r.ptr);
}

}  // namespace

struct rate_limiter::shard {
  struct bucket {
    double tokens;
    std::chrono::steady_clock::time_point at;
    std::list<std::string>::iterator order;
  };
  std::mutex mutex;
  std::unordered_map<std::string, bucket, text_hash, std::equal_to<>> buckets;
  /// Tenants, the most recently seen first.
  std::list<std::string> order;
};

rate_limiter::rate_limiter(rate_limit_options options)
    : options_(std::move(options)),
      burst_(options_.burst > 0 ? options_.burst : std::max(1.0, options_.per_second)),
      shards_(std::make_unique<shard[]>(shard_count)) {
  if (!(options_.per_second > 0) || !std::isfinite(options_.per_second))
    throw std::invalid_argument("droid::middleware::rate_limiter: per_second must be positive");
  if (options_.burst < 0 || !std::isfinite(options_.burst))
    throw std::invalid_argument("droid::middleware::rate_limiter: burst must not be negative");
  if (options_.max_tenants == 0) options_.max_tenants = 1;
}

rate_limiter::~rate_limiter() = default;

std::chrono::nanoseconds rate_limiter::take(std::string_view tenant, std::chrono::steady_clock::time_point now) {
  const std::size_t h = text_hash{}(tenant);
  shard& s = shards_[h % shard_count];
  const std::size_t cap = std::max<std::size_t>(1, options_.max_tenants / shard_count);
  const std::lock_guard lock(s.mutex);
  auto it = s.buckets.find(tenant);
  if (it == s.buckets.end()) {
    if (s.buckets.size() >= cap) {
      // The tenant seen longest ago goes; if it returns, it starts with a full bucket.
      s.buckets.erase(s.order.back());
      s.order.pop_back();
    }
    s.order.emplace_front(tenant);
    it = s.buckets.emplace(s.order.front(), shard::bucket{burst_, now, s.order.begin()}).first;
  } else {
    s.order.splice(s.order.begin(), s.order, it->second.order);
  }
  shard::bucket& b = it->second;
  if (now > b.at) {
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(burst_, b.tokens + elapsed * options_.per_second);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::chrono::nanoseconds(0);
  }
  const double wait = (1 - b.tokens) / options_.per_second;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(wait * 1e9)));
}

std::size_t rate_limiter::tenants() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < shard_count; ++i) {
    const std::lock_guard lock(shards_[i].mutex);
    n += shards_[i].buckets.size();
  }
  return n;
}

guard rate_limiter::middleware(std::shared_ptr<rate_limiter> self) const {
  return [self = std::move(self)](request& req) -> std::optional<response> {
    const rate_limit_options& o = self->options_;
    std::optional<std::string> key;
    if (o.key) {
      key = o.key(req);
      if (!key) return std::nullopt;
    }
    const auto now = o.clock ? o.clock() : std::chrono::steady_clock::now();
    const std::chrono::nanoseconds wait = self->take(key ? std::string_view(*key) : req.tenant(), now);
    if (wait.count() == 0) return std::nullopt;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait);
    std::string message = "Too many requests: over this client's share of " + rate_text(o.per_second) +
                          " a second; retry in " + std::to_string(ms.count()) + " ms";
    return response::refuse(429, static_cast<std::int64_t>(ir::errc::invalid_request), std::move(message), ms,
                            boost::json::object{{"retryAfterMs", ms.count()}});
  };
}

guard rate_limit(rate_limit_options options) {
  auto limiter = std::make_shared<rate_limiter>(std::move(options));
  return limiter->middleware(limiter);
}

}  // namespace droid::middleware
