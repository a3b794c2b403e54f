// Test helper for tests/parity/logging_check_mllog_parity.py: reads one JSON request per line and
// writes what the emitter produces, so the script can compare it with the official Python mllog.
//   {"mode": "format", "namespace", "time_ms", "event_type", "key", "value", "metadata"}
//       -> format_line(...) and a newline
//   {"mode": "logger", "default_namespace", "clear_line"} -> (re)configures a Logger on stdout
//   {"mode": "log", "event_type", "key", "value", "metadata", "time_ms"[, "namespace"][,
//   "clear_line"]}
//       -> Logger::log(...)
// JSON cannot carry NaN or infinities, so values spell them {"$float": "nan" | "inf" | "-inf"}.
#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "mlperf_logging/log/mllog.h"

namespace mllog = mlbert::mllog;
using mllog::Json;

namespace {

Json decode(const Json& v) {
  if (v.is_object()) {
    if (v.size() == 1 && v.contains("$float")) {
      std::string s = v["$float"].get<std::string>();
      if (s == "nan") return Json(std::nan(""));
      return Json(s == "inf" ? HUGE_VAL : -HUGE_VAL);
    }
    Json out = Json::object();
    for (const auto& [k, item] : v.items()) out[k] = decode(item);
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& item : v) out.push_back(decode(item));
    return out;
  }
  return v;
}

mllog::EventType event_type(const std::string& name) {
  if (name == "INTERVAL_START") return mllog::EventType::interval_start;
  if (name == "INTERVAL_END") return mllog::EventType::interval_end;
  return mllog::EventType::point_in_time;
}

}  // namespace

int main() {
  std::unique_ptr<mllog::Logger> logger;
  std::string line;
  while (std::getline(std::cin, line)) {
    Json request = Json::parse(line);
    const std::string mode = request["mode"].get<std::string>();
    if (mode == "format") {
      std::cout << mllog::format_line(request["namespace"].get<std::string>(),
                                      request["time_ms"].get<std::int64_t>(),
                                      event_type(request["event_type"].get<std::string>()),
                                      request["key"].get<std::string>(), decode(request["value"]),
                                      decode(request["metadata"]))
                << "\n";
    } else if (mode == "logger") {
      std::cout.flush();
      mllog::LoggerOptions options;
      options.default_namespace = request.value("default_namespace", "");
      options.clear_line = request.value("clear_line", false);
      logger = std::make_unique<mllog::Logger>(options);
    } else if (mode == "log") {
      mllog::EventOptions call;
      call.time_ms = request["time_ms"].get<std::int64_t>();
      if (request.contains("namespace")) call.ns = request["namespace"].get<std::string>();
      if (request.contains("clear_line")) call.clear_line = request["clear_line"].get<bool>();
      std::cout.flush();
      logger->log(event_type(request["event_type"].get<std::string>()),
                  request["key"].get<std::string>(), decode(request["value"]),
                  decode(request["metadata"]), call);
    }
  }
  std::cout.flush();
  return 0;
}
