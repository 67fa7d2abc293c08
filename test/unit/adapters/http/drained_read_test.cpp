// SPDX-License-Identifier: BSL-1.0
/// @file
/// The connection's receive buffer (wire/drained_read.hpp): a read that comes back short
/// tells Asio's reactor the socket is drained, so the next read waits for epoll instead
/// of trying a `recv` that finds nothing. The first case checks the reactor operation's
/// verdict itself (what the bench's syscall count rests on); the others check that no
/// byte is ever left waiting because of it: a request sent in pieces, and more bytes
/// than the buffer holds.
#include "adapters/primary/transport/http/wire/drained_read.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <functional>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include <doctest/doctest.h>

namespace {

using asio::ip::tcp;
using droid::http::detail::drained_read_buffer;

/// A connected loopback pair: `ours` is the side under test, `theirs` the peer.
struct socket_pair {
  asio::io_context io;
  tcp::socket ours{io};
  tcp::socket theirs{io};

  socket_pair() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    theirs.connect(acceptor.local_endpoint());
    acceptor.accept(ours);
  }

  /// Waits until `ours` has `n` bytes to read, so a non-blocking read sees them all.
  void wait_readable(std::size_t n) {
    for (int i = 0; i < 1000 && ours.available() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(ours.available() >= n);
  }
};

}  // namespace

TEST_SUITE("adapters/http/drained_read") {
#ifdef DROID_DRAINED_READ
  TEST_CASE("a short read reports the socket exhausted; a read that fills the buffer does not") {
    socket_pair p;
    p.ours.non_blocking(true);
    using op_base = asio::detail::reactive_socket_recv_op_base<droid::http::detail::drained_read>;
    using status = asio::detail::reactor_op::status;
    std::array<char, 16> buf{};
    const auto read_once = [&](std::size_t size) {
      op_base op(asio::error_code(), p.ours.native_handle(), asio::detail::socket_ops::stream_oriented,
                 drained_read_buffer(buf.data(), size), 0, nullptr);
      const status s = op.perform();
      return std::pair{s, op.bytes_transferred_};
    };

    asio::write(p.theirs, asio::buffer(std::string_view("hello")));
    p.wait_readable(5);
    const auto [short_status, short_bytes] = read_once(buf.size());
    CHECK(short_status == status::done_and_exhausted);  // Asio's own op says `done`: 5 > 0
    CHECK(short_bytes == 5);

    asio::write(p.theirs, asio::buffer(std::string(16, 'x')));
    p.wait_readable(16);
    const auto [full_status, full_bytes] = read_once(buf.size());
    CHECK(full_status == status::done);  // the buffer is full: there may be more
    CHECK(full_bytes == 16);

    const auto [empty_status, empty_bytes] = read_once(buf.size());
    CHECK(empty_status == status::not_done);  // nothing there: wait for epoll

    p.theirs.close();
    auto [eof_status, eof_bytes] = read_once(buf.size());
    for (int i = 0; i < 1000 && eof_status == status::not_done; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::tie(eof_status, eof_bytes) = read_once(buf.size());
    }
    CHECK(eof_status == status::done_and_exhausted);  // end of stream, as Asio's own op
    CHECK(eof_bytes == 0);
  }
#endif

  TEST_CASE("bytes that arrive after a short read still complete the next read") {
    socket_pair p;
    std::array<char, 64> buf{};
    std::string got;
    std::atomic<int> reads = 0;
    std::function<void()> read_next = [&] {
      p.ours.async_read_some(drained_read_buffer(buf.data(), buf.size()), [&](std::error_code ec, std::size_t n) {
        if (ec) return;
        got.append(buf.data(), n);
        ++reads;
        if (got.size() < 14) read_next();
      });
    };
    // The peer sends a request in three pieces, each once the reader has taken the
    // previous one: each read is short, so each next read waits for epoll's edge, and
    // must be woken by it.
    std::thread peer([&] {
      int piece_no = 0;
      for (std::string_view piece : {"GET ", "/ HTTP", "/1.1"}) {
        for (int i = 0; i < 5000 && reads.load() < piece_no; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        asio::write(p.theirs, asio::buffer(piece));
        ++piece_no;
      }
    });
    read_next();
    p.io.run_for(std::chrono::seconds(5));
    peer.join();
    CHECK(got == "GET / HTTP/1.1");
    CHECK(reads == 3);
  }

  TEST_CASE("more bytes than the buffer holds are read to the end without waiting for another edge") {
    socket_pair p;
    const std::string sent(100'000, 'y');
    asio::write(p.theirs, asio::buffer(sent));
    p.wait_readable(sent.size());
    std::array<char, 4096> buf{};
    std::size_t total = 0;
    std::function<void()> read_next = [&] {
      p.ours.async_read_some(drained_read_buffer(buf.data(), buf.size()), [&](std::error_code ec, std::size_t n) {
        if (ec) return;
        total += n;
        if (total < sent.size()) read_next();
      });
    };
    read_next();
    // No new bytes arrive, so no new edge: only full reads going on at once reach the end.
    p.io.run_for(std::chrono::seconds(5));
    CHECK(total == sent.size());
  }
}
