// SPDX-License-Identifier: BSL-1.0
/// @file
/// Paths, allowed directories and file operations of the filesystem example
/// (fs_ops.hpp says why the messages are the reference server's).
#include "fs_ops.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fsx {

namespace {

/// libuv's descriptions, which Node prints instead of strerror's (they differ: EISDIR is
/// "illegal operation on a directory", not "Is a directory").
struct errno_text {
  int err;
  const char* code;
  const char* text;
};
constexpr errno_text errno_texts[] = {
    {ENOENT, "ENOENT", "no such file or directory"}, {EISDIR, "EISDIR", "illegal operation on a directory"},
    {ENOTDIR, "ENOTDIR", "not a directory"},         {EEXIST, "EEXIST", "file already exists"},
    {EACCES, "EACCES", "permission denied"},         {EPERM, "EPERM", "operation not permitted"},
    {ENOTEMPTY, "ENOTEMPTY", "directory not empty"}, {ELOOP, "ELOOP", "too many symbolic links encountered"},
    {ENAMETOOLONG, "ENAMETOOLONG", "name too long"}, {EXDEV, "EXDEV", "cross-device link not permitted"},
    {EINVAL, "EINVAL", "invalid argument"},          {EBUSY, "EBUSY", "resource busy or locked"},
    {ENOSPC, "ENOSPC", "no space left on device"},   {EROFS, "EROFS", "read-only file system"},
    {EMFILE, "EMFILE", "too many open files"},       {EIO, "EIO", "i/o error"},
};

/// Closes a descriptor on every way out of a read or a write.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

bool is_js_space(std::string_view s, std::size_t i, std::size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  len = 1;
  if (c == ' ' || (c >= '\t' && c <= '\r')) return true;
  // The non-ASCII white space JavaScript's \s and trim() know, in UTF-8.
  static constexpr std::string_view wide[] = {"\xC2\xA0",     "\xEF\xBB\xBF", "\xE1\x9A\x80", "\xE2\x80\xA8",
                                              "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  for (std::string_view w : wide)
    if (s.substr(i, w.size()) == w) return len = w.size(), true;
  if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80) {
    const auto d = static_cast<unsigned char>(s[i + 2]);
    if (d >= 0x80 && d <= 0x8A) return len = 3, true;  // U+2000..U+200A
  }
  return false;
}

std::size_t leading_space(std::string_view s) {
  std::size_t i = 0, len = 0;
  while (i < s.size() && is_js_space(s, i, len)) i += len;
  return i;
}

std::string_view trim_start(std::string_view s) { return s.substr(leading_space(s)); }

std::string_view trim(std::string_view s) {
  s = trim_start(s);
  // Scan forward, remembering where the last non-space ended: UTF-8 cannot be walked
  // backwards by byte values alone without re-decoding.
  std::size_t i = 0, end = 0, len = 0;
  while (i < s.size()) {
    if (is_js_space(s, i, len)) {
      i += len;
    } else {
      ++i;
      end = i;
    }
  }
  return s.substr(0, end);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, at - start));
    start = at + 1;
  }
}

std::string join_lines(const std::vector<std::string>& lines, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to; ++i) {
    if (i > from) out += '\n';
    out += lines[i];
  }
  return out;
}

std::string cwd() {
  std::array<char, PATH_MAX> buf{};
  return ::getcwd(buf.data(), buf.size()) ? std::string(buf.data()) : std::string("/");
}

/// `normalizePath` of the reference on POSIX: trimmed, one surrounding quote dropped,
/// repeated slashes collapsed and a trailing one removed.
std::string normalize_path(std::string_view p) {
  std::string s(trim(p));
  if (!s.empty() && (s.front() == '"' || s.front() == '\'')) s.erase(0, 1);
  if (!s.empty() && (s.back() == '"' || s.back() == '\'')) s.pop_back();
  if (s.empty() || s.front() != '/') return resolve(s);
  std::string out;
  for (char c : s)
    if (c != '/' || out.empty() || out.back() != '/') out += c;
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

/// realpath(3), or the errno it failed with.
int real_path(const std::string& p, std::string& out) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (!r) return errno;
  out = r;
  std::free(r);
  return 0;
}

std::string random_hex() {
  std::random_device rd;
  std::string out;
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) out += digits[rd() % 16];
  return out;
}

