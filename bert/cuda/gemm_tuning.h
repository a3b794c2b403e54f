// Choosing a cuBLASLt algorithm per GEMM problem by measuring: the first few candidates of the
// heuristic are timed once on the problem's own operands and the fastest is kept, per device
// (GPU name, driver and cuBLASLt version) and problem, in memory and optionally in a file. Host
// logic only (the timing itself is in gemm.cu), unit-tested without a GPU.
//
// Design choice: a tuned choice is kept for a problem with its token count rounded up to a bucket
// (about a quarter octave), so a length mix, whose token count changes every step, times each
// layer's products once per bucket rather than once per step; a later problem of the same bucket
// takes the kept algorithm when its own heuristic offers it (or cuBLASLt's check accepts it), else
// the first candidate. With one candidate nothing is timed: the first heuristic is the choice, the
// same on every run (the checks run that way).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace mlbert::cuda {

struct GemmArgs;

// How the GemmRunner picks its algorithms.
struct GemmTuning {
  // Heuristic candidates timed per problem; 1 takes the first without timing (deterministic).
  int candidates = 1;
  // Tuned choices read at the runner's start and written by save_tuned_plans() (empty: none).
  std::filesystem::path plans_file;
  // A perf run: a problem cuBLASLt refuses (no algorithm, or its first run answers "not
  // supported") throws instead of falling back to the caller's slower path.
  bool strict = false;
};
// Throws std::invalid_argument unless candidates is in [1, 64].
void validate(const GemmTuning& tuning);

// A cuBLASLt algorithm (cublasLtMatmulAlgo_t) as its opaque words, which cuBLASLt documents as
// storable and reusable with the same library version.
struct AlgoWords {
  std::array<uint64_t, 8> words{};
  auto operator<=>(const AlgoWords&) const = default;
};

// The smallest bucket value >= tokens of the form {4, 5, 6, 7} * 2^k (tokens >= 1; 1..4 stay).
int64_t token_bucket(int64_t tokens);

// The problem a tuned choice is kept for: epilogue, types, transposes, m, leading dimensions, and
// n and k each rounded to its bucket (one of them is the token count).
std::string tuning_key(const GemmArgs& args);

// The device a file's choices belong to, e.g. "NVIDIA H200 | driver 13000 | cuBLASLt 130100".
std::string tuning_device(const std::string& gpu_name, int driver_version, size_t cublaslt_version);

// The index of the fastest candidate: the smallest finite non-negative time, the lowest index on
// a tie; times.size() when none ran (every time infinite or NaN).
size_t fastest_candidate(std::span<const double> microseconds);

struct TunedPlan {
  AlgoWords algo;
  double microseconds = 0;  // its time when it was chosen
  int candidates = 0;       // how many were timed
};

// The tuned choices of one device by tuning_key.
class TunedPlans {
 public:
  explicit TunedPlans(std::string device) : device_(std::move(device)) {}
  const std::string& device() const { return device_; }
  const TunedPlan* find(const std::string& key) const;
  void record(const std::string& key, const TunedPlan& plan) { plans_[key] = plan; }
  size_t size() const { return plans_.size(); }

  // Adds this device's entries of a file save() wrote; other devices' entries are kept and
  // written back by save. A missing file adds nothing; a malformed one throws naming the file,
  // the entry and the field.
  void load(const std::filesystem::path& file);
  // Writes every entry (this device's and the others' read by load) atomically.
  void save(const std::filesystem::path& file) const;

 private:
  std::string device_;
  std::map<std::string, TunedPlan> plans_;
  std::vector<std::string> other_devices_json_;  // entries of other devices, as read
};

}  // namespace mlbert::cuda
