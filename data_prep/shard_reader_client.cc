// The client side of the shard reader (shard_reader.h): the shard readers of hdf5_io.h as requests
// to one reader process, started on the first read and started again after it crashed or was
// killed for taking too long.
#include "data_prep/shard_reader.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"
#include "data_prep/shard_reader_wire.h"

extern char** environ;

namespace mlbert::data {
namespace {

namespace fs = std::filesystem;
using namespace shard_wire;

// A limit as the user wrote it: "2" for 2 s, "0.25" for a quarter (at most 3 decimals).
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  std::string out = text;
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

class ReaderProcess {
 public:
  // Sends one request, returns the response payload after its status byte (which it checks).
  std::vector<std::byte> call(const std::vector<std::byte>& request, const fs::path& shard) {
    std::lock_guard lock(mutex_);
    if (owner_ != ::getpid() && fd_ >= 0) {  // a fork of the owner: that reader is not ours
      ::close(fd_);
      pid_ = fd_ = -1;
    }
    // MLBERT_SHARD_READER names another reader now (tests set it): that one serves from here on.
    const fs::path exe = shard_reader_executable();
    if (pid_ >= 0 && exe != exe_) stop();
    if (pid_ < 0) start(shard, exe);
    const auto timeout = std::chrono::duration<double>(shard_read_timeout_seconds());
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
    std::vector<std::byte> response;
    bool timed_out = false;
    if (!send_frame(fd_, request) || !recv_frame(fd_, response, &deadline, &timed_out)) {
      // Killing an exited reader changes nothing: its wait status still says how it ended.
      const std::string ended = stop();
      if (timed_out) {
        throw std::runtime_error(shard.string() + ": HDF5 did not finish reading the file within " +
                                 seconds_text(timeout.count()) +
                                 " s, so its reader process was killed (a corrupt shard? "
                                 "MLBERT_SHARD_READ_TIMEOUT sets the limit)");
      }
      throw std::runtime_error(shard.string() + ": HDF5 crashed reading the file (reader process " +
                               ended + "; a corrupt shard?)");
    }
    ByteReader in(response, shard.string() + ": shard reader response");
    const auto status = static_cast<Status>(in.get<std::uint8_t>());
    if (status == Status::ok) return {response.begin() + 1, response.end()};
    const std::string message = in.get_string();
    if (status == Status::invalid_argument) throw std::invalid_argument(message);
    throw std::runtime_error(message);
  }

  // Sends a request whose answer does not matter (a ShardReader's close), only to a reader that
  // is running: a reader started anew has nothing of ours open. Never throws.
  void send_if_running(const std::vector<std::byte>& request) noexcept {
    std::lock_guard lock(mutex_);
    if (pid_ < 0 || owner_ != ::getpid()) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<std::byte> response;
    bool timed_out = false;
    if (!send_frame(fd_, request) || !recv_frame(fd_, response, &deadline, &timed_out)) stop();
  }

 private:
  void start(const fs::path& shard, const fs::path& exe) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(
          shard.string() + ": cannot start the shard reader: socketpair: " + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], STDIN_FILENO);  // dup2 clears CLOEXEC
    // Not this process's stdout and stderr either: under mpirun they are the launcher's output
    // pipes, and a reader holding them made mpirun miss an abort (a stopped rank was then never
    // killed). The reader reports through its socket; what it prints (a sanitizer's report) goes
    // to MLBERT_SHARD_READER_LOG when that is set.
    const char* log = std::getenv("MLBERT_SHARD_READER_LOG");
    const char* output = log && *log ? log : "/dev/null";
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // Nothing else of this process's: an MPI rank's launcher and transport descriptors (PMIx,
    // shared memory, sockets) held by the reader would outlive the rank and keep mpirun waiting.
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    const std::string exe_name = exe.string();
    char* argv[] = {const_cast<char*>(exe_name.c_str()), nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, exe_name.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(sv[1]);
    if (rc != 0) {
      ::close(sv[0]);
      throw std::runtime_error(shard.string() + ": cannot start the shard reader " + exe_name +
                               ": " + std::strerror(rc) +
                               " (build the mlbert-shard-reader target, or set "
                               "MLBERT_SHARD_READER to its path)");
    }
    pid_ = pid;
    fd_ = sv[0];
    owner_ = ::getpid();
    exe_ = exe;
  }

  // Kills and reaps the reader; says how it ended.
  std::string stop() {
    if (pid_ < 0) return "not running";
    ::kill(pid_, SIGKILL);
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    ::close(fd_);
    pid_ = fd_ = -1;
    return got < 0 ? "ended" : describe_exit(status);
  }

  std::mutex mutex_;
  pid_t pid_ = -1;
  int fd_ = -1;
  pid_t owner_ = -1;
  fs::path exe_;  // what was started
};

// Never destroyed: a thread may still read while the process exits, and the reader exits by
// itself when this process's end of the socket closes.
ReaderProcess& reader() {
  static ReaderProcess* process = new ReaderProcess;
  return *process;
}

ByteReader result_reader(const std::vector<std::byte>& bytes, const fs::path& path) {
  return ByteReader(bytes, path.string() + ": shard reader result");
}

ByteWriter header(Op op, const fs::path& path, const ReadOptions& o) {
  ByteWriter out;
  out.put<std::uint8_t>(static_cast<std::uint8_t>(op));
  out.put_string(path.string());
  put_options(out, o);
  return out;
}

std::vector<Sample> samples_of(const std::vector<std::byte>& bytes, const fs::path& path) {
  ByteReader in = result_reader(bytes, path);
  auto samples = get_samples(in);
  if (!in.done()) throw std::runtime_error(path.string() + ": shard reader sent trailing bytes");
  return samples;
}

std::vector<PackedRow> packed_of(const std::vector<std::byte>& bytes, const fs::path& path) {
  ByteReader in = result_reader(bytes, path);
  const auto count = in.get<std::uint64_t>();
  if (count > in.remaining()) throw std::runtime_error(path.string() + ": corrupt reader result");
  std::vector<PackedRow> rows(count);
  for (PackedRow& row : rows) row.samples = get_samples(in);
  if (!in.done()) throw std::runtime_error(path.string() + ": shard reader sent trailing bytes");
  return rows;
}

}  // namespace