void write_fd(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error(errno, "write");
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

void write_all(const std::string& path, std::string_view content, int flags) {
  const int fd = ::open(path.c_str(), flags | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) throw system_error(errno, "open", path);
  fd_guard guard{fd};
  write_fd(fd, content);
}

/// Reads from an open descriptor until EOF or until `enough` says stop.
template <class Enough>
std::string read_fd(int fd, Enough enough) {
  std::string data;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error(errno, "read");
    }
    if (n == 0) return data;
    data.append(buf, static_cast<std::size_t>(n));
    if (enough(data)) return data;
  }
}

int open_read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw system_error(errno, "open", path);
  return fd;
}

}  // namespace

fs_error system_error(int err, std::string_view syscall, std::string_view path, std::string_view dest) {
  std::string msg;
  for (const errno_text& e : errno_texts) {
    if (e.err == err) {
      msg = std::string(e.code) + ": " + e.text;
      break;
    }
  }
  if (msg.empty()) msg = "E" + std::to_string(err) + ": " + std::strerror(err);
  msg += ", ";
  msg += syscall;
  if (!path.empty()) msg += " '" + std::string(path) + "'";
  if (!dest.empty()) msg += " -> '" + std::string(dest) + "'";
  return fs_error(msg);
}

// ---- paths ------------------------------------------------------------------------------

std::string resolve(std::string_view base, std::string_view p) {
  std::string whole = !p.empty() && p.front() == '/' ? std::string(p) : std::string(base) + "/" + std::string(p);
  if (whole.empty() || whole.front() != '/') whole = cwd() + "/" + whole;
  std::vector<std::string_view> parts;
  std::string_view rest = whole;
  while (!rest.empty()) {
    const std::size_t at = rest.find('/');
    const std::string_view seg = rest.substr(0, at);
    rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + 1);
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(seg);
  }
  std::string out;
  for (std::string_view seg : parts) {
    out += '/';
    out += seg;
  }
  return out.empty() ? "/" : out;
}

std::string resolve(std::string_view p) { return resolve(cwd(), p); }

std::string join(std::string_view a, std::string_view b) {
  std::string whole = std::string(a) + "/" + std::string(b);
  if (!whole.empty() && whole.front() == '/') return resolve(whole);
  // A relative join stays relative: resolve against a marker root and strip it.
  std::string r = resolve("/", whole);
  return r == "/" ? "." : r.substr(1);
}

std::string relative(std::string_view from, std::string_view to) {
  const std::vector<std::string> f = split(resolve(from), '/'), t = split(resolve(to), '/');
  // Both start with "" (the root); "/" alone splits into two empty strings.
  auto strip = [](std::vector<std::string> v) {
    std::erase(v, std::string());
    return v;
  };
  const std::vector<std::string> fa = strip(f), ta = strip(t);
  std::size_t common = 0;
  while (common < fa.size() && common < ta.size() && fa[common] == ta[common]) ++common;
  std::string out;
  for (std::size_t i = common; i < fa.size(); ++i) out += out.empty() ? ".." : "/..";
  for (std::size_t i = common; i < ta.size(); ++i) {
    if (!out.empty()) out += '/';
    out += ta[i];
  }
  return out;
}

std::string dirname(std::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  const std::size_t at = p.rfind('/');
  if (at == std::string_view::npos) return ".";
  if (at == 0) return "/";
  return std::string(p.substr(0, at));
}

std::string expand_home(std::string_view p) {
  if (p == "~" || p.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    return join(home ? home : "/", p.substr(1));
  }
  return std::string(p);
}

bool allowed_directories::set_from_arguments(const std::vector<std::string>& args) {
  std::vector<std::string> candidates;
  for (const std::string& arg : args) {
    const std::string original = normalize_path(resolve(expand_home(arg)));
    std::string real;
    if (real_path(resolve(expand_home(arg)), real) == 0) {
      real = normalize_path(real);
      if (real != original) candidates.push_back(original);
      candidates.push_back(real);
    } else {
      candidates.push_back(original);
    }
  }
  dirs_.clear();
  for (const std::string& dir : candidates) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      std::cerr << "Warning: Cannot access directory " << dir << ", skipping\n";
    } else if (!S_ISDIR(st.st_mode)) {
      std::cerr << "Warning: " << dir << " is not a directory, skipping\n";
    } else {
      dirs_.push_back(dir);
    }
  }
  return !(dirs_.empty() && !candidates.empty());
}

