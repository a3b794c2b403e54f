// The report's audit cards (see cards.h): every run's hyperparameters and seed with the seeds'
// uniqueness, every log's SHA-256, and the advisories beside the official verdicts. They draw the
// facts and advisories of advise/advise.h as SystemReport holds them.
#include <algorithm>
#include <map>

#include "mlperf_logging/report/cards.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging::report {
namespace {

std::string cell(std::string_view text, std::string_view css_class = "") {
  return "<td" + (css_class.empty() ? std::string() : " class=\"" + std::string(css_class) + "\"") +
         ">" + escape_html(text) + "</td>";
}

// Each hyperparameter once, in the order the first run logs them.
std::vector<std::string> hyperparameter_names(const std::vector<LogFacts>& runs) {
  std::vector<std::string> names;
  for (const LogFacts& run : runs)
    for (const auto& [name, value] : run.hyperparameters)
      if (name != "seed" && std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
  return names;
}

// One row: the value every run logs, or each run's value where they differ.
std::string hyperparameter_row(const std::string& name, const std::vector<LogFacts>& runs) {
  std::vector<std::pair<std::string, std::string>> values;  // (run, value)
  for (const LogFacts& run : runs) {
    const LoggedValue* v = find_hyperparameter(run, name);
    values.emplace_back(run.file.stem().string(), v ? value_text(v->value) : "(not logged)");
  }
  const bool same = std::all_of(values.begin(), values.end(),
                                [&](const auto& v) { return v.second == values.front().second; });
  std::string text;
  if (same) {
    text = values.front().second + (runs.size() > 1 ? " (every run)" : "");
  } else {
    for (const auto& [run, value] : values) text += (text.empty() ? "" : "; ") + run + " " + value;
  }
  return "<tr>" + cell(name) + cell(text, same ? "" : "differs") + "</tr>\n";
}

std::string seed_rows(const std::vector<LogFacts>& runs, std::size_t& repeated) {
  std::map<std::string, std::vector<std::string>> runs_with;  // seed -> runs
  for (const LogFacts& run : runs)
    for (const LoggedSeed& seed : run.seeds)
      runs_with[value_text(seed.value)].push_back(run.file.stem().string());
  std::string out;
  for (const LogFacts& run : runs) {
    std::string seeds, source, state = badge("fail", "no seed");
    for (const LoggedSeed& seed : run.seeds) {
      seeds += (seeds.empty() ? "" : ", ") + value_text(seed.value);
      source = seed.source_file + ":" + std::to_string(seed.source_line);
      const auto& with = runs_with[value_text(seed.value)];
      if (with.size() > 1) {
        std::string others;
        for (const auto& r : with)
          if (r != run.file.stem().string()) others += (others.empty() ? "" : ", ") + r;
        state = badge("fail", "also " + others);
        ++repeated;
      } else {
        state = badge("pass", "unique");
      }
    }
    out += "<tr>" + cell(run.file.stem().string()) + cell(seeds.empty() ? "-" : seeds, "num") +
           cell(source) + "<td>" + state + "</td></tr>\n";
  }
  return out;
}

}  // namespace

std::string hyperparameters_card(const SystemReport& system) {
  if (!system.advice) return paragraph("not read: " + system.advice_note, "missing");
  const std::vector<LogFacts>& runs = system.advice->runs;
  std::string out = "<table class=\"hparams\"><thead><tr><th>hyperparameter</th><th>value</th>"
                    "</tr></thead><tbody>\n";
  const auto names = hyperparameter_names(runs);
  for (const std::string& name : names) out += hyperparameter_row(name, runs);
  out += "</tbody></table>\n";
  if (names.empty()) out += paragraph("These logs set no hyperparameter before run_start.");
  std::size_t repeated = 0;
  out += "<table class=\"seeds\"><thead><tr><th>run</th><th>seed</th><th>logged from</th>"
         "<th></th></tr></thead><tbody>\n" +
         seed_rows(runs, repeated) + "</tbody></table>\n";
  return out + paragraph(repeated == 0 ? "Every logged seed is different from the others."
                                       : std::to_string(repeated) +
                                             " seeds are logged by more than one run.",
                         repeated == 0 ? "note" : "note fail");
}

std::string logs_card(const SystemReport& system) {
  if (!system.advice) return paragraph("not read: " + system.advice_note, "missing");
  std::string out = "<table class=\"logs\"><thead><tr><th>log</th><th>records</th>"
                    "<th>SHA-256</th></tr></thead><tbody>\n";
  for (const LogFacts& run : system.advice->runs)
    out += "<tr>" + cell(run.file.filename().string()) +
           cell(std::to_string(run.records), "num") +
           cell(run.read_error.empty() ? run.sha256 : "unreadable: " + run.read_error, "hash") +
           "</tr>\n";
  return out + "</tbody></table>\n" +
         paragraph("SHA-256 of each file's bytes: what was audited, to compare with the published "
                   "logs (sha256sum gives the same).");
}

std::string advisories_card(const SystemReport& system) {
  if (!system.advice) return paragraph("no advisory audit: " + system.advice_note, "missing");
  const AdviceReport& advice = system.advice->report;
  std::string out;
  if (advice.advisories.empty()) {
    out += "<p>" + badge("pass", "none") + " No advisory for these logs.</p>\n";
  } else {
    out += "<ol class=\"failures\">";
    for (const Advisory& a : advice.advisories)
      out += "<li>" + badge("warn", a.rule) + " <b>" +
             escape_html(a.file.filename().string() +
                         (a.line > 0 ? " line " + std::to_string(a.line) : "")) +
             "</b>: " + escape_html(a.text) + "</li>";
    out += "</ol>\n";
  }
  if (!advice.notes.empty()) {
    out += "<details><summary>" + std::to_string(advice.notes.size()) +
           " audits not run, and why</summary><ul>";
    for (const std::string& note : advice.notes) out += "<li>" + escape_html(note) + "</li>";
    out += "</ul></details>\n";
  }
  return out + paragraph("Advisories (mlbert audit) point at what the official tools do not judge; "
                         "they change none of the verdicts, scores or RCP results above.");
}

}  // namespace mlbert::logging::report
