// The shard readers of hdf5_io.h as requests to the shard reader process, and that process's loop.
//
// Wire format, both ways: a frame = u64 payload size + payload. Request payload: u8 op, the shard
// path, the read options, then the op's arguments. Response payload: u8 status (0: result follows;
// 1 or 2: a std::runtime_error or std::invalid_argument message follows), then the result.
#include "data_prep/shard_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
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
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"

extern char** environ;

namespace mlbert::data {
namespace {

namespace fs = std::filesystem;

enum class Op : std::uint8_t {
  inspect = 1,
  lengths,
  range,
  rows,
  packed,  // one-shot: the file is closed after
  open,
  kept_range,
  kept_rows,
  kept_packed,
  close  // a ShardReader: kept open by handle
};
enum class Status : std::uint8_t { ok = 0, runtime_error = 1, invalid_argument = 2 };
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 40;  // anything larger is garbage

// ------------------------------------------------------------------------------------------------
// Framing over a stream socket (send with MSG_NOSIGNAL: a dead peer is an error, not SIGPIPE).

bool send_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool send_frame(int fd, const std::vector<std::byte>& payload) {
  const std::uint64_t size = payload.size();
  return send_all(fd, &size, sizeof size) && send_all(fd, payload.data(), payload.size());
}

// Reads exactly `size` bytes. Returns false on end of file or error; `deadline` (when given) bounds
// the wait and sets `timed_out`.
bool recv_all(int fd, void* data, std::size_t size,
              const std::chrono::steady_clock::time_point* deadline, bool* timed_out) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            *deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd pfd{fd, POLLIN, 0};
      const int ready =
          left > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000LL * 3600)))
                   : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (std::chrono::steady_clock::now() < *deadline) continue;
        *timed_out = true;
        return false;
      }
      if (ready < 0) return false;
    }
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool recv_frame(int fd, std::vector<std::byte>& payload,
                const std::chrono::steady_clock::time_point* deadline, bool* timed_out) {
  std::uint64_t size = 0;
  if (!recv_all(fd, &size, sizeof size, deadline, timed_out)) return false;
  if (size > kMaxFrameBytes) return false;
  payload.resize(size);
  return recv_all(fd, payload.data(), payload.size(), deadline, timed_out);
}

void put_options(ByteWriter& out, const ReadOptions& o) {
  out.put<std::int32_t>(o.vocab_size);
  out.put<std::int32_t>(o.format.max_seq_length);
  out.put<std::int32_t>(o.format.max_predictions_per_seq);
  out.put<std::int32_t>(o.format.max_sequences_per_row);
}

ReadOptions get_options(ByteReader& in) {
  ReadOptions o;
  o.vocab_size = in.get<std::int32_t>();
  o.format.max_seq_length = in.get<std::int32_t>();
  o.format.max_predictions_per_seq = in.get<std::int32_t>();
  o.format.max_sequences_per_row = in.get<std::int32_t>();
  return o;
}

// ------------------------------------------------------------------------------------------------
// Client

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped (wait status " + std::to_string(status) + ")";
}

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

// ------------------------------------------------------------------------------------------------
// Server

// The shards ShardReaders hold open, by the handle their client chose. A handle this process does
// not know (it was started after the client opened the shard: the one before it crashed) opens
// the shard again.
std::map<std::uint64_t, direct::ShardReader>& kept_readers() {
  static std::map<std::uint64_t, direct::ShardReader> readers;
  return readers;
}

direct::ShardReader& kept(std::uint64_t handle, const fs::path& path) {
  auto& readers = kept_readers();
  auto it = readers.find(handle);
  if (it == readers.end() || it->second.path() != path)
    it = readers.insert_or_assign(handle, direct::ShardReader(path)).first;
  return it->second;
}

void put_packed(ByteWriter& out, const std::vector<PackedRow>& rows) {
  out.put<std::uint64_t>(rows.size());
  for (const PackedRow& row : rows) put_samples(out, row.samples);
}

std::vector<std::byte> error_answer(Status status, const std::string& message) {
  ByteWriter error;
  error.put<std::uint8_t>(static_cast<std::uint8_t>(status));
  error.put_string(message);
  return std::move(error.bytes());
}

