// Accelerator profiles: JSON reading and writing, lookup by accelerator name, datasheet figures.
#include "simulate/profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/input_file.h"

namespace mlbert::simulate {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "mlbert-accelerator-profile/2";

// Reads required non-negative numbers of one object, naming the file and the JSON path.
class Reader {
 public:
  Reader(const std::filesystem::path& file) : file_(file) {}
  [[noreturn]] void fail(const std::string& where, const std::string& text) const {
    throw std::runtime_error(file_.string() + ": " + where + ": " + text);
  }
  const json& object(const json& parent, const std::string& key, const std::string& where) const {
    if (!parent.contains(key)) fail(where + key, "missing (an object is required)");
    if (!parent[key].is_object()) fail(where + key, "must be an object");
    return parent[key];
  }
  double number(const json& parent, const std::string& key, const std::string& where) const {
    if (!parent.contains(key)) fail(where + key, "missing (a number is required)");
    const json& v = parent[key];
    if (!v.is_number()) fail(where + key, "must be a number, found " + std::string(v.type_name()));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) fail(where + key, "must be a finite number >= 0");
    return x;
  }
  std::string string(const json& parent, const std::string& key, const std::string& where) const {
    if (!parent.contains(key)) fail(where + key, "missing (a string is required)");
    if (!parent[key].is_string()) fail(where + key, "must be a string");
    return parent[key].get<std::string>();
  }

 private:
  std::filesystem::path file_;
};

std::vector<std::string> name_words(const std::string& text) {
  std::vector<std::string> words(1);
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      words.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!words.back().empty())
      words.emplace_back();
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

