// `mlbert result_summarizer FOLDER USAGE RULESET [--csv FILE.csv] [--generate_private_ids]
// [--werror] [--quiet]`: the official `python -m mlperf_logging.result_summarizer` command line
// over `mlbert score`'s and `mlbert rcp`'s engines (summary.h). FOLDER is an organization folder,
// or several as `PREFIX{A,B}` / `PREFIX{*}`. What it prints (each dropped run, NOTICE and CRITICAL
// ERROR lines, failed RCP tests, "Strong Scaling Scores:") and the files it writes are the
// official ones: summary.json without --csv (the detailed table's rows, which overwrite the
// strong table's), else FILE.csv and FILE.json, and FILE_detailed.csv (appended to, as
// officially) and FILE_detailed.json. BERT folders only: other benchmarks' columns stay empty.
// --xlsx needs a spreadsheet writer mlbert does not have and is refused.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "common/atomic_file.h"
#include "common/cli.h"
#include "mlperf_logging/cli/official_tool.h"
#include "mlperf_logging/cli/private_id.h"
#include "mlperf_logging/package/summary.h"

namespace mlbert::logging::official {
namespace {

namespace fs = std::filesystem;

struct SummarizerArgs {
  std::string folder;
  std::string usage;
  std::string ruleset;
  bool generate_private_ids = false;
  bool werror = false;
  bool quiet = false;
  std::string csv;
  std::string xlsx;
};

bool is_organization_folder(const fs::path& folder) {
  std::error_code ec;
  return fs::is_directory(folder, ec) && fs::exists(folder / "systems", ec) &&
         fs::exists(folder / "results", ec);
}

// FOLDER, or the organizations of `PREFIX{A,B}` / `PREFIX{*}` (printed as the summarizer does).
std::vector<std::string> organization_folders(const std::string& folder) {
  static const std::regex kMany(R"((.*)\{(.*)\})");
  std::smatch m;
  if (!std::regex_search(folder, m, kMany)) return {folder};
  const std::string prefix = m[1].str();
  const std::string suffix = m[2].str();
  std::vector<std::string> orgs;
  if (suffix.find(',') != std::string::npos) {
    std::stringstream names(suffix);
    for (std::string name; std::getline(names, name, ',');) orgs.push_back(name);
  } else if (suffix == "*") {
    std::error_code ec;
    if (!fs::is_directory(prefix, ec))  // also "{*}": the summarizer lists '' and stops
      throw OfficialStop("'" + prefix + "': no such folder to list organizations in");
    for (const auto& entry : fs::directory_iterator(prefix, ec))
      if (is_organization_folder(fs::path(prefix + entry.path().filename().string())))
        orgs.push_back(entry.path().filename().string());
    std::sort(orgs.begin(), orgs.end());
  } else {
    throw OfficialStop(folder + ": {" + suffix + "} names neither organizations (A,B) nor {*}");
  }
  std::string listed;
  for (const auto& org : orgs) listed += (listed.empty() ? "" : ", ") + org;
  std::printf("Detected organizations: %s\n", listed.c_str());
  std::vector<std::string> folders;
  for (const auto& org : orgs) folders.push_back(prefix + org);
  return folders;
}

// str.replace(".csv", with): every occurrence, as Python replaces.
std::string replaced(std::string text, const std::string& with) {
  for (auto at = text.find(".csv"); at != std::string::npos;
       at = text.find(".csv", at + with.size()))
    text.replace(at, 4, with);
  return text;
}

std::string existing_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One table's files, as the summarizer's _print_and_write writes them.
void write_table(const SummaryTable& table, const std::string& csv, bool detailed) {
  std::printf("Strong Scaling Scores:\n");
  std::fflush(stdout);
  if (csv.empty()) {
    files::write_file_atomically("summary.json", summary_json(table));
    return;
  }
  if (!csv.ends_with(".csv"))
    throw OfficialStop("--csv " + csv + ": the file name must end in .csv");
  const std::string csv_file = detailed ? replaced(csv, "_detailed.csv") : csv;
  // The detailed CSV is opened for appending, as officially (mode 'a').
  const std::string before = detailed && fs::exists(csv_file) ? existing_text(csv_file) : "";
  files::write_file_atomically(csv_file, before + summary_csv(table));
  files::write_file_atomically(replaced(csv_file, ".json"), summary_json(table));
}

int summarize(const SummarizerArgs& args) {
  PrivateIds private_ids;
  OrgSummaryOptions options;
  options.ruleset = args.ruleset;
  if (args.generate_private_ids) options.private_id = std::ref(private_ids);
  SummaryTable strong{summary_columns(args.ruleset, false), {}};
  SummaryTable detailed{summary_columns(args.ruleset, true), {}};
  for (const std::string& folder : organization_folders(args.folder)) {
    const OrgSummary org = summarize_org(folder, options);
    for (const auto& line : org.printed) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    for (const auto& note : org.notes) std::fprintf(stderr, "mlbert: %s\n", note.c_str());
    if (!org.official_stop.empty()) throw OfficialStop(org.official_stop);
    strong.rows.insert(strong.rows.end(), org.strong.begin(), org.strong.end());
    detailed.rows.insert(detailed.rows.end(), org.detailed.begin(), org.detailed.end());
  }
  sort_summary(strong);
  sort_summary(detailed);
  write_table(strong, args.csv, false);
  if (!detailed.rows.empty()) write_table(detailed, args.csv, true);
  return 0;
}

}  // namespace

void register_result_summarizer(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SummarizerArgs>();
  CLI::App* cmd = app.add_subcommand("result_summarizer",
                                     "mlperf_logging.result_summarizer, same arguments")
                      ->group("official");
  cli::set_example(*cmd, "mlbert result_summarizer training_results_v4.1/NVIDIA training 4.1.0 --csv summary.csv");
  cmd->add_option("folder", args->folder,
                  "the folder for a submission package (or PREFIX{A,B}, PREFIX{*})")
      ->required();
  add_usage_and_ruleset(cmd, args->usage, args->ruleset);
  cmd->add_flag("--generate_private_ids", args->generate_private_ids,
                "Generate private IDs for each run.");
  cmd->add_flag("--werror", args->werror, "Treat warnings as errors (no effect, as officially)");
  cmd->add_flag("--quiet", args->quiet, "Suppress warnings (no effect, as officially)");
  cmd->add_option("--csv", args->csv, "Exports a csv of the results to the path specified");
  cmd->add_option("--xlsx", args->xlsx, "not supported (a spreadsheet writer)");
  cmd->callback([args, &exit_code] {
    check_usage("result_summarizer", args->usage);
    if (!args->xlsx.empty())
      throw CLI::ValidationError("--xlsx", "mlbert writes no spreadsheets; use --csv");
    try {
      exit_code = summarize(*args);
    } catch (const std::exception& e) {
      // Where the summarizer stops with a Python exception: one line, its status 1.
      std::fflush(stdout);
      std::fprintf(stderr, "ERROR: mlbert: %s\n", e.what());
      exit_code = 1;
    }
  });
}

}  // namespace mlbert::logging::official