namespace {

/// `fileURLToPath` for POSIX: the host must be empty or `localhost`, and percent
/// escapes are decoded (an escaped `/` is refused, as Node refuses it).
bool file_url_to_path(std::string_view uri, std::string& out) {
  std::string_view rest = uri.substr(7);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return false;
  rest = rest.substr(slash);
  if (const std::size_t q = rest.find_first_of("?#"); q != std::string_view::npos) rest = rest.substr(0, q);
  out.clear();
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() + 0 && std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      const int v = std::stoi(std::string(rest.substr(i + 1, 2)), nullptr, 16);
      if (v == '/') return false;
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return true;
}

}  // namespace

std::size_t allowed_directories::set_from_roots(const std::vector<std::string>& uris) {
  std::vector<std::string> valid;
  for (const std::string& uri : uris) {
    std::string raw = uri;
    if (uri.starts_with("file://") && !file_url_to_path(uri, raw)) {
      std::cerr << "Skipping invalid path or inaccessible: " << uri << '\n';
      continue;
    }
    std::string real;
    if (real_path(resolve(expand_home(raw)), real) != 0) {
      std::cerr << "Skipping invalid path or inaccessible: " << uri << '\n';
      continue;
    }
    real = normalize_path(real);
    struct stat st {};
    if (::stat(real.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      valid.push_back(real);
    } else {
      std::cerr << "Skipping non-directory root: " << real << '\n';
    }
  }
  if (valid.empty()) {
    std::cerr << "No valid root directories provided by client\n";
    return 0;
  }
  dirs_ = std::move(valid);
  std::cerr << "Updated allowed directories from MCP roots: " << dirs_.size() << " valid directories\n";
  return dirs_.size();
}

bool allowed_directories::contains(std::string_view absolute) const {
  if (absolute.empty() || dirs_.empty() || absolute.find('\0') != std::string_view::npos) return false;
  const std::string p = resolve(absolute);
  for (const std::string& d : dirs_) {
    if (d.empty() || d.find('\0') != std::string::npos) continue;
    const std::string dir = resolve(d);
    if (p == dir) return true;
    if (dir == "/") return true;
    if (p.size() > dir.size() && p.starts_with(dir) && p[dir.size()] == '/') return true;
  }
  return false;
}

std::string allowed_directories::joined() const {
  std::string out;
  for (const std::string& d : dirs_) {
    if (!out.empty()) out += ", ";
    out += d;
  }
  return out;
}

std::string allowed_directories::resolve_relative(std::string_view p) const {
  if (dirs_.empty()) return resolve(p);
  for (const std::string& dir : dirs_) {
    std::string candidate = resolve(dir, p);
    if (contains(normalize_path(candidate))) return candidate;
  }
  return resolve(dirs_.front(), p);
}

std::string allowed_directories::resolve_missing(const std::string& absolute) const {
  // The longest allowed directory that holds the path: its real path is where the walk
  // starts, so a symlink on the way is followed and checked one component at a time.
  const std::string* base = nullptr;
  for (const std::string& d : dirs_) {
    allowed_directories one;
    one.dirs_ = {d};
    if (one.contains(normalize_path(absolute)) && (!base || d.size() > base->size())) base = &d;
  }
  if (!base) return absolute;
  std::string current;
  if (const int err = real_path(*base, current)) throw system_error(err, "realpath", *base);
  std::vector<std::string> parts = split(relative(*base, absolute), '/');
  std::erase(parts, std::string());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    // The component by its exact name (lstat: a dangling symlink exists too); not there
    // means nothing below exists yet, so no symlink is left to follow.
    struct stat st {};
    const bool found = ::lstat(join(current, parts[i]).c_str(), &st) == 0;
    if (!found && errno != ENOENT) throw system_error(errno, "scandir", current);
    if (!found) {
      std::string out = current;
      for (std::size_t j = i; j < parts.size(); ++j) out = join(out, parts[j]);
      return out;
    }
    std::string next;
    if (const int err = real_path(join(current, parts[i]), next)) {
      if (err == ENOENT) throw fs_error("Parent directory does not exist: " + dirname(absolute));
      throw system_error(err, "realpath", join(current, parts[i]));
    }
    current = std::move(next);
    if (!contains(normalize_path(current)))
      throw fs_error("Access denied - symlink target outside allowed directories: " + current + " not in " + joined());
  }
  return current;
}

