// MLBERT_FAULT and MLBERT_EXIT_REPORT (see test_hooks.h).
#include "harness/train/test_hooks.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/atomic_file.h"

namespace mlbert::harness {
namespace {

std::string unix_time() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", seconds);
  return text;
}

const char* point_name(RunPoint point) {
  switch (point) {
    case RunPoint::init:
      return "init";
    case RunPoint::allreduce:
      return "allreduce";
    case RunPoint::eval:
      return "eval";
  }
  return "?";
}

}  // namespace

std::unique_ptr<RunObserver> TestHooks::from_environment(int rank) {
  const char* dir = std::getenv("MLBERT_EXIT_REPORT");
  const char* spec = std::getenv("MLBERT_FAULT");
  const bool fault_planned = spec && *spec;
  if (!fault_planned && !(dir && *dir)) return std::make_unique<RunObserver>();
  auto hooks = std::make_unique<TestHooks>();
  hooks->rank_ = rank;
  if (dir && *dir) hooks->report_dir_ = dir;
  if (!fault_planned) return hooks;
  std::vector<std::string> fields;
  std::stringstream in(spec);
  for (std::string field; std::getline(in, field, ':');) fields.push_back(field);
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(std::string("MLBERT_FAULT=") + spec + ": " + why +
                                 " (expected <rank>:<init|allreduce|eval>:<kill|stop>[:<pass>])");
  };
  if (fields.size() < 3 || fields.size() > 4) throw bad("needs 3 or 4 fields");
  Fault fault;
  char* end = nullptr;
  const long fault_rank = std::strtol(fields[0].c_str(), &end, 10);
  if (fields[0].empty() || *end || fault_rank < 0) throw bad("rank is not a number");
  if (fields[1] == "init")
    fault.point = RunPoint::init;
  else if (fields[1] == "allreduce")
    fault.point = RunPoint::allreduce;
  else if (fields[1] == "eval")
    fault.point = RunPoint::eval;
  else
    throw bad("unknown point \"" + fields[1] + "\"");
  if (fields[2] == "kill")
    fault.action = FaultAction::kill;
  else if (fields[2] == "stop")
    fault.action = FaultAction::stop;
  else
    throw bad("unknown action \"" + fields[2] + "\"");
  if (fields.size() == 4) {
    const long pass = std::strtol(fields[3].c_str(), &end, 10);
    if (fields[3].empty() || *end || pass < 1) throw bad("pass must be >= 1");
    fault.pass = static_cast<int>(pass);
  }
  if (fault_rank == rank) hooks->fault_ = fault;
  return hooks;
}

void TestHooks::reached(RunPoint point) {
  if (!fault_ || fault_->point != point || ++passes_ != fault_->pass) return;
  const bool kill = fault_->action == FaultAction::kill;
  if (!report_dir_.empty()) {
    try {
      files::write_file_atomically(
          report_dir_ / ("rank_" + std::to_string(rank_) + ".fault"),
          unix_time() + " " + point_name(point) + " " + (kill ? "kill" : "stop") + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlbert train: MLBERT_EXIT_REPORT: %s\n", e.what());
    }
  }
  std::fprintf(stderr, "mlbert train: rank %d: MLBERT_FAULT: %s at %s\n", rank_,
               kill ? "SIGKILL" : "SIGSTOP", point_name(point));
  std::fflush(stderr);
  ::raise(kill ? SIGKILL : SIGSTOP);
}

void TestHooks::exiting(int status, std::string_view cause) {
  if (report_dir_.empty()) return;
  std::string line = std::to_string(status) + " " + unix_time() + " " + std::string(cause);
  for (char& c : line)
    if (c == '\n') c = ' ';
  try {
    files::write_file_atomically(report_dir_ / ("rank_" + std::to_string(rank_) + ".exit"),
                                 line + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert train: MLBERT_EXIT_REPORT: %s\n", e.what());
  }
}

}  // namespace mlbert::harness
