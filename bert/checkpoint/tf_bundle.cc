// TensorFlow tensor-bundle reader: SSTable index, protobuf records, data shards.
#include "bert/checkpoint/tf_bundle.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "bert/checkpoint/crc32c.h"
#include "common/input_file.h"

namespace mlbert::bert {

namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;       // two block handles padded to 40 bytes + 8-byte magic
constexpr size_t kBlockTrailerSize = 5;  // compression type byte + masked crc32c
constexpr uint8_t kNoCompression = 0, kSnappyCompression = 1;

struct Error {
  std::string where;
  [[noreturn]] void operator()(const std::string& what) const {
    throw std::runtime_error(where + ": " + what);
  }
};

// A bounds-checked cursor over bytes.
class Cursor {
 public:
  Cursor(const char* data, size_t size, const Error& error)
      : p_(data), end_(data + size), error_(error) {}
  bool done() const { return p_ >= end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  uint64_t varint64() {
    uint64_t value = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      if (p_ >= end_) error_("truncated varint");
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      value |= static_cast<uint64_t>(byte & 0x7Fu) << shift;
      if ((byte & 0x80u) == 0) return value;
    }
    error_("varint longer than 10 bytes");
  }
  uint32_t varint32() {
    const uint64_t v = varint64();
    if (v > 0xFFFFFFFFull) error_("varint32 out of range");
    return static_cast<uint32_t>(v);
  }
  uint32_t fixed32() {
    if (left() < 4) error_("truncated fixed32");
    uint32_t v;
    std::memcpy(&v, p_, 4);
    p_ += 4;
    return v;
  }
  uint64_t fixed64() {
    if (left() < 8) error_("truncated fixed64");
    uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  const char* take(size_t n) {
    if (left() < n) error_("length " + std::to_string(n) + " runs past the end");
    const char* at = p_;
    p_ += n;
    return at;
  }

 private:
  const char* p_;
  const char* end_;
  const Error& error_;
};

struct BlockHandle {
  uint64_t offset = 0, size = 0;
};

BlockHandle read_handle(Cursor& c) {
  return BlockHandle{c.varint64(), c.varint64()};
}

// Reads a block with its trailer from the index file bytes, checks the CRC and decompresses.
std::string read_block(const std::string& file, const BlockHandle& h, const Error& error) {
  if (h.offset > file.size() || h.size > file.size() - h.offset ||
      kBlockTrailerSize > file.size() - h.offset - h.size) {
    error("block at offset " + std::to_string(h.offset) + " size " + std::to_string(h.size) +
          " lies outside the file");
  }
  const char* contents = file.data() + h.offset;
  const uint8_t type = static_cast<uint8_t>(contents[h.size]);
  uint32_t stored;
  std::memcpy(&stored, contents + h.size + 1, 4);
  const uint32_t actual = crc32c(contents, h.size + 1);
  if (crc32c_unmask(stored) != actual) {
    error("block at offset " + std::to_string(h.offset) + " fails its CRC32C check (corrupt file)");
  }
  if (type == kNoCompression) return std::string(contents, h.size);
  if (type == kSnappyCompression) {
    try {
      return snappy_uncompress(contents, h.size);
    } catch (const std::exception& e) {
      error("block at offset " + std::to_string(h.offset) + ": " + e.what());
    }
  }
  error("block at offset " + std::to_string(h.offset) + " has unknown compression type " +
        std::to_string(type));
}

// Iterates the (key, value) entries of an SSTable block.
template <typename Visit>
void for_each_entry(const std::string& block, const Error& error, Visit&& visit) {
  if (block.size() < 4) error("block shorter than its restart count");
  uint32_t num_restarts;
  std::memcpy(&num_restarts, block.data() + block.size() - 4, 4);
  if (num_restarts > (block.size() - 4) / 4) error("block restart count exceeds the block");
  const size_t entries_end = block.size() - 4 - 4 * static_cast<size_t>(num_restarts);
  Cursor c(block.data(), entries_end, error);
  std::string key;
  while (!c.done()) {
    const uint32_t shared = c.varint32(), non_shared = c.varint32(), value_size = c.varint32();
    if (shared > key.size()) error("entry shares more key bytes than the previous key has");
    key.resize(shared);
    key.append(c.take(non_shared), non_shared);
    const char* value = c.take(value_size);
    visit(key, std::string_view(value, value_size));
  }
}

// ---- protobuf wire format ----

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void skip_field(Cursor& c, uint32_t wire, const Error& error) {
  switch (wire) {
    case kVarint:
      c.varint64();
      break;
    case kFixed64:
      c.fixed64();
      break;
    case kLengthDelimited:
      c.take(c.varint64());
      break;
    case kFixed32:
      c.fixed32();
      break;
    default:
      error("unsupported protobuf wire type " + std::to_string(wire));
  }
}

std::vector<int64_t> parse_shape(std::string_view bytes, const Error& error) {
  std::vector<int64_t> dims;
  Cursor c(bytes.data(), bytes.size(), error);
  while (!c.done()) {
    const uint64_t tag = c.varint64();
    const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = static_cast<uint32_t>(tag & 7);
    if (field == 2 && wire == kLengthDelimited) {  // TensorShapeProto.dim
      const uint64_t len = c.varint64();
      Cursor d(c.take(len), len, error);
      int64_t size = 0;
      while (!d.done()) {
        const uint64_t dtag = d.varint64();
        if ((dtag >> 3) == 1 && (dtag & 7) == kVarint) {
          size = static_cast<int64_t>(d.varint64());
        } else {
          skip_field(d, static_cast<uint32_t>(dtag & 7), error);
        }
      }
      if (size < 0) error("negative dimension in shape");
      dims.push_back(size);
      // Keep element counts far from overflow: no real tensor has 2^48 elements.
      unsigned __int128 numel = 1;
      for (int64_t dim : dims) numel *= static_cast<uint64_t>(dim);
      if (numel > (static_cast<unsigned __int128>(1) << 48)) error("implausibly large shape");
    } else if (field == 3 && wire == kVarint) {
      if (c.varint64() != 0) error("tensor has unknown rank");
    } else {
      skip_field(c, wire, error);
    }
  }
  return dims;
}

TfBundleEntry parse_entry(const std::string& name, std::string_view bytes, const Error& error) {
  TfBundleEntry e;
  e.name = name;
  Cursor c(bytes.data(), bytes.size(), error);
  while (!c.done()) {
    const uint64_t tag = c.varint64();
    const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = static_cast<uint32_t>(tag & 7);
    if (field == 1 && wire == kVarint) {
      e.dtype = static_cast<int>(c.varint64());
    } else if (field == 2 && wire == kLengthDelimited) {
      const uint64_t len = c.varint64();
      e.shape = parse_shape(std::string_view(c.take(len), len), error);
    } else if (field == 3 && wire == kVarint) {
      e.shard_id = static_cast<int32_t>(c.varint64());
    } else if (field == 4 && wire == kVarint) {
      e.offset = c.varint64();
    } else if (field == 5 && wire == kVarint) {
      e.size = c.varint64();
    } else if (field == 6 && wire == kFixed32) {
      e.crc32c = crc32c_unmask(c.fixed32());
    } else if (field == 7 && wire == kLengthDelimited) {
      c.take(c.varint64());
      e.sliced = true;
    } else {
      skip_field(c, wire, error);
    }
  }
  return e;
}

std::string read_file(const std::filesystem::path& path) {
  // A folder opens and then fails in the read, which the iterator below throws as an error that
  // names no file.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(path.string() + ": not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

size_t tf_dtype_bytes(int dtype) {
  switch (static_cast<TfDataType>(dtype)) {
    case TfDataType::float64:
    case TfDataType::int64:
      return 8;
    case TfDataType::float32:
    case TfDataType::int32:
      return 4;
    case TfDataType::bfloat16:
    case TfDataType::float16:
    case TfDataType::int16:
      return 2;
    case TfDataType::uint8:
    case TfDataType::int8:
    case TfDataType::boolean:
      return 1;
    default:
      return 0;
  }
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

}  // namespace

const char* tf_dtype_name(int dtype) {
  switch (static_cast<TfDataType>(dtype)) {
    case TfDataType::float32:
      return "float32";
    case TfDataType::float64:
      return "float64";
    case TfDataType::int32:
      return "int32";
    case TfDataType::uint8:
      return "uint8";
    case TfDataType::int16:
      return "int16";
    case TfDataType::int8:
      return "int8";
    case TfDataType::string:
      return "string";
    case TfDataType::int64:
      return "int64";
    case TfDataType::boolean:
      return "bool";
    case TfDataType::bfloat16:
      return "bfloat16";
    case TfDataType::float16:
      return "float16";
  }
  return "unknown";
}

size_t TfBundleEntry::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::string snappy_uncompress(const char* data, size_t size) {
  const Error error{"snappy"};
  Cursor c(data, size, error);
  const uint64_t length = c.varint32();
  // No snappy element expands more than 64 bytes out of 3 in: a larger claim is corruption (and
  // must not become a huge allocation).
  constexpr uint64_t kMaxExpansion = 22;
  if (length > kMaxExpansion * size + 64) error("declared length exceeds what the input can hold");
  std::string out;
  out.reserve(length);
  while (!c.done()) {
    const uint8_t tag = static_cast<uint8_t>(*c.take(1));
    const uint32_t kind = tag & 3u;
    if (kind == 0) {  // literal
      uint64_t len = tag >> 2;
      if (len >= 60) {
        const uint32_t bytes = static_cast<uint32_t>(len - 59);
        const char* p = c.take(bytes);
        len = 0;
        for (uint32_t i = 0; i < bytes; ++i)
          len |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
      }
      len += 1;
      out.append(c.take(len), len);
    } else {
      uint64_t len, offset;
      if (kind == 1) {
        len = 4 + ((tag >> 2) & 7u);
        offset = (static_cast<uint64_t>(tag >> 5) << 8) | static_cast<uint8_t>(*c.take(1));
      } else if (kind == 2) {
        len = (tag >> 2) + 1u;
        const char* p = c.take(2);
        offset =
            static_cast<uint8_t>(p[0]) | (static_cast<uint64_t>(static_cast<uint8_t>(p[1])) << 8);
      } else {
        len = (tag >> 2) + 1u;
        offset = c.fixed32();
      }
      if (offset == 0 || offset > out.size()) error("copy offset outside the output");
      const size_t from = out.size() - offset;
      for (uint64_t i = 0; i < len; ++i) out.push_back(out[from + i]);  // may overlap itself
    }
    if (out.size() > length) error("output longer than its declared length");
  }
  if (out.size() != length) error("output shorter than its declared length");
  return out;
}

TfBundleReader::TfBundleReader(const std::filesystem::path& prefix) {
  std::string p = prefix.string();
  if (p.size() > 6 && p.ends_with(".index")) p.resize(p.size() - 6);
  prefix_ = p;
  index_path_ = p + ".index";
  const Error error{index_path_.string()};
  const std::string file = read_file(index_path_);
  if (file.size() < kFooterSize) error("too short for an SSTable footer");
  Cursor footer(file.data() + file.size() - kFooterSize, kFooterSize, error);
  read_handle(footer);  // metaindex: unused by tensor bundles
  const BlockHandle index = read_handle(footer);
  uint64_t magic;
  std::memcpy(&magic, file.data() + file.size() - 8, 8);
  if (magic != kTableMagic) error("bad SSTable magic number (not a TensorFlow checkpoint index)");
  const std::string index_block = read_block(file, index, error);
  bool have_header = false;
  for_each_entry(index_block, error, [&](const std::string&, std::string_view handle_bytes) {
    Cursor hc(handle_bytes.data(), handle_bytes.size(), error);
    const std::string block = read_block(file, read_handle(hc), error);
    for_each_entry(block, error, [&](const std::string& key, std::string_view value) {
      if (key.empty()) {  // BundleHeaderProto
        Cursor c(value.data(), value.size(), error);
        while (!c.done()) {
          const uint64_t tag = c.varint64();
          const uint32_t field = static_cast<uint32_t>(tag >> 3),
                         wire = static_cast<uint32_t>(tag & 7);
          if (field == 1 && wire == kVarint) {
            num_shards_ = static_cast<int32_t>(c.varint64());
          } else if (field == 2 && wire == kVarint) {
            if (c.varint64() != 0) error("big-endian checkpoints are not supported");
          } else {
            skip_field(c, wire, error);
          }
        }
        have_header = true;
        return;
      }
      const Error entry_error{index_path_.string() + ": tensor \"" + key + "\""};
      entries_.push_back(parse_entry(key, value, entry_error));
    });
  });
  if (!have_header) error("no BundleHeaderProto (empty key) entry");
  if (num_shards_ < 1) error("header declares " + std::to_string(num_shards_) + " shards");
  for (const auto& e : entries_) {
    if (e.shard_id < 0 || e.shard_id >= num_shards_) {
      error("tensor \"" + e.name + "\" names shard " + std::to_string(e.shard_id) + " of " +
            std::to_string(num_shards_));
    }
  }
}

const TfBundleEntry* TfBundleReader::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::filesystem::path TfBundleReader::shard_path(int32_t shard) const {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards_);
  return prefix_.string() + suffix;
}

std::vector<char> TfBundleReader::read_bytes(const TfBundleEntry& e) const {
  const std::filesystem::path data = shard_path(e.shard_id);
  const Error error{data.string() + ": tensor \"" + e.name + "\""};
  if (e.sliced) error("is a partitioned (sliced) variable; not supported");
  std::ifstream in = files::open_input(data, "checkpoint data shard");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  if (e.offset > file_size || e.size > file_size - e.offset) {
    error("bytes [" + std::to_string(e.offset) + ", " + std::to_string(e.offset + e.size) +
          ") lie outside the " + std::to_string(file_size) + "-byte shard");
  }
  std::vector<char> bytes(e.size);
  in.seekg(static_cast<std::streamoff>(e.offset));
  if (!in.read(bytes.data(), static_cast<std::streamsize>(e.size))) error("short read");
  if (e.crc32c && crc32c(bytes.data(), bytes.size()) != *e.crc32c) {
    error("fails its CRC32C check (corrupt data file)");
  }
  return bytes;
}

std::vector<float> TfBundleReader::read_f32(const TfBundleEntry& e) const {
  const Error error{index_path_.string() + ": tensor \"" + e.name + "\""};
  const size_t elem = tf_dtype_bytes(e.dtype);
  if (elem == 0) error(std::string("has dtype ") + tf_dtype_name(e.dtype) + ", not numeric");
  if (e.numel() * elem != e.size) {
    error("holds " + std::to_string(e.size) + " bytes for " + std::to_string(e.numel()) + " " +
          tf_dtype_name(e.dtype) + " elements");
  }
  const std::vector<char> bytes = read_bytes(e);
  std::vector<float> out(e.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    const char* p = bytes.data() + i * elem;
    switch (static_cast<TfDataType>(e.dtype)) {
      case TfDataType::float32:
        std::memcpy(&out[i], p, 4);
        break;
      case TfDataType::float64: {
        double d;
        std::memcpy(&d, p, 8);
        out[i] = static_cast<float>(d);
        break;
      }
      case TfDataType::int32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        out[i] = static_cast<float>(v);
        break;
      }
      case TfDataType::int64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        out[i] = static_cast<float>(v);
        break;
      }
      case TfDataType::int16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        out[i] = v;
        break;
      }
      case TfDataType::int8:
        out[i] = static_cast<int8_t>(*p);
        break;
      case TfDataType::uint8:
      case TfDataType::boolean:
        out[i] = static_cast<uint8_t>(*p);
        break;
      case TfDataType::float16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        out[i] = half_bits_to_float(h);
        break;
      }
      case TfDataType::bfloat16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        out[i] = std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
        break;
      }
      default:
        error("unsupported dtype");
    }
  }
  return out;
}

}  // namespace mlbert::bert