std::string allowed_directories::validate(std::string_view requested) const {
  const std::string expanded = expand_home(requested);
  // A drive path is not silently taken as a relative POSIX name (which would create a
  // file literally named `C:\...` inside an allowed directory).
  if (expanded.size() >= 2 && std::isalpha(static_cast<unsigned char>(expanded[0])) && expanded[1] == ':' &&
      (expanded.size() == 2 || expanded[2] == '/' || expanded[2] == '\\'))
    throw fs_error("Access denied - Windows-style path received on a POSIX host: " + std::string(requested));
  const std::string absolute =
      !expanded.empty() && expanded.front() == '/' ? resolve(expanded) : resolve_relative(expanded);
  if (!contains(normalize_path(absolute)))
    throw fs_error("Access denied - path outside allowed directories: " + absolute + " not in " + joined());
  std::string real;
  const int err = real_path(absolute, real);
  if (err == 0) {
    if (!contains(normalize_path(real)))
      throw fs_error("Access denied - symlink target outside allowed directories: " + real + " not in " + joined());
    return real;
  }
  if (err != ENOENT) throw system_error(err, "realpath", absolute);
  return resolve_missing(absolute);
}

// ---- text ---------------------------------------------------------------------------------

std::string decode_utf8(std::string_view in) {
  // The WHATWG decoder: each maximal invalid subsequence becomes one U+FFFD.
  std::string out;
  out.reserve(in.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(in[i]); };
  std::size_t i = 0;
  while (i < in.size()) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    std::size_t j = 1;
    for (; j <= need; ++j) {
      if (i + j >= in.size()) break;
      const unsigned char d = byte(i + j);
      if (d < (j == 1 ? lo : 0x80) || d > (j == 1 ? hi : 0xBF)) break;
    }
    if (j == need + 1) {
      out.append(in.substr(i, need + 1));
      i += need + 1;
    } else {
      out += "\xEF\xBF\xBD";
      i += j;
    }
  }
  return out;
}

std::size_t utf16_length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
    if (c >= 0xF0) ++n;  // a supplementary character is a surrogate pair
  }
  return n;
}

std::string normalize_line_endings(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) out += text[i];
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  if (bytes == 0) return "0 B";
  const int i = static_cast<int>(std::floor(std::log(static_cast<double>(bytes)) / std::log(1024.0)));
  if (i <= 0) return std::to_string(bytes) + " B";
  const int unit = std::min(i, 4);
  // toFixed(2) rounds the exact value half up (1152 bytes is 1.125 KB: "1.13"), which
  // printf's round-half-even would not; the quotient is exact in integers.
  // (Exact below 80 PB, where bytes * 200 still fits in 64 bits.)
  const std::uint64_t den = std::uint64_t{1} << (10 * unit);
  const std::uint64_t hundredths = (bytes * 200 + den) / (2 * den);
  const auto whole = static_cast<std::uint64_t>(hundredths / 100), frac = static_cast<std::uint64_t>(hundredths % 100);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu.%02llu %s", static_cast<unsigned long long>(whole),
                static_cast<unsigned long long>(frac), units[unit]);
  return buf;
}

// ---- file operations ----------------------------------------------------------------------

std::string read_bytes(const std::string& path) {
  fd_guard fd{open_read(path)};
  return read_fd(fd.fd, [](const std::string&) { return false; });
}

std::string read_text(const std::string& path) { return decode_utf8(read_bytes(path)); }

std::string head_lines(const std::string& path, double n) {
  fd_guard fd{open_read(path)};
  // JavaScript compares the count of lines with n itself: 1.5 takes two lines, 0 or
  // less takes none.
  const std::size_t want = n <= 0 ? 0 : static_cast<std::size_t>(std::ceil(n));
  if (want == 0) return {};
  std::size_t seen = 0, counted = 0;
  const std::string data = read_fd(fd.fd, [&](const std::string& d) {
    seen += static_cast<std::size_t>(std::count(d.begin() + static_cast<std::ptrdiff_t>(counted), d.end(), '\n'));
    counted = d.size();
    return seen >= want;
  });
  std::vector<std::string> lines = split(decode_utf8(data), '\n');
  if (lines.back().empty()) lines.pop_back();  // the text after the last newline, if any
  return join_lines(lines, 0, std::min(want, lines.size()));
}

