// Sample streams, the keyed permutation and the per-step sample choice (see sampler.h).
#include "harness/data/sampler.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace mlbert::harness {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void SampleStream::add(std::int32_t shard, std::int64_t first_row, std::int64_t rows) {
  if (rows <= 0) return;
  lookup_.clear();
  if (!ranges_.empty()) {
    Range& last = ranges_.back();
    if (last.shard == shard && last.first_row + last.rows == first_row) {
      last.rows += rows;
      total_ += rows;
      return;
    }
  }
  ranges_.push_back(Range{shard, first_row, rows, total_});
  total_ += rows;
}

SampleRef SampleStream::at(std::int64_t index) const {
  if (index < 0 || index >= total_)
    throw std::out_of_range("sample index " + std::to_string(index) + " outside a stream of " +
                            std::to_string(total_));
  auto first = ranges_.begin(), last = ranges_.end();
  if (!lookup_.empty()) {
    const auto bucket = static_cast<std::size_t>(index >> lookup_shift_);
    first = ranges_.begin() + lookup_[bucket];
    if (bucket + 1 < lookup_.size()) last = ranges_.begin() + lookup_[bucket + 1] + 1;
  }
  const auto it = std::upper_bound(first, last, index,
                                   [](std::int64_t i, const Range& r) { return i < r.start; });
  const Range& range = *(it - 1);
  return SampleRef{range.shard, range.first_row + (index - range.start)};
}

SampleStream SampleStream::in_concatenation(std::span<const std::int64_t> first_row) const {
  SampleStream concatenated;
  for (const Range& range : ranges_) {
    if (range.shard < 0 || static_cast<std::size_t>(range.shard) + 1 >= first_row.size() ||
        range.first_row < 0 ||
        range.first_row + range.rows > first_row[range.shard + 1] - first_row[range.shard])
      throw std::out_of_range("sample stream: rows " + std::to_string(range.first_row) + ".." +
                              std::to_string(range.first_row + range.rows - 1) + " of shard " +
                              std::to_string(range.shard) + " are outside the data set");
    concatenated.add(0, first_row[range.shard] + range.first_row, range.rows);
  }
  concatenated.build_lookup();
  return concatenated;
}

void SampleStream::build_lookup() {
  lookup_.clear();
  if (ranges_.size() < 16) return;  // a short binary search is as fast
  // About one bucket per range, at most 2^22 of them.
  const std::int64_t buckets =
      std::min<std::int64_t>(static_cast<std::int64_t>(ranges_.size()), std::int64_t{1} << 22);
  lookup_shift_ = 0;
  while ((total_ >> lookup_shift_) > buckets) ++lookup_shift_;
  lookup_.resize(static_cast<std::size_t>(((total_ - 1) >> lookup_shift_) + 1));
  std::size_t range = 0;
  for (std::size_t b = 0; b < lookup_.size(); ++b) {
    const std::int64_t index = static_cast<std::int64_t>(b) << lookup_shift_;
    while (ranges_[range].start + ranges_[range].rows <= index) ++range;
    lookup_[b] = static_cast<std::uint32_t>(range);
  }
}

RandomPermutation::RandomPermutation(std::uint64_t n, std::uint64_t key) : n_(n) {
  int bits = 2;
  while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  std::uint64_t state = key;
  for (auto& k : round_keys_) {
    state = mix64(state);
    k = state;
  }
}

