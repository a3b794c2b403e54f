// The report's checks of one system (see cards.h): the RCP test, compliance per file, and the
// system descriptions of all systems side by side. Verdicts are the checker's, the RCP check's and
// the system-description check's, shown as they give them.
#include <algorithm>
#include <cmath>

#include "mlperf_logging/report/cards.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging::report {

// ---- RCP ----------------------------------------------------------------------------------------

namespace {

// Each run's samples to converge on one strip, with the RCP mean and the acceptance bound.
std::string rcp_chart(const RcpResult& rcp, bool use_train_samples, const std::string& id,
                      double width) {
  std::vector<double> xs;
  for (const RcpRun& run : rcp.runs)
    if (run.converged) xs.push_back(run.samples_to_converge);
  if (xs.empty())
    return missing("rcp",
                   "no run converged: nothing to compare with the RCP (" + rcp.message + ")");
  if (rcp.reference) {
    xs.push_back(rcp.reference->mean);
    xs.push_back(rcp.reference->min_mean);
  }
  if (rcp.submission_mean) xs.push_back(*rcp.submission_mean);
  const double lo = min_of(xs), hi = max_of(xs);
  const double pad = (hi - lo) * 0.08 + hi * 0.01;
  const Axis x = nice_axis(std::max(lo - pad, 0.0), hi + pad, 6);  // samples >= 0
  const std::size_t n = rcp.runs.size();
  Chart chart(width, rows_height(n));
  chart.set_left_margin(70);
  std::vector<std::string> labels;
  for (const RcpRun& run : rcp.runs) labels.push_back(run.file.stem().string());
  chart.set_axes(x, category_axis(labels));
  chart.set_labels(use_train_samples ? "samples to converge (train_samples)"
                                     : "samples to converge (last eval epoch_num)",
                   "");
  if (rcp.reference) {
    const double bound = rcp.reference->min_mean;
    chart.box(x.lo, bound, -0.5, static_cast<double>(n) - 0.5, kFailColour,
              "faster than the acceptance bound: the RCP check fails", 0.08);
    // The bound is below the mean: its label goes left of its rule, the mean's right of its.
    chart.vrule(rcp.reference->mean, kTargetColour, "RCP mean " + grouped(rcp.reference->mean));
    chart.vrule(bound, kFailColour, "acceptance bound " + grouped(bound), "5 4", "end");
  }
  if (rcp.submission_mean) chart.vrule(*rcp.submission_mean, kMeanColour, "", "2 2");
  for (std::size_t i = 0; i < n; ++i) {
    const RcpRun& run = rcp.runs[i];
    const double row = static_cast<double>(i);
    if (run.converged) {
      chart.marker({run.samples_to_converge, row}, Chart::Shape::dot, run_colour(i),
                   run.file.stem().string() + ": " + grouped(run.samples_to_converge) +
                       " samples (" + run.note + ")",
                   4.5);
    } else {
      chart.marker({x.hi, row}, Chart::Shape::cross, kFailColour,
                   run.file.stem().string() + ": not converged (" + run.note + ")", 4.5);
    }
  }
  return chart.svg(id, "rcp", "samples to converge against the RCP mean and acceptance bound");
}

}  // namespace

std::string rcp_card(const SystemReport& system, const std::string& id, double width) {
  if (!system.rcp) return missing("rcp", system.rcp_note);
  const bool use_train_samples = system.rcp_train_samples.has_value();
  const RcpResult& rcp = use_train_samples ? *system.rcp_train_samples : *system.rcp;
  std::string out = rcp_chart(rcp, use_train_samples, id, width);
  out += "<p>" + rcp_verdict_badge(rcp) + " " + escape_html(rcp.message);
  if (rcp.batch_size) out += escape_html(", global batch size " + grouped(*rcp.batch_size));
  out += "</p>\n";
  if (rcp.reference) {
    const RcpPoint& ref = *rcp.reference;
    std::string text = ref.name + (ref.interpolated ? " (interpolated)" : "") + ": mean " +
                       grouped(ref.mean) + ", acceptance bound " + grouped(ref.min_mean) +
                       " (max speedup " + fixed(ref.max_speedup, 4) + ")";
    if (rcp.submission_mean)
      text += "; submission olympic mean " + grouped(*rcp.submission_mean) + " (dotted green)";
    if (rcp.passed && rcp.scaling_factor > 1.0)
      text += "; score scaling " + fixed(rcp.scaling_factor, 4);
    out += paragraph(text);
  }
  for (const auto& problem : rcp.problems) out += paragraph(problem, "note fail");
  if (use_train_samples)
    out += paragraph(
        "The official default reads samples from eval epoch_num, which these logs do "
        "not count (" +
        std::string(to_string(system.rcp->verdict)) + ": " + system.rcp->message +
        "); shown with train_samples, as --rcp-bert-train-samples reads them.");
  if (const auto division = system.division(); division && *division != "closed")
    out += paragraph(*division +
                     " division: the package check applies RCPs to closed results "
                     "only; shown for reference.");
  return out;
}

// ---- compliance ---------------------------------------------------------------------------------

namespace {

std::string message_text(const mllog::CheckMessage& m) {
  return "<b>" + escape_html(m.rule) + "</b>: " + escape_html(m.text);
}

}  // namespace

