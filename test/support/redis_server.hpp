// SPDX-License-Identifier: BSL-1.0
/// @file
/// A real redis-server for the tests of the Redis adapters: started on a free loopback
/// port with nothing persisted, stopped, frozen or restarted on the test's word.
///
/// Why a real server and not a fake: the adapters' worth is in what Redis really does
/// (stream ids, MAXLEN trimming, expiry, a server that stops answering); a fake would test
/// our reading of the documentation against itself.
#pragma once

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace droid::test {

/// True when a redis-server can be started here (the tests skip, or fail under
/// DROID_REQUIRE_PEERS=1, when it cannot).
inline bool have_redis_server() { return std::system("command -v redis-server >/dev/null 2>&1") == 0; }

/// A port nobody listens on right now (the kernel's choice, released for the server).
inline unsigned short free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind");
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// One redis-server process.
class redis_server {
 public:
  /// `extra`: more `--option value` arguments (`--requirepass secret`).
  explicit redis_server(std::vector<std::string> extra = {}, unsigned short port = free_port())
      : port_(port), extra_(std::move(extra)) {
    start();
  }
  ~redis_server() { stop(); }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  [[nodiscard]] unsigned short port() const noexcept { return port_; }
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  /// Starts the server and returns once it says it accepts connections (its own log
  /// line, read from a pipe: no polling, no sleep).
  void start() {
    if (pid_ > 0) return;
    int out[2];
    // Close-on-exec: a second server started later must not hold this one's pipe.
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const std::string port = std::to_string(port_);
    // Nothing persisted, no protected mode (loopback only), logs on stdout.
    std::vector<const char*> argv = {"redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--logfile", "", "--daemonize", "no"};
    for (const std::string& a : extra_) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, "redis-server", &actions, nullptr, const_cast<char**>(argv.data()), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (rc != 0) {
      ::close(out[0]);
      pid_ = 0;
      throw std::runtime_error("cannot start redis-server");
    }
    // Read its log until it is ready. The pipe stays open and unread afterwards: at its
    // default level, with nothing persisted, the server logs a few lines per start and
    // stop, far below the pipe's 64 KiB.
    log_ = ::fdopen(out[0], "r");
    char line[1024];
    bool ready = false;
    while (std::fgets(line, sizeof line, log_) != nullptr) {
      if (std::string_view(line).find("Ready to accept connections") != std::string_view::npos) {
        ready = true;
        break;
      }
    }
    if (!ready) {
      stop();
      throw std::runtime_error("redis-server exited before accepting connections (port " + port + " taken?)");
    }
  }

  /// Kills the server (SIGKILL, as a crash would) and reaps it. A frozen server dies
  /// frozen: it answers nothing of what it was sent.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
    if (log_) std::fclose(std::exchange(log_, nullptr));
  }
  /// Freezes the server: it keeps its connections and answers nothing (a stalled Redis).
  void freeze() { ::kill(pid_, SIGSTOP); }
  void thaw() { ::kill(pid_, SIGCONT); }

 private:
  unsigned short port_;
  std::vector<std::string> extra_;
  pid_t pid_ = 0;
  FILE* log_ = nullptr;
};

}  // namespace droid::test
