#include "common/input_file.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace mlbert::files {

std::string unreadable_reason(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) return "no such file";
  if (status.type() == std::filesystem::file_type::directory) return "is a directory, not a file";
  if (ec) return ec.message();
  errno = 0;
  std::ifstream probe(path, std::ios::binary);
  if (!probe) return errno ? std::strerror(errno) : "cannot be opened";
  return "";
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

}  // namespace mlbert::files
