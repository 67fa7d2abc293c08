// SPDX-License-Identifier: BSL-1.0
// A closed-loop HTTP/1.1 load generator for the rows wrk cannot drive without distorting
// them. wrk's Lua sees threads, never connections, so "each connection its own session"
// used to cost one wrk thread per connection: 64 client threads on a 2-core machine made
// every server (nginx included) slower, and the row measured the client as much as the
// server. This one keeps wrk's shape (a few threads, each an epoll loop over its share of
// the connections, one request in flight per connection) and gives each connection its
// own session header, or (--mix) a different session on each request, which is what a
// reverse proxy's pooled upstream connections carry. Its output has wrk's shape, so the
// bench driver (bench/run.mjs) reads both the same way; it runs the floor with this tool
// too whenever it compares a row driven by it (docs/benchmarks.md, "Session rows").
//
//   loadgen -t 2 -c 64 -d 5 --header 'Accept: application/json' --body '{"id":{id}}' URL
//   MCP_SESSIONS=a,b,c loadgen ... URL     # connection i sends on session i mod 3
//   MCP_SESSIONS=a,b,c loadgen --mix ...   # request k of connection i on (i + k) mod 3
//
// Linux only (epoll); plain HTTP only; answers must have a Content-Length or be chunked.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  int threads = 2;
  int connections = 64;
  double seconds = 5;
  std::string host = "127.0.0.1";
  std::string port = "80";
  std::string path = "/";
  std::vector<std::string> headers;
  std::string body = R"({"jsonrpc":"2.0","id":{id},"method":"ping"})";
  std::vector<std::string> sessions;
  bool mix = false;
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "loadgen: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

/// One connection's state: the request being written and the answer being read. The
/// latency clock starts when a request is handed to the kernel and stops when its whole
/// answer has arrived, as wrk's does.
struct connection {
  int fd = -1;
  int index = 0;  // among all connections: picks its session
  std::uint64_t sent = 0;
  std::string out;
  std::size_t written = 0;
  std::string in;
  clock_type::time_point started;
};

/// Counters of one thread, summed by main() at the end.
struct tally {
  std::uint64_t requests = 0;
  std::uint64_t bytes = 0;
  std::uint64_t non2xx = 0;
  std::uint64_t connect_errors = 0;
  std::uint64_t read_errors = 0;
  std::uint64_t write_errors = 0;
  std::vector<std::uint32_t> micros;  // one per answer within the window
};

int connect_to(const sockaddr_storage& addr, socklen_t len) {
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/// How many bytes of `in` the first complete answer takes (0: not complete yet, npos:
/// unparseable), and its status in `status`.
std::size_t answer_length(std::string_view in, int& status) {
  const std::size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return 0;
  if (in.size() < 12 || in.substr(0, 5) != "HTTP/") return std::string_view::npos;
  std::from_chars(in.data() + 9, in.data() + 12, status);
  const std::string_view head = in.substr(0, head_end + 2);
  std::size_t at = 0;
  std::size_t body = std::string_view::npos;
  bool chunked = false;
  while ((at = head.find("\r\n", at)) != std::string_view::npos) {
    at += 2;
    const std::string_view line = head.substr(at, head.find("\r\n", at) - at);
    auto starts = [&](std::string_view name) {
      return line.size() > name.size() && std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
             });
    };
    if (starts("content-length:")) {
      std::size_t n = 0;
      std::string_view v = line.substr(15);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      std::from_chars(v.data(), v.data() + v.size(), n);
      body = n;
    } else if (starts("transfer-encoding:") && line.find("chunked") != std::string_view::npos) {
      chunked = true;
    }
  }
  const std::size_t start = head_end + 4;
  if (!chunked) {
    if (body == std::string_view::npos) return std::string_view::npos;
    return in.size() >= start + body ? start + body : 0;
  }
  for (std::size_t p = start;;) {
    const std::size_t eol = in.find("\r\n", p);
    if (eol == std::string_view::npos) return 0;
    std::size_t n = 0;
    std::from_chars(in.data() + p, in.data() + eol, n, 16);
    p = eol + 2 + n + 2;
    if (in.size() < p) return 0;
    if (n == 0) return p;
  }
}

