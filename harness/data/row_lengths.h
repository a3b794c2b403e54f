// The length index in memory: the token count of every row of a data set, and a view that looks
// a sample's length up by its shard and row.
//
// Design choice: the table lives in one anonymous mapping advised into 2 MiB pages
// (MADV_HUGEPAGE, where the kernel grants them), because planning a global deal reads thousands
// of lengths at random places of a table of 2 bytes per row (313 MB for the MLPerf set) every
// step, and with 4 KiB pages nearly every one of those reads also misses the TLB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mlbert::harness {

struct SampleRef;

// Row lengths, row `row` of shard `s` at lengths[first_row[s] + row] (first_row has one entry per
// shard, plus the total at the end).
struct RowLengths {
  std::span<const std::int64_t> first_row;
  std::span<const std::uint16_t> lengths;
  int of(const SampleRef& ref) const;             // throws for a ref outside the data set
  std::size_t place(const SampleRef& ref) const;  // its index in `lengths`; throws as of()
};

// Owns `size` zero-initialized lengths (see the design note); move-only.
class LengthTable {
 public:
  LengthTable() = default;
  explicit LengthTable(std::size_t size);
  ~LengthTable();
  LengthTable(LengthTable&& other) noexcept;
  LengthTable& operator=(LengthTable&& other) noexcept;
  LengthTable(const LengthTable&) = delete;
  LengthTable& operator=(const LengthTable&) = delete;

  std::uint16_t* data() { return data_; }
  const std::uint16_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::uint16_t& operator[](std::size_t i) { return data_[i]; }
  std::uint16_t operator[](std::size_t i) const { return data_[i]; }
  std::span<const std::uint16_t> span() const { return {data_, size_}; }

 private:
  void release();
  std::uint16_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // bytes mapped
};

}  // namespace mlbert::harness
