// Length index: build from shards, (de)serialize with full validation, atomic write (see
// length_index.h).
#include "data_prep/length_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "common/atomic_file.h"
#include "data_prep/unfinished_prep.h"

namespace mlbert::data {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'M', 'L', 'B', 'L', 'I', 'D', 'X', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kHashBlockBytes = 4096;
constexpr uint32_t kHashBlocks = 32;
constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 4 + 4;
constexpr std::size_t kMinEntryBytes = 2 + 1 + 1 + 8 + 8 + 8;  // a 1-byte path
constexpr std::size_t kTrailerBytes = 8;

template <typename T>
void put(std::vector<std::byte>& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

// Bounds-checked little-endian reads; every failure names the file and what was being read.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& origin)
      : bytes_(bytes), origin_(origin) {}
  template <typename T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      value |= static_cast<uint64_t>(std::to_integer<uint8_t>(bytes_[offset_ + i])) << (8 * i);
    offset_ += sizeof(T);
    return static_cast<T>(value);
  }
  std::string text(std::size_t n, const std::string& what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return s;
  }
  std::size_t offset() const { return offset_; }
  std::size_t left() const { return bytes_.size() - offset_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(origin_ + ": " + what);
  }

 private:
  void need(std::size_t n, const std::string& what) const {
    if (n > left())
      fail("truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(offset_) + ", the file has " + std::to_string(bytes_.size()));
  }
  std::span<const std::byte> bytes_;
  std::string origin_;
  std::size_t offset_ = 0;
};

// A stored path as a message can show it: control bytes escaped as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

// A stored shard path must stay inside the index's directory and name one file.
std::string path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path.find('\0') != std::string::npos) return "contains a NUL byte";
  if (path.front() == '/') return "is absolute";
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t end = std::min(path.find('/', begin), path.size());
    const std::string part = path.substr(begin, end - begin);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a '" + part + "' component";
    begin = end + 1;
  }
  return {};
}

uint8_t layout_code(Layout layout) {
  switch (layout) {
    case Layout::kFixed:
      return 0;
    case Layout::kVarlen:
      return 1;
    case Layout::kPacked:
      return 2;
  }
  return 255;
}

std::string errno_text() {
  return std::strerror(errno);
}

// Reads exactly `n` bytes at `offset`.
void read_at(int fd, const fs::path& path, void* buffer, std::size_t n, uint64_t offset) {
  auto* out = static_cast<char*>(buffer);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(path.string() + ": read failed: " + errno_text());
    if (got == 0)
      throw std::runtime_error(path.string() + ": shorter than its size while hashing it");
    done += static_cast<std::size_t>(got);
  }
}

fs::path normal(const fs::path& p) {
  return p.lexically_normal();
}

}  // namespace

fs::path length_index_path(const fs::path& data) {
  std::error_code ec;
  if (fs::is_directory(data, ec)) return data / "lengths.index";
  fs::path file = data;
  file += ".lengths.index";
  return file;
}

std::vector<fs::path> find_shards(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error(path.string() + ": no such file or directory");
  if (fs::is_regular_file(path, ec)) return {path};
  refuse_unfinished_prep(path);
  std::vector<fs::path> shards;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || files::is_partial_name(it->path())) continue;
    const auto ext = it->path().extension();
    if (ext == ".hdf5" || ext == ".h5") shards.push_back(it->path());
  }
  if (ec) throw std::runtime_error(path.string() + ": cannot list: " + ec.message());
  std::sort(shards.begin(), shards.end());
  return shards;
}

std::string indexed_path(const fs::path& root, const fs::path& shard) {
  return normal(fs::absolute(shard))
      .lexically_relative(normal(fs::absolute(root.empty() ? fs::path(".") : root)))
      .generic_string();
}

uint64_t shard_content_hash(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot open: " + errno_text());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw std::runtime_error(path.string() + ": cannot stat: " + errno_text());
  const auto size = static_cast<uint64_t>(st.st_size);
  XXH3_state_t* state = XXH3_createState();
  if (!state) throw std::bad_alloc();
  struct Freer {
    XXH3_state_t* s;
    ~Freer() { XXH3_freeState(s); }
  } freer{state};
  XXH3_64bits_reset(state);
  std::vector<std::byte> size_bytes;
  put<uint64_t>(size_bytes, size);
  XXH3_64bits_update(state, size_bytes.data(), size_bytes.size());
  std::vector<char> block(kHashBlockBytes);
  if (size <= uint64_t{kHashBlockBytes} * kHashBlocks) {
    for (uint64_t offset = 0; offset < size; offset += kHashBlockBytes) {
      const auto n = static_cast<std::size_t>(std::min<uint64_t>(kHashBlockBytes, size - offset));
      read_at(fd, path, block.data(), n, offset);
      XXH3_64bits_update(state, block.data(), n);
    }
  } else {
    for (uint64_t k = 0; k < kHashBlocks; ++k) {
      const uint64_t offset = k * (size - kHashBlockBytes) / (kHashBlocks - 1);
      read_at(fd, path, block.data(), kHashBlockBytes, offset);
      XXH3_64bits_update(state, block.data(), kHashBlockBytes);
    }
  }
  return XXH3_64bits_digest(state);
}

