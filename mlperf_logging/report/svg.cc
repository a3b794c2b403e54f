// SVG charts for the report (see report_svg.h).
#include "mlperf_logging/report/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace mlbert::logging::report {
namespace {

constexpr int kMaxTicks = 50;
constexpr double kMaxPixel = 1e5;      // far outside any chart: clipped, and short to print
constexpr double kLabelAdvance = 6.6;  // px per character of a rule label (10.5 px, bold)

std::string format(const char* pattern, double value, int decimals = 0) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, decimals, value);
  return text;
}

bool finite(Point p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

std::string dash_attribute(std::string_view dash) {
  return dash.empty() ? std::string() : " stroke-dasharray=\"" + escape_html(dash) + "\"";
}

std::string title_element(std::string_view title) {
  return title.empty() ? std::string() : "<title>" + escape_html(title) + "</title>";
}

}  // namespace

Axis nice_axis(double lo, double hi, int target) {
  const bool lo_ok = std::isfinite(lo), hi_ok = std::isfinite(hi);
  if (!lo_ok && !hi_ok)
    lo = 0, hi = 1;
  else if (!lo_ok)
    lo = hi;
  else if (!hi_ok)
    hi = lo;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.05;
    lo -= pad, hi += pad;
  }
  target = std::clamp(target, 2, kMaxTicks);
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  const double step = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * magnitude;
  Axis axis;
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  const double count = std::round((axis.hi - axis.lo) / step);
  if (!std::isfinite(step) || step <= 0 || !(count >= 1) || count > kMaxTicks) {
    // Precision ran out (a span tiny against the values): the bounds themselves.
    axis.lo = lo, axis.hi = hi, axis.ticks = {lo, hi};
    return axis;
  }
  for (int i = 0; i <= static_cast<int>(count); ++i) axis.ticks.push_back(axis.lo + i * step);
  return axis;
}

Axis category_axis(const std::vector<std::string>& labels) {
  Axis axis;
  axis.lo = -0.5;
  axis.hi = std::max<double>(static_cast<double>(labels.size()) - 0.5, 0.5);
  for (std::size_t i = 0; i < labels.size(); ++i) axis.ticks.push_back(static_cast<double>(i));
  axis.labels = labels;
  axis.reversed = true;
  return axis;
}

std::string tick_label(double value, double step) {
  if (!std::isfinite(value)) return "";
  step = std::isfinite(step) && step > 0 ? step : std::max(std::fabs(value), 1.0);
  double scale = 1;
  const char* suffix = "";
  const double magnitude = std::max(std::fabs(value), step);
  if (magnitude >= 1e6 && step >= 1e4)
    scale = 1e6, suffix = "M";
  else if (magnitude >= 1e4 && step >= 100)
    scale = 1e3, suffix = "k";
  const int decimals =
      std::clamp(static_cast<int>(std::ceil(-std::log10(step / scale) - 1e-9)), 0, 6);
  std::string text = format("%.*f", value / scale, decimals);
  if (text.find_first_not_of("-0.") == std::string::npos) text = "0";  // "-0.00" -> "0"
  return text + suffix;
}

std::string coordinate(double value) {
  return format("%.*f", value, 1);
}

std::string_view run_colour(std::size_t run) {
  // Tableau 10: distinct hues of similar weight, legible on white.
  static constexpr std::array<std::string_view, 10> kPalette = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#79706e"};
  return kPalette[run % kPalette.size()];
}

// ---- Chart --------------------------------------------------------------------------------------

Chart::Chart(double width, double height) : width_(width), height_(height) {}

void Chart::set_axes(Axis x, Axis y) {
  x_ = std::move(x);
  y_ = std::move(y);
}

void Chart::set_labels(std::string x_label, std::string y_label) {
  x_label_ = std::move(x_label);
  y_label_ = std::move(y_label);
}

double Chart::px(double x) const {
  const double span = x_.hi - x_.lo;
  const double w = width_ - left_ - right_;
  const double offset = x_.reversed ? x_.hi - x : x - x_.lo;
  return std::clamp(left_ + offset / (span > 0 ? span : 1) * w, -kMaxPixel, kMaxPixel);
}

double Chart::py(double y) const {
  const double span = y_.hi - y_.lo;
  const double h = height_ - top_ - bottom_;
  const double offset = y_.reversed ? y - y_.lo : y_.hi - y;
  return std::clamp(top_ + offset / (span > 0 ? span : 1) * h, -kMaxPixel, kMaxPixel);
}

void Chart::line(const std::vector<Point>& points, std::string_view colour, std::string_view title,
                 double width, std::string_view dash) {
  std::string d;
  for (const Point& p : points) {
    if (!finite(p)) continue;
    d += (d.empty() ? "M" : " L") + coordinate(px(p.x)) + " " + coordinate(py(p.y));
  }
  if (d.empty()) return;
  marks_svg_ += "<path class=\"series\" d=\"" + d + "\" fill=\"none\" stroke=\"" +
                escape_html(colour) + "\" stroke-width=\"" + coordinate(width) + "\"" +
                dash_attribute(dash) + ">" + title_element(title) + "</path>\n";
  ++marks_;
}

