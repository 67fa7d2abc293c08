// SPDX-License-Identifier: BSL-1.0
/// @file
/// Which peers are reverse proxies we trust, and the client address a request comes
/// from behind them (`X-Forwarded-For`). Primary adapter, private; knows no MCP.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/ip/address.hpp>
#include <asio/ip/network_v4.hpp>
#include <asio/ip/network_v6.hpp>

namespace droid::http::detail {

struct request;

/// The proxies named by `options::trusted_proxies`, and the client address of a request
/// that one of them forwarded.
///
/// Why: every per-address limit (requests, sessions, tasks) counts the remote address,
/// and behind a proxy that is the proxy's: every client would share one tenant's share,
/// so one client could exhaust it for all. The client address comes from the header the
/// proxy appends to, read from the right: the rightmost entry that is not a trusted
/// proxy is the address the nearest trusted proxy saw. Entries to its left were written
/// by the client itself and are never believed. From a peer that is not trusted the
/// header is ignored, so a client cannot name its own tenant.
class proxy_trust {
 public:
  /// `entries`: addresses ("10.0.0.7", "::1") or networks ("10.0.0.0/8", "fd00::/8").
  /// Throws std::invalid_argument naming an entry that is neither.
  explicit proxy_trust(const std::vector<std::string>& entries);

  [[nodiscard]] bool empty() const noexcept { return v4_.empty() && v6_.empty(); }
  /// Whether `address` (text, as a socket reports it) is a trusted proxy.
  [[nodiscard]] bool trusts(std::string_view address) const;
  /// The address a request from trusted `peer` comes from, or nothing when `peer` is not
  /// trusted (the request is its own peer's). From a trusted peer: the rightmost
  /// untrusted `X-Forwarded-For` entry (or, when every entry is trusted, the leftmost;
  /// with no header, `peer`). An entry that is not an address is taken as it is, cut to
  /// 64 bytes (a trusted proxy wrote it).
  [[nodiscard]] std::optional<std::string> forwarded_client(std::string_view peer, const request& req) const;
  /// The address `req` comes from: `forwarded_client`, or `peer` itself.
  [[nodiscard]] std::string client_of(std::string_view peer, const request& req) const {
    return forwarded_client(peer, req).value_or(std::string(peer));
  }

 private:
  [[nodiscard]] bool trusts(const asio::ip::address& a) const;
  std::vector<asio::ip::network_v4> v4_;
  std::vector<asio::ip::network_v6> v6_;
};

}  // namespace droid::http::detail
