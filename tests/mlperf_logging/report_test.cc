// `mlbert report`: the SVG pieces on degenerate data (NaN, nothing, one point), escaping, and
// whole reports of synthetic result directories (every section, hostile log text, logs that lack
// what a plot needs, rulesets without rules or RCPs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <string>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/report/svg.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
namespace rp = mlbert::logging::report;
using mlbert::test::TempDir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A "nan" or "inf" where a number belongs in a tag (attribute values, path data); text between
// tags may say "nan" when a log does.
bool has_non_finite_number(const std::string& markup) {
  static const std::regex kTag(R"(<[^>]*>)");
  static const std::regex kBad(R"((="|[ ,ML])-?(nan|inf)\b)", std::regex::icase);
  for (std::sregex_iterator it(markup.begin(), markup.end(), kTag), end; it != end; ++it)
    if (std::regex_search(it->str(), kBad)) return true;
  return false;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

lg::SystemReport report_of(const std::filesystem::path& dir, const std::string& ruleset) {
  lg::ReportInput input;
  input.dir = dir;
  input.ruleset = ruleset;
  return lg::read_system_report(input);
}

std::string html_of(const std::vector<lg::SystemReport>& systems) {
  return lg::render_report_html(systems, lg::ReportOptions{});
}

}  // namespace

// ---- SVG pieces ---------------------------------------------------------------------------------

TEST_CASE("nice_axis covers its range with ticks 1, 2 or 5 x 10^k apart", "[report][svg]") {
  const rp::Axis a = rp::nice_axis(0, 2'932'736, 6);
  CHECK(a.lo == 0);
  CHECK(a.hi == 3'000'000);
  REQUIRE(a.ticks.size() == 7);
  CHECK(a.ticks[1] == 500'000);
  const rp::Axis b = rp::nice_axis(0.3687, 0.7212, 6);
  CHECK(b.lo <= 0.3687);
  CHECK(b.hi >= 0.7212);
  CHECK(b.ticks.front() == b.lo);
  CHECK(b.ticks.back() == Approx(b.hi));
  CHECK((b.ticks[1] - b.ticks[0]) == Approx(0.1));  // 0.35 / 6 rounds up to 0.1
}

TEST_CASE("nice_axis of one value, of nothing or of NaN and infinite bounds still draws",
          "[report][svg]") {
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0.72, 0.72}, {0, 0}, {kNaN, kNaN}, {kNaN, 5}, {-kInf, kInf}, {7, kNaN}, {5, 1}}) {
    INFO("lo " << lo << " hi " << hi);
    const rp::Axis a = rp::nice_axis(lo, hi);
    CHECK(std::isfinite(a.lo));
    CHECK(std::isfinite(a.hi));
    CHECK(a.lo < a.hi);
    CHECK(a.ticks.size() >= 2);
    for (double t : a.ticks) CHECK(std::isfinite(t));
    for (double v : {lo, hi})
      if (std::isfinite(v)) CHECK((a.lo <= v && v <= a.hi));
  }
}