void Chart::marker(Point at, Shape shape, std::string_view colour, std::string_view title,
                   double radius) {
  if (!finite(at) || !std::isfinite(radius)) return;
  const std::string x = coordinate(px(at.x)), y = coordinate(py(at.y)), r = coordinate(radius);
  const std::string c = escape_html(colour);
  std::string element;
  switch (shape) {
    case Shape::dot:
      element = "<circle cx=\"" + x + "\" cy=\"" + y + "\" r=\"" + r + "\" fill=\"" + c +
                "\" stroke=\"#fff\" stroke-width=\"0.8\">";
      break;
    case Shape::ring:
      element = "<circle cx=\"" + x + "\" cy=\"" + y + "\" r=\"" + r +
                "\" fill=\"#fff\" stroke=\"" + c + "\" stroke-width=\"1.6\">";
      break;
    case Shape::cross: {
      const double s = radius, cx = px(at.x), cy = py(at.y);
      element = "<path d=\"M" + coordinate(cx - s) + " " + coordinate(cy - s) + " L" +
                coordinate(cx + s) + " " + coordinate(cy + s) + " M" + coordinate(cx - s) + " " +
                coordinate(cy + s) + " L" + coordinate(cx + s) + " " + coordinate(cy - s) +
                "\" stroke=\"" + c + "\" stroke-width=\"2\" fill=\"none\">";
      break;
    }
    case Shape::diamond: {
      const double s = radius * 1.3, cx = px(at.x), cy = py(at.y);
      element = "<path d=\"M" + coordinate(cx) + " " + coordinate(cy - s) + " L" +
                coordinate(cx + s) + " " + coordinate(cy) + " L" + coordinate(cx) + " " +
                coordinate(cy + s) + " L" + coordinate(cx - s) + " " + coordinate(cy) +
                " Z\" fill=\"" + c + "\" stroke=\"#fff\" stroke-width=\"0.8\">";
      break;
    }
  }
  const std::string_view tag = element.rfind("<circle", 0) == 0 ? "circle" : "path";
  marks_svg_ += element + title_element(title) + "</" + std::string(tag) + ">\n";
  ++marks_;
}

void Chart::hrule(double y, std::string_view colour, std::string_view label,
                  std::string_view dash) {
  if (!std::isfinite(y)) return;
  const std::string yy = coordinate(py(y));
  marks_svg_ += "<line class=\"rule\" x1=\"" + coordinate(left_) + "\" x2=\"" +
                coordinate(width_ - right_) + "\" y1=\"" + yy + "\" y2=\"" + yy + "\" stroke=\"" +
                escape_html(colour) + "\"" + dash_attribute(dash) + ">" + title_element(label) +
                "</line>\n";
  if (!label.empty())
    overlay_svg_ += "<text class=\"rule-label\" x=\"" + coordinate(width_ - right_ - 3) +
                    "\" y=\"" + coordinate(py(y) - 4) +
                    "\" text-anchor=\"end\" style=\"fill:" + escape_html(colour) + "\">" +
                    escape_html(label) + "</text>\n";
  ++marks_;
}

void Chart::vrule(double x, std::string_view colour, std::string_view label, std::string_view dash,
                  std::string_view anchor) {
  if (!std::isfinite(x)) return;
  const std::string xx = coordinate(px(x));
  marks_svg_ += "<line class=\"rule\" x1=\"" + xx + "\" x2=\"" + xx + "\" y1=\"" +
                coordinate(top_) + "\" y2=\"" + coordinate(height_ - bottom_) + "\" stroke=\"" +
                escape_html(colour) + "\"" + dash_attribute(dash) + ">" + title_element(label) +
                "</line>\n";
  if (!label.empty()) {
    // Keep the label inside the chart: flip it to the other side of the rule when it would run
    // past an edge (widths estimated from the label font's average advance).
    const double text_width = kLabelAdvance * static_cast<double>(label.size());
    if (anchor == "end" && px(x) - 3 - text_width < 0)
      anchor = "start";
    else if (anchor != "end" && px(x) + 3 + text_width > width_)
      anchor = "end";
    const double at = std::clamp(px(x) + (anchor == "end" ? -3 : 3), 0.0, width_);
    const double x0 = anchor == "end" ? at - text_width : at, x1 = x0 + text_width;
    // Above the plot area; a label that would overlap one placed there goes just inside it.
    int row = 0;
    for (const auto& [a, b, r] : rule_labels_)
      if (r == row && x0 < b && a < x1) row = 1;
    rule_labels_.push_back({x0, x1, row});
    overlay_svg_ += "<text class=\"rule-label" + std::string(row ? " inside" : "") + "\" x=\"" +
                    coordinate(at) + "\" y=\"" + coordinate(row ? top_ + 12 : top_ - 6) +
                    "\" text-anchor=\"" + escape_html(anchor) +
                    "\" style=\"fill:" + escape_html(colour) + "\">" + escape_html(label) +
                    "</text>\n";
  }
  ++marks_;
}

