// The shard reader's framing and shared encodings (see shard_reader_wire.h).
#include "data_prep/shard_reader_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mlbert::data::shard_wire {

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

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped (wait status " + std::to_string(status) + ")";
}

}  // namespace mlbert::data::shard_wire