LengthIndex build_length_index(const fs::path& data,
                               const std::map<fs::path, std::vector<int32_t>>& known) {
  const auto paths = find_shards(data);
  if (paths.empty())
    throw std::runtime_error(data.string() + ": no HDF5 shards (*.hdf5, *.h5) to index");
  return build_length_index(length_index_path(data).parent_path(), paths, known);
}

LengthIndex build_length_index(const fs::path& root, const std::vector<fs::path>& paths,
                               const std::map<fs::path, std::vector<int32_t>>& known) {
  if (paths.empty()) throw std::runtime_error("length index: no shards to index");
  std::map<fs::path, const std::vector<int32_t>*> given;
  for (const auto& [path, lengths] : known) given[normal(path)] = &lengths;
  LengthIndex index;
  std::set<std::string> seen;
  for (const auto& path : paths) {
    IndexedShard shard;
    shard.path = indexed_path(root, path);
    if (const std::string problem = path_problem(shard.path); !problem.empty())
      throw std::runtime_error(path.string() + ": its path relative to " + root.string() + " " +
                               problem);
    if (!seen.insert(shard.path).second) throw std::runtime_error(path.string() + ": given twice");
    const ShardInfo info = inspect_shard(path);
    shard.layout = info.layout;
    shard.rows = static_cast<uint64_t>(info.rows);
    std::vector<int32_t> read;
    const auto found = given.find(normal(path));
    const std::vector<int32_t>& lengths =
        found != given.end() ? *found->second : (read = read_lengths(path));
    if (lengths.size() != shard.rows)
      throw std::runtime_error(path.string() + ": " + std::to_string(lengths.size()) +
                               " lengths for " + std::to_string(shard.rows) + " rows");
    shard.first_row = index.lengths.size();
    for (std::size_t row = 0; row < lengths.size(); ++row) {
      if (lengths[row] < 1 || lengths[row] > 0xffff)
        throw std::runtime_error(path.string() + ": row " + std::to_string(row) + " has " +
                                 std::to_string(lengths[row]) +
                                 " tokens; the length index holds 1..65535");
      index.lengths.push_back(static_cast<uint16_t>(lengths[row]));
    }
    shard.file_bytes = static_cast<uint64_t>(fs::file_size(path));
    shard.content_hash = shard_content_hash(path);
    index.shards.push_back(std::move(shard));
  }
  return index;
}