std::string tail_lines(const std::string& path, double n) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw system_error(errno, "stat", path);
  if (st.st_size == 0) return {};
  fd_guard fd{open_read(path)};
  // Read backwards in 1 KiB blocks until enough newlines are seen, as the reference
  // does: the first, partial line of the block is then always cut off by the slice.
  constexpr off_t block = 1024;
  off_t pos = st.st_size;
  std::string data;
  std::size_t newlines = 0;
  while (pos > 0 && static_cast<double>(newlines) < n) {
    const off_t size = std::min(block, pos);
    pos -= size;
    std::string chunk(static_cast<std::size_t>(size), '\0');
    const ssize_t got = ::pread(fd.fd, chunk.data(), chunk.size(), pos);
    if (got < 0) throw system_error(errno, "read");
    if (got == 0) break;
    chunk.resize(static_cast<std::size_t>(got));
    newlines += static_cast<std::size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
    data.insert(0, chunk);
  }
  const std::vector<std::string> lines = split(normalize_line_endings(decode_utf8(data)), '\n');
  // slice(-n): n truncated towards zero; slice(-0) and slice(positive) behave as JS does.
  const auto k = static_cast<long long>(std::trunc(n));
  const auto size = static_cast<long long>(lines.size());
  long long from = k > 0 ? std::max(0LL, size - k) : (k == 0 ? 0 : std::min(size, -k));
  return join_lines(lines, static_cast<std::size_t>(from), lines.size());
}

void replace_file(const std::string& path, std::string_view content) {
  struct stat orig {};
  if (::stat(path.c_str(), &orig) != 0) throw system_error(errno, "stat", path);
  const std::string temp = path + "." + random_hex() + ".tmp";
  try {
    write_all(temp, content, O_CREAT | O_TRUNC);
    if (::rename(temp.c_str(), path.c_str()) != 0) throw system_error(errno, "rename", temp, path);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  // The rename put a new inode in place, with the temporary file's default mode.
  (void)::chmod(path.c_str(), orig.st_mode & 0777);
}

void write_text(const std::string& path, std::string_view content) {
  // O_EXCL: a symlink planted at the path after validation is not written through; the
  // new file is written through the descriptor that created it, for the same reason.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno != EEXIST) throw system_error(errno, "open", path);
    replace_file(path, content);
    return;
  }
  fd_guard guard{fd};
  write_fd(fd, content);
}

void make_directories(const std::string& path) {
  if (::mkdir(path.c_str(), 0777) == 0) return;
  const int err = errno;
  struct stat st {};
  if (err == EEXIST) {
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
    throw system_error(EEXIST, "mkdir", path);
  }
  if (err != ENOENT) throw system_error(err, "mkdir", path);
  const std::string parent = dirname(path);
  if (parent == path) throw system_error(err, "mkdir", path);
  try {
    make_directories(parent);
  } catch (const fs_error&) {
    // Node names the directory it was asked for, whichever ancestor failed.
    if (::stat(parent.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) throw system_error(ENOTDIR, "mkdir", path);
    throw;
  }
  if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) throw system_error(errno, "mkdir", path);
}

void move(const std::string& from, const std::string& to) {
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) throw fs_error("Destination already exists: " + to);
  if (errno != ENOENT) throw system_error(errno, "lstat", to);
  if (::rename(from.c_str(), to.c_str()) != 0) throw system_error(errno, "rename", from, to);
}

std::vector<dir_entry> list(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) throw system_error(errno, "scandir", path);
  std::vector<dir_entry> out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::lstat(join(path, name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    out.push_back({name, is_dir});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const dir_entry& a, const dir_entry& b) { return a.name < b.name; });
  return out;
}

