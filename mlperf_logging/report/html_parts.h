// The small pieces every card of the report page is written with (cards.h): the palette, numbers
// as the page prints them, badges and notes, and the per-run labels and legend. Design choice:
// the pieces that take text (badge, missing, paragraph, legend) escape it, so a card hands them
// log text as it is and escapes only what it writes into its own markup.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "mlperf_logging/report/report.h"

namespace mlbert::logging::report {

inline constexpr std::string_view kTargetColour = "#1f2328";
inline constexpr std::string_view kFailColour = "#cf222e";
inline constexpr std::string_view kDroppedColour = "#c4c9cf";
inline constexpr std::string_view kInitColour = "#a8b3bf";
inline constexpr std::string_view kTrainColour = "#4e79a7";
inline constexpr std::string_view kEvalColour = "#f28e2b";
inline constexpr std::string_view kMeanColour = "#2e7d32";

// `value` with `decimals` decimals; "n/a" when not finite.
std::string fixed(double value, int decimals);
// 2932736 -> "2,932,736"
std::string grouped(double value);
// "result_3"
std::string run_name(const RunTrace& run);

// <span class="badge kind">text</span>, <p class="missing"> naming the plot kind that is missing,
// and a <p> of notes.
std::string badge(std::string_view kind, std::string_view text);
std::string missing(std::string_view kind, std::string_view why);
std::string paragraph(std::string_view text, std::string_view css_class = "note");
// The RCP verdict as a badge: pass, fail, or warn for the others.
std::string rcp_verdict_badge(const RcpResult& rcp);

// The smallest and largest finite values; NaN when there is none.
double min_of(const std::vector<double>& values);
double max_of(const std::vector<double>& values);

// Height of a chart with one row per run (bars, the timeline, the RCP strip).
double rows_height(std::size_t runs);
std::vector<std::string> run_labels(const SystemReport& system);
// The runs' colours and names.
std::string legend(const SystemReport& system);

// Seconds or minutes, whichever reads better for a span of `seconds`.
struct TimeUnit {
  double divisor;
  const char* name;
};
TimeUnit time_unit(double seconds);

}  // namespace mlbert::logging::report