/// The request for `c`'s next send: the body's `{id}` becomes an id no other request of
/// the run has (the server refuses a duplicate id within a session).
void compose(const options& o, int thread, connection& c) {
  const std::uint64_t id = (static_cast<std::uint64_t>(thread) + 1) * 1000000000ULL +
                           static_cast<std::uint64_t>(c.index) * 10000000ULL + ++c.sent;
  std::string body = o.body;
  if (const std::size_t at = body.find("{id}"); at != std::string::npos) body.replace(at, 4, std::to_string(id));
  c.out.clear();
  c.out += "POST " + o.path + " HTTP/1.1\r\nHost: " + o.host + ":" + o.port + "\r\n";
  for (const std::string& h : o.headers) c.out += h + "\r\n";
  if (!o.sessions.empty()) {
    const std::size_t k = o.mix ? static_cast<std::size_t>(c.index) + c.sent : static_cast<std::size_t>(c.index);
    c.out += "Mcp-Session-Id: " + o.sessions[k % o.sessions.size()] + "\r\n";
  }
  c.out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  c.written = 0;
}

void run_thread(const options& o, int thread, std::vector<connection> conns, const sockaddr_storage& addr,
                socklen_t len, clock_type::time_point until, tally& t) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail("epoll_create1");
  auto watch = [&](connection& c, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = &c;
    ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  };
  auto send_next = [&](connection& c) -> bool {
    compose(o, thread, c);
    c.started = clock_type::now();
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return false;
    c.written = n < 0 ? 0 : static_cast<std::size_t>(n);
    if (c.written < c.out.size()) watch(c, EPOLLIN | EPOLLOUT);  // the rest when the kernel has room
    return true;
  };
  auto open = [&](connection& c) -> bool {
    c.fd = connect_to(addr, len);
    if (c.fd < 0) {
      ++t.connect_errors;
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &c;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) fail("epoll_ctl");
    c.in.clear();
    return true;
  };
  auto reopen = [&](connection& c) {
    ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    if (open(c) && !send_next(c)) ++t.write_errors;
  };
  for (connection& c : conns)
    if (open(c) && !send_next(c)) ++t.write_errors;

  std::vector<epoll_event> events(conns.size() + 1);
  char buf[65536];
  while (clock_type::now() < until) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10);
    if (n < 0 && errno != EINTR) fail("epoll_wait");
    for (int i = 0; i < n; ++i) {
      connection& c = *static_cast<connection*>(events[i].data.ptr);
      if (c.written < c.out.size()) {  // the rest of a request the kernel did not take at once
        const ssize_t w = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
        if (w > 0) c.written += static_cast<std::size_t>(w);
        if (c.written == c.out.size()) watch(c, EPOLLIN);
      }
      const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN) continue;
        ++t.read_errors;
        reopen(c);
        continue;
      }
      t.bytes += static_cast<std::uint64_t>(r);
      c.in.append(buf, static_cast<std::size_t>(r));
      int status = 0;
      const std::size_t used = answer_length(c.in, status);
      if (used == 0) continue;
      if (used == std::string_view::npos) {
        ++t.read_errors;
        reopen(c);
        continue;
      }
      const auto now = clock_type::now();
      if (now < until) {
        ++t.requests;
        if (status < 200 || status > 399) ++t.non2xx;
        t.micros.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - c.started).count()));
      }
      c.in.erase(0, used);
      if (!send_next(c)) {
        ++t.write_errors;
        reopen(c);
      }
    }
  }
  for (connection& c : conns)
    if (c.fd >= 0) ::close(c.fd);
  ::close(ep);
}

