// Claim by flock, whole-line appends with room kept for run_stop, rename at run_stop (see
// result_log.h).
#include "harness/train/result_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/atomic_file.h"

namespace mlbert::harness {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) {
  return std::strerror(error);
}

bool same_file(int fd, const fs::path& path) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// rename() that never replaces an existing `to` where the filesystem can promise that.
int rename_no_replace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return -1;
  if (fs::exists(to)) {
    errno = EEXIST;
    return -1;
  }
  return ::rename(from.c_str(), to.c_str());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ResultLogFile

ResultLogFile ResultLogFile::claim(const fs::path& dir, std::optional<int> index) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create it: " + ec.message());
  for (int n = index.value_or(0);; ++n) {
    // With an index a taken name is an error; without one the next N is tried.
    const auto taken = [&](const std::string& why) {
      if (index) throw std::runtime_error(why + "; remove it or choose another --run-index");
    };
    ResultLogFile file;
    file.final_ = dir / ("result_" + std::to_string(n) + ".txt");
    file.partial_ = file.final_;
    file.partial_ += ".partial";
    if (fs::exists(file.final_)) {
      taken(file.final_.string() + ": exists");
      continue;
    }
    file.fd_ = ::open(file.partial_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (file.fd_ < 0)
      throw std::runtime_error(dir.string() +
                               ": cannot write result logs there: " + errno_text(errno));
    if (::flock(file.fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error == EWOULDBLOCK) {
        taken(file.partial_.string() + ": another run is writing it");
        continue;
      }
      file.note_ = file.partial_.string() + ": this filesystem has no file locks (" +
                   errno_text(error) + "): runs writing here at the same time are not told apart";
    }
    // Renamed or removed between open and flock (a run finishing with this N): look again.
    if (!same_file(file.fd_, file.partial_) || fs::exists(file.final_)) {
      --n;
      continue;
    }
    struct stat held {};
    ::fstat(file.fd_, &held);
    if (held.st_size > 0) {
      file.note_ = file.partial_.string() + ": " + std::to_string(held.st_size) +
                   " bytes left by a run that ended without run_stop (killed); this run's log "
                   "replaces them";
      if (::ftruncate(file.fd_, 0) != 0)
        throw std::runtime_error(file.partial_.string() +
                                 ": cannot empty it: " + errno_text(errno));
    }
    return file;
  }
}

ResultLogFile::ResultLogFile(ResultLogFile&& other) noexcept {
  *this = std::move(other);
}

ResultLogFile& ResultLogFile::operator=(ResultLogFile&& other) noexcept {
  if (this != &other) {
    close();
    final_ = std::move(other.final_);
    partial_ = std::move(other.partial_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    preallocate_ = other.preallocate_;
    note_ = std::move(other.note_);
  }
  return *this;
}

ResultLogFile::~ResultLogFile() {
  close();
}

void ResultLogFile::close() {
  if (fd_ >= 0) ::close(fd_);  // also releases the lock
  fd_ = -1;
}

void ResultLogFile::append(std::string_view lines, bool last) {
  if (fd_ < 0) throw std::logic_error(partial_.string() + ": written after it was closed");
  const auto length = static_cast<std::int64_t>(lines.size());
  const auto refuse = [&](const std::string& why) {
    throw std::runtime_error(partial_.string() + ": cannot write the result log: " + why);
  };
  if (!last) {
    // Read each time: the limit may be lowered while the run goes on (prlimit).
    rlimit limit{};
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        size_ + length + kReserveBytes > static_cast<std::int64_t>(limit.rlim_cur))
      refuse("it would reach the file size limit (RLIMIT_FSIZE) of " +
             std::to_string(limit.rlim_cur) + " bytes");
    // Room for run_stop past the end, so that a disk filling up later cannot take it.
    if (preallocate_ && ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, size_ + length, kReserveBytes) != 0) {
      const int error = errno;
      if (error == ENOSPC || error == EDQUOT || error == EFBIG) refuse(errno_text(error));
      preallocate_ = false;  // the filesystem cannot (EOPNOTSUPP): write without the reserve
    }
  }
  std::int64_t written = 0;
  while (written < length) {
    const ssize_t n = ::pwrite(fd_, lines.data() + written,
                               static_cast<std::size_t>(length - written), size_ + written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      if (::ftruncate(fd_, size_) != 0) {
        // Nothing more can be done; the caller aborts the run.
      }
      refuse(errno_text(error));
    }
    written += n;
  }
  size_ += length;
}

void ResultLogFile::finish() {
  if (fd_ < 0) throw std::logic_error(partial_.string() + ": finished after it was closed");
  // Drop the room kept past the end, then make the log durable before it gets its final name.
  if (::ftruncate(fd_, size_) != 0 || ::fdatasync(fd_) != 0)
    throw std::runtime_error(partial_.string() +
                             ": cannot make the result log durable: " + errno_text(errno));
  if (!same_file(fd_, partial_))
    throw std::runtime_error(partial_.string() + ": removed or replaced while this run wrote it");
  if (rename_no_replace(partial_, final_) != 0)
    throw std::runtime_error(partial_.string() + ": cannot rename it to " +
                             final_.filename().string() + ": " + errno_text(errno));
  close();
  files::sync_directory(final_.parent_path());
}

void ResultLogFile::abandon() {
  if (fd_ >= 0 && same_file(fd_, partial_)) ::unlink(partial_.c_str());
  close();
}

// ---------------------------------------------------------------------------------------------
// RunLog

mllog::LoggerOptions RunLog::silent() {
  mllog::LoggerOptions options;
  options.to_stdout = false;
  return options;
}

void RunLog::open(ResultLogFile file, bool to_stdout) {
  std::lock_guard lock(mutex_);
  file_.emplace(std::move(file));
  mllog::LoggerOptions options;
  options.to_stdout = to_stdout;
  // Called by the logger inside write()/stop(), with mutex_ held.
  options.line_sink = [this](std::string_view line) { file_->append(line, last_record_); };
  logger_.reconfigure(options);
}

void RunLog::write(mllog::EventType type, std::string_view k, const mllog::Json& value,
                   const mllog::Json& metadata, mllog::SourceLocation where) {
  std::lock_guard lock(mutex_);
  if (!file_ || stopped_) return;
  logger_.log(type, k, value, metadata, {}, where);
}

bool RunLog::stop(std::string_view status, mllog::SourceLocation where) {
  std::lock_guard lock(mutex_);
  if (!file_ || stopped_) return true;
  stopped_ = true;
  last_record_ = true;
  mllog::Json metadata = mllog::Json::object();
  metadata["status"] = std::string(status);
  try {
    logger_.log(mllog::EventType::interval_end, mllog::key::run_stop, nullptr, metadata, {}, where);
    file_->finish();
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert train: %s; the log stays at %s\n", e.what(),
                 file_->partial_path().c_str());
    return false;
  }
}

}  // namespace mlbert::harness