file_stats stat_path(const std::string& path) {
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BASIC_STATS | STATX_BTIME, &sx) != 0)
    throw system_error(errno, "stat", path);
  const auto ms = [](const statx_timestamp& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1000 + static_cast<std::int64_t>(t.tv_nsec / 1000000);
  };
  file_stats s;
  s.size = sx.stx_size;
  // Without a birth time (an old kernel or file system) Node reports the ctime.
  s.birth_ms = (sx.stx_mask & STATX_BTIME) ? ms(sx.stx_btime) : ms(sx.stx_ctime);
  s.mtime_ms = ms(sx.stx_mtime);
  s.atime_ms = ms(sx.stx_atime);
  s.is_directory = S_ISDIR(sx.stx_mode);
  s.is_file = S_ISREG(sx.stx_mode);
  s.mode = sx.stx_mode;
  return s;
}

std::string js_date(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a %b %d %Y %H:%M:%S GMT", &tm);
  const long off = tm.tm_gmtoff / 60;
  char zone[48];
  std::snprintf(zone, sizeof zone, "%c%02ld%02ld", off < 0 ? '-' : '+', std::labs(off) / 60, std::labs(off) % 60);
  // V8 names the zone through ICU; the C library knows only its abbreviation, which is
  // spelled out for UTC, the zone servers most often run in.
  std::string name = tm.tm_zone ? tm.tm_zone : "";
  if (name == "UTC" || name == "GMT" || name.empty()) name = "Coordinated Universal Time";
  return std::string(buf) + zone + " (" + name + ")";
}

std::string file_url(std::string_view path) {
  std::string out = "file://";
  static constexpr char hex[] = "0123456789ABCDEF";
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7F || std::strchr("\"#%<>?`{}\\", c)) {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string apply_edits(const std::string& path, const std::vector<std::pair<std::string, std::string>>& edits,
                        bool dry_run) {
  const std::string content = normalize_line_endings(read_text(path));
  std::string modified = content;
  for (const auto& edit : edits) {
    const std::string old_text = normalize_line_endings(edit.first);
    const std::string new_text = normalize_line_endings(edit.second);
    if (const std::size_t at = modified.find(old_text); at != std::string::npos) {
      modified.replace(at, old_text.size(), new_text);
      continue;
    }
    // No exact match: the same lines with any indentation, re-indented like the first
    // matched line, and later lines keeping their indentation relative to the old text.
    const std::vector<std::string> old_lines = split(old_text, '\n');
    std::vector<std::string> lines = split(modified, '\n');
    bool matched = false;
    for (std::size_t i = 0; !matched && i + old_lines.size() <= lines.size(); ++i) {
      bool same = true;
      for (std::size_t j = 0; same && j < old_lines.size(); ++j) same = trim(old_lines[j]) == trim(lines[i + j]);
      if (!same) continue;
      const std::string indent = lines[i].substr(0, leading_space(lines[i]));
      std::vector<std::string> replacement = split(new_text, '\n');
      for (std::size_t j = 0; j < replacement.size(); ++j) {
        std::string& line = replacement[j];
        if (j == 0) {
          line = indent + std::string(trim_start(line));
          continue;
        }
        const std::string_view old_indent =
            j < old_lines.size() ? std::string_view(old_lines[j]).substr(0, leading_space(old_lines[j])) : "";
        const std::string_view new_indent = std::string_view(line).substr(0, leading_space(line));
        if (!old_indent.empty() && !new_indent.empty()) {
          const long rel = static_cast<long>(utf16_length(new_indent)) - static_cast<long>(utf16_length(old_indent));
          line = indent + std::string(static_cast<std::size_t>(std::max(0L, rel)), ' ') + std::string(trim_start(line));
        }
      }
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i),
                  lines.begin() + static_cast<std::ptrdiff_t>(i + old_lines.size()));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), replacement.begin(), replacement.end());
      modified = join_lines(lines, 0, lines.size());
      matched = true;
    }
    if (!matched) throw fs_error("Could not find exact match for edit:\n" + edit.first);
  }
  const std::string diff = unified_diff(path, content, modified);
  // A fence longer than any run of backticks in the diff, so it cannot end early.
  std::size_t ticks = 3;
  while (diff.find(std::string(ticks, '`')) != std::string::npos) ++ticks;
  const std::string fence(ticks, '`');
  std::string formatted = fence + "diff\n" + diff + fence + "\n\n";
  if (!dry_run) replace_file(path, modified);
  return formatted;
}

}  // namespace fsx
