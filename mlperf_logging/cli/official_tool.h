// What the six official command lines (`mlbert compliance_checker`, `package_checker`,
// `result_summarizer`, `rcp_checker`, `system_desc_checker`, `repo_checker`) share: Python
// logging's output, the official exit statuses, and the USAGE / RULESET arguments.
//
// Design choice: the official tools log through Python's logging set up by basicConfig, so every
// record goes to stderr and to the --log_output file as "LEVEL - message", and a script greps those
// lines; OfficialLog writes the same lines. Where an official tool stops with a Python exception
// (exit status 1, no verdict line), the adapter throws OfficialStop with a message naming the file
// and the cause: run_official logs it as an ERROR line and returns 1, the official status.
#pragma once
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {
struct SystemDescResult;
}

namespace mlbert::logging::official {

// The line the official tools log between sections.
inline constexpr std::string_view kDivider = "------------------------------";

// Where the official tool would stop with a Python exception: exit status 1.
class OfficialStop : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Records as Python's basicConfig(filename=..., level=INFO) plus a stderr handler with the format
// "%(levelname)s - %(message)s" write them: on stderr at once, and appended to the log file, which
// is written whole when the run ends (the previous content and this run's lines, replaced
// atomically; a device or pipe is appended to directly).
class OfficialLog {
 public:
  explicit OfficialLog(std::filesystem::path file);
  void info(std::string_view message) { record("INFO", message); }
  void warning(std::string_view message) { record("WARNING", message); }
  void error(std::string_view message) { record("ERROR", message); }
  // Writes the file; throws OfficialStop naming it when it cannot be written.
  void close();
  const std::filesystem::path& file() const { return file_; }

 private:
  void record(std::string_view level, std::string_view message);
  std::filesystem::path file_;
  std::string lines_;
};

// Opens the log, runs `body`, closes the log and returns body's status; an OfficialStop or any
// other exception from `body` becomes one ERROR line and status 1. A log file that cannot be
// written is one "mlbert: error:" line and status 1 (Python stops there too).
int run_official(std::string_view tool, const std::string& log_file,
                 const std::function<int(OfficialLog&)>& body);

// The USAGE argument or --usage option: 'training' or 'hpc' as the official choices; hpc is
// refused with a clear message unless `hpc_allowed` (the repository checks are the same for both).
void check_usage(std::string_view tool, const std::string& usage, bool hpc_allowed = false);
// The RULESET choices of the official argparse: every training ruleset the tools know.
std::vector<std::string> official_rulesets();
// The positional USAGE and RULESET arguments after FOLDER or FILE, as the official package checker,
// summarizer and system description checker take them.
void add_usage_and_ruleset(CLI::App* command, std::string& usage, std::string& ruleset);

// Python's repr() of a str, as in a logged list: 'text', or "text" when it holds ' and no ".
std::string python_repr(std::string_view text);
// Python's str(list of str): ['a', 'b'].
std::string python_list_repr(const std::vector<std::string>& items);

// The verdict line of the official check_system_desc for one description (official_system.cc,
// also logged by package_checker); throws OfficialStop where the official checker would stop.
void log_system_desc_verdict(const SystemDescResult& result, OfficialLog& log);

// Registration of each official command (official_<tool>.cc).
void register_compliance_checker(CLI::App& app, int& exit_code);
void register_package_checker(CLI::App& app, int& exit_code);
void register_result_summarizer(CLI::App& app, int& exit_code);
void register_rcp_checker(CLI::App& app, int& exit_code);
void register_system_desc_checker(CLI::App& app, int& exit_code);
void register_repo_checker(CLI::App& app, int& exit_code);

}  // namespace mlbert::logging::official
