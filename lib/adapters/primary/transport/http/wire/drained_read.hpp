// SPDX-License-Identifier: BSL-1.0
/// @file
/// A receive buffer whose short read tells Asio's reactor that the socket is drained.
///
/// Primary adapter, private. Why it exists: Asio 1.22's stream receive counts a read as
/// having emptied the socket only when it returns zero bytes (end of stream). After
/// every other read the reactor tries the next receive at once, before waiting for
/// epoll, and on a keep-alive connection that try almost always finds nothing: the
/// client is still waiting for the answer to the request just read. The bench measured
/// 1.3 `recvfrom` calls per request on a session per connection and 1.9 in the mixed
/// row, the part above one returning `EAGAIN` (docs/benchmarks.md, "Reads that find
/// nothing"). nginx takes a read that filled less than its buffer as draining the
/// socket; so does this buffer. That is safe on Asio's edge-triggered epoll: bytes that
/// arrive after the short read raise a new edge, and the edge turns speculative reads
/// back on and runs the waiting receive.
///
/// How: `drained_read` is a one-buffer sequence of its own type, and Asio's receive
/// operation base is specialised for it with one change, the "exhausted" test. The
/// specialisation depends on Asio's internals, so it is compiled only for the Asio it
/// was written against (1.22.1, Debian 12's); with any other version `drained_read`
/// is a plain `asio::mutable_buffer` and reads behave as Asio's own.
#pragma once

#include <cstddef>

#include <asio/buffer.hpp>
#include <asio/version.hpp>

#if ASIO_VERSION == 102201 && !defined(ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(ASIO_WINDOWS)
#define DROID_DRAINED_READ 1
#include <asio/socket_base.hpp>  // reactive_socket_recv_op.hpp uses it without including it
#include <asio/detail/reactive_socket_recv_op.hpp>
#endif

namespace droid::http::detail {

#ifdef DROID_DRAINED_READ
/// One receive buffer, as a buffer sequence of its own type (see the file comment).
struct drained_read {
  using value_type = asio::mutable_buffer;
  using const_iterator = const asio::mutable_buffer*;
  asio::mutable_buffer buffer;
  const_iterator begin() const noexcept { return &buffer; }
  const_iterator end() const noexcept { return &buffer + 1; }
};
#else
using drained_read = asio::mutable_buffer;
#endif

/// The buffer to pass to `async_read_some` on a plain TCP socket.
inline drained_read drained_read_buffer(void* data, std::size_t size) noexcept {
  return drained_read{asio::mutable_buffer(data, size)};
}

}  // namespace droid::http::detail

#ifdef DROID_DRAINED_READ
namespace asio::detail {

/// Asio 1.22.1's `reactive_socket_recv_op_base` for `drained_read`: the same receive,
/// but a stream read that returns fewer bytes than the buffer holds (end of stream
/// included) reports the socket exhausted, so the reactor waits for epoll's next edge
/// instead of trying the next receive at once.
template <>
class reactive_socket_recv_op_base<droid::http::detail::drained_read> : public reactor_op {
 public:
  reactive_socket_recv_op_base(const asio::error_code& success_ec, socket_type socket, socket_ops::state_type state,
                               const droid::http::detail::drained_read& buffers, socket_base::message_flags flags,
                               func_type complete_func)
      : reactor_op(success_ec, &reactive_socket_recv_op_base::do_perform, complete_func),
        socket_(socket),
        state_(state),
        buffers_(buffers),
        flags_(flags) {}

  static status do_perform(reactor_op* base) {
    auto* o = static_cast<reactive_socket_recv_op_base*>(base);
    const bool stream = (o->state_ & socket_ops::stream_oriented) != 0;
    if (!socket_ops::non_blocking_recv1(o->socket_, o->buffers_.buffer.data(), o->buffers_.buffer.size(), o->flags_,
                                        stream, o->ec_, o->bytes_transferred_))
      return not_done;
    // Asio's own test is `bytes_transferred_ == 0` (end of stream or an error).
    return stream && o->bytes_transferred_ < o->buffers_.buffer.size() ? done_and_exhausted : done;
  }

 private:
  socket_type socket_;
  socket_ops::state_type state_;
  droid::http::detail::drained_read buffers_;
  socket_base::message_flags flags_;
};

}  // namespace asio::detail
#endif
