// The comparison card (cards.h): the verdict, then each table of the ComparisonSection as given.
// Every cell is text from the logs or the system descriptions, so every cell is escaped.
#include "mlperf_logging/report/cards.h"
#include "mlperf_logging/report/html_parts.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging::report {

std::string comparison_card(const ComparisonSection& comparison) {
  std::string out = "<p class=\"score\">" +
                    badge(comparison.reproduced ? "pass" : "fail", comparison.verdict) + "</p>\n";
  for (const ComparisonTable& table : comparison.tables) {
    out += "<h3>" + escape_html(table.caption) + "</h3>\n";
    if (table.rows.empty()) {
      out += paragraph(table.empty_note);
      continue;
    }
    out += "<table class=\"comparison\"><thead><tr>";
    for (const std::string& column : table.columns) out += "<th>" + escape_html(column) + "</th>";
    out += "</tr></thead><tbody>\n";
    for (const auto& row : table.rows) {
      out += "<tr>";
      for (const std::string& cell : row) out += "<td>" + escape_html(cell) + "</td>";
      out += "</tr>\n";
    }
    out += "</tbody></table>\n";
  }
  return out;
}

}  // namespace mlbert::logging::report