void Chart::box(double x0, double x1, double y0, double y1, std::string_view fill,
                std::string_view title, double opacity, std::string_view stroke) {
  if (!finite({x0, y0}) || !finite({x1, y1}) || !std::isfinite(opacity)) return;
  const double left = std::min(px(x0), px(x1)), right = std::max(px(x0), px(x1));
  const double top = std::min(py(y0), py(y1)), bottom = std::max(py(y0), py(y1));
  marks_svg_ += "<rect x=\"" + coordinate(left) + "\" y=\"" + coordinate(top) + "\" width=\"" +
                coordinate(std::max(right - left, 0.8)) + "\" height=\"" +
                coordinate(bottom - top) + "\" fill=\"" + escape_html(fill) + "\"" +
                (opacity < 1 ? " fill-opacity=\"" + format("%.*f", opacity, 2) + "\"" : "") +
                (stroke.empty() ? "" : " stroke=\"" + escape_html(stroke) + "\"") + ">" +
                title_element(title) + "</rect>\n";
  ++marks_;
}

void Chart::text(Point at, std::string_view text, std::string_view css_class,
                 std::string_view anchor) {
  if (!finite(at)) return;
  overlay_svg_ += "<text class=\"" + escape_html(css_class) + "\" x=\"" + coordinate(px(at.x)) +
                  "\" y=\"" + coordinate(py(at.y)) + "\" text-anchor=\"" + escape_html(anchor) +
                  "\">" + escape_html(text) + "</text>\n";
}

std::string Chart::svg(std::string_view id, std::string_view kind, std::string_view caption) const {
  const std::string clip = escape_html(id) + "-clip";
  const double plot_w = width_ - left_ - right_, plot_h = height_ - top_ - bottom_;
  std::string out = "<svg class=\"plot\" data-plot=\"" + escape_html(kind) + "\" id=\"" +
                    escape_html(id) + "\" viewBox=\"0 0 " + coordinate(width_) + " " +
                    coordinate(height_) + "\" role=\"img\" aria-label=\"" + escape_html(caption) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  out += "<defs><clipPath id=\"" + clip + "\"><rect x=\"" + coordinate(left_) + "\" y=\"" +
         coordinate(top_) + "\" width=\"" + coordinate(plot_w) + "\" height=\"" +
         coordinate(plot_h) + "\"/></clipPath></defs>\n";
  out += "<rect class=\"area\" x=\"" + coordinate(left_) + "\" y=\"" + coordinate(top_) +
         "\" width=\"" + coordinate(plot_w) + "\" height=\"" + coordinate(plot_h) + "\"/>\n";
  const auto step_of = [](const Axis& axis) {
    return axis.ticks.size() > 1 ? axis.ticks[1] - axis.ticks[0] : 1.0;
  };
  for (std::size_t i = 0; i < y_.ticks.size(); ++i) {
    const double t = y_.ticks[i];
    if (!std::isfinite(t)) continue;
    const std::string y = coordinate(py(t));
    out += "<line class=\"grid\" x1=\"" + coordinate(left_) + "\" x2=\"" +
           coordinate(width_ - right_) + "\" y1=\"" + y + "\" y2=\"" + y + "\"/>";
    const std::string label = i < y_.labels.size() ? y_.labels[i] : tick_label(t, step_of(y_));
    out += "<text class=\"tick\" x=\"" + coordinate(left_ - 5) + "\" y=\"" + y +
           "\" dy=\"0.32em\" text-anchor=\"end\">" + escape_html(label) + "</text>\n";
  }
  for (std::size_t i = 0; i < x_.ticks.size(); ++i) {
    const double t = x_.ticks[i];
    if (!std::isfinite(t)) continue;
    const std::string x = coordinate(px(t));
    out += "<line class=\"grid\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + coordinate(top_) +
           "\" y2=\"" + coordinate(height_ - bottom_) + "\"/>";
    const std::string label = i < x_.labels.size() ? x_.labels[i] : tick_label(t, step_of(x_));
    out += "<text class=\"tick\" x=\"" + x + "\" y=\"" + coordinate(height_ - bottom_ + 14) +
           "\" text-anchor=\"middle\">" + escape_html(label) + "</text>\n";
  }
  out += "<g clip-path=\"url(#" + clip + ")\">\n" + marks_svg_ + "</g>\n" + overlay_svg_;
  if (!x_label_.empty())
    out += "<text class=\"axis-label\" x=\"" + coordinate(left_ + plot_w / 2) + "\" y=\"" +
           coordinate(height_ - 6) + "\" text-anchor=\"middle\">" + escape_html(x_label_) +
           "</text>\n";
  if (!y_label_.empty())
    out += "<text class=\"axis-label\" transform=\"translate(12 " + coordinate(top_ + plot_h / 2) +
           ") rotate(-90)\" text-anchor=\"middle\">" + escape_html(y_label_) + "</text>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace mlbert::logging::report