bool word_fits(const std::string& name_word, const std::string& pattern_word) {
  if (name_word == pattern_word) return true;
  if (!std::isalpha(static_cast<unsigned char>(pattern_word.back())) ||
      name_word.size() <= pattern_word.size() ||
      name_word.compare(0, pattern_word.size(), pattern_word) != 0)
    return false;
  return std::all_of(name_word.begin() + static_cast<std::ptrdiff_t>(pattern_word.size()),
                     name_word.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The profile files of a directory, in name order (none when it is absent).
std::vector<std::filesystem::path> profile_files(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string ascii_lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool accelerator_name_matches(const std::string& accelerator_model_name,
                              const std::string& pattern) {
  const std::vector<std::string> name = name_words(accelerator_model_name);
  const std::vector<std::string> wanted = name_words(pattern);
  if (wanted.empty()) return false;
  return std::all_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
    return std::any_of(name.begin(), name.end(),
                       [&](const std::string& n) { return word_fits(n, w); });
  });
}

std::string profile_stem(const std::string& accelerator_model_name) {
  std::string stem;
  for (const std::string& word :
       name_words(accelerator_model_name.substr(0, accelerator_model_name.find('(')))) {
    if (word == "nvidia" || word == "amd") continue;
    stem += (stem.empty() ? "" : "-") + word;
  }
  return stem.empty() ? "accelerator" : stem;
}

double AcceleratorProfile::optimizer_seconds_per_parameter(harness::OptimizerKind kind) const {
  switch (kind) {
    case harness::OptimizerKind::lamb:
      return optimizer_seconds_per_parameter_lamb;
    case harness::OptimizerKind::adam:
    case harness::OptimizerKind::adamw:
      return optimizer_seconds_per_parameter_adam;
  }
  return optimizer_seconds_per_parameter_lamb;
}

std::string AcceleratorProfile::source() const {
  return provenance.is_object() && provenance.contains("source") && provenance["source"].is_string()
             ? provenance["source"].get<std::string>()
             : "";
}

bool AcceleratorProfile::matches_accelerator(const std::string& name) const {
  return std::any_of(matches.begin(), matches.end(),
                     [&](const std::string& m) { return accelerator_name_matches(name, m); });
}

AcceleratorProfile load_profile(const std::filesystem::path& path) {
  std::ifstream in = files::open_input(path, "accelerator profile");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
  const Reader r(path);
  if (!root.is_object()) r.fail("(top level)", "must be a JSON object");
  if (r.string(root, "format", "") != kFormat)
    r.fail("format", std::string("must be \"") + kFormat + "\"");
  AcceleratorProfile p;
  p.path = path;
  p.accelerator = r.string(root, "accelerator", "");
  p.model = r.string(root, "model", "");
  if (!root.contains("matches") || !root["matches"].is_array() || root["matches"].empty())
    r.fail("matches", "missing (a non-empty list of accelerator name substrings)");
  for (const json& m : root["matches"]) {
    if (!m.is_string() || name_words(m.get<std::string>()).empty())
      r.fail("matches", "entries must be strings with a letter or digit (name patterns)");
    p.matches.push_back(m.get<std::string>());
  }
  const json& provenance = r.object(root, "provenance", "");
  p.provenance_kind = r.string(provenance, "kind", "provenance.");
  if (p.provenance_kind != "calibrated" && p.provenance_kind != "measured")
    r.fail("provenance.kind", "must be \"calibrated\" or \"measured\"");
  r.string(provenance, "source", "provenance.");
  p.provenance = provenance;
  p.tensor_flops_per_second = r.number(root, "tensor_flops_per_second", "");
  if (!(p.tensor_flops_per_second > 0)) r.fail("tensor_flops_per_second", "must be > 0");
  const double sms = r.number(root, "multiprocessors", "");
  if (sms != std::floor(sms) || sms > 100000) r.fail("multiprocessors", "must be a whole number");
  p.multiprocessors = static_cast<int>(sms);
  const json& opt = r.object(root, "optimizer", "");
  p.optimizer_seconds_per_parameter_lamb =
      r.number(opt, "lamb_seconds_per_parameter", "optimizer.");
  p.optimizer_seconds_per_parameter_adam =
      r.number(opt, "adam_seconds_per_parameter", "optimizer.");
  p.memory_bytes_per_second = r.number(root, "memory_bytes_per_second", "");
  if (!(p.memory_bytes_per_second > 0)) r.fail("memory_bytes_per_second", "must be > 0");
  p.run_start_seconds = r.number(root, "run_start_seconds", "");
  if (root.contains("fixed_step_seconds")) {
    p.fixed_step_seconds = r.number(root, "fixed_step_seconds", "");
    if (!(p.fixed_step_seconds >= 0 && p.fixed_step_seconds < 3600))
      r.fail("fixed_step_seconds", "must be >= 0 and under an hour");
  }
  return p;
}

json profile_to_json(const AcceleratorProfile& p) {
  json provenance = p.provenance.is_object() ? p.provenance : json::object();
  provenance["kind"] = p.provenance_kind;
  if (!provenance.contains("source")) provenance["source"] = "";
  json out{
      {"format", kFormat},
      {"accelerator", p.accelerator},
      {"matches", p.matches},
      {"model", p.model},
      {"provenance", provenance},
      {"tensor_flops_per_second", p.tensor_flops_per_second},
      {"multiprocessors", p.multiprocessors},
      {"optimizer",
       {{"lamb_seconds_per_parameter", p.optimizer_seconds_per_parameter_lamb},
        {"adam_seconds_per_parameter", p.optimizer_seconds_per_parameter_adam}}},
      {"memory_bytes_per_second", p.memory_bytes_per_second},
      {"run_start_seconds", p.run_start_seconds},
  };
  if (p.fixed_step_seconds > 0) out["fixed_step_seconds"] = p.fixed_step_seconds;
  return out;
}

void save_profile(const AcceleratorProfile& profile, const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    throw std::runtime_error(path.string() + ": cannot write the profile: cannot create " +
                             path.parent_path().string() + ": " + ec.message());
  files::write_file_atomically(path, profile_to_json(profile).dump(2) + "\n");
}

std::string calibration_ruleset(const AcceleratorProfile& profile) {
  const json& p = profile.provenance;
  if (p.is_object() && p.contains("result") && p["result"].is_object() &&
      p["result"].contains("ruleset") && p["result"]["ruleset"].is_string())
    return p["result"]["ruleset"].get<std::string>();
  return "";
}

namespace {

// "2.1.0" as (2, 1, 0); empty for anything else (a profile without a round ranks first).
std::vector<int> version_of(const std::string& ruleset) {
  std::vector<int> parts;
  std::size_t at = 0;
  while (at <= ruleset.size() && parts.size() < 4) {
    const std::size_t dot = std::min(ruleset.find('.', at), ruleset.size());
    const std::string part = ruleset.substr(at, dot - at);
    if (part.empty() || part.size() > 4 || !std::all_of(part.begin(), part.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      return {};
    parts.push_back(std::stoi(part));
    if (dot == ruleset.size()) return parts.size() >= 2 ? parts : std::vector<int>{};
    at = dot + 1;
  }
  return {};
}

// find_profile's round rule over `candidates` (not empty): the index it takes.
std::size_t pick_by_round(const std::vector<AcceleratorProfile>& candidates,
                          const std::string& ruleset) {
  std::vector<std::vector<int>> rounds;
  for (const auto& p : candidates) rounds.push_back(version_of(calibration_ruleset(p)));
  const std::vector<int> wanted = version_of(ruleset);
  std::size_t latest = 0, earliest = 0;
  std::optional<std::size_t> latest_before;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    if (rounds[i] > rounds[latest]) latest = i;
    if (rounds[i] < rounds[earliest]) earliest = i;
    if (!wanted.empty() && rounds[i] <= wanted &&
        (!latest_before || rounds[i] > rounds[*latest_before]))
      latest_before = i;
  }
  if (wanted.empty()) return latest;
  return latest_before.value_or(earliest);
}

// What pick_by_round did, for the notes, when it had a choice.
std::string round_note(const std::vector<AcceleratorProfile>& candidates, std::size_t picked,
                       const std::string& ruleset) {
  std::string rounds;
  for (const auto& p : candidates) {
    const std::string r = calibration_ruleset(p);
    rounds += (rounds.empty() ? "" : ", ") + p.path.filename().string() + " " +
              (r.empty() ? std::string("none") : r);
  }
  const std::string r = calibration_ruleset(candidates[picked]);
  return "profile " + candidates[picked].path.string() + ": calibrated on a " +
         (r.empty() ? std::string("result of no stated round") : "ruleset " + r + " result") +
         ", the latest round " + (ruleset.empty() ? "" : "not after " + ruleset + " ") +
         "of the profiles of this silicon (" + rounds + "; where none is that early, the earliest)";
}

// The profiles in `dir` whose `matches` name the accelerator, in file-name order.
std::vector<AcceleratorProfile> matching_profiles(const std::filesystem::path& dir,
                                                  const std::string& accelerator_model_name) {
  std::vector<AcceleratorProfile> matching;
  for (const auto& file : profile_files(dir)) {
    AcceleratorProfile p = load_profile(file);
    if (p.matches_accelerator(accelerator_model_name)) matching.push_back(std::move(p));
  }
  return matching;
}

}  // namespace

std::optional<AcceleratorProfile> find_profile(const std::filesystem::path& dir,
                                               const std::string& accelerator_model_name,
                                               const std::string& ruleset) {
  const std::vector<AcceleratorProfile> matching = matching_profiles(dir, accelerator_model_name);
  if (matching.empty()) return std::nullopt;
  return matching[pick_by_round(matching, ruleset)];
}

bool same_silicon(const std::string& accelerator_a, const std::string& accelerator_b) {
  const auto a = datasheet_for(accelerator_a), b = datasheet_for(accelerator_b);
  return a && b && a->peak_tflops_fp16 == b->peak_tflops_fp16 &&
         a->multiprocessors == b->multiprocessors;
}

AcceleratorProfile adapt_profile(const AcceleratorProfile& profile,
                                 const std::string& accelerator) {
  if (!same_silicon(profile.accelerator, accelerator))
    throw std::invalid_argument("profile for \"" + profile.accelerator +
                                "\" cannot be adapted to \"" + accelerator +
                                "\": not the same silicon by their datasheets");
  const auto sheet = datasheet_for(accelerator);
  AcceleratorProfile p = profile;
  const double memory = sheet->memory_tbs * 1e12 * kMemoryBandwidthFraction;
  const double scale = profile.memory_bytes_per_second / memory;
  p.optimizer_seconds_per_parameter_lamb *= scale;
  p.optimizer_seconds_per_parameter_adam *= scale;
  p.memory_bytes_per_second = memory;
  p.accelerator = accelerator;
  if (!p.provenance.is_object()) p.provenance = json::object();
  p.provenance["adapted"] = "from the profile for " + profile.accelerator +
                            " (same dense fp16 peak and SMs): its tensor "
                            "rate and run start, the memory rate of " +
                            accelerator + "'s datasheet HBM (" + std::to_string(sheet->memory_tbs) +
                            " TB/s) x " + std::to_string(kMemoryBandwidthFraction);
  return p;
}

std::optional<AcceleratorProfile> profile_for_accelerator(const std::filesystem::path& dir,
                                                          const std::string& accelerator,
                                                          std::vector<std::string>& notes,
                                                          const std::string& ruleset) {
  // The candidates: the profiles that match the accelerator and those of the same silicon. The
  // round comes first: a profile stands for its round's software, which moves a result more than
  // its HBM does (NVIDIA's single DGX A100: 2,941 s in v0.7, 1,302 s in v1.0, 1,013 s in v2.1), so
  // a v2.0 result on A100 40 GB takes the v2.0 profile of the 80 GB part adapted, not a v0.7 one
  // of its own part. Of the round's candidates, one that matches; else the one nearest in HBM
  // (GH200 144 GB: H200), adapted.
  // Each file read once: the matching ones first (in file-name order), then the same silicon.
  std::vector<AcceleratorProfile> candidates, kin;
  const auto target = datasheet_for(accelerator);
  for (const auto& file : profile_files(dir)) {
    AcceleratorProfile p = load_profile(file);
    if (p.matches_accelerator(accelerator))
      candidates.push_back(std::move(p));
    else if (target && same_silicon(p.accelerator, accelerator))
      kin.push_back(std::move(p));
  }
  const std::size_t exact = candidates.size();
  for (auto& p : kin) candidates.push_back(std::move(p));
  if (candidates.empty()) return std::nullopt;
  const std::string round = calibration_ruleset(candidates[pick_by_round(candidates, ruleset)]);
  std::optional<std::size_t> best;
  double best_gap = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (calibration_ruleset(candidates[i]) != round) continue;
    if (i < exact) {
      best = i;
      break;
    }
    const double gap =
        std::abs(datasheet_for(candidates[i].accelerator)->memory_tbs - target->memory_tbs);
    if (!best || gap < best_gap) best = i, best_gap = gap;
  }
  if (candidates.size() > 1) notes.push_back(round_note(candidates, *best, ruleset));
  if (*best < exact) return candidates[*best];
  const AcceleratorProfile& chosen = candidates[*best];
  notes.push_back("no profile for " + accelerator + (exact > 0 ? " of that round" : std::string()) +
                  ": " + chosen.path.string() + " (for " + chosen.accelerator +
                  ", the same silicon by the datasheets: dense fp16 peak and SMs) adapted to "
                  "its HBM bandwidth");
  return adapt_profile(chosen, accelerator);
}

std::optional<std::string> small_batch_note(const AcceleratorProfile& profile,
                                            double samples_per_gpu_step) {
  if (profile.fixed_step_seconds > 0) return std::nullopt;  // fitted on two batches: not spread
  const json& p = profile.provenance;
  if (!p.is_object() || !p.contains("result") || !p["result"].is_object()) return std::nullopt;
  const json& r = p["result"];
  const auto number = [&](const char* key) {
    return r.contains(key) && r[key].is_number() ? r[key].get<double>() : 0.0;
  };
  const double gpus = number("nodes") * number("gpus_per_node");
  if (!(gpus > 0) || !(number("global_batch_size") > 0)) return std::nullopt;
  const double calibrated = number("global_batch_size") / gpus;
  if (!(samples_per_gpu_step * 3 < calibrated)) return std::nullopt;
  const auto whole = [](double x) { return std::to_string(std::llround(x)); };
  return "extrapolated: " + whole(samples_per_gpu_step) +
         " samples per GPU and step, under a third of the profile's calibration run (" +
         whole(calibrated) +
         "): the profile's one rate per sample under-counts the costs of a step that do not "
         "shrink with the batch (BENCHMARKS.md, fixed costs per step)";
}

std::string describe_profiles(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& file : profile_files(dir)) {
    try {
      names.push_back(file.stem().string() + " (" + load_profile(file).accelerator + ")");
    } catch (const std::exception&) {
      names.push_back(file.stem().string() + " (unreadable)");
    }
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) return "no profiles in " + dir.string();
  std::string text = "profiles in " + dir.string() + ": ";
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text;
}