TEST_CASE("tick labels are short and never '-0'", "[report][svg]") {
  CHECK(rp::tick_label(2'500'000, 500'000) == "2.5M");
  CHECK(rp::tick_label(3'000'000, 500'000) == "3.0M");
  CHECK(rp::tick_label(150'000, 50'000) == "150k");
  CHECK(rp::tick_label(0.72, 0.01) == "0.72");
  CHECK(rp::tick_label(-0.0, 0.1) == "0");
  CHECK(rp::tick_label(12, 2) == "12");
  CHECK(rp::tick_label(kNaN, 1).empty());
}

TEST_CASE("a chart drops marks with NaN or infinite coordinates and prints only finite numbers",
          "[report][svg]") {
  rp::Chart chart(400, 200);
  chart.set_axes(rp::nice_axis(0, 10), rp::nice_axis(0, 1));
  chart.line({{0, 0.1}, {kNaN, 0.5}, {5, kInf}, {10, 0.9}}, "#123456", "a line");
  chart.marker({kNaN, 0.2}, rp::Chart::Shape::dot, "#123456", "gone");
  chart.marker({3, -kInf}, rp::Chart::Shape::cross, "#123456", "gone");
  chart.hrule(kNaN, "#000", "gone");
  chart.vrule(kInf, "#000", "gone");
  chart.box(0, kNaN, 0, 1, "#000", "gone");
  chart.text({kNaN, 1}, "gone");
  chart.marker({1e300, 1e300}, rp::Chart::Shape::diamond, "#123456", "far away, clipped");
  CHECK(chart.marks() == 2);  // the line (two finite points) and the far diamond
  const std::string svg = chart.svg("t", "test", "a test");
  CHECK_FALSE(has_non_finite_number(svg));
  CHECK(svg.find("gone") == std::string::npos);
  CHECK(count(svg, "<path class=\"series\"") == 1);
}

TEST_CASE("a chart of no marks or of one point is still a complete SVG", "[report][svg]") {
  rp::Chart empty(300, 150);
  empty.set_axes(rp::nice_axis(kNaN, kNaN), rp::nice_axis(kNaN, kNaN));
  const std::string none = empty.svg("e", "empty", "nothing");
  CHECK(empty.marks() == 0);
  CHECK(none.rfind("<svg class=\"plot\" data-plot=\"empty\"", 0) == 0);
  CHECK(none.find("</svg>") != std::string::npos);
  CHECK_FALSE(has_non_finite_number(none));

  rp::Chart one(300, 150);
  one.set_axes(rp::nice_axis(7, 7), rp::nice_axis(0.72, 0.72));
  one.line({{7, 0.72}}, "#000", "one point");
  one.marker({7, 0.72}, rp::Chart::Shape::dot, "#000", "one point");
  CHECK(one.marks() == 2);
  const std::string svg = one.svg("o", "one", "one point");
  CHECK_FALSE(has_non_finite_number(svg));
  CHECK(std::regex_search(svg, std::regex(R"(d="M[0-9.]+ [0-9.]+")")));
}

TEST_CASE("escape_html escapes markup and replaces invalid UTF-8 and control bytes",
          "[report][escape]") {
  CHECK(rp::escape_html("<script>alert('x')</script>&\"") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  CHECK(rp::escape_html("caf\xC3\xA9 \xE2\x9C\x93") == "caf\xC3\xA9 \xE2\x9C\x93");  // valid UTF-8
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(rp::escape_html("\xFF\xFE") == fffd + fffd);
  CHECK(rp::escape_html("\xC0\xAF") == fffd + fffd);             // overlong '/'
  CHECK(rp::escape_html("\xED\xA0\x80") == fffd + fffd + fffd);  // a UTF-16 surrogate
  CHECK(rp::escape_html("\xE2\x9C") == fffd + fffd);             // cut short
  CHECK(rp::escape_html(std::string("a\x01"
                                    "b\x7F",
                                    4)) == "a" + fffd + "b" + fffd);
  CHECK(rp::escape_html("tab\tnewline\n") == "tab\tnewline\n");
}

TEST_CASE("mark titles and labels are escaped in the SVG", "[report][svg][escape]") {
  rp::Chart chart(300, 150);
  chart.set_axes(rp::nice_axis(0, 1), rp::category_axis({"<b>run</b>"}));
  chart.set_labels("x <i>", "y");
  chart.marker({0.5, 0}, rp::Chart::Shape::ring, "#000", "<img src=x onerror=alert(1)>");
  chart.hrule(0, "#000", "</svg><script>");
  const std::string svg = chart.svg("x", "k", "<caption>");
  CHECK(svg.find("<b>") == std::string::npos);
  CHECK(svg.find("<img") == std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("<i>") == std::string::npos);
  CHECK(svg.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(count(svg, "</svg>") == 1);
}

// ---- whole reports ------------------------------------------------------------------------------

TEST_CASE("a report of ten compliant runs has every section and the scorer's score",
          "[report][page]") {
  TempDir tmp;
  const auto dir = tmp.path() / "v4.1" / "org" / "system_a";
  mlbert::test::write_results(dir, mlbert::test::ten_good_runs("4.1.0", "closed"));
  mlbert::test::write_text(dir / "system.json",
                           mlbert::test::synthetic_system_json("system_a", "closed", "4.1.0"));
  lg::ReportInput input;
  input.dir = dir;  // the ruleset comes from "v4.1" in the path
  const lg::SystemReport report = lg::read_system_report(input);
  CHECK(report.ruleset == "4.1.0");
  CHECK(report.name == "system_a");
  CHECK(report.context == "v4.1 / org");
  REQUIRE(report.runs.size() == 10);
  REQUIRE(report.score);
  REQUIRE(report.score->score);
  CHECK(*report.score->score == *lg::score_system(dir, {"4.1.0", true}).score);
  REQUIRE(report.rcp);
  CHECK(report.rcp->passed);
  CHECK(report.evals_count_samples);
  REQUIRE(report.description_check);
  CHECK(report.description_check->valid);
  for (const auto& run : report.runs) {
    REQUIRE(run.check);
    CHECK(run.check->success);
    CHECK(run.evals.size() == 4);
    CHECK(run.eval_intervals.size() == 4);
  }

  const std::string html = html_of({report});
  for (const char* kind : {"accuracy", "accuracy-near-target", "time-to-train", "rcp", "timeline"})
    CHECK(html.find(std::string("<svg class=\"plot\" data-plot=\"") + kind + "\"") !=
          std::string::npos);
  // The synthetic logs carry no tracked_stats: the throughput section says so.
  CHECK(html.find("<p class=\"missing\" data-plot=\"throughput\">") != std::string::npos);
  CHECK(html.find("Score 10.4500 min") != std::string::npos);
  // Counts are grouped in thousands.
  CHECK(html.find("global batch size 4,608") != std::string::npos);
  CHECK(html.find("default-src 'none'") != std::string::npos);
  CHECK(lower(html).find("<script") == std::string::npos);
  CHECK_FALSE(has_non_finite_number(html));
}

TEST_CASE("text from the logs, the system JSON and the paths cannot inject markup",
          "[report][page][escape]") {
  TempDir tmp;
  const std::string hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>";
  const auto dir = tmp.path() / "v4.1" / "<b>org" / "sys";
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  mlbert::test::write_results(dir, runs);
  // A record whose value is markup: the checker fails the log and quotes the record.
  std::string log = mlbert::test::read_text(dir / "result_3.txt");
  log.insert(log.find(":::MLLOG"),
             ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": "
             "\"POINT_IN_TIME\", \"key\": \"submission_benchmark\", \"value\": "
             "\"" +
                 std::string("</code></td>") + hostile +
                 "\", \"metadata\": {\"file\": \"x\", \"lineno\": 1}}\n");
  mlbert::test::write_text(dir / "result_3.txt", log);
  std::string description = mlbert::test::synthetic_system_json("sys", "closed", "4.1.0");
  const std::string framework = "\"framework\": \"mlbert\"";
  description.replace(description.find(framework), framework.size(),
                      "\"framework\": \"</td><script>alert(3)</script>\"");
  mlbert::test::write_text(dir / "system.json", description);

  const lg::SystemReport report = report_of(dir, "4.1.0");
  REQUIRE(report.runs[3].check);
  CHECK_FALSE(report.runs[3].check->success);
  const std::string html = html_of({report});
  const std::string l = lower(html);
  CHECK(l.find("<script") == std::string::npos);
  CHECK(l.find("<img") == std::string::npos);
  CHECK(l.find("<b>org") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(3)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;b&gt;org") != std::string::npos);
}

TEST_CASE("a one-run directory renders without an olympic score and without NaN",
          "[report][page]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), {mlbert::test::SyntheticRun{}});
  const lg::SystemReport report = report_of(tmp.path(), "4.1.0");
  REQUIRE(report.score);
  CHECK_FALSE(report.score->score);
  const std::string html = html_of({report});
  CHECK(html.find("data-plot=\"time-to-train\"") != std::string::npos);
  CHECK(html.find("No score") != std::string::npos);
  CHECK_FALSE(has_non_finite_number(html));
}

TEST_CASE("logs without evals or timestamps get explanations instead of empty plots",
          "[report][page]") {
  TempDir tmp;
  // Two records, neither an eval nor a phase boundary.
  mlbert::test::write_text(
      tmp.path() / "result_0.txt",
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 5, \"event_type\": \"POINT_IN_TIME\", \"key\": "
      "\"submission_benchmark\", \"value\": \"bert\", \"metadata\": {}}\nnot a record\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 6, \"event_type\": \"POINT_IN_TIME\", \"key\": "
      "\"global_batch_size\", \"value\": NaN, \"metadata\": {}}\n:::MLLOG {broken\n");
  const lg::SystemReport report = report_of(tmp.path(), "4.1.0");
  CHECK(report.runs[0].parse_errors == 1);
  const std::string html = html_of({report});
  for (const char* kind : {"accuracy", "time-to-train", "timeline", "throughput"})
    CHECK(html.find(std::string("<p class=\"missing\" data-plot=\"") + kind + "\">") !=
          std::string::npos);
  CHECK(html.find("data-plot=\"rcp\"") != std::string::npos);  // the RCP check's own message
  CHECK_FALSE(has_non_finite_number(html));
}

TEST_CASE("evals whose epoch_num does not count samples are plotted against time",
          "[report][page]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs("4.1.0", "closed"));
  for (int i = 0; i < 10; ++i) {
    const auto file = tmp.path() / ("result_" + std::to_string(i) + ".txt");
    const std::string text = mlbert::test::read_text(file);
    mlbert::test::write_text(
        file,
        std::regex_replace(text, std::regex(R"("epoch_num": ?[0-9.]+\})"), "\"epoch_num\": 1}"));
  }
  const lg::SystemReport report = report_of(tmp.path(), "4.1.0");
  CHECK_FALSE(report.evals_count_samples);
  REQUIRE(report.rcp);
  REQUIRE(report.rcp_train_samples);  // the train_samples reading, beside the official one
  CHECK(report.rcp_train_samples->passed);
  const std::string html = html_of({report});
  CHECK(html.find("minutes since run_start") != std::string::npos);
  CHECK(html.find("samples to converge (train_samples)") != std::string::npos);
}

TEST_CASE("a ruleset without compliance rules or RCPs is explained, not an error",
          "[report][page]") {
  TempDir tmp;
  mlbert::test::write_results(tmp.path(), mlbert::test::ten_good_runs("4.1.0", "closed"));
  const lg::SystemReport report = report_of(tmp.path(), "0.6.0");
  CHECK_FALSE(report.check_note.empty());
  CHECK_FALSE(report.rcp);
  CHECK(report.rcp_note == "ruleset 0.6.0 has no BERT RCPs");
  const std::string html = html_of({report});
  CHECK(html.find("<p class=\"missing\" data-plot=\"rcp\">ruleset 0.6.0 has no BERT RCPs") !=
        std::string::npos);
  CHECK(html.find("has no BERT compliance rules") != std::string::npos);
}

TEST_CASE("several systems share one page, each plot with its own id", "[report][page]") {
  TempDir a, b;
  mlbert::test::write_results(a.path(), mlbert::test::ten_good_runs("4.1.0", "closed"));
  mlbert::test::write_results(b.path(), mlbert::test::ten_good_runs("3.1.0", "open"));
  const std::string html = html_of({report_of(a.path(), "4.1.0"), report_of(b.path(), "3.1.0")});
  CHECK(count(html, "data-plot=\"accuracy\"") == 2);
  const std::regex id_attribute(R"re( id="([^"]+)")re");
  std::set<std::string> ids;
  std::smatch m;
  for (auto it = html.cbegin(); std::regex_search(it, html.cend(), m, id_attribute);
       it = m.suffix().first)
    CHECK(ids.insert(m[1]).second);
  CHECK(ids.size() >= 10);
}

TEST_CASE("missing, empty and unwritable paths are errors naming the path", "[report][errors]") {
  TempDir tmp;
  CHECK_THROWS_WITH(report_of(tmp.path() / "absent", "4.1.0"),
                    Catch::Contains((tmp.path() / "absent").string()));
  CHECK_THROWS_WITH(report_of(tmp.path(), "4.1.0"), Catch::Contains("no result_*.txt files"));
  lg::ReportInput no_ruleset;
  no_ruleset.dir = tmp.path();
  CHECK_THROWS_WITH(lg::read_system_report(no_ruleset), Catch::Contains("no --ruleset given"));
  const auto unwritable = tmp.path() / "no_such_dir" / "report.html";
  CHECK_THROWS_AS(lg::write_report_file(unwritable, "x"), lg::AuditError);
  CHECK_THROWS_WITH(lg::write_report_file(unwritable, "x"), Catch::Contains(unwritable.string()));
  const auto ok = tmp.path() / "report.html";
  lg::write_report_file(ok, "<!DOCTYPE html>");
  CHECK(mlbert::test::read_text(ok) == "<!DOCTYPE html>");
}
