// Row lengths in 2 MiB pages, and their lookup (see row_lengths.h).
#include "harness/data/row_lengths.h"

#include <sys/mman.h>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "harness/data/sampler.h"

namespace mlbert::harness {

std::size_t RowLengths::place(const SampleRef& ref) const {
  if (ref.shard < 0 || static_cast<std::size_t>(ref.shard) + 1 >= first_row.size() || ref.row < 0 ||
      ref.row >= first_row[ref.shard + 1] - first_row[ref.shard] ||
      static_cast<std::size_t>(first_row[ref.shard] + ref.row) >= lengths.size())
    throw std::out_of_range("row lengths: shard " + std::to_string(ref.shard) + " row " +
                            std::to_string(ref.row) + " is outside the indexed data set");
  return static_cast<std::size_t>(first_row[ref.shard] + ref.row);
}

int RowLengths::of(const SampleRef& ref) const {
  return lengths[place(ref)];
}

LengthTable::LengthTable(std::size_t size) : size_(size) {
  if (size == 0) return;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  mapped_ = (size * sizeof(std::uint16_t) + kHugePage - 1) / kHugePage * kHugePage;
  void* memory =
      ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  ::madvise(memory, mapped_, MADV_HUGEPAGE);    // a hint: without it the table still works
  data_ = static_cast<std::uint16_t*>(memory);  // anonymous memory starts zeroed
}

LengthTable::~LengthTable() {
  release();
}

LengthTable::LengthTable(LengthTable&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

LengthTable& LengthTable::operator=(LengthTable&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void LengthTable::release() {
  if (data_) ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

}  // namespace mlbert::harness