std::uint64_t RandomPermutation::feistel(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_;
  std::uint64_t right = x & half_mask_;
  for (std::uint64_t k : round_keys_) {
    const std::uint64_t f = mix64(right ^ k) & half_mask_;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::uint64_t RandomPermutation::operator()(std::uint64_t index) const {
  if (index >= n_) throw std::out_of_range("permutation index outside its domain");
  // A Feistel network is a bijection of the 2*half_bits domain whatever the round function;
  // walking the cycle until the value falls back into [0, n) keeps it a bijection of [0, n).
  std::uint64_t x = index;
  do x = feistel(x);
  while (x >= n_);
  return x;
}

void RandomPermutation::map(std::uint64_t first, std::size_t count, std::uint64_t* out) const {
  if (count == 0) return;
  if (first >= n_ || count > n_ - first)
    throw std::out_of_range("permutation indices outside its domain");
  // Up to kLanes indices walk their cycles side by side; a lane that lands in [0, n) hands its
  // value out and takes the next index, so every lane stays busy.
  constexpr std::size_t kLanes = 8;
  std::uint64_t value[kLanes] = {};
  std::size_t slot[kLanes] = {};
  std::size_t active = 0, next = 0;
  for (; active < kLanes && next < count; ++active, ++next) {
    value[active] = first + next;
    slot[active] = next;
  }
  while (active > 0) {
    // One pass of every lane, round by round, so the lanes' multiplies interleave (lanes past
    // `active` compute values nobody reads).
    std::uint64_t left[kLanes], right[kLanes];
    for (std::size_t l = 0; l < kLanes; ++l) {
      left[l] = value[l] >> half_bits_;
      right[l] = value[l] & half_mask_;
    }
    for (std::uint64_t k : round_keys_) {
      for (std::size_t l = 0; l < kLanes; ++l) {
        const std::uint64_t next = left[l] ^ (mix64(right[l] ^ k) & half_mask_);
        left[l] = right[l];
        right[l] = next;
      }
    }
    for (std::size_t l = 0; l < kLanes; ++l) value[l] = (left[l] << half_bits_) | right[l];
    for (std::size_t l = 0; l < active;) {
      if (value[l] >= n_) {
        ++l;
      } else if (out[slot[l]] = value[l]; next < count) {
        value[l] = first + next;  // a fresh index, walked from the next pass on
        slot[l] = next++;
        ++l;
      } else {
        --active;  // the last lane (walked, not yet checked) moves here
        value[l] = value[active];
        slot[l] = slot[active];
      }
    }
  }
}

TabulatedPermutation::TabulatedPermutation(const RandomPermutation& order) : order_(order) {
  const int half_bits = order_.half_bits_;
  if (half_bits > 16) return;  // the half-words do not fit the tables' 16 bits
  const std::size_t entries = std::size_t{1} << half_bits;
  rounds_.resize(4 * entries);
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t right = 0; right < entries; ++right)
      rounds_[k * entries + right] =
          static_cast<std::uint16_t>(mix64(right ^ order_.round_keys_[k]) & order_.half_mask_);
}

void TabulatedPermutation::map(std::uint64_t first, std::size_t count, std::uint64_t* out) {
  if (rounds_.empty() || count > std::numeric_limits<std::uint32_t>::max())
    return order_.map(first, count, out);
  if (count == 0) return;
  if (first >= order_.n_ || count > order_.n_ - first)
    throw std::out_of_range("permutation indices outside its domain");
  const int half_bits = order_.half_bits_;
  const std::size_t entries = std::size_t{1} << half_bits;
  left_.resize(count);
  right_.resize(count);
  slot_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    left_[i] = static_cast<std::uint16_t>((first + i) >> half_bits);
    right_[i] = static_cast<std::uint16_t>((first + i) & order_.half_mask_);
    slot_[i] = static_cast<std::uint32_t>(i);
  }
  // Each pass walks every index still outside [0, n) once more around its cycle. A round turns
  // (left, right) into (right, left ^ f(right)); done in place the halves trade places instead,
  // and after the four rounds they are back where they started.
  std::size_t walking = count;
  while (walking > 0) {
    for (std::size_t k = 0; k < 4; ++k) {
      const std::uint16_t* f = rounds_.data() + k * entries;
      std::uint16_t* changed = k % 2 == 0 ? left_.data() : right_.data();
      const std::uint16_t* read = k % 2 == 0 ? right_.data() : left_.data();
      for (std::size_t i = 0; i < walking; ++i) changed[i] ^= f[read[i]];
    }
    std::size_t still = 0;  // the values outside [0, n) move to the front, without branches
    for (std::size_t i = 0; i < walking; ++i) {
      const std::uint64_t value = (std::uint64_t{left_[i]} << half_bits) | right_[i];
      out[slot_[i]] = value;  // written again by a later pass if it walks on
      left_[still] = left_[i];
      right_[still] = right_[i];
      slot_[still] = slot_[i];
      still += value >= order_.n_;
    }
    walking = still;
  }
}