// Per file a verdict chip; then each distinct error once, with the files and lines it occurs at
// and the first offending record; every message of every file behind a <details>.
std::string compliance_card(const SystemReport& system) {
  if (!system.check_note.empty()) return paragraph(system.check_note, "missing");
  std::string out = "<ul class=\"chips\">";
  struct Group {
    const mllog::CheckMessage* first = nullptr;
    std::vector<std::string> where;
  };
  std::vector<std::pair<std::string, Group>> groups;  // in order of first appearance
  std::string details;
  std::size_t warnings = 0;
  for (const RunTrace& run : system.runs) {
    const std::string name = run_name(run);
    if (!run.check) {
      out += "<li>" + badge("fail", name + " unreadable") + "</li>";
      groups.push_back({"read:" + run.read_error, {nullptr, {name + ": " + run.read_error}}});
      continue;
    }
    const mllog::CheckResult& check = *run.check;
    warnings += check.warning_count();
    out += "<li>" +
           badge(check.success ? "pass" : "fail", name + (check.success ? " \u2713" : " \u2717")) +
           "</li>";
    for (const auto& m : check.messages) {
      if (m.level != mllog::CheckMessage::Level::error) continue;
      const std::string key = m.rule + "\n" + m.text;
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {&m, {}}});
        it = groups.end() - 1;
      }
      it->second.where.push_back(name + (m.line > 0 ? " line " + std::to_string(m.line) : ""));
    }
    if (check.messages.empty()) continue;
    details += "<li><b>" + escape_html(name) + "</b><ul>";
    for (const auto& m : check.messages) {
      details += "<li>" +
                 std::string(m.level == mllog::CheckMessage::Level::error ? "error " : "warning ") +
                 message_text(m) + (m.line > 0 ? " (line " + std::to_string(m.line) + ")" : "");
      if (!m.record.empty()) details += "<code>" + escape_html(m.record) + "</code>";
      details += "</li>";
    }
    details += "</ul></li>";
  }
  out += "</ul>\n";
  if (!groups.empty()) {
    out += "<ol class=\"failures\">";
    for (const auto& [key, group] : groups) {
      out += "<li>";
      if (group.first)
        out += message_text(*group.first);
      else
        out += "<b>unreadable</b>";
      std::string where;
      for (const auto& w : group.where) where += (where.empty() ? "" : ", ") + w;
      out += "<div class=\"note\">" + escape_html(where) + "</div>";
      if (group.first && !group.first->record.empty())
        out += "<code>" + escape_html(group.first->record) + "</code>";
      out += "</li>";
    }
    out += "</ol>\n";
  }
  if (!details.empty())
    out += "<details><summary>every message of every file" +
           std::string(warnings ? " (" + std::to_string(warnings) + " warnings)" : "") +
           "</summary><ul>" + details + "</ul></details>\n";
  return out + paragraph("Verdicts of mlbert check --ruleset " + system.ruleset +
                         " (the official compliance checker's semantics); each distinct error "
                         "once, with the files and lines it occurs at and its first record.");
}

// ---- system description -------------------------------------------------------------------------

namespace {

constexpr std::string_view kDescriptionRows[] = {
    "submitter",
    "division",
    "status",
    "system_name",
    "number_of_nodes",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_interconnect",
    "host_processors_per_node",
    "host_processor_model_name",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_networking",
    "host_networking_topology",
    "framework",
    "other_software_stack",
    "operating_system",
};

std::string json_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    std::string out;
    for (const auto& [k, v] : value.items())
      out +=
          (out.empty() ? "" : "; ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
  }
  return value.dump();
}

}  // namespace

std::string description_card(const std::vector<SystemReport>& systems) {
  std::string out = "<table class=\"description\"><thead><tr><th></th>";
  for (const SystemReport& s : systems) out += "<th>" + escape_html(s.name) + "</th>";
  out += "</tr></thead><tbody>\n<tr><th>system-check</th>";
  for (const SystemReport& s : systems) {
    out += "<td>";
    if (s.description_check) {
      const SystemDescResult& r = *s.description_check;
      out += badge(r.valid ? "pass" : "fail", r.valid ? "valid" : "invalid");
      // One line per distinct finding, naming every field it concerns ("missing field: a, b").
      std::vector<std::pair<std::string, std::string>> lines;
      for (const auto& f : r.findings) {
        const std::string what =
            (f.level == SystemDescFinding::Level::error ? "error: " : "warning: ") + f.text;
        auto it = std::find_if(lines.begin(), lines.end(),
                               [&](const auto& line) { return line.first == what; });
        if (it == lines.end()) it = lines.insert(lines.end(), {what, ""});
        if (!f.field.empty()) it->second += (it->second.empty() ? "" : ", ") + f.field;
      }
      for (const auto& [what, fields] : lines)
        out += "<div class=\"note\">" + escape_html(what + (fields.empty() ? "" : ": " + fields)) +
               "</div>";
    } else {
      out += badge("none", "not checked");
    }
    if (!s.description_note.empty())
      out += "<div class=\"note\">" + escape_html(s.description_note) + "</div>";
    if (!s.description_file.empty())
      out +=
          "<div class=\"note\">" + escape_html(s.description_file.filename().string()) + "</div>";
    out += "</td>";
  }
  out += "</tr>\n";
  for (std::string_view field : kDescriptionRows) {
    out += "<tr><th>" + escape_html(field) + "</th>";
    for (const SystemReport& s : systems) {
      out += "<td>";
      if (s.description && s.description->is_object()) {
        const auto it = s.description->find(std::string(field));
        if (it != s.description->end()) out += escape_html(json_text(*it));
      }
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

}  // namespace mlbert::logging::report
