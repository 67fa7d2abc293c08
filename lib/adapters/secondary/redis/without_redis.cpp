// SPDX-License-Identifier: BSL-1.0
// The Redis adapter of a build configured without it (-Dredis=disabled, or hiredis not
// found with the default `auto`): the cluster's port still has its maker, and a listener
// given a `redis_url` refuses to start with a reason, rather than the program failing
// to link or quietly serving as a single instance while the operator thinks it shares.
#include <stdexcept>

#include "adapters/primary/transport/http/cluster/shared_store.hpp"

namespace droid::http::detail {

std::shared_ptr<shared_store> make_redis_store(const options::scale_out& /*o*/,
                                               std::vector<asio::any_io_executor> /*shards*/,
                                               std::chrono::milliseconds /*session_ttl*/, std::size_t /*max_events*/) {
  throw std::invalid_argument(
      "http::options::cluster.redis_url: this build of protocol_droid has no Redis support (it was configured with "
      "-Dredis=disabled, or without hiredis); rebuild with -Dredis=enabled to share sessions between instances");
}

}  // namespace droid::http::detail