Sampler::Sampler(std::vector<SampleStream> streams, std::vector<int> quotas, int world,
                 std::uint64_t seed)
    : streams_(std::move(streams)), quotas_(std::move(quotas)), world_(world), seed_(seed) {
  if (streams_.size() != quotas_.size())
    throw std::invalid_argument("sampler: " + std::to_string(quotas_.size()) + " quotas for " +
                                std::to_string(streams_.size()) + " sample streams");
  if (world_ < 1) throw std::invalid_argument("sampler: world size must be >= 1");
  per_epoch_ = std::numeric_limits<std::int64_t>::max();
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    if (quotas_[s] < 0) throw std::invalid_argument("sampler: negative quota");
    per_rank_batch_ += quotas_[s];
    if (quotas_[s] == 0) continue;
    const std::int64_t need = static_cast<std::int64_t>(world_) * quotas_[s];
    const std::int64_t steps = streams_[s].size() / need;
    if (steps < 1)
      throw std::invalid_argument(
          "sampler: stream " + std::to_string(s) + " has " + std::to_string(streams_[s].size()) +
          " samples but one micro-step needs " + std::to_string(need) + " (" +
          std::to_string(world_) + " ranks x quota " + std::to_string(quotas_[s]) + ")");
    per_epoch_ = std::min(per_epoch_, steps);
  }
  if (per_rank_batch_ < 1) throw std::invalid_argument("sampler: the per-rank batch is empty");
  for (auto& stream : streams_) stream.build_lookup();
}

std::vector<RandomPermutation> Sampler::orders(std::int64_t epoch) const {
  // One permutation per (seed, epoch, stream): a new order every epoch.
  std::vector<RandomPermutation> orders;
  orders.reserve(streams_.size());
  for (std::size_t s = 0; s < streams_.size(); ++s)
    orders.emplace_back(static_cast<std::uint64_t>(streams_[s].size()),
                        mix64(seed_ ^ mix64(static_cast<std::uint64_t>(epoch) * 0x100 + s + 1)));
  return orders;
}

void Sampler::append_batch(const std::vector<RandomPermutation>& orders, int rank,
                           std::int64_t step_in_epoch, std::vector<SampleRef>& out) const {
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    const int quota = quotas_[s];
    if (quota == 0) continue;
    const std::int64_t first = (step_in_epoch * world_ + rank) * quota;
    for (int j = 0; j < quota; ++j)
      out.push_back(streams_[s].at(static_cast<std::int64_t>(orders[s](first + j))));
  }
}

std::vector<SampleRef> Sampler::batch(int rank, std::int64_t micro_step) const {
  if (rank < 0 || rank >= world_) throw std::out_of_range("sampler: rank outside the world");
  if (micro_step < 0) throw std::out_of_range("sampler: negative micro-step");
  std::vector<SampleRef> samples;
  samples.reserve(per_rank_batch_);
  append_batch(orders(micro_step / per_epoch_), rank, micro_step % per_epoch_, samples);
  return samples;
}

std::vector<SampleRef> Sampler::global_batch(std::int64_t micro_step) const {
  WorldDraw draw;
  draw_world(micro_step, draw);
  const auto batch = static_cast<std::size_t>(per_rank_batch_);
  std::vector<SampleRef> samples(batch * static_cast<std::size_t>(world_));
  std::size_t offset = 0;  // of stream s's quota inside a rank's batch
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    const auto quota = static_cast<std::size_t>(quotas_[s]);
    const std::uint64_t* index = draw.indices[s].data();
    for (std::size_t rank = 0; rank < static_cast<std::size_t>(world_); ++rank)
      for (std::size_t j = 0; j < quota; ++j)
        samples[rank * batch + offset + j] = streams_[s].at(static_cast<std::int64_t>(*index++));
    offset += quota;
  }
  return samples;
}

void Sampler::draw_world(std::int64_t micro_step, WorldDraw& draw) const {
  if (micro_step < 0) throw std::out_of_range("sampler: negative micro-step");
  const std::int64_t epoch = micro_step / per_epoch_;
  if (draw.epoch != epoch || draw.orders.size() != streams_.size()) {
    draw.orders.clear();
    for (const RandomPermutation& order : orders(epoch)) draw.orders.emplace_back(order);
    draw.epoch = epoch;
  }
  draw.indices.resize(streams_.size());
  // The world's positions in a stream are one contiguous run (rank r's quota after rank r-1's).
  const std::int64_t step_in_epoch = micro_step % per_epoch_;
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    const auto quota = static_cast<std::size_t>(quotas_[s]);
    draw.indices[s].resize(quota * static_cast<std::size_t>(world_));
    draw.orders[s].map(static_cast<std::uint64_t>(step_in_epoch * world_) * quota,
                       draw.indices[s].size(), draw.indices[s].data());
  }
}

}  // namespace mlbert::harness
