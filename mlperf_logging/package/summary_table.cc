// The official result_summarizer's columns, order and files (summary_table.h).
#include "mlperf_logging/package/summary_table.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/utf8.h"
#include "mlperf_logging/log/mllog.h"

namespace mlbert::logging {
namespace {

struct RoundBenchmarks {
  std::string_view round;
  std::vector<std::string_view> benchmarks;
};

// benchmark_meta's training benchmarks per round (mlperf-logging 4.1.68), in its order.
const std::vector<RoundBenchmarks>& training_rounds() {
  static const std::vector<RoundBenchmarks> rounds = {
      {"0.6", {"resnet", "ssd", "maskrcnn", "gnmt", "transformer", "ncf", "minigo"}},
      {"0.7", {"bert", "dlrm", "gnmt", "maskrcnn", "minigo", "resnet", "ssd", "transformer"}},
      {"1.0", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"1.1", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"2.0", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"2.1", {"bert", "dlrm", "maskrcnn", "minigo", "resnet", "ssd", "rnnt", "unet3d"}},
      {"3.0", {"bert", "dlrm_dcnv2", "gpt3", "maskrcnn", "resnet", "ssd", "rnnt", "unet3d"}},
      {"3.1",
       {"bert", "dlrm_dcnv2", "gpt3", "maskrcnn", "resnet", "ssd", "rnnt", "unet3d",
        "stable_diffusion"}},
      {"4.0",
       {"bert", "dlrm_dcnv2", "gpt3", "resnet", "ssd", "unet3d", "stable_diffusion",
        "llama2_70b_lora", "stable_diffusion", "gnn"}},
      {"4.1", {"bert", "dlrm_dcnv2", "gpt3", "ssd", "stable_diffusion", "llama2_70b_lora", "gnn"}},
      {"5.0",
       {"bert", "dlrm_dcnv2", "retinanet", "stable_diffusion", "llama2_70b_lora", "rgat",
        "llama31_405b"}},
      {"5.1",
       {"llama31_8b", "dlrm_dcnv2", "retinanet", "flux1", "llama2_70b_lora", "rgat",
        "llama31_405b"}},
      {"6.0",
       {"llama31_8b", "dlrm_dcnv2", "flux1", "llama2_70b_lora", "llama31_405b", "gpt_oss_20b",
        "deepseekv3_671b"}},
      {"6.1",
       {"llama31_8b", "flux1", "llama2_70b_lora", "gpt_oss_20b", "deepseekv3_671b",
        "qwen35_397b_grpo", "dlrmv4"}},
  };
  return rounds;
}

constexpr std::array<std::string_view, 12> kSystemColumns = {"division",
                                                             "availability",
                                                             "submitter",
                                                             "system",
                                                             "number_of_nodes",
                                                             "host_processor_model_name",
                                                             "host_processors_count",
                                                             "accelerator_model_name",
                                                             "accelerators_count",
                                                             "framework",
                                                             "notes",
                                                             "private_id"};

// 0 when equal; missing values sort last.
int compare(const SummaryCell& a, const SummaryCell& b) {
  const bool a_missing = std::holds_alternative<std::monostate>(a);
  const bool b_missing = std::holds_alternative<std::monostate>(b);
  if (a_missing || b_missing) return a_missing == b_missing ? 0 : (a_missing ? 1 : -1);
  if (const auto* s = std::get_if<std::string>(&a)) {
    const auto& t = std::get<std::string>(b);
    return *s < t ? -1 : (t < *s ? 1 : 0);
  }
  auto number = [](const SummaryCell& c) {
    if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
    return std::get<double>(c);
  };
  const double x = number(a);
  const double y = number(b);
  if (std::isnan(x) || std::isnan(y))
    return std::isnan(x) == std::isnan(y) ? 0 : (std::isnan(x) ? 1 : -1);
  return x < y ? -1 : (y < x ? 1 : 0);
}

// Python's csv module, QUOTE_MINIMAL: quoted when it holds the delimiter, a quote or a newline.
std::string csv_field(const SummaryCell& cell) {
  if (std::holds_alternative<std::monostate>(cell)) return "";
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell))
    return std::isnan(*d) ? "" : mllog::python_float_repr(*d);
  const std::string& text = std::get<std::string>(cell);
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void append_escaped_unit(std::string& out, unsigned unit) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", unit);
  out += buffer;
}

// json.dumps's short escapes; nullptr for the characters it writes as \uXXXX.
const char* short_escape(char32_t c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return nullptr;
  }
}

