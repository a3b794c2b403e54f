// Tuned cuBLASLt algorithm choices: buckets, keys, the fastest candidate and the plans file (see
// gemm_tuning.h).
#include "bert/cuda/gemm_tuning.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "bert/cuda/gemm.h"
#include "common/atomic_file.h"

namespace mlbert::cuda {

namespace {
constexpr const char* kPlansFormat = "mlbert-gemm-plans/1";
constexpr int kMaxCandidates = 64;
}  // namespace

void validate(const GemmTuning& tuning) {
  if (tuning.candidates < 1 || tuning.candidates > kMaxCandidates)
    throw std::invalid_argument("GEMM tuning: candidates must be in [1, " +
                                std::to_string(kMaxCandidates) + "], not " +
                                std::to_string(tuning.candidates));
}

int64_t token_bucket(int64_t tokens) {
  if (tokens <= 4) return tokens;
  int64_t octave = 1;
  while (octave * 8 < tokens) octave *= 2;  // octave * 4 < tokens <= octave * 8
  for (int64_t step = 5; step <= 8; ++step)
    if (octave * step >= tokens) return octave * step;
  return octave * 8;
}

std::string tuning_key(const GemmArgs& args) {
  return refusal_report_key(args) + " n~" + std::to_string(token_bucket(args.shape.n)) + " k~" +
         std::to_string(token_bucket(args.shape.k));
}

std::string tuning_device(const std::string& gpu_name, int driver_version,
                          size_t cublaslt_version) {
  return gpu_name + " | driver " + std::to_string(driver_version) + " | cuBLASLt " +
         std::to_string(cublaslt_version);
}

size_t fastest_candidate(std::span<const double> microseconds) {
  size_t best = microseconds.size();
  for (size_t i = 0; i < microseconds.size(); ++i) {
    const double t = microseconds[i];
    if (!std::isfinite(t) || t < 0) continue;
    if (best == microseconds.size() || t < microseconds[best]) best = i;
  }
  return best;
}

const TunedPlan* TunedPlans::find(const std::string& key) const {
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : &it->second;
}

namespace {

std::string hex_word(uint64_t word) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(word));
  return text;
}

// A field of entry `index` of `file`, or an error naming all three.
template <typename T>
T field(const nlohmann::json& entry, const char* name, const std::filesystem::path& file,
        size_t index) {
  const std::string where =
      file.string() + ": plans[" + std::to_string(index) + "]: field \"" + name + "\"";
  if (!entry.contains(name)) throw std::runtime_error(where + " is missing");
  try {
    return entry.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + " has the wrong type");
  }
}

AlgoWords parse_algo(const nlohmann::json& entry, const std::filesystem::path& file, size_t index) {
  const auto words = field<std::vector<std::string>>(entry, "algo", file, index);
  AlgoWords algo;
  const std::string where =
      file.string() + ": plans[" + std::to_string(index) + "]: field \"algo\"";
  if (words.size() != algo.words.size())
    throw std::runtime_error(where + " needs 8 words, has " + std::to_string(words.size()));
  for (size_t w = 0; w < words.size(); ++w) {
    size_t used = 0;
    try {
      algo.words[w] = std::stoull(words[w], &used, 16);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != words[w].size())
      throw std::runtime_error(where + " word " + std::to_string(w) + " \"" + words[w] +
                               "\" is not a hexadecimal number");
  }
  return algo;
}

}  // namespace

void TunedPlans::load(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return;
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open the GEMM plans file");
  nlohmann::json json;
  try {
    in >> json;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": not valid JSON: " + e.what());
  }
  if (!json.is_object() || json.value("format", "") != kPlansFormat || !json.contains("plans") ||
      !json["plans"].is_array())
    throw std::runtime_error(file.string() + ": not a GEMM plans file (format \"" + kPlansFormat +
                             "\" with a \"plans\" array)");
  for (size_t i = 0; i < json["plans"].size(); ++i) {
    const nlohmann::json& entry = json["plans"][i];
    if (!entry.is_object())
      throw std::runtime_error(file.string() + ": plans[" + std::to_string(i) +
                               "] is not an object");
    if (field<std::string>(entry, "device", file, i) != device_) {
      other_devices_json_.push_back(entry.dump());
      continue;
    }
    TunedPlan plan;
    plan.algo = parse_algo(entry, file, i);
    plan.microseconds = field<double>(entry, "microseconds", file, i);
    plan.candidates = field<int>(entry, "candidates", file, i);
    plans_[field<std::string>(entry, "problem", file, i)] = plan;
  }
}

void TunedPlans::save(const std::filesystem::path& file) const {
  nlohmann::json plans = nlohmann::json::array();
  for (const std::string& other : other_devices_json_)
    plans.push_back(nlohmann::json::parse(other));
  for (const auto& [key, plan] : plans_) {
    nlohmann::json words = nlohmann::json::array();
    for (uint64_t w : plan.algo.words) words.push_back(hex_word(w));
    plans.push_back({{"device", device_},
                     {"problem", key},
                     {"algo", words},
                     {"microseconds", plan.microseconds},
                     {"candidates", plan.candidates}});
  }
  const nlohmann::json json = {{"format", kPlansFormat}, {"plans", plans}};
  files::write_file_atomically(file, json.dump(1) + "\n");
}

}  // namespace mlbert::cuda