std::optional<AcceleratorDatasheet> datasheet_for(const std::string& accelerator_model_name) {
  // Datasheet values: HBM bandwidth (TB/s), dense fp16 tensor TFLOP/s, NVLink GB/s per GPU, SMs,
  // and the compute NIC per GPU of the vendor's reference system (DGX A100: 8 HDR; DGX H100 and
  // H200: 8 NDR; DGX-2: EDR). First match wins: the more specific name comes first. "H100 80GB
  // HBM3" is how nvidia-smi names the SXM5 part (the PCIe part is "H100 PCIe", HBM2e); A800 and
  // H800 are the A100 and H100 silicon with NVLink cut to 400 GB/s. B200 as HGX B200 states it
  // (1,000 W: 2.25 PFLOP/s dense fp16, 62 TB/s of HBM3e over 8 GPUs, 148 SMs, NVLink 5 at 1.8 TB/s;
  // DGX B200: 8 ConnectX-7 at 400 Gb/s). GB200 (another word than "b200") as the GB200 NVL72
  // states it: 2.5 PFLOP/s dense fp16 at 1,200 W, 576 TB/s of HBM3e over 72 GPUs, NVLink 5 joining
  // the rack's 18 trays of 4 GPUs (each tray with 4 ConnectX-7 at 400 Gb/s).
  static constexpr AcceleratorDatasheet kSheets[] = {
      {"a100 sxm 80gb", 2.039, 312, 600, 108, 200}, {"a100 sxm 40gb", 1.555, 312, 600, 108, 200},
      {"a800 sxm 80gb", 2.039, 312, 400, 108, 200}, {"h100 sxm", 3.35, 989, 900, 132, 400},
      {"h100 80gb hbm3", 3.35, 989, 900, 132, 400}, {"h800 sxm", 3.35, 989, 400, 132, 400},
      {"h200 sxm", 4.8, 989, 900, 132, 400},        {"gh200 144gb", 4.9, 989, 900, 132, 400},
      {"gh200", 4.0, 989, 900, 132, 400},           {"v100 sxm3 32gb", 0.981, 125, 300, 80, 100},
      {"v100 sxm2", 0.9, 125, 300, 80, 100},        {"b200", 7.7, 2250, 1800, 148, 400},
      {"gb200", 8.0, 2500, 1800, 148, 400, 72},
  };
  for (const auto& sheet : kSheets)
    if (accelerator_name_matches(accelerator_model_name, sheet.match)) return sheet;
  return std::nullopt;
}

bool looks_like_gpu(const std::string& accelerator_model_name) {
  const std::string name = ascii_lower(accelerator_model_name);
  for (const char* word :
       {"nvidia", "gpu", "a100", "a800", "h100", "h800", "h200", "v100", "instinct", "radeon"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

bool is_pcie_card(const std::string& accelerator_model_name) {
  // The name's alphanumeric words: "NVIDIA A100-PCIe-80GB" -> nvidia, a100, pcie, 80gb.
  std::vector<std::string> words(1);
  for (const char c : ascii_lower(accelerator_model_name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      words.back() += c;
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  for (const auto& word : words)
    for (const char* card : {"pcie", "a2", "a10", "a16", "a30", "a40", "l4", "l40", "l40s", "t4",
                             "rtx", "a4000", "a4500", "a5000", "a5500", "a6000"})
      if (word == card) return true;
  return false;
}

}  // namespace mlbert::simulate
