// Accelerator profiles: JSON reading and writing, lookup by accelerator name, datasheet figures.
#include "harness/simulate/profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace mlbert::harness::simulate {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "mlbert-accelerator-profile/2";

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

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

}  // namespace

double AcceleratorProfile::optimizer_seconds_per_parameter(OptimizerKind kind) const {
  switch (kind) {
    case OptimizerKind::lamb:
      return optimizer_seconds_per_parameter_lamb;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
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
  const std::string text = lower(name);
  return std::any_of(matches.begin(), matches.end(), [&](const std::string& m) {
    return !m.empty() && text.find(lower(m)) != std::string::npos;
  });
}

AcceleratorProfile load_profile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open accelerator profile");
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
    if (!m.is_string() || m.get<std::string>().empty())
      r.fail("matches", "entries must be non-empty strings");
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
  return p;
}

json profile_to_json(const AcceleratorProfile& p) {
  json provenance = p.provenance.is_object() ? p.provenance : json::object();
  provenance["kind"] = p.provenance_kind;
  if (!provenance.contains("source")) provenance["source"] = "";
  return json{
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
}

void save_profile(const AcceleratorProfile& profile, const std::filesystem::path& path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path);
  out << profile_to_json(profile).dump(2) << "\n";
  if (!out) throw std::runtime_error(path.string() + ": cannot write the profile");
}

std::optional<AcceleratorProfile> find_profile(const std::filesystem::path& dir,
                                               const std::string& accelerator_model_name) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    AcceleratorProfile p = load_profile(file);
    if (p.matches_accelerator(accelerator_model_name)) return p;
  }
  return std::nullopt;
}

std::string describe_profiles(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    try {
      names.push_back(entry.path().stem().string() + " (" + load_profile(entry.path()).accelerator +
                      ")");
    } catch (const std::exception&) {
      names.push_back(entry.path().stem().string() + " (unreadable)");
    }
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) return "no profiles in " + dir.string();
  std::string text = "profiles in " + dir.string() + ": ";
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text;
}

std::optional<AcceleratorDatasheet> datasheet_for(const std::string& accelerator_model_name) {
  // Datasheet values: HBM bandwidth (TB/s), dense fp16 tensor TFLOP/s, NVLink GB/s per GPU, SMs.
  static constexpr AcceleratorDatasheet kSheets[] = {
      {"a100-sxm4-80gb", 2.039, 312, 600, 108}, {"a100-sxm4-40gb", 1.555, 312, 600, 108},
      {"a100-sxm-80gb", 2.039, 312, 600, 108},  {"h100-sxm5-80gb", 3.35, 989, 900, 132},
      {"h100-sxm", 3.35, 989, 900, 132},        {"h200", 4.8, 989, 900, 132},
      {"v100-sxm3-32gb", 0.981, 125, 300, 80},  {"v100-sxm2", 0.9, 125, 300, 80},
  };
  const std::string name = lower(accelerator_model_name);
  for (const auto& sheet : kSheets)
    if (name.find(sheet.match) != std::string::npos) return sheet;
  return std::nullopt;
}

bool looks_like_gpu(const std::string& accelerator_model_name) {
  const std::string name = lower(accelerator_model_name);
  for (const char* word : {"nvidia", "gpu", "a100", "h100", "h200", "v100", "instinct", "radeon"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace mlbert::harness::simulate
