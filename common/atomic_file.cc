// Temporary name, fsync, rename, directory fsync; leftovers of killed writers (see atomic_file.h).
#include "common/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/input_file.h"

namespace mlbert::files {
namespace {

constexpr std::string_view kPartialTag = ".partial-";
// Final names longer than this are shortened (with a hash) in the temporary name, which must stay
// below NAME_MAX (255).
constexpr std::size_t kMaxStemLength = 200;

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

std::string hex(std::uint64_t value, int digits) {
  char text[17];
  std::snprintf(text, sizeof(text), "%0*llx", digits, static_cast<unsigned long long>(value));
  return std::string(text).substr(0, static_cast<std::size_t>(digits));
}

// ".<name>.partial-<machine>-": every temporary of `name` written on this machine starts so.
std::string temp_prefix(const std::string& name) {
  std::string stem = name;
  if (stem.size() > kMaxStemLength)
    stem = stem.substr(0, kMaxStemLength - 17) + "~" + hex(fnv1a(name), 16);
  return "." + stem + std::string(kPartialTag) + machine_key() + "-";
}

std::string errno_text(int error) {
  return std::strerror(error);
}

[[noreturn]] void refuse_target(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what +
                           ", not a regular file; an output replaces only regular files");
}

}  // namespace

const std::string& machine_key() {
  // The boot id names this kernel's boot; the pid namespace's inode tells containers apart.
  static const std::string key = [] {
    std::string boot_id;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
    struct stat ns {};
    const std::uint64_t ns_inode =
        ::stat("/proc/self/ns/pid", &ns) == 0 ? static_cast<std::uint64_t>(ns.st_ino) : 0;
    return hex(fnv1a(std::to_string(ns_inode), fnv1a(boot_id)), 8);
  }();
  return key;
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A zombie has ended; only its parent has not collected it yet.
  const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return true;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

std::string read_proc_file(const std::filesystem::path& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
  ::close(fd);
  return text;
}

void remove_dead_temporaries(const std::filesystem::path& dir, const std::string& name) {
  const std::string prefix = temp_prefix(name);
  DIR* listing = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!listing) return;  // creating the temporary will report the real problem
  std::vector<std::string> dead;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view entry_name = entry->d_name;
    if (!entry_name.starts_with(prefix)) continue;
    const std::string rest(entry_name.substr(prefix.size()));  // "<pid>-<random>"
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str() || *end != '-' || pid <= 0) continue;
    if (pid != static_cast<long>(::getpid()) && !process_alive(pid)) dead.emplace_back(entry_name);
  }
  ::closedir(listing);
  for (const auto& entry : dead) ::unlink((dir / entry).c_str());
}

bool is_partial_name(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 1 && name[0] == '.' && name.find(kPartialTag) != std::string::npos;
}

void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(dir.string() + ": cannot open directory: " + errno_text(errno));
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  // Some filesystems cannot fsync a directory (EINVAL): nothing more can be done there.
  if (result != 0 && error != EINVAL)
    throw std::runtime_error(dir.string() + ": directory fsync failed: " + errno_text(error));
}

std::filesystem::path output_target(const std::filesystem::path& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) return path;  // absent: created; other errors at open
  if (S_ISREG(link.st_mode)) return path;
  if (!S_ISLNK(link.st_mode)) refuse_target(path, "is " + file_type_name(link.st_mode));
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr)
    refuse_target(path, "is a symlink that leads nowhere (" + errno_text(errno) + ")");
  const std::filesystem::path target(resolved);
  std::free(resolved);
  struct stat info {};
  if (::stat(target.c_str(), &info) != 0)
    refuse_target(path, "is a symlink to " + target.string() + " (" + errno_text(errno) + ")");
  if (!S_ISREG(info.st_mode))
    refuse_target(path, "is a symlink to " + target.string() + ", " + file_type_name(info.st_mode));
  return target;
}

void refuse_replacing_inputs(const std::filesystem::path& output,
                             const std::vector<std::filesystem::path>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // nothing there yet: no input can be replaced
  for (const auto& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw std::runtime_error(output.string() + ": is " + input.string() +
                               ", an input of this command; write the output elsewhere");
  }
}

AtomicFile::AtomicFile(std::filesystem::path path) : path_(output_target(path)) {
  const std::filesystem::path dir = path_.parent_path();
  const std::string name = path_.filename().string();
  if (name.empty()) throw std::invalid_argument(path_.string() + ": not a file name");
  remove_dead_temporaries(dir, name);
  std::random_device random;
  const std::string base = temp_prefix(name) + std::to_string(::getpid()) + "-";
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = dir / (base + hex((static_cast<std::uint64_t>(random()) << 32) | random(), 8));
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || attempt > 8))
      throw std::runtime_error(path_.string() + ": cannot create " + temp_.string() + ": " +
                               errno_text(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  committed_ = true;  // nothing left to clean up
  throw std::runtime_error(path_.string() + ": " + what + ": " + errno_text(error));
}

void AtomicFile::write(const void* data, std::size_t size) {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": written after commit");
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": committed twice");
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename into place", errno);
  committed_ = true;
  sync_directory(path_.parent_path());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

void copy_file_atomically(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::ifstream in = open_input(from, "file for copying");  // a FIFO or device: refused
  AtomicFile file(to);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    file.write(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error(from.string() + ": read error while copying");
  file.commit();
}

}  // namespace mlbert::files
