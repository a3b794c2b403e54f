// The pieces `mlbert report` draws with: HTML escaping (common/html_escape.h), linear axes with
// round ticks, and a Chart that maps data coordinates to an inline SVG. Design choice: nothing a
// log holds can reach the markup unescaped or as a non-finite number: text goes through
// escape_html (which also repairs invalid UTF-8), and a mark with a NaN or infinite coordinate is
// dropped where it enters the Chart, so a browser never sees `d="M nan"` (an SVG parse error) or
// an injected tag.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/html_escape.h"  // escape_html

namespace mlbert::logging::report {

using mlbert::escape_html;

// A linear axis: the range drawn and where its ticks go (labels, when given, replace the numbers).
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  std::vector<std::string> labels;  // one per tick, or empty for tick_label()
  bool reversed = false;            // lo at the top (vertical) or right (horizontal)
};

// Round ticks (1, 2 or 5 x 10^k apart, about `target` of them) and a range that covers [lo, hi]
// and starts and ends on a tick. Non-finite bounds are ignored; no finite bound, or lo == hi, gives
// a small range around the value (or [0, 1]) so that a chart of one point or none still draws.
Axis nice_axis(double lo, double hi, int target = 5);

// Axis for categories 0..count-1, the first at the top (runs of a system), labelled `labels`.
Axis category_axis(const std::vector<std::string>& labels);

// A tick's text: "2.5M", "150k", "0.72", "12" (decimals follow the tick spacing `step`).
std::string tick_label(double value, double step);

// A number as it appears in SVG coordinates (one decimal, always finite: the caller checks).
std::string coordinate(double value);

struct Point {
  double x = 0, y = 0;
};

// One chart: a plot area with axes, grid and labels, and marks in data coordinates. Marks outside
// the axes are clipped to the plot area.
class Chart {
 public:
  Chart(double width, double height);

  void set_axes(Axis x, Axis y);
  void set_labels(std::string x_label, std::string y_label);
  // Pixels left of the plot area for tick labels (category labels need more than numbers).
  void set_left_margin(double pixels) { left_ = pixels; }

  // Marks. `title` is the tooltip (escaped here); colours and dashes are the caller's constants.
  void line(const std::vector<Point>& points, std::string_view colour, std::string_view title,
            double width = 1.6, std::string_view dash = "");
  enum class Shape { dot, ring, cross, diamond };
  void marker(Point at, Shape shape, std::string_view colour, std::string_view title,
              double radius = 3.5);
  // A full-width horizontal rule labelled inside the plot at its right end, and a full-height
  // vertical one labelled above the plot area, right of the rule (anchor "start") or left ("end").
  void hrule(double y, std::string_view colour, std::string_view label, std::string_view dash = "");
  void vrule(double x, std::string_view colour, std::string_view label, std::string_view dash = "",
             std::string_view anchor = "start");
  // A rectangle between data coordinates (bars, intervals, shaded regions).
  void box(double x0, double x1, double y0, double y1, std::string_view fill,
           std::string_view title, double opacity = 1.0, std::string_view stroke = "");
  void text(Point at, std::string_view text, std::string_view css_class = "note",
            std::string_view anchor = "start");

  // Marks that made it in (finite coordinates).
  std::size_t marks() const { return marks_; }
  // The <svg class="plot" data-plot="kind" ...> element; `id` must be unique in the page (it
  // names the clip path).
  std::string svg(std::string_view id, std::string_view kind, std::string_view caption) const;

 private:
  double px(double x) const;
  double py(double y) const;

  double width_, height_;
  double left_ = 56, right_ = 14, top_ = 20, bottom_ = 38;
  Axis x_, y_;
  std::string x_label_, y_label_;
  std::string marks_svg_, overlay_svg_;
  struct LabelSpan {
    double x0, x1;
    int row;
  };
  std::vector<LabelSpan> rule_labels_;  // vertical rules' labels placed so far
  std::size_t marks_ = 0;
};

// Run colours, distinct for 10 runs (then repeating).
std::string_view run_colour(std::size_t run);

}  // namespace mlbert::logging::report
