// safetensors reader (validating) and F32 writer.
#include "bert/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/input_file.h"

namespace mlbert::bert {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit is 100 MB

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3FFu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace

size_t SafetensorsEntry::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

namespace {

// One tensor's header entry, checked against the data section's size.
SafetensorsEntry parse_entry(const std::filesystem::path& path, const std::string& name,
                             const nlohmann::json& t, uint64_t data_size) {
  const std::string where = "tensor \"" + name + "\"";
  if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
      !t.contains("data_offsets")) {
    fail(path, where + " lacks dtype, shape or data_offsets");
  }
  SafetensorsEntry e;
  e.name = name;
  if (!t["dtype"].is_string()) fail(path, where + ": dtype is not a string");
  e.dtype = t["dtype"].get<std::string>();
  const size_t elem = dtype_bytes(e.dtype);
  if (elem == 0) fail(path, where + ": unknown dtype \"" + e.dtype + "\"");
  if (!t["shape"].is_array()) fail(path, where + ": shape is not an array");
  for (const auto& d : t["shape"]) {
    if (!d.is_number_unsigned()) fail(path, where + ": shape has a non-integer or negative entry");
    e.shape.push_back(d.get<int64_t>());
  }
  const auto& off = t["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    fail(path, where + ": data_offsets must be two non-negative integers");
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size) {
    fail(path, where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                   ") outside the " + std::to_string(data_size) + "-byte data section");
  }
  // numel * elem must equal the byte range (guard the product against overflow).
  unsigned __int128 bytes = elem;
  for (int64_t d : e.shape) bytes *= static_cast<uint64_t>(d);
  if (bytes != e.end - e.begin) {
    fail(path, where + ": shape and dtype need " + std::to_string(static_cast<uint64_t>(bytes)) +
                   " bytes, data_offsets give " + std::to_string(e.end - e.begin));
  }
  return e;
}

// Tensors must not overlap.
void require_no_overlap(const std::filesystem::path& path,
                        const std::vector<SafetensorsEntry>& entries) {
  std::vector<const SafetensorsEntry*> sorted;
  for (const auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  const SafetensorsEntry* furthest = nullptr;  // the non-empty tensor reaching furthest so far
  for (const SafetensorsEntry* e : sorted) {
    if (e->begin == e->end) continue;
    if (furthest && e->begin < furthest->end) {
      fail(path, "tensors \"" + furthest->name + "\" and \"" + e->name + "\" overlap");
    }
    if (!furthest || e->end > furthest->end) furthest = e;
  }
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path) : path_(path) {
  std::ifstream in = files::open_input(path, "safetensors file");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char size_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(size_bytes), 8)) {
    fail(path, "too short for a safetensors header");
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | size_bytes[i];
  if (header_size > kMaxHeaderBytes || header_size > file_size - 8) {
    fail(path, "header length " + std::to_string(header_size) + " exceeds the file or 100 MB");
  }
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!json.is_object()) fail(path, "header is not a JSON object");
  data_start_ = 8 + header_size;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail(path, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(path, "__metadata__ value \"" + m.key() + "\" is not a string");
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries_.push_back(parse_entry(path, it.key(), *it, file_size - data_start_));
  }
  require_no_overlap(path, entries_);
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<float> SafetensorsReader::read_f32(const SafetensorsEntry& entry) const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) fail(path_, "cannot reopen");
  std::vector<char> raw(entry.end - entry.begin);
  in.seekg(static_cast<std::streamoff>(data_start_ + entry.begin));
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size()))) {
    fail(path_, "tensor \"" + entry.name + "\": short read");
  }
  const size_t n = entry.numel();
  std::vector<float> out(n);
  if (entry.dtype == "F32") {
    // A tensor with a zero dimension has no bytes: its vectors' data() may be null, which
    // memcpy must not be given even for 0 bytes.
    if (n > 0) std::memcpy(out.data(), raw.data(), n * 4);
  } else if (entry.dtype == "F64") {
    for (size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, raw.data() + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
  } else if (entry.dtype == "F16" || entry.dtype == "BF16") {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = entry.dtype == "F16" ? half_to_float(h)
                                    : std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
    }
  } else {
    fail(path_, "tensor \"" + entry.name + "\" has dtype " + entry.dtype +
                    "; only F32, F64, F16 and BF16 convert to floats");
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path,
                       std::span<const SafetensorsTensorF32> tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) {
      throw std::invalid_argument(path.string() + ": tensor \"" + t.name + "\" given twice");
    }
    size_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
    if (numel != t.values.size()) {
      throw std::invalid_argument(path.string() + ": tensor \"" + t.name + "\" has " +
                                  std::to_string(t.values.size()) + " values for its shape");
    }
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * numel}}};
    offset += 4 * numel;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // keep the data 8-byte aligned
  files::AtomicFile out(path);
  unsigned char size_bytes[8];
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(size_bytes, 8);
  out.write(text);
  for (const auto& t : tensors) out.write(t.values.data(), t.values.size_bytes());
  out.commit();
}

}  // namespace mlbert::bert
