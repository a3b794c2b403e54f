// Text outputs to standard output or to a file (see standard_output.h).
#include "common/standard_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/atomic_file.h"

namespace mlbert::files {

bool names_standard_output(const std::filesystem::path& path) {
  return path == "-" || path == "/dev/stdout";
}

void write_output(const std::filesystem::path& path, std::string_view content) {
  if (!names_standard_output(path)) {
    write_file_atomically(path, content);
    return;
  }
  errno = 0;
  const bool written = std::fwrite(content.data(), 1, content.size(), stdout) == content.size();
  if (written && std::fflush(stdout) == 0) return;
  const int error = errno;
  throw std::runtime_error(std::string("writing to standard output failed") +
                           (error ? std::string(": ") + std::strerror(error) : std::string()) +
                           "; the output is incomplete");
}

}  // namespace mlbert::files
