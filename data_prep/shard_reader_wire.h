// The shard reader's wire format and what both of its ends share (shard_reader.h has the design).
// A frame, both ways = u64 payload size + payload. Request payload: u8 op, the shard path, the
// read options, then the op's arguments. Response payload: u8 status (0: result follows; 1 or 2:
// a std::runtime_error or std::invalid_argument message follows), then the result.
// Internal to data_prep.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"

namespace mlbert::data::shard_wire {

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
inline constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 40;  // anything larger is garbage

// Framing over a stream socket (send with MSG_NOSIGNAL: a dead peer is an error, not SIGPIPE).
bool send_all(int fd, const void* data, std::size_t size);
bool send_frame(int fd, const std::vector<std::byte>& payload);
// Reads exactly `size` bytes. Returns false on end of file or error; `deadline` (when given) bounds
// the wait and sets `timed_out`.
bool recv_all(int fd, void* data, std::size_t size,
              const std::chrono::steady_clock::time_point* deadline, bool* timed_out);
bool recv_frame(int fd, std::vector<std::byte>& payload,
                const std::chrono::steady_clock::time_point* deadline, bool* timed_out);

void put_options(ByteWriter& out, const ReadOptions& o);
ReadOptions get_options(ByteReader& in);

// How a child process ended, from its wait status ("killed by signal 11 (Segmentation fault)").
std::string describe_exit(int status);

}  // namespace mlbert::data::shard_wire
