// The pieces the report's cards share (see html_parts.h).
#include "mlperf_logging/report/html_parts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/thousands.h"
#include "mlperf_logging/report/svg.h"

namespace mlbert::logging::report {

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string grouped(double value) {
  if (!std::isfinite(value)) return "n/a";
  return group_thousands(fixed(value, 0));
}

std::string run_name(const RunTrace& run) {
  return run.file.stem().string();
}

std::string badge(std::string_view kind, std::string_view text) {
  return "<span class=\"badge " + std::string(kind) + "\">" + escape_html(text) + "</span>";
}

std::string missing(std::string_view kind, std::string_view why) {
  return "<p class=\"missing\" data-plot=\"" + std::string(kind) + "\">" + escape_html(why) +
         "</p>\n";
}

std::string paragraph(std::string_view text, std::string_view css_class) {
  return "<p class=\"" + std::string(css_class) + "\">" + escape_html(text) + "</p>\n";
}

double min_of(const std::vector<double>& values) {
  double m = NAN;
  for (double v : values)
    if (std::isfinite(v) && !(v >= m)) m = v;
  return m;
}

double max_of(const std::vector<double>& values) {
  double m = NAN;
  for (double v : values)
    if (std::isfinite(v) && !(v <= m)) m = v;
  return m;
}

double rows_height(std::size_t runs) {
  return 60 + 22.0 * static_cast<double>(std::max<std::size_t>(runs, 3));
}

std::vector<std::string> run_labels(const SystemReport& system) {
  std::vector<std::string> labels;
  for (const RunTrace& run : system.runs) labels.push_back(run_name(run));
  return labels;
}

TimeUnit time_unit(double seconds) {
  return seconds > 600 ? TimeUnit{60, "minutes"} : TimeUnit{1, "seconds"};
}

std::string legend(const SystemReport& system) {
  std::string out = "<ul class=\"legend\">";
  for (std::size_t i = 0; i < system.runs.size(); ++i)
    out += "<li><i style=\"background:" + std::string(run_colour(i)) + "\"></i>" +
           escape_html(run_name(system.runs[i])) + "</li>";
  return out + "</ul>\n";
}

std::string rcp_verdict_badge(const RcpResult& rcp) {
  const std::string_view kind = rcp.passed                        ? "pass"
                                : rcp.verdict == RcpVerdict::fail ? "fail"
                                                                  : "warn";
  return badge(kind, "RCP " + std::string(to_string(rcp.verdict)));
}

}  // namespace mlbert::logging::report
