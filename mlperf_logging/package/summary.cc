// The official result_summarizer's rows of one organization folder (summary.h).
#include "mlperf_logging/package/summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <stdexcept>
#include <system_error>

#include "common/atomic_file.h"
#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/score.h"
#include "mlperf_logging/rcp/rcp.h"
#include "mlperf_logging/rcp/stats.h"

namespace mlbert::logging {
namespace {

namespace fs = std::filesystem;
using Cells = std::map<std::string, SummaryCell>;

// Where the summarizer stops with a Python exception.
struct Stop : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string text(const nlohmann::json& value) {
  return mllog::py::str(value);
}

const nlohmann::json& field(const nlohmann::json& desc, const std::string& name) {
  const auto it = desc.find(name);
  if (it == desc.end()) {
    // Its FieldError handler names an undefined variable, so the summarizer stops (NameError).
    throw Stop("field \"" + name + "\" missing in the system description");
  }
  return *it;
}

// Python's int() of a description value.
std::int64_t python_int(const nlohmann::json& value, const std::string& name) {
  std::string why;
  const auto digits = mllog::py::int_text(value, why);
  try {
    if (digits) return std::stoll(*digits);
  } catch (const std::out_of_range&) {
    why = "beyond 64 bits";
  }
  throw Stop("field \"" + name + "\": " + why);
}

std::string pretty_framework(const nlohmann::json& framework) {
  std::string out = text(framework);
  if (!framework.is_string() || out.find("TensorFlow") == std::string::npos) return out;
  static const std::regex kCommitHash(" commit hash = [^\n]*");
  std::smatch m;
  if (!std::regex_search(out, m, kCommitHash)) return out;
  const std::string hash = m[0].str();
  for (auto at = out.find(hash); at != std::string::npos; at = out.find(hash, at))
    out.erase(at, hash.size());
  return out;
}

// ';'.os_path_join(s for s in (hw_notes, sw_notes) if s)
std::string notes(const nlohmann::json& desc) {
  std::string out;
  for (const char* name : {"hw_notes", "sw_notes"}) {
    const nlohmann::json& value = field(desc, name);
    const bool falsy =
        value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
        (value.is_number() && value.get<double>() == 0) ||
        ((value.is_string() || value.is_array() || value.is_object()) && value.empty());
    if (falsy) continue;
    if (!value.is_string()) throw Stop(std::string("field \"") + name + "\" is not a string");
    out += (out.empty() ? "" : ";") + value.get<std::string>();
  }
  return out;
}

// The row's description columns, in the summarizer's order of checks.
Cells system_cells(const nlohmann::json& desc, const std::string& private_id) {
  Cells cells;
  cells["division"] = text(field(desc, "division"));
  cells["private_id"] = private_id;
  cells["availability"] = text(field(desc, "status"));
  cells["submitter"] = text(field(desc, "submitter"));
  const nlohmann::json& system_name = field(desc, "system_name");
  cells["system"] = system_name == "tpu-v3"
                        ? "TPUv3." + std::to_string(python_int(field(desc, "accelerators_per_node"),
                                                               "accelerators_per_node") *
                                                    2)
                        : text(system_name);
  cells["host_processor_model_name"] = text(field(desc, "host_processor_model_name"));
  cells["number_of_nodes"] = text(field(desc, "number_of_nodes"));
  field(desc, "host_processor_core_count");
  const std::int64_t nodes = python_int(field(desc, "number_of_nodes"), "number_of_nodes");
  cells["host_processors_count"] =
      python_int(field(desc, "host_processors_per_node"), "host_processors_per_node") * nodes;
  const nlohmann::json& accelerator = field(desc, "accelerator_model_name");
  cells["accelerator_model_name"] = accelerator == "tpu-v3" ? "TPUv3" : text(accelerator);
  cells["accelerators_count"] =
      python_int(field(desc, "accelerators_per_node"), "accelerators_per_node") * nodes;
  cells["framework"] = pretty_framework(field(desc, "framework"));
  cells["notes"] = notes(desc);
  return cells;
}

// What the RCP part of the summarizer adds for a closed-division BERT folder.
struct RcpColumns {
  std::optional<double> gbs;
  std::optional<double> samples;
  std::optional<std::string> verdict;  // Pass, Fail, Interp. Fail, Missing, No RCP, Unknown state
};


RcpColumns rcp_columns(const std::string& dir, const std::string& who, const std::string& ruleset,
                       std::vector<std::string>& printed) {
  RcpColumns out;
  RcpOptions options;
  options.ruleset = ruleset;
  options.write_scaling = true;
  auto failed = [&](const std::string& why) {
    printed.push_back("WARNING: RCP/GBS computation failed for " + dir + ": " + why);
  };
  RcpResult rcp;
  try {
    rcp = check_rcp_directory(dir, options);
  } catch (const AuditError& e) {
    failed(e.what());
    return out;
  }
  if (stops_official_rcp_checker(rcp)) {
    failed(rcp.problems.front());
    return out;
  }
  if (!rcp.passed)
    printed.push_back("ERROR: RCP Test Failed on " + who + " with message: " + rcp.message + ".");
  out.verdict = summary_rcp_name(rcp);
  out.gbs = rcp.batch_size.value_or(-1);
  std::vector<double> samples;
  int not_converged = 0;
  for (const RcpRun& run : rcp.runs) {
    samples.push_back(run.samples_to_converge);
    not_converged += run.converged ? 0 : 1;
  }
  if (not_converged > kBertMaxDroppedRuns) {
    failed("'NoneType' object has no attribute 'sort' (more than one run did not converge)");
    return out;
  }
  std::sort(samples.begin(), samples.end());
  if (samples.size() >= 3) out.samples = rcp_olympic_mean(samples, 1);
  return out;
}

// The official reason a run is dropped, as it prints it.
std::string dropped_reason(const RunScore& run) {
  if (run.reason.starts_with("Compliance check failed")) return "Compliance check failed";
  if (run.reason == "Parse error" || run.reason == "run_start not recorded" ||
      run.reason == "run_stop not recorded")
    return run.reason;
  throw Stop(run.file.string() + ": " + run.reason);
}

double scaling_factor_of(const fs::path& dir) {
  const fs::path file = dir / "scaling.json";
  if (!fs::is_regular_file(file)) return 1.0;
  const nlohmann::json scaling = read_json_file(file);
  if (!scaling.is_object() || !scaling.contains("scaling_factor") ||
      !scaling["scaling_factor"].is_number())
    throw Stop(file.string() + ": no number scaling_factor");
  return scaling["scaling_factor"].get<double>();
}

struct BertFigures {
  std::optional<double> score;
  double scaling = 1.0;
  RcpColumns rcp;
};

// `submitter` and `system` name the folder in the printed lines.
BertFigures bert_figures(const std::string& dir, const std::string& submitter,
                         const std::string& system, bool closed, const std::string& ruleset,
                         std::vector<std::string>& printed) {
  const std::string who = submitter + " " + system + "/bert";
  BertFigures out;
  if (find_result_files(dir).empty()) {
    out.scaling = scaling_factor_of(dir);
  } else {
    ScoreOptions options;
    options.ruleset = ruleset;
    const SystemScore score = score_system(dir, options);
    for (const RunScore& run : score.runs) {
      if (!run.counted)
        printed.push_back(dropped_reason(run) + " in " +
                          os_path_join(dir, run.file.filename().string()));
    }
    if (score.dropped > kBertMaxDroppedRuns) {
      printed.push_back("CRITICAL ERROR: Too many non-converging runs for " + who);
      printed.push_back("** CRITICAL ERROR ** Results in the table for " + who +
                        " are NOT correct");
    } else if (score.dropped >= 1) {
      printed.push_back("NOTICE: Dropping non-converged run(s) for " + who +
                        " using olympic scoring.");
    }
    out.score = score.score;
    out.scaling = score.scaling_factor;
  }
  if (closed) out.rcp = rcp_columns(dir, submitter + "/" + system + "/bert", ruleset, printed);
  return out;
}


std::vector<SummaryCell> row_of(const std::vector<std::string>& columns, const Cells& cells,
                                bool detailed) {
  std::vector<SummaryCell> row;
  for (const auto& column : columns) {
    const auto it = cells.find(column);
    if (it != cells.end()) {
      row.push_back(it->second);
    } else if (detailed && column.ends_with(":RCP")) {
      row.emplace_back(std::string());
    } else {
      row.emplace_back(std::monostate{});
    }
  }
  return row;
}

// results/<system>/privateid.json's id, generated (and written) when asked and absent.
std::string private_id_of(const std::string& results_system, const nlohmann::json& desc,
                          const std::string& system, const OrgSummaryOptions& options) {
  const fs::path id_file = fs::path(results_system) / "privateid.json";
  nlohmann::json ids = nlohmann::json::object();
  if (fs::exists(id_file)) {
    ids = read_json_file(id_file);
    if (!ids.is_object()) throw Stop(id_file.string() + ": not a JSON object");
  }
  if (ids.contains("private_id")) return text(ids["private_id"]);
  if (!options.private_id) return "";
  const std::string id = options.private_id(desc, system);
  files::write_file_atomically(id_file,
                               "{\n    \"private_id\": " + nlohmann::json(id).dump() + "\n}");
  return id;
}

void summarize_system(const std::string& folder, const std::string& system,
                      const OrgSummaryOptions& options, OrgSummary& out) {
  const std::string desc_file = os_path_join(os_path_join(folder, "systems"), system + ".json");
  if (!fs::exists(desc_file)) {
    out.printed.push_back("ERROR: Missing " + desc_file);
    return;
  }
  nlohmann::json desc;
  try {
    desc = read_json_file(desc_file);
  } catch (const AuditError& e) {
    throw Stop(std::string(e.what()) + " (the summarizer's JSON error handler raises a TypeError)");
  }
  if (!desc.is_object()) throw Stop(desc_file + ": not a JSON object");
  const std::string results_system = os_path_join(os_path_join(folder, "results"), system);
  Cells cells = system_cells(desc, private_id_of(results_system, desc, system, options));
  Cells strong = cells, detailed = cells;
  const std::string prefix = results_repository_url(options.ruleset);
  const std::string submitter = text(desc["submitter"]);
  for (Cells* row : {&strong, &detailed}) {
    (*row)["details_url"] = prefix + "/blob/main/" + submitter + "/systems/" + system + ".json";
    (*row)["code_url"] = prefix + "/blob/master/" + submitter + "/benchmarks";
  }
  for (const fs::path& bench : sorted_subdirectories(results_system)) {
    const std::string name = bench.filename().string();
    const std::string dir = os_path_join(results_system, name);
    if (name != "bert") {
      out.notes.push_back(dir + ": mlbert scores BERT only; this benchmark is left out");
      continue;
    }
    if (fs::exists(bench / "power"))
      out.notes.push_back(dir + ": mlbert does not compute energy; bert:Energy is left empty");
    const bool closed = desc["division"] == "closed";
    const BertFigures figures =
        bert_figures(dir, submitter, system, closed, options.ruleset, out.printed);
    detailed["bert:rcp_scaling_factor"] = figures.scaling;
    if (figures.score) {
      strong["bert"] = *figures.score;
      detailed["bert:time_to_train"] = *figures.score;
    }
    if (figures.rcp.gbs) detailed["bert:GBS"] = *figures.rcp.gbs;
    if (figures.rcp.samples) detailed["bert:samples_to_converge"] = *figures.rcp.samples;
    if (figures.rcp.verdict) detailed["bert:RCP"] = *figures.rcp.verdict;
  }
  out.strong.push_back(row_of(summary_columns(options.ruleset, false), strong, false));
  out.detailed.push_back(row_of(summary_columns(options.ruleset, true), detailed, true));
}

}  // namespace

std::string summary_rcp_name(const RcpResult& rcp) {
  if (rcp.passed) return "Pass";
  if (rcp.message == "RCP found") return "Fail";
  if (rcp.message == "RCP Interpolation") return "Interp. Fail";
  if (rcp.message.find("Missing") != std::string::npos) return "Missing";
  if (rcp.message == "Cannot find any RCPs") return "No RCP";
  return "Unknown state";
}

std::string results_repository_url(const std::string& ruleset) {
  std::string rest = ruleset.size() > 3 ? ruleset.substr(3) : "";
  for (auto at = rest.find(".0"); at != std::string::npos; at = rest.find(".0", at))
    rest.erase(at, 2);
  return "https://github.com/mlcommons/training_results_v" + ruleset.substr(0, 3) + rest;
}

OrgSummary summarize_org(const std::string& folder, const OrgSummaryOptions& options) {
  OrgSummary out;
  try {
    const auto benchmarks = round_benchmarks(options.ruleset);
    if (std::find(benchmarks.begin(), benchmarks.end(), "bert") == benchmarks.end()) {
      throw Stop("bert is not a benchmark of ruleset " + options.ruleset +
                 ": the summarizer has no column for its scores (an AssertionError)");
    }
    const fs::path results = fs::path(folder) / "results";
    std::error_code ec;
    if (!fs::is_directory(results, ec))
      throw Stop(os_path_join(folder, "results") + ": no such folder");
    for (const fs::path& system : sorted_subdirectories(results))
      summarize_system(folder, system.filename().string(), options, out);
  } catch (const std::exception& e) {  // a Stop, or an engine's AuditError naming the file
    out.official_stop = e.what();
    out.strong.clear();
    out.detailed.clear();
  }
  return out;
}

}  // namespace mlbert::logging
