// Reading bert_cuda_bench --json's measurements (see device_bench.h).
#include "simulate/device_bench.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/input_file.h"
#include "mlperf_logging/package/layout.h"

namespace mlbert::simulate {

using nlohmann::json;

DeviceBench read_device_bench(const std::filesystem::path& file) {
  if (const std::string why = files::unreadable_reason(file); !why.empty())
    throw std::runtime_error(file.string() + ": cannot open device measurements: " + why);
  const json root = logging::read_json_file(file);
  const auto fail = [&](const std::string& where, const std::string& what) {
    throw std::runtime_error(file.string() + ": " + where + ": " + what);
  };
  const auto positive = [&](const json& o, const std::string& key, const std::string& where) {
    if (!o.contains(key)) fail(where + key, "missing (a number > 0 is required)");
    if (!o[key].is_number()) fail(where + key, "must be a number");
    const double x = o[key].get<double>();
    if (!std::isfinite(x) || x <= 0) fail(where + key, "must be a finite number > 0");
    return x;
  };
  const auto text = [&](const json& o, const std::string& key, const std::string& where) {
    if (!o.contains(key) || !o[key].is_string() || o[key].get<std::string>().empty())
      fail(where + key, "missing (a non-empty string is required)");
    return o[key].get<std::string>();
  };
  if (!root.is_object()) fail("(top level)", "must be a JSON object");
  if (!root.contains("format") || root["format"] != kDeviceBenchFormat)
    fail("format", std::string("must be \"") + kDeviceBenchFormat + "\"");
  if (text(root, "model", "") != "bert-large") fail("model", "must be \"bert-large\"");
  DeviceBench b;
  b.file = file;
  if (!root.contains("device") || !root["device"].is_object()) fail("device", "must be an object");
  b.device = text(root["device"], "name", "device.");
  const double sms = positive(root["device"], "multiprocessors", "device.");
  if (sms != std::floor(sms) || sms > 100000)
    fail("device.multiprocessors", "must be a whole number");
  b.multiprocessors = static_cast<int>(sms);
  b.copy_bytes_per_second = positive(root, "copy_gbs", "") * 1e9;
  b.gemm_flops_per_second = positive(root, "gemm_tflops", "") * 1e12;
  if (!root.contains("steps") || !root["steps"].is_array() || root["steps"].empty())
    fail("steps", "missing (a non-empty list of timed configurations)");
  for (std::size_t i = 0; i < root["steps"].size(); ++i) {
    const json& o = root["steps"][i];
    const std::string where = "steps[" + std::to_string(i) + "].";
    if (!o.is_object()) fail(where.substr(0, where.size() - 1), "must be an object");
    DeviceBenchStep s;
    s.dtype = text(o, "dtype", where);
    s.mix = text(o, "mix", where);
    s.shape.tokens = positive(o, "tokens", where);
    s.shape.sequences = positive(o, "sequences", where);
    s.shape.predictions = positive(o, "predictions", where);
    s.shape.squares = positive(o, "squares", where);
    s.fwd_bwd_seconds = positive(o, "fwd_bwd_ms", where) / 1e3;
    s.optimizer_seconds = positive(o, "optimizer_ms", where) / 1e3;
    b.steps.push_back(s);
  }
  return b;
}

}  // namespace mlbert::simulate
