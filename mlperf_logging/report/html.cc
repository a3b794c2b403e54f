// The report page (see report.h): a summary table, then one row of cards per section with one
// column per system, so the same plot of every system sits side by side (a single system's cards
// flow two to a row). The page carries a Content-Security-Policy that forbids every load and every
// script, so even markup that slipped past escaping could neither run nor call out; it needs
// neither: tooltips are SVG <title>s and the long message lists are <details>.
#include <algorithm>

#include "mlperf_logging/report/cards.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging {
namespace report {
namespace {

std::string summary_table(const std::vector<SystemReport>& systems) {
  std::string out =
      "<table class=\"summary\"><thead><tr><th>system</th><th>ruleset</th><th>division</th>"
      "<th>global batch</th><th>runs</th><th>compliant</th><th>score (min)</th>"
      "<th>raw olympic mean (min)</th><th>RCP</th><th>advisories</th></tr></thead><tbody>\n";
  for (const SystemReport& s : systems) {
    std::size_t passed = 0, checked = 0;
    for (const RunTrace& run : s.runs)
      if (run.check) ++checked, passed += run.check->success ? 1 : 0;
    out += "<tr><td><b>" + escape_html(s.name) + "</b><div class=\"note\">" +
           escape_html(s.context) + "</div></td>";
    out += "<td>" + escape_html(s.ruleset) + "</td>";
    out += "<td>" + escape_html(s.division().value_or("?")) + "</td>";
    const auto bs = s.global_batch_size();
    out += "<td>" + (bs ? grouped(*bs) : std::string("?")) + "</td>";
    out += "<td>" + std::to_string(s.runs.size()) + "</td>";
    out += "<td>" +
           (s.check_note.empty()
                ? badge(passed == s.runs.size() ? "pass" : "fail",
                        std::to_string(passed) + " / " + std::to_string(s.runs.size()))
                : badge("none", "no rules")) +
           "</td>";
    // The headline is the normalized score, as the official results table gives it.
    const ScoreHeadline headline = score_headline(s);
    out += "<td class=\"num\" title=\"" + escape_html(headline.basis) + "\">" +
           (headline.normalized ? "<b>" + fixed(*headline.normalized, 4) + "</b>" +
                                      (headline.factor != 1.0
                                           ? "<div class=\"note\">x " + fixed(headline.factor, 4) +
                                                 " RCP scaling</div>"
                                           : "")
                                : badge("fail", "none")) +
           "</td>";
    out += "<td class=\"num\">" + (headline.raw ? fixed(*headline.raw, 4) : std::string("-")) +
           "</td>";
    const RcpResult* rcp = s.rcp_shown();
    const auto division = s.division();
    out += "<td>";
    if (!rcp)
      out += badge("none", "no RCPs");
    else if (division && *division != "closed")  // the RCP check binds closed results only
      out += badge("none", "RCP " + std::string(to_string(rcp->verdict)) + " (" + *division + ")");
    else
      out += rcp_verdict_badge(*rcp);
    out += "</td><td>";
    if (!s.advice)
      out += badge("none", "not audited");
    else if (s.advice->report.advisories.empty())
      out += badge("pass", "none");
    else
      out += badge("warn", std::to_string(s.advice->report.advisories.size()));
    out += "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

constexpr std::string_view kStyle = R"css(
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --card:#fff; --page:#f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 24px 32px; background: var(--page); color: var(--ink);
  font: 13.5px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Roboto, sans-serif; }
h1 { font-size: 21px; margin: 0 0 2px; }
header p { margin: 0 0 14px; color: var(--muted); }
h2 { font-size: 15px; margin: 0 0 2px; }
h3 { font-size: 13.5px; margin: 0 0 6px; color: var(--ink); }
h3 .sys { font-weight: normal; color: var(--muted); }
.grid { display: grid; gap: 14px; margin-top: 14px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px;
  padding: 12px 14px; min-width: 0; overflow-x: auto; }
.card.wide { grid-column: 1 / -1; }
h2, h3 { overflow-wrap: anywhere; }
body > h2 { margin: 22px 0 0; font-size: 16px; }
.chips { list-style: none; padding: 0; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 4px; }
ol.failures { margin: 4px 0 0; padding-left: 20px; }
ol.failures li { margin-bottom: 6px; }
.plot { display: block; width: 100%; height: auto; }
.plot .area { fill: #fff; stroke: #c8d1da; }
.plot .grid { stroke: #edf0f3; }
.plot text { font-size: 11px; fill: var(--muted); }
.plot .axis-label { fill: var(--ink); }
.plot .rule-label { font-size: 10.5px; font-weight: 600; }
.plot .rule-label.inside { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.plot .bar-label { font-size: 10.5px; fill: var(--ink); dominant-baseline: middle; }
.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 2px 12px;
  color: var(--muted); font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px;
  vertical-align: -1px; }
.note { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.note.fail { color: #cf222e; }
.missing { color: var(--muted); font-style: italic; border: 1px dashed var(--line); border-radius: 4px;
  padding: 18px 12px; text-align: center; margin: 4px 0; }
.score { font-size: 14px; font-weight: 600; margin: 6px 0 0; }
.score.none { color: #cf222e; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #eaeef2; }
thead th { color: var(--muted); font-weight: 600; font-size: 12px; border-bottom: 1px solid var(--line); }
td.num { font-variant-numeric: tabular-nums; }
table.summary { background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
table.description tbody th { width: 1%; white-space: nowrap; color: var(--muted); font-weight: 600; }
table.description td, table.compliance td { overflow-wrap: anywhere; }
table.compliance td:first-child { white-space: nowrap; }
code { display: block; margin-top: 3px; padding: 3px 6px; background: #f6f8fa; border-radius: 4px;
  font: 11.5px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; white-space: pre-wrap; }
details { margin-top: 4px; font-size: 12px; } summary { color: var(--muted); cursor: pointer; }
details ul { margin: 4px 0; padding-left: 18px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 11.5px; font-weight: 600;
  white-space: nowrap; }
.badge.pass { background: #dafbe1; color: #116329; }
.badge.fail { background: #ffebe9; color: #a40e26; }
.badge.warn { background: #fff8c5; color: #7d4e00; }
.badge.none { background: #eef1f4; color: var(--muted); }
.quiet { color: var(--muted); }
table.runs { margin-top: 8px; font-size: 12px; }
table.runs td, table.runs th { padding: 2px 4px; }
table.runs td.num { white-space: nowrap; }
table.runs th { overflow-wrap: anywhere; }
table.summary td, table.summary th, table.description thead th { overflow-wrap: anywhere; }
table.hparams, table.seeds, table.logs { font-size: 12px; margin-bottom: 8px; }
table.hparams td, table.seeds td, table.logs td { overflow-wrap: anywhere; padding: 2px 6px; }
td.hash { font: 11px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; word-break: break-all; }
td.differs { color: #7d4e00; }
#comparison h3 { margin-top: 14px; }
.swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 5px; }
.more { color: var(--muted); }
footer { margin-top: 18px; color: var(--muted); font-size: 12px; }
)css";

}  // namespace
}  // namespace report

std::string render_report_html(const std::vector<SystemReport>& systems,
                               const ReportOptions& options) {
  const std::size_t n = systems.size();
  const bool multi = n > 1;
  // One system: its cards two to a row. Several: one row per section, up to three systems wide;
  // charts are drawn for their column width so that their text stays the page's size.
  const std::size_t columns = multi ? std::min<std::size_t>(n, 3) : 2;
  const double chart_width = columns >= 3 ? 400 : 560;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // No loads of any kind, no script: the page is complete in itself and log text cannot act.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + report::escape_html(options.title) + "</title>\n<style>" +
         std::string(report::kStyle) + "</style></head>\n<body>\n";
  out += "<header><h1>" + report::escape_html(options.title) + "</h1><p>" + std::to_string(n) +
         (multi ? " systems" : " system") +
         " &middot; verdicts, scores and RCP tests by mlbert check, score and rcp (official "
         "semantics) &middot; hover a mark for its figures</p></header>\n";
  out += report::summary_table(systems);
  if (options.comparison)
    out += "<h2>Comparison</h2>\n<div class=\"grid\"><div class=\"card wide\" id=\"comparison\">" +
           report::comparison_card(*options.comparison) + "</div></div>\n";
  const std::string grid_style =
      " style=\"grid-template-columns: repeat(" + std::to_string(columns) + ", minmax(0, 1fr))\"";

  using Section = std::string (*)(const SystemReport&, const std::string&, double);
  const std::pair<const char*, Section> sections[] = {
      {"Convergence", report::convergence_card},
      {"Time to train", report::time_to_train_card},
      {"RCP", report::rcp_card},
      {"Timeline", report::timeline_card},
      {"Throughput", report::throughput_card},
  };
  const auto card = [&](std::size_t i, const std::string& title, const std::string& body,
                        bool wide) {
    std::string heading = multi ? report::escape_html(systems[i].name)
                                : title + " <span class=\"sys\">&middot; " +
                                      report::escape_html(systems[i].name) + "</span>";
    return "<div class=\"card" + std::string(wide ? " wide" : "") + "\" data-system=\"" +
           std::to_string(i) + "\"><h3>" + heading + "</h3>\n" + body + "</div>\n";
  };
  if (!multi) out += "<main class=\"grid\"" + grid_style + ">\n";
  for (std::size_t k = 0; k < std::size(sections); ++k) {
    const auto& [title, render] = sections[k];
    if (multi)
      out += "<h2>" + std::string(title) + "</h2>\n<div class=\"grid\"" + grid_style + ">\n";
    for (std::size_t i = 0; i < n; ++i)
      out +=
          card(i, title,
               render(systems[i], "s" + std::to_string(i) + "-" + std::to_string(k), chart_width),
               false);
    if (multi) out += "</div>\n";
  }
  // The cards that are tables, not plots: one column each per system.
  using TableSection = std::string (*)(const SystemReport&);
  const std::pair<const char*, TableSection> tables[] = {
      {"Advisories", report::advisories_card},
      {"Compliance per file", report::compliance_card},
      {"Hyperparameters and seeds", report::hyperparameters_card},
      {"Logs (SHA-256)", report::logs_card},
  };
  for (const auto& [title, render] : tables) {
    if (multi)
      out += "<h2>" + std::string(title) + "</h2>\n<div class=\"grid\"" + grid_style + ">\n";
    for (std::size_t i = 0; i < n; ++i) out += card(i, title, render(systems[i]), !multi);
    if (multi) out += "</div>\n";
  }
  if (multi) out += "<h2>System description</h2>\n<div class=\"grid\">\n";
  out += "<div class=\"card wide\">" + std::string(multi ? "" : "<h3>System description</h3>\n") +
         report::description_card(systems) + "</div>\n";
  out += multi ? "</div>\n" : "</main>\n";
  out += "<footer>" + report::escape_html(options.generated_by) + "</footer>\n</body></html>\n";
  return out;
}

}  // namespace mlbert::logging
