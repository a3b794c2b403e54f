// The shard reader process (shard_reader.h): its request loop, the one-shot reads each in a fork,
// and the keeper process that holds the shards ShardReaders keep open.
#include "data_prep/shard_reader.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"
#include "data_prep/shard_reader_wire.h"

namespace mlbert::data {
namespace {

namespace fs = std::filesystem;
using namespace shard_wire;

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

}  // namespace mlbert::data
