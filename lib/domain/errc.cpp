// SPDX-License-Identifier: BSL-1.0
/// @file
/// Categories for the two error enums; the wording is what logs and peers read.
#include <droid/domain/errc.hpp>

namespace droid {
namespace {

class wire_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "json-rpc"; }
  std::string message(int code) const override {
    switch (static_cast<ir::errc>(code)) {
      case ir::errc::parse_error: return "Parse error";
      case ir::errc::invalid_request: return "Invalid Request";
      case ir::errc::method_not_found: return "Method not found";
      case ir::errc::invalid_params: return "Invalid params";
      case ir::errc::internal_error: return "Internal error";
      case ir::errc::resource_not_found: return "Resource not found";
      case ir::errc::header_mismatch: return "Header mismatch";
    }
    return "JSON-RPC error " + std::to_string(code);
  }
};

class framework_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "droid"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::exchange_refused: return "this session cannot carry the request to the peer";
      case errc::session_ended: return "the session ended before the peer answered";
      case errc::cancelled: return "the request was cancelled";
      case errc::unknown_session: return "unknown or ended session";
      case errc::peer_error: return "the peer answered with an error";
    }
    return "droid error " + std::to_string(code);
  }
};

}  // namespace

const std::error_category& framework_category() noexcept {
  static const framework_category_impl instance;
  return instance;
}

namespace ir {
const std::error_category& wire_category() noexcept {
  static const wire_category_impl instance;
  return instance;
}
}  // namespace ir

}  // namespace droid