// json.dumps of a str (ensure_ascii): UTF-8 in, every character outside ' '..'~' escaped.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const char32_t c = decode_utf8_lenient(text, i);  // a stray byte stands for itself (Latin-1)
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if (const char* escape = short_escape(c)) {
      out += escape;
    } else if (c >= 0x10000) {
      append_escaped_unit(out, 0xd800 + ((c - 0x10000) >> 10));
      append_escaped_unit(out, 0xdc00 + ((c - 0x10000) & 0x3ff));
    } else {
      append_escaped_unit(out, c);
    }
  }
  return out + "\"";
}

std::string json_value(const SummaryCell& cell) {
  if (std::holds_alternative<std::monostate>(cell)) return "null";
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell)) {
    if (std::isnan(*d)) return "null";
    return mllog::python_float_repr(std::strtod(pandas_json_float(*d).c_str(), nullptr));
  }
  return json_string(std::get<std::string>(cell));
}

}  // namespace

std::vector<std::string> round_benchmarks(std::string_view ruleset) {
  std::string_view round = ruleset;
  if (std::count(ruleset.begin(), ruleset.end(), '.') == 2)
    round = ruleset.substr(0, ruleset.rfind('.'));
  std::vector<std::string> out;
  for (const auto& row : training_rounds()) {
    if (row.round != round) continue;
    for (auto name : row.benchmarks)
      if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
  }
  return out;
}

std::vector<std::string> summary_columns(std::string_view ruleset, bool detailed) {
  std::vector<std::string> columns(kSystemColumns.begin(), kSystemColumns.end());
  for (const auto& benchmark : round_benchmarks(ruleset)) {
    if (!detailed) {
      columns.push_back(benchmark);
      continue;
    }
    for (auto metric : kSummaryMetrics) columns.push_back(benchmark + ":" + std::string(metric));
  }
  columns.emplace_back("details_url");
  columns.emplace_back("code_url");
  return columns;
}

void sort_summary(SummaryTable& table) {
  std::stable_sort(table.rows.begin(), table.rows.end(), [](const auto& a, const auto& b) {
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (const int c = compare(a[i], b[i]); c != 0) return c < 0;
    }
    return false;
  });
}

std::string summary_csv(const SummaryTable& table, bool header) {
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += "\n";
  };
  if (header) {
    std::vector<std::string> names;
    for (const auto& column : table.columns) names.push_back(csv_field(column));
    line(names);
  }
  for (const auto& row : table.rows) {
    std::vector<std::string> fields;
    for (const auto& cell : row) fields.push_back(csv_field(cell));
    line(fields);
  }
  return out;
}

std::string summary_json(const SummaryTable& table) {
  if (table.rows.empty()) return "[]";
  std::string out = "[";
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    out += r ? ",\n  {" : "\n  {";
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      out += c ? ",\n    " : "\n    ";
      out += json_string(table.columns[c]) + ": " + json_value(table.rows[r][c]);
    }
    out += "\n  }";
  }
  return out + "\n]";
}

std::string pandas_json_float(double value) {
  // pandas' ujson encoder (double_precision 10): fixed point below 1e16 and from 1e-15, with the
  // fraction rounded to 10 digits (ties to odd frac, or up from 0) and its trailing zeros cut;
  // "%.10g" outside that range.
  constexpr int kPrecision = 10;
  constexpr double kPow10 = 1e10;
  const bool negative = value < 0;
  const double magnitude = negative ? -value : value;
  if (magnitude > 1e16 - 1 || (magnitude != 0.0 && magnitude < 1e-15)) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.10g", value);
    return buffer;
  }
  unsigned long long whole = static_cast<unsigned long long>(magnitude);
  const double scaled = (magnitude - static_cast<double>(whole)) * kPow10;
  unsigned long long frac = static_cast<unsigned long long>(scaled);
  const double diff = scaled - static_cast<double>(frac);
  if (diff > 0.5) {
    ++frac;
    if (static_cast<double>(frac) >= kPow10) {
      frac = 0;
      ++whole;
    }
  } else if (diff == 0.5 && (frac == 0 || (frac & 1))) {
    ++frac;
  }
  std::string fraction = "0";
  if (frac != 0) {
    int digits = kPrecision;
    while (frac % 10 == 0) {
      --digits;
      frac /= 10;
    }
    fraction = std::to_string(frac);
    fraction.insert(0, static_cast<std::size_t>(digits) - fraction.size(), '0');
  }
  return (negative ? "-" : "") + std::to_string(whole) + "." + fraction;
}

}  // namespace mlbert::logging