std::vector<std::byte> handle(const std::vector<std::byte>& request) {
  ByteReader in(request, "shard reader request");
  ByteWriter out;
  out.put<std::uint8_t>(static_cast<std::uint8_t>(Status::ok));
  try {
    const auto op = static_cast<Op>(in.get<std::uint8_t>());
    const fs::path path = in.get_string();
    const ReadOptions o = get_options(in);
    switch (op) {
      case Op::inspect: {
        const ShardInfo info = direct::inspect_shard(path);
        out.put<std::uint8_t>(static_cast<std::uint8_t>(info.layout));
        out.put<std::int64_t>(info.rows);
        out.put<std::int32_t>(info.row_width);
        break;
      }
      case Op::lengths: {
        const auto lengths = direct::read_lengths(path);
        out.put<std::uint64_t>(lengths.size());
        out.put_array(lengths);
        break;
      }
      case Op::range: {
        const auto begin = in.get<std::int64_t>();
        const auto count = in.get<std::int64_t>();
        put_samples(out, direct::read_row_range(path, begin, count, o));
        break;
      }
      case Op::rows: {
        const auto n = in.get<std::uint64_t>();
        const auto rows = in.get_array<std::int64_t>(n);
        put_samples(out, direct::read_rows(path, rows, o));
        break;
      }
      case Op::packed:
        put_packed(out, direct::read_packed_shard(path, o));
        break;
      case Op::open: {
        const direct::ShardReader& r = kept(in.get<std::uint64_t>(), path);
        out.put<std::uint8_t>(static_cast<std::uint8_t>(r.layout()));
        out.put<std::int64_t>(r.rows());
        break;
      }
      case Op::kept_range: {
        direct::ShardReader& r = kept(in.get<std::uint64_t>(), path);
        const auto begin = in.get<std::int64_t>();
        const auto count = in.get<std::int64_t>();
        put_samples(out, r.read_range(begin, count, o));
        break;
      }
      case Op::kept_rows: {
        direct::ShardReader& r = kept(in.get<std::uint64_t>(), path);
        const auto n = in.get<std::uint64_t>();
        put_samples(out, r.read_rows(in.get_array<std::int64_t>(n), o));
        break;
      }
      case Op::kept_packed:
        put_packed(out, kept(in.get<std::uint64_t>(), path).read_packed(o));
        break;
      case Op::close:
        kept_readers().erase(in.get<std::uint64_t>());
        break;
      default:
        throw std::runtime_error("shard reader: unknown request " +
                                 std::to_string(static_cast<int>(op)));
    }
    return std::move(out.bytes());
  } catch (const std::invalid_argument& e) {
    return error_answer(Status::invalid_argument, e.what());
  } catch (const std::exception& e) {
    return error_answer(Status::runtime_error, e.what());
  }
}

bool is_kept_op(Op op) {
  switch (op) {
    case Op::open:
    case Op::kept_range:
    case Op::kept_rows:
    case Op::kept_packed:
    case Op::close:
      return true;
    default:
      return false;
  }
}

std::string crashed_text(const std::vector<std::byte>& request, const std::string& ended) {
  std::string path = "shard";
  try {
    ByteReader in(request, "shard reader request");
    in.get<std::uint8_t>();
    path = in.get_string();
  } catch (const std::exception&) {  // a request that does not parse fails in handle() instead
  }
  return path + ": HDF5 crashed reading the file (reader process " + ended + "; a corrupt shard?)";
}

// A child of this process that dies with it: the client killing this process (its timeout) ends
// every child too. Returns fork()'s result.
pid_t fork_dying_with_parent() {
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
  }
  return child;
}

// Waits for `child`; says how it ended unless it exited with status 0 (a read's fork: after
// sending its answer). Any other end, a sanitizer's exit status 1 included, sent nothing.
std::optional<std::string> reap(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  return describe_exit(status);
}

