// SPDX-License-Identifier: BSL-1.0
/// @file
/// Trusted proxies and the client address behind them (proxy_trust.hpp).
#include "proxy_trust.hpp"

#include <stdexcept>
#include <system_error>

#include "request_parser.hpp"

namespace droid::http::detail {

namespace {

std::string_view trimmed(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

proxy_trust::proxy_trust(const std::vector<std::string>& entries) {
  for (const std::string& entry : entries) {
    std::error_code ec;
    const std::size_t slash = entry.find('/');
    const asio::ip::address a = asio::ip::make_address(entry.substr(0, slash), ec);
    if (!ec && slash == std::string::npos) {
      // One address: a network of its full length.
      if (a.is_v4()) v4_.emplace_back(a.to_v4(), 32);
      else v6_.emplace_back(a.to_v6(), 128);
      continue;
    }
    if (!ec && a.is_v4()) {
      const auto net = asio::ip::make_network_v4(entry, ec);
      if (!ec) v4_.push_back(net.canonical());
    } else if (!ec) {
      const auto net = asio::ip::make_network_v6(entry, ec);
      if (!ec) v6_.push_back(net.canonical());
    }
    if (ec)
      throw std::invalid_argument("http::options::trusted_proxies: \"" + entry +
                                  "\" is neither an IP address nor a network (10.0.0.0/8, fd00::/8)");
  }
}

bool proxy_trust::trusts(const asio::ip::address& a) const {
  if (a.is_v4()) {
    for (const auto& net : v4_)
      if (asio::ip::network_v4(a.to_v4(), 32).is_subnet_of(net) || net.address() == a.to_v4()) return true;
    return false;
  }
  const asio::ip::address_v6 v6 = a.to_v6();
  // An IPv4 client seen on a dual-stack socket (::ffff:10.0.0.7) is the IPv4 address.
  if (v6.is_v4_mapped()) return trusts(asio::ip::address(asio::ip::make_address_v4(asio::ip::v4_mapped, v6)));
  for (const auto& net : v6_)
    if (asio::ip::network_v6(v6, 128).is_subnet_of(net) || net.address() == v6) return true;
  return false;
}

bool proxy_trust::trusts(std::string_view address) const {
  if (empty()) return false;
  std::error_code ec;
  const asio::ip::address a = asio::ip::make_address(std::string(address), ec);
  return !ec && trusts(a);
}

std::optional<std::string> proxy_trust::forwarded_client(std::string_view peer, const request& req) const {
  if (!trusts(peer)) return std::nullopt;
  // Every X-Forwarded-For field, in order, is one list (RFC 9110 §5.3).
  std::vector<std::string_view> hops;
  for (const header_field& h : req.headers) {
    if (h.name != "x-forwarded-for") continue;
    std::string_view rest = h.value;
    for (;;) {
      const std::size_t comma = rest.find(',');
      if (const std::string_view hop = trimmed(rest.substr(0, comma)); !hop.empty()) hops.push_back(hop);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (hops.empty()) return std::string(peer);
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    std::error_code ec;
    const asio::ip::address a = asio::ip::make_address(std::string(*it), ec);
    if (ec) return std::string(it->substr(0, 64));
    if (!trusts(a)) return a.to_string();
  }
  return std::string(hops.front().substr(0, 64));
}

}  // namespace droid::http::detail
