// A file size limit (RLIMIT_FSIZE) for the length of a scope, with SIGXFSZ ignored so that a write
// past it fails with EFBIG ("File too large") instead of ending the process: how tests make a
// writer fail part way through its file.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <stdexcept>

namespace mlbert::test {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) throw std::runtime_error("getrlimit failed");
    rlimit small = saved_;
    small.rlim_cur = bytes;
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) throw std::runtime_error("setrlimit failed");
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
};

}  // namespace mlbert::test
