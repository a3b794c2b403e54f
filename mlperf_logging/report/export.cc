// The report's summary exports (see report.h): the official result_summarizer's columns, computed
// as it computes them from the system description (host and accelerator counts are per-node
// figures times number_of_nodes; notes join hw_notes and sw_notes with ';'; the URLs point into
// the round's training_results repository), with mlbert's own figures under "mlbert" in the JSON.
#include <algorithm>
#include <charconv>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/package/summary.h"
#include "mlperf_logging/report/report.h"

namespace mlbert::logging {
namespace {

using Row = nlohmann::ordered_json;

const std::vector<std::string> kColumns = {
    "division",  "availability", "submitter",  "system",     "number_of_nodes",
    "host_processor_model_name", "host_processors_count", "accelerator_model_name",
    "accelerators_count", "framework", "notes", "private_id", "bert", "bert:time_to_train",
    "bert:Energy", "bert:GBS", "bert:samples_to_converge", "bert:RCP", "bert:rcp_scaling_factor",
    "details_url", "code_url"};

std::string field(const SystemReport& s, const char* name) {
  if (!s.description || !s.description->is_object()) return "";
  const auto it = s.description->find(name);
  if (it == s.description->end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// int(a) * int(b) as the summarizer computes counts; null when either is not an integer.
nlohmann::json product(const std::string& a, const std::string& b) {
  long long x = 0, y = 0;
  const auto ok = [](const std::string& text, long long& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
  };
  if (!ok(a, x) || !ok(b, y)) return nullptr;
  return x * y;
}

Row official_row(const SystemReport& s) {
  const ScoreHeadline headline = score_headline(s);
  const std::string division = field(s, "division");
  const std::string nodes = field(s, "number_of_nodes");
  Row row;
  row["division"] = division;
  row["availability"] = field(s, "status");
  row["submitter"] = field(s, "submitter");
  row["system"] = field(s, "system_name");
  row["number_of_nodes"] = nodes;
  row["host_processor_model_name"] = field(s, "host_processor_model_name");
  row["host_processors_count"] = product(field(s, "host_processors_per_node"), nodes);
  row["accelerator_model_name"] = field(s, "accelerator_model_name");
  row["accelerators_count"] = product(field(s, "accelerators_per_node"), nodes);
  row["framework"] = field(s, "framework");
  std::string notes = field(s, "hw_notes");
  if (const std::string sw = field(s, "sw_notes"); !sw.empty())
    notes += (notes.empty() ? "" : ";") + sw;
  row["notes"] = notes;
  row["private_id"] = "";
  const nlohmann::json score = headline.normalized ? nlohmann::json(*headline.normalized) : nullptr;
  row["bert"] = score;
  row["bert:time_to_train"] = score;
  row["bert:Energy"] = nullptr;
  // The detailed columns the summarizer fills for closed results only.
  const RcpResult* rcp = division == "closed" ? s.rcp_shown() : nullptr;
  row["bert:GBS"] = rcp && rcp->batch_size ? nlohmann::json(*rcp->batch_size) : nullptr;
  row["bert:samples_to_converge"] =
      rcp && rcp->submission_mean ? nlohmann::json(*rcp->submission_mean) : nullptr;
  row["bert:RCP"] = rcp ? nlohmann::json(summary_rcp_name(*rcp)) : nullptr;
  row["bert:rcp_scaling_factor"] = headline.factor;
  const std::string repository = results_repository_url(s.ruleset);
  row["details_url"] = repository + "/blob/main/" + field(s, "submitter") + "/systems/" + s.name +
                       ".json";
  row["code_url"] = repository + "/blob/master/" + field(s, "submitter") + "/benchmarks";
  return row;
}

nlohmann::ordered_json mlbert_extras(const SystemReport& s) {
  const ScoreHeadline headline = score_headline(s);
  nlohmann::ordered_json extras;
  extras["results_dir"] = s.results_dir.string();
  extras["ruleset"] = s.ruleset;
  extras["raw_score"] = headline.raw ? nlohmann::json(*headline.raw) : nullptr;
  extras["normalization"] = headline.basis;
  nlohmann::ordered_json logs = nlohmann::ordered_json::array();
  nlohmann::ordered_json advisories = nlohmann::ordered_json::array();
  if (s.advice) {
    for (const LogFacts& run : s.advice->runs)
      logs.push_back({{"file", run.file.filename().string()}, {"sha256", run.sha256}});
    for (const Advisory& a : s.advice->report.advisories)
      advisories.push_back(
          {{"rule", a.rule}, {"file", a.file.string()}, {"line", a.line}, {"text", a.text}});
  }
  extras["logs"] = logs;
  extras["advisories"] = advisories;
  return extras;
}

std::string cell_text(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return mllog::python_float_repr(value.get<double>());
  return value.dump();
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The systems' indices in the summarizer's order: by every column's text, left to right.
std::vector<std::size_t> sorted_order(const std::vector<Row>& rows) {
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (const std::string& column : kColumns) {
      const std::string x = cell_text(rows[a][column]), y = cell_text(rows[b][column]);
      if (x != y) return x < y;
    }
    return false;
  });
  return order;
}

}  // namespace

std::vector<std::string> summary_columns() {
  return kColumns;
}

nlohmann::ordered_json summary_rows(const std::vector<SystemReport>& systems) {
  std::vector<Row> rows;
  for (const SystemReport& s : systems) rows.push_back(official_row(s));
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i : sorted_order(rows)) out.push_back(rows[i]);
  return out;
}

std::string summary_csv(const std::vector<SystemReport>& systems) {
  std::string out;
  for (const std::string& column : kColumns) out += (out.empty() ? "" : ",") + csv_cell(column);
  out += "\n";
  for (const auto& row : summary_rows(systems)) {
    std::string line;
    for (std::size_t c = 0; c < kColumns.size(); ++c)
      line += (c ? "," : "") + csv_cell(cell_text(row[kColumns[c]]));
    out += line + "\n";
  }
  return out;
}

std::string summary_json(const std::vector<SystemReport>& systems) {
  std::vector<Row> rows;
  for (const SystemReport& s : systems) {
    rows.push_back(official_row(s));
    rows.back()["mlbert"] = mlbert_extras(s);
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i : sorted_order(rows)) out.push_back(rows[i]);
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace mlbert::logging
