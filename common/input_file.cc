#include "common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mlbert::files {
namespace {

// The reason a file of this type is not read, "" for a regular file.
std::string refused_type(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a directory, not a file";
  return "is " + file_type_name(mode) + ", not a regular file";
}

}  // namespace

std::string file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "a file of unknown type";
}

std::string unreadable_reason(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return errno == ENOENT ? "no such file" : std::strerror(errno);
  if (std::string refused = refused_type(info.st_mode); !refused.empty()) return refused;
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return "";
}

std::string directory_reason(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return errno == ENOENT ? "no such directory" : std::strerror(errno);
  return S_ISDIR(info.st_mode) ? "" : "not a directory";
}

std::ifstream open_input(const std::filesystem::path& path, std::string_view what) {
  const std::string reason = unreadable_reason(path);
  std::ifstream in;
  if (reason.empty()) {
    errno = 0;
    in.open(path, std::ios::binary);
  }
  if (!in.is_open() || !in) {
    // Also a file that went away or changed between the check and the open.
    throw std::runtime_error(
        path.string() + ": cannot open " + std::string(what) + ": " +
        (reason.empty() ? (errno ? std::strerror(errno) : "cannot be opened") : reason));
  }
  return in;
}

int open_regular_file(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; a socket cannot be
  // opened at all (ENXIO), so its type is named from stat instead.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
      throw std::runtime_error(path.string() + ": " + refused_type(info.st_mode));
    throw std::runtime_error(path.string() + ": cannot open: " +
                             (error == ENOENT ? "no such file" : std::strerror(error)));
  }
  struct stat info {};
  std::string refused = ::fstat(fd, &info) != 0 ? std::strerror(errno) : refused_type(info.st_mode);
  if (refused.empty() && ::fcntl(fd, F_SETFL, 0) != 0) refused = std::strerror(errno);
  if (!refused.empty()) {
    ::close(fd);
    throw std::runtime_error(path.string() + ": " + refused);
  }
  return fd;
}

}  // namespace mlbert::files