// The process that holds the kept shards (ShardReader): forked from the server on the first kept
// request, it serves the kept requests, sending each answer to the client itself and then one
// byte to the server. It dies alone when HDF5 crashes in it; the next kept request starts another,
// which reopens each shard on its first read (kept() above).
class Keeper {
 public:
  // Serves `request` through the keeper. Returns the answer the server still has to send: none
  // when the keeper sent it, an error when the keeper died on it.
  std::optional<std::vector<std::byte>> serve(int client_fd,
                                              const std::vector<std::byte>& request) {
    if (pid_ < 0) {
      // A close for a keeper that is gone: nothing of the client's is open.
      if (static_cast<Op>(std::to_integer<std::uint8_t>(request.front())) == Op::close)
        return handle(request);
      start(client_fd);
    }
    char ack = 0;
    bool timed_out = false;
    if (send_frame(fd_, request) && recv_all(fd_, &ack, 1, nullptr, &timed_out))
      return std::nullopt;
    ::close(fd_);
    const pid_t pid = std::exchange(pid_, -1);
    fd_ = -1;
    return error_answer(Status::runtime_error, crashed_text(request, reap(pid).value_or("exited")));
  }

 private:
  void start(int client_fd) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("shard reader: socketpair: ") + std::strerror(errno));
    const pid_t child = fork_dying_with_parent();
    if (child < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw std::runtime_error(std::string("shard reader: fork: ") + std::strerror(errno));
    }
    if (child == 0) {
      ::close(sv[0]);
      std::vector<std::byte> request;
      const char ack = 1;
      while (recv_frame(sv[1], request, nullptr, nullptr))
        if (!send_frame(client_fd, handle(request)) || !send_all(sv[1], &ack, 1)) break;
      ::_exit(0);
    }
    ::close(sv[1]);
    pid_ = child;
    fd_ = sv[0];
  }

  pid_t pid_ = -1;
  int fd_ = -1;
};

// Serves one request; returns the answer this process still has to send (none when a child sent
// it). This process itself never reads a shard: HDF5 1.10 reading a corrupt file can fill rows from
// memory the file does not define (a fuzzer found a corrupt packed shard read as rows of zeros
// after another shard, and rejected alone), so a read of rows, lengths or a shard's shape runs in a
// fork, which starts from the state this process had before any read; its answer depends on the
// file and the request only, never on the shards read before. A fork that dies (HDF5 crashing on
// the file) becomes an error answer and this process serves on. Kept shards (ShardReader) live in
// the keeper, whose reads of a corrupt shard may still depend on its earlier reads: keeping the
// shard open and its metadata cached is what makes a loader's small reads cheap.
std::optional<std::vector<std::byte>> serve(int fd, const std::vector<std::byte>& request,
                                            Keeper& keeper) {
  if (request.empty()) return handle(request);  // an error answer
  if (is_kept_op(static_cast<Op>(std::to_integer<std::uint8_t>(request.front())))) {
    try {
      return keeper.serve(fd, request);
    } catch (const std::exception& e) {
      return error_answer(Status::runtime_error, e.what());
    }
  }
  const pid_t child = fork_dying_with_parent();
  if (child < 0)
    return error_answer(Status::runtime_error,
                        std::string("shard reader: cannot fork a read: ") + std::strerror(errno));
  // The fork exits 0 once its answer is sent, 2 when the client is gone (the next receive here
  // then ends the loop); anything else is HDF5 ending it before an answer.
  if (child == 0) ::_exit(send_frame(fd, handle(request)) ? 0 : 2);
  const auto ended = reap(child);
  if (!ended) return std::nullopt;
  return error_answer(Status::runtime_error, crashed_text(request, *ended));
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

int serve_shard_reads(int fd) {
  ::signal(SIGPIPE, SIG_IGN);
  // The client gone (killed, crashed) closes the socket: a watcher ends this process then, even
  // while it waits on a read that is stuck (and the read's fork dies with it). A process, not a
  // thread: this process forks for every read, and a fork taken while a second thread held an
  // allocator lock (ASan's, as that thread started) hung in its first allocation.
  const pid_t server = ::getpid();
  const pid_t watcher = fork_dying_with_parent();
  if (watcher < 0) {
    std::fprintf(stderr, "mlbert-shard-reader: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (watcher == 0) {
    pollfd pfd{fd, POLLRDHUP, 0};
    while (::poll(&pfd, 1, -1) < 0 && errno == EINTR) {
    }
    ::kill(server, SIGKILL);
    ::_exit(0);
  }
  direct::initialize_hdf5();
  Keeper keeper;
  std::vector<std::byte> request;
  while (recv_frame(fd, request, nullptr, nullptr)) {
    const std::optional<std::vector<std::byte>> answer = serve(fd, request, keeper);
    if (answer && !send_frame(fd, *answer)) return 1;
  }
  return 0;
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