std::vector<std::byte> serialize_length_index(const LengthIndex& index) {
  std::vector<std::byte> out;
  out.reserve(kHeaderBytes + index.shards.size() * 64 + index.lengths.size() * 2 + 8);
  for (char c : kMagic) out.push_back(static_cast<std::byte>(c));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, static_cast<uint32_t>(index.shards.size()));
  put<uint64_t>(out, index.lengths.size());
  put<uint32_t>(out, kHashBlockBytes);
  put<uint32_t>(out, kHashBlocks);
  uint64_t rows = 0;
  for (const IndexedShard& s : index.shards) {
    if (!path_problem(s.path).empty() || s.path.size() > kMaxPathBytes)
      throw std::invalid_argument("length index: shard path \"" + s.path + "\" cannot be stored");
    put<uint16_t>(out, static_cast<uint16_t>(s.path.size()));
    for (char c : s.path) out.push_back(static_cast<std::byte>(c));
    put<uint8_t>(out, layout_code(s.layout));
    put<uint64_t>(out, s.file_bytes);
    put<uint64_t>(out, s.rows);
    put<uint64_t>(out, s.content_hash);
    rows += s.rows;
  }
  if (rows != index.lengths.size())
    throw std::invalid_argument("length index: the shards' rows do not add up to the lengths");
  for (uint16_t length : index.lengths) put<uint16_t>(out, length);
  put<uint64_t>(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

LengthIndex parse_length_index(std::span<const std::byte> bytes, const std::string& origin) {
  Reader in(bytes, origin);
  const std::string magic = in.text(sizeof(kMagic), "the magic number");
  if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0)
    in.fail("not an mlbert length index (bad magic number)");
  const auto version = in.get<uint32_t>("the version");
  if (version != kVersion)
    in.fail("length index version " + std::to_string(version) + "; this mlbert reads version " +
            std::to_string(kVersion) + " (rebuild it with `mlbert data index`)");
  const auto shard_count = in.get<uint32_t>("the shard count");
  const auto total_rows = in.get<uint64_t>("the row count");
  const auto block_bytes = in.get<uint32_t>("the hash block size");
  const auto blocks = in.get<uint32_t>("the hash block count");
  if (block_bytes != kHashBlockBytes || blocks != kHashBlocks)
    in.fail("content hash over " + std::to_string(blocks) + " blocks of " +
            std::to_string(block_bytes) + " bytes; this mlbert hashes " +
            std::to_string(kHashBlocks) + " of " + std::to_string(kHashBlockBytes) +
            " (rebuild it with `mlbert data index`)");
  if (shard_count == 0) in.fail("the index lists no shards");
  if (shard_count > in.left() / kMinEntryBytes)
    in.fail(std::to_string(shard_count) + " shards cannot fit in " + std::to_string(in.left()) +
            " bytes");
  LengthIndex index;
  index.shards.reserve(shard_count);
  std::set<std::string> seen;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < shard_count; ++i) {
    const std::string entry = "shard entry " + std::to_string(i);
    IndexedShard s;
    const auto path_bytes = in.get<uint16_t>(entry + "'s path size");
    if (path_bytes > kMaxPathBytes)
      in.fail(entry + ": a path of " + std::to_string(path_bytes) + " bytes");
    s.path = in.text(path_bytes, entry + "'s path");
    if (const std::string problem = path_problem(s.path); !problem.empty())
      in.fail(entry + ": path \"" + printable(s.path) + "\" " + problem);
    if (!seen.insert(s.path).second) in.fail(entry + ": shard " + s.path + " is listed twice");
    const auto layout = in.get<uint8_t>(entry + "'s layout");
    if (layout > 2) in.fail(entry + " (" + s.path + "): layout code " + std::to_string(layout));
    s.layout = layout == 0 ? Layout::kFixed : layout == 1 ? Layout::kVarlen : Layout::kPacked;
    s.file_bytes = in.get<uint64_t>(entry + "'s file size");
    s.rows = in.get<uint64_t>(entry + "'s row count");
    s.content_hash = in.get<uint64_t>(entry + "'s content hash");
    if (s.rows > total_rows - rows)
      in.fail(entry + " (" + s.path + "): its rows exceed the " + std::to_string(total_rows) +
              " of the header");
    s.first_row = rows;
    rows += s.rows;
    index.shards.push_back(std::move(s));
  }
  if (rows != total_rows)
    in.fail("the shards hold " + std::to_string(rows) + " rows, the header says " +
            std::to_string(total_rows));
  if (in.left() < kTrailerBytes || (in.left() - kTrailerBytes) / 2 != total_rows ||
      (in.left() - kTrailerBytes) % 2 != 0)
    in.fail(std::to_string(in.left()) + " bytes after the shard entries; " +
            std::to_string(total_rows) + " row lengths and the checksum take " +
            (total_rows > (UINT64_MAX - kTrailerBytes) / 2
                 ? std::string("more than a file can hold")
                 : std::to_string(total_rows * 2 + kTrailerBytes)));
  index.lengths.resize(total_rows);
  for (std::size_t shard = 0; shard < index.shards.size(); ++shard) {
    const IndexedShard& s = index.shards[shard];
    for (uint64_t row = 0; row < s.rows; ++row) {
      const auto length = in.get<uint16_t>("a row length");
      if (length == 0)
        in.fail("shard " + s.path + " row " + std::to_string(row) +
                ": length 0 (a row holds at "
                "least one token)");
      index.lengths[s.first_row + row] = length;
    }
  }
  const std::size_t checked = in.offset();
  const auto checksum = in.get<uint64_t>("the checksum");
  if (checksum != XXH3_64bits(bytes.data(), checked))
    in.fail("checksum mismatch: the file is corrupt (rebuild it with `mlbert data index`)");
  return index;
}

void write_length_index(const LengthIndex& index, const fs::path& file) {
  const std::vector<std::byte> bytes = serialize_length_index(index);
  files::AtomicFile out(file);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

LengthIndex read_length_index(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw std::runtime_error(file.string() + ": missing (write it with `mlbert data index`)");
  refuse_unfinished_prep(file.parent_path().empty() ? fs::path(".") : file.parent_path());
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot open");
  std::vector<char> raw(static_cast<std::size_t>(fs::file_size(file)));
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    throw std::runtime_error(file.string() + ": read error");
  return parse_length_index(std::as_bytes(std::span<const char>(raw)), file.string());
}

fs::path index_shards(const fs::path& data, const std::map<fs::path, std::vector<int32_t>>& known) {
  const fs::path file = length_index_path(data);
  write_length_index(build_length_index(data, known), file);
  return file;
}

}  // namespace mlbert::data
