// How an MLPerf Training submission lies on disk (`<org>/systems/<system>.json`,
// `<org>/results/<system>/bert/result_N.txt`, `<org>/benchmarks/bert/implementations/<impl>/`) and
// the small pieces every audit command shares: result-file discovery, ruleset names, JSON files
// read with precise errors, MLLOG lines read the way the official Python tools read them (Latin-1).
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {

// Bad input to an audit command (missing directory, unreadable file, malformed JSON): the message
// names the file and, where there is one, the line and field.
class AuditError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kBertBenchmark = "bert";
inline constexpr int kBertResultFileCount = 10;  // runs per BERT submission
inline constexpr int kBertMaxDroppedRuns = 1;    // runs olympic scoring may drop as failed

// True for names the official tools glob as results: `result_*.txt`.
bool is_result_file_name(std::string_view file_name);

// The result_*.txt files directly in `dir`, sorted by run number then name. Throws AuditError when
// `dir` does not exist or is not a directory.
std::vector<std::filesystem::path> find_result_files(const std::filesystem::path& dir);

// What `dir` holds (or only its subfolders), sorted by name; nothing when it cannot be listed.
std::vector<std::filesystem::path> sorted_entries(const std::filesystem::path& dir);
std::vector<std::filesystem::path> sorted_subdirectories(const std::filesystem::path& dir);

// Python's os.path.join(a, b) for a relative `b`: the official tools print paths spelled so, from
// the folder as the user typed it ("pkg/" + "results" is "pkg/results").
std::string os_path_join(const std::string& a, const std::string& b);

// Throws AuditError unless `ruleset` looks like "M.m.p" (digits).
void require_ruleset_format(std::string_view ruleset);
// Throws AuditError unless `ruleset` looks like "M.m.p" and has BERT compliance rules (checker.h).
void require_ruleset_with_bert_rules(std::string_view ruleset);

// The ruleset of a published results tree, from a path component "v3.0" or
// "training_results_v3.0" -> "3.0.0". Empty when no component says.
std::optional<std::string> ruleset_from_path(const std::filesystem::path& path);

// The submission_division value every one of `files` logs, when they all log the same string;
// empty when one logs none, logs another or cannot be read.
std::optional<std::string> logged_division(const std::vector<std::filesystem::path>& files);

// Whole JSON file; throws AuditError "FILE: line L, column C: ..." for malformed JSON.
nlohmann::json read_json_file(const std::filesystem::path& file);

// Reads a text file as the official tools do (Latin-1, universal newlines) and calls `on_line`
// with each MLLOG payload: the bytes after the last ":::MLLOG " on the line, with trailing Python
// whitespace stripped, and the payload's 1-based line number in the file. Decode a payload with
// mllog::pyjson::loads (Python's json.loads on Latin-1 text). Throws AuditError when unreadable.
void for_each_mllog_payload(const std::filesystem::path& file,
                            const std::function<void(std::string_view payload, int line)>& on_line);

// The system description of a result directory: system.json in it or above a bert/ folder, else,
// in a submission package, <org>/systems/<system>.json for <org>/results/<system>[/bert]; "" when
// there is none.
std::filesystem::path find_system_description(const std::filesystem::path& results_dir);

}  // namespace mlbert::logging
