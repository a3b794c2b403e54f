// The official result_summarizer's table as data: its columns for a training ruleset (the system
// columns, one column per benchmark of the round, or per benchmark and metric in the detailed
// table, then the two links), rows of typed cells, the order pandas sorts them in, and the CSV and
// JSON files it writes. Design choice: a cell keeps the type the summarizer gives its column (text,
// integer, float or missing), so the CSV prints a float as Python's repr and the JSON rounds it to
// 10 decimals as pandas' to_json does before json.dumps prints it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mlbert::logging {

using SummaryCell = std::variant<std::monostate, std::string, std::int64_t, double>;

struct SummaryTable {
  std::vector<std::string> columns;
  std::vector<std::vector<SummaryCell>> rows;  // each as long as `columns`
};

// The benchmarks of a training round as the official benchmark_meta lists them ("4.1.0" and
// "4.1" both name 4.1), duplicates removed; empty for a round it does not know.
std::vector<std::string> round_benchmarks(std::string_view ruleset);

// The detailed table's metrics per benchmark: "bert:time_to_train", "bert:Energy", ...
inline constexpr std::string_view kSummaryMetrics[] = {
    "time_to_train", "Energy", "GBS", "samples_to_converge", "RCP", "rcp_scaling_factor"};

// Columns of the strong-scaling table (`detailed` false) or its detailed twin.
std::vector<std::string> summary_columns(std::string_view ruleset, bool detailed);

// Sorts rows by every column in turn, missing values last, as pandas sort_values(by=columns).
void sort_summary(SummaryTable& table);

// pandas DataFrame.to_csv(index=False): a header line, then a line per row.
std::string summary_csv(const SummaryTable& table, bool header = true);

// json.dumps(json.loads(df.to_json(orient="records")), indent=2).
std::string summary_json(const SummaryTable& table);

// pandas' to_json text of a float at its default 10 decimals ("0.4176354167", "1e+20").
std::string pandas_json_float(double value);

}  // namespace mlbert::logging