fs::path shard_reader_executable() {
  if (const char* env = std::getenv("MLBERT_SHARD_READER"); env && *env) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "mlbert-shard-reader";  // posix_spawn then reports it missing
  return self.parent_path() / "mlbert-shard-reader";
}

double shard_read_timeout_seconds() {
  if (const char* env = std::getenv("MLBERT_SHARD_READ_TIMEOUT"); env && *env) {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(seconds) && seconds > 0) return seconds;
  }
  return 600;
}

// ------------------------------------------------------------------------------------------------
// The readers of hdf5_io.h

ShardInfo inspect_shard(const fs::path& path) {
  const auto bytes = reader().call(header(Op::inspect, path, {}).bytes(), path);
  ByteReader in = result_reader(bytes, path);
  ShardInfo info;
  info.layout = static_cast<Layout>(in.get<std::uint8_t>());
  info.rows = in.get<std::int64_t>();
  info.row_width = in.get<std::int32_t>();
  return info;
}

std::vector<int32_t> read_lengths(const fs::path& path) {
  const auto bytes = reader().call(header(Op::lengths, path, {}).bytes(), path);
  ByteReader in = result_reader(bytes, path);
  return in.get_array<std::int32_t>(in.get<std::uint64_t>());
}

std::vector<Sample> read_row_range(const fs::path& path, int64_t begin, int64_t count,
                                   const ReadOptions& o) {
  ByteWriter out = header(Op::range, path, o);
  out.put<std::int64_t>(begin);
  out.put<std::int64_t>(count);
  return samples_of(reader().call(out.bytes(), path), path);
}

std::vector<Sample> read_shard(const fs::path& path, const ReadOptions& o) {
  return read_row_range(path, 0, inspect_shard(path).rows, o);
}

std::vector<Sample> read_rows(const fs::path& path, std::span<const int64_t> rows,
                              const ReadOptions& o) {
  ByteWriter out = header(Op::rows, path, o);
  out.put<std::uint64_t>(rows.size());
  out.put_array(std::vector<int64_t>(rows.begin(), rows.end()));
  return samples_of(reader().call(out.bytes(), path), path);
}

std::vector<PackedRow> read_packed_shard(const fs::path& path, const ReadOptions& o) {
  return packed_of(reader().call(header(Op::packed, path, o).bytes(), path), path);
}

// ------------------------------------------------------------------------------------------------
// ShardReader

namespace {
std::atomic<std::uint64_t> next_handle{1};

ByteWriter kept_header(Op op, const fs::path& path, const ReadOptions& o, std::uint64_t handle) {
  if (handle == 0) throw std::logic_error(path.string() + ": read from a moved-from ShardReader");
  ByteWriter out = header(op, path, o);
  out.put<std::uint64_t>(handle);
  return out;
}
}  // namespace

ShardReader::ShardReader(const fs::path& path) : path_(path), handle_(next_handle++) {
  const auto bytes = reader().call(kept_header(Op::open, path_, {}, handle_).bytes(), path_);
  ByteReader in = result_reader(bytes, path_);
  layout_ = static_cast<Layout>(in.get<std::uint8_t>());
  rows_ = in.get<std::int64_t>();
}

ShardReader::~ShardReader() {
  close();
}

ShardReader::ShardReader(ShardReader&& other) noexcept
    : path_(std::move(other.path_)),
      layout_(other.layout_),
      rows_(other.rows_),
      handle_(std::exchange(other.handle_, 0)) {}

ShardReader& ShardReader::operator=(ShardReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    layout_ = other.layout_;
    rows_ = other.rows_;
    handle_ = std::exchange(other.handle_, 0);
  }
  return *this;
}

void ShardReader::close() noexcept {
  if (handle_ == 0) return;
  try {
    reader().send_if_running(kept_header(Op::close, path_, {}, handle_).bytes());
  } catch (...) {  // building the request can only fail for memory; the reader then keeps it
  }
  handle_ = 0;
}

std::vector<Sample> ShardReader::read_range(int64_t begin, int64_t count, const ReadOptions& o) {
  ByteWriter out = kept_header(Op::kept_range, path_, o, handle_);
  out.put<std::int64_t>(begin);
  out.put<std::int64_t>(count);
  return samples_of(reader().call(out.bytes(), path_), path_);
}

std::vector<Sample> ShardReader::read_rows(std::span<const int64_t> rows, const ReadOptions& o) {
  ByteWriter out = kept_header(Op::kept_rows, path_, o, handle_);
  out.put<std::uint64_t>(rows.size());
  out.put_array(std::vector<int64_t>(rows.begin(), rows.end()));
  return samples_of(reader().call(out.bytes(), path_), path_);
}

std::vector<PackedRow> ShardReader::read_packed(const ReadOptions& o) {
  return packed_of(reader().call(kept_header(Op::kept_packed, path_, o, handle_).bytes(), path_),
                   path_);
}

}  // namespace mlbert::data