options parse(int argc, char** argv) {
  options o;
  std::string url;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "loadgen: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-t") o.threads = std::atoi(next());
    else if (a == "-c") o.connections = std::atoi(next());
    else if (a == "-d") o.seconds = std::atof(next());
    else if (a == "--header") o.headers.emplace_back(next());
    else if (a == "--body") o.body = next();
    else if (a == "--mix") o.mix = true;
    else url = a;
  }
  const std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    std::fprintf(stderr, "usage: loadgen [-t N] [-c N] [-d S] [--header 'K: V']... [--body B] [--mix] http://host:port/path\n");
    std::exit(2);
  }
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  o.path = slash == std::string::npos ? "/" : rest.substr(slash);
  rest = rest.substr(0, slash);
  const std::size_t colon = rest.rfind(':');
  o.host = rest.substr(0, colon);
  if (colon != std::string::npos) o.port = rest.substr(colon + 1);
  if (const char* s = std::getenv("MCP_SESSIONS")) {
    std::string_view v = s;
    while (!v.empty()) {
      const std::size_t comma = v.find(',');
      if (comma != 0) o.sessions.emplace_back(v.substr(0, comma));
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
  }
  o.threads = std::clamp(o.threads, 1, std::max(1, o.connections));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &found) != 0 || !found) {
    std::fprintf(stderr, "loadgen: cannot resolve %s:%s\n", o.host.c_str(), o.port.c_str());
    return 2;
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  const auto len = static_cast<socklen_t>(found->ai_addrlen);
  ::freeaddrinfo(found);

  std::printf("Running %gs test @ http://%s:%s%s\n  %d threads and %d connections\n", o.seconds, o.host.c_str(),
              o.port.c_str(), o.path.c_str(), o.threads, o.connections);
  std::vector<tally> tallies(static_cast<std::size_t>(o.threads));
  std::vector<std::thread> threads;
  const auto start = clock_type::now();
  const auto until = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.seconds));
  for (int t = 0; t < o.threads; ++t) {
    std::vector<connection> conns;
    for (int i = t; i < o.connections; i += o.threads) {
      connection c;
      c.index = i;
      conns.push_back(std::move(c));
    }
    threads.emplace_back(run_thread, std::cref(o), t, std::move(conns), std::cref(addr), len, until,
                         std::ref(tallies[static_cast<std::size_t>(t)]));
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::min(clock_type::now(), until) - start).count();

  tally all;
  for (tally& t : tallies) {
    all.requests += t.requests;
    all.bytes += t.bytes;
    all.non2xx += t.non2xx;
    all.connect_errors += t.connect_errors;
    all.read_errors += t.read_errors;
    all.write_errors += t.write_errors;
    all.micros.insert(all.micros.end(), t.micros.begin(), t.micros.end());
  }
  std::sort(all.micros.begin(), all.micros.end());
  std::printf("  Latency Distribution\n");
  for (const int p : {50, 75, 90, 99}) {
    const double v = all.micros.empty() ? 0.0
                                        : all.micros[std::min(all.micros.size() - 1, all.micros.size() * static_cast<std::size_t>(p) / 100)];
    std::printf("     %d%%  %.2fus\n", p, v);
  }
  std::printf("  %llu requests in %.2fs, %.2fMB read\n", static_cast<unsigned long long>(all.requests), wall,
              static_cast<double>(all.bytes) / 1e6);
  if (all.non2xx) std::printf("  Non-2xx or 3xx responses: %llu\n", static_cast<unsigned long long>(all.non2xx));
  if (all.connect_errors + all.read_errors + all.write_errors)
    std::printf("  Socket errors: connect %llu, read %llu, write %llu, timeout 0\n",
                static_cast<unsigned long long>(all.connect_errors), static_cast<unsigned long long>(all.read_errors),
                static_cast<unsigned long long>(all.write_errors));
  std::printf("Requests/sec: %.2f\n", static_cast<double>(all.requests) / wall);
  return all.requests ? 0 : 1;
}
