// The advisory audit (mlperf_logging/advise/): for every advisory a log or folder that triggers it
// and one that does not, on synthetic logs, and what each names (rule, file, line). The CLI tests
// (CMakeLists.txt) pin that `check --advise` keeps the official exit status.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "mlperf_logging/advise/advise.h"
#include "mlperf_logging/advise/folder_advice.h"
#include "mlperf_logging/advise/log_advice.h"
#include "mlperf_logging/advise/seed_source.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/rcp/rcp.h"
#include "tests/mlperf_logging/audit_synthetic.h"
#include "tests/mlperf_logging/log_edit.h"

#include <functional>

namespace lg = mlbert::logging;
namespace advice = mlbert::logging::advice;
namespace fs = std::filesystem;
using mlbert::test::SyntheticRun;
using mlbert::test::TempDir;

namespace {

// The facts of `text` written to `dir`/`name`.
lg::LogFacts facts_of(const fs::path& dir, const std::string& text,
                      const std::string& name = "result_0.txt") {
  mlbert::test::write_text(dir / name, text);
  return lg::read_log_facts(dir / name);
}

// Synthetic logs are compact JSON (log_edit.h's helpers expect Python's spacing): these edit
// them record by record. `edit` gets the n-th record of `key` (every one when nth < 0) and returns
// false to drop it.
using Record = nlohmann::ordered_json;
std::string edit_records(const std::string& text, const std::string& key,
                         const std::function<bool(Record&)>& edit, int nth = -1) {
  std::string out;
  int seen = 0;
  for (const std::string& line : mlbert::test::split_lines(text)) {
    constexpr std::string_view kPrefix = ":::MLLOG ";
    Record record = Record::parse(line.substr(kPrefix.size()));
    if (record["key"] == key && (nth < 0 || seen++ == nth) && !edit(record)) continue;
    out += std::string(kPrefix) + record.dump() + "\n";
  }
  return out;
}
std::string drop_key(const std::string& text, const std::string& key) {
  return edit_records(text, key, [](Record&) { return false; });
}
std::string set_value(const std::string& text, const std::string& key, const Record& value) {
  return edit_records(text, key, [&](Record& r) { return r["value"] = value, true; });
}
std::string set_time(const std::string& text, const std::string& key, std::int64_t ms, int nth) {
  return edit_records(text, key, [&](Record& r) { return r["time_ms"] = ms, true; }, nth);
}

// The line of the n-th record of `key` in a log (1-based).
std::size_t line_of(const std::string& text, const std::string& key, int nth = 0) {
  const auto lines = mlbert::test::split_lines(text);
  int seen = 0;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (Record::parse(lines[i].substr(9))["key"] == key && seen++ == nth) return i + 1;
  return 0;
}

lg::AdviceContext context_for(const std::string& ruleset) {
  lg::AdviceContext context;
  context.ruleset = ruleset;
  context.description = nlohmann::json{
      {"submitter", "mlbert"}, {"system_name", "Synthetic box"}, {"number_of_nodes", "1"}};
  context.description_file = "systems/synthetic_box.json";
  context.system_folder = "synthetic_box";
  return context;
}

// The on-schedule evals of a 4608 run as NVIDIA's v3.0 logs stamp them: the interval is 200,000
// samples and each eval waits for the step that crosses its point.
std::vector<double> on_schedule_4608(int evals) {
  std::vector<double> samples;
  for (int k = 1; k <= evals; ++k) samples.push_back(std::ceil(200'000.0 * k / 4608) * 4608);
  return samples;
}

}  // namespace

TEST_CASE("the reference eval interval is floor(0.05*(230.23*GBS + 3M), 25000)",
          "[advise][eval-schedule]") {
  // docs/reference.md's examples.
  CHECK(lg::reference_eval_interval(2048) == 150'000);
  CHECK(lg::reference_eval_interval(4096) == 175'000);
  CHECK(lg::reference_eval_interval(6144) == 200'000);
  CHECK(lg::reference_eval_interval(8192) == 225'000);
  CHECK(lg::reference_eval_interval(16384) == 325'000);
}

TEST_CASE("eval-schedule: evals every 200,000 samples at GBS 4608 pass, every 100,000 do not",
          "[advise][eval-schedule]") {
  TempDir dir;
  SyntheticRun run;  // GBS 4608, ruleset 4.1.0
  run.eval_samples = on_schedule_4608(14);
  lg::AdviceReport good;
  lg::advise_eval_schedule(facts_of(dir.path(), synthetic_bert_log(run)), context_for("4.1.0"),
                           good);
  CHECK(good.advisories.empty());
  CHECK(good.notes.empty());

  run.eval_samples.clear();
  for (int k = 1; k <= 28; ++k) run.eval_samples.push_back(100'000.0 * k + 4608);
  const std::string text = synthetic_bert_log(run);
  lg::AdviceReport off;
  lg::advise_eval_schedule(facts_of(dir.path(), text), context_for("4.1.0"), off);
  REQUIRE(off.advisories.size() == 1);
  const lg::Advisory& a = off.advisories.front();
  CHECK(a.rule == advice::kEvalSchedule);
  CHECK(a.file.filename() == "result_0.txt");
  CHECK(a.line == line_of(text, "eval_accuracy"));  // the first eval is already off
  CHECK_THAT(a.text, Catch::Contains("every 200,000 samples") && Catch::Contains("27 more"));
}

TEST_CASE("eval-schedule: a skipped eval is off the schedule, packing drift of 1% is not",
          "[advise][eval-schedule]") {
  TempDir dir;
  SyntheticRun run;
  run.eval_samples = on_schedule_4608(6);
  run.eval_samples.erase(run.eval_samples.begin() + 3);  // the fourth eval never happened
  const std::string text = synthetic_bert_log(run);
  lg::AdviceReport skipped;
  lg::advise_eval_schedule(facts_of(dir.path(), text), context_for("4.1.0"), skipped);
  REQUIRE(skipped.advisories.size() == 1);
  CHECK(skipped.advisories[0].line == line_of(text, "eval_accuracy", 3));

  // v4.0's packed-data logs: epoch_num estimated, a few hundred samples either side.
  run.global_batch_size = 768;
  run.eval_samples = {150'336, 299'889, 450'211, 600'957, 750'972, 900'858};  // v4.0 result_0
  lg::AdviceReport drift;
  lg::advise_eval_schedule(facts_of(dir.path(), synthetic_bert_log(run)), context_for("4.1.0"),
                           drift);
  CHECK(drift.advisories.empty());
}

TEST_CASE("eval-schedule: a placeholder epoch_num and ruleset 0.7.0 are not judged, and say why",
          "[advise][eval-schedule]") {
  TempDir dir;
  SyntheticRun run;
  run.eval_samples = {1, 1, 1, 1};  // NVIDIA's logs before v3.0
  lg::AdviceReport placeholder;
  lg::advise_eval_schedule(facts_of(dir.path(), synthetic_bert_log(run)), context_for("4.1.0"),
                           placeholder);
  CHECK(placeholder.advisories.empty());
  REQUIRE(placeholder.notes.size() == 1);
  CHECK_THAT(placeholder.notes[0], Catch::Contains("does not count samples"));

  run.eval_samples = {100'000, 200'000, 300'000};  // off, but 0.7.0 had another schedule
  lg::AdviceReport early;
  lg::advise_eval_schedule(facts_of(dir.path(), synthetic_bert_log(run)), context_for("0.7.0"),
                           early);
  CHECK(early.advisories.empty());
}

TEST_CASE("org-platform: the description's submitter and node count pass, others do not",
          "[advise][org-platform]") {
  TempDir dir;
  const std::string text = synthetic_bert_log(SyntheticRun{});  // org mlbert, 1xSYNTHETIC
  lg::AdviceReport good;
  lg::advise_org_platform(facts_of(dir.path(), text), context_for("4.1.0"), good);
  CHECK(good.advisories.empty());

  std::string wrong = set_value(text, "submission_org", "NVIDIA");
  wrong = set_value(wrong, "submission_platform", "8xSYNTHETIC");
  lg::AdviceReport bad;
  lg::advise_org_platform(facts_of(dir.path(), wrong), context_for("4.1.0"), bad);
  REQUIRE(bad.advisories.size() == 2);
  CHECK(bad.advisories[0].line == line_of(wrong, "submission_org"));
  CHECK_THAT(bad.advisories[0].text, Catch::Contains("'NVIDIA'") && Catch::Contains("'mlbert'"));
  CHECK(bad.advisories[1].line == line_of(wrong, "submission_platform"));
  CHECK_THAT(bad.advisories[1].text, Catch::Contains("says 8 nodes"));

  lg::AdviceReport placeholder;
  lg::advise_org_platform(
      facts_of(dir.path(),
               set_value(text, "submission_platform", "1xSUBMISSION_PLATFORM_PLACEHOLDER")),
      context_for("4.1.0"), placeholder);
  REQUIRE(placeholder.advisories.size() == 1);
  CHECK_THAT(placeholder.advisories[0].text, Catch::Contains("placeholder"));
}

TEST_CASE("org-platform: a platform that names the system or its folder passes, another does not",
          "[advise][org-platform]") {
  TempDir dir;
  const std::string text = synthetic_bert_log(SyntheticRun{});
  const auto platform = [&](const std::string& name) {
    lg::AdviceReport report;
    lg::advise_org_platform(facts_of(dir.path(), set_value(text, "submission_platform", name)),
                            context_for("4.1.0"), report);
    return report.advisories.size();
  };
  CHECK(platform("synthetic-box") == 0);      // the system_name, spelled otherwise
  CHECK(platform("synthetic_box-TF2") == 0);  // the folder, with a suffix
  CHECK(platform("other-cluster") == 1);
}

TEST_CASE("org-platform: 5.0.0 logs no org or platform, and no description means a note",
          "[advise][org-platform]") {
  TempDir dir;
  const std::string text = set_value(synthetic_bert_log(SyntheticRun{}), "submission_org", "x");
  lg::AdviceReport v5;
  lg::advise_org_platform(facts_of(dir.path(), text), context_for("5.0.0"), v5);
  CHECK(v5.advisories.empty());
  lg::AdviceContext none = context_for("4.1.0");
  none.description.reset();
  lg::AdviceReport no_description;
  lg::advise_org_platform(facts_of(dir.path(), text), none, no_description);
  CHECK(no_description.advisories.empty());
  REQUIRE(no_description.notes.size() == 1);
  CHECK_THAT(no_description.notes[0], Catch::Contains("no system description"));
}

TEST_CASE("no-run-stop: a log without run_stop is named, a whole one is not", "[advise][run-stop]") {
  TempDir dir;
  const std::string text = synthetic_bert_log(SyntheticRun{});
  lg::AdviceReport whole, truncated;
  lg::advise_run_stop(facts_of(dir.path(), text), whole);
  CHECK(whole.advisories.empty());
  lg::advise_run_stop(facts_of(dir.path(), drop_key(text, "run_stop")), truncated);
  REQUIRE(truncated.advisories.size() == 1);
  CHECK(truncated.advisories[0].rule == advice::kNoRunStop);
  CHECK(truncated.advisories[0].line == 0);
}

TEST_CASE("clock-backwards: a step back in the timed run is named, init skew and jitter are not",
          "[advise][clock]") {
  TempDir dir;
  SyntheticRun run;
  const std::string text = synthetic_bert_log(run);
  lg::AdviceReport good;
  lg::advise_clock(facts_of(dir.path(), text), good);
  CHECK(good.advisories.empty());

  // The second eval stamped 10 s before run_start.
  const std::string back = set_time(text, "eval_accuracy", run.run_start_ms - 10'000, 1);
  lg::AdviceReport stepped;
  lg::advise_clock(facts_of(dir.path(), back), stepped);
  REQUIRE(stepped.advisories.size() == 1);
  CHECK(stepped.advisories[0].rule == advice::kClockBackwards);
  CHECK(stepped.advisories[0].line == line_of(back, "eval_accuracy", 1));

  // Within the jitter: 50 ms back.
  const std::int64_t second_eval = run.run_start_ms + 300'000 - 10;  // 10 min run, 4 evals
  lg::AdviceReport jitter;
  lg::advise_clock(facts_of(dir.path(), set_time(text, "eval_accuracy", second_eval - 50, 1)),
                   jitter);
  CHECK(jitter.advisories.empty());

  // Before run_start every rank logs its init with its own clock (5 s of skew in published logs);
  // records after the run with time_ms 0 are not clock readings.
  std::string skew = set_time(text, "submission_benchmark", run.run_start_ms - 125'000, 0);
  skew += ":::MLLOG {\"namespace\": \"\", \"time_ms\": 0, \"event_type\": \"POINT_IN_TIME\", "
          "\"key\": \"submission_platform\", \"value\": \"x\", \"metadata\": {}}\n";
  lg::AdviceReport before;
  lg::advise_clock(facts_of(dir.path(), skew), before);
  CHECK(before.advisories.empty());
}

TEST_CASE("seed-repeat: two runs with one seed are named, different seeds are not",
          "[advise][seeds]") {
  TempDir dir;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  std::vector<lg::LogFacts> facts;
  for (std::size_t i = 0; i < runs.size(); ++i)
    facts.push_back(facts_of(dir.path(), synthetic_bert_log(runs[i]),
                             "result_" + std::to_string(i) + ".txt"));
  lg::AdviceReport distinct;
  lg::advise_seed_repeats(facts, distinct);
  CHECK(distinct.advisories.empty());

  runs[7].seed = runs[2].seed;
  facts[7] = facts_of(dir.path(), synthetic_bert_log(runs[7]), "result_7.txt");
  lg::AdviceReport repeated;
  lg::advise_seed_repeats(facts, repeated);
  REQUIRE(repeated.advisories.size() == 1);
  CHECK(repeated.advisories[0].file.filename() == "result_7.txt");
  CHECK_THAT(repeated.advisories[0].text, Catch::Contains("result_2.txt"));
}

TEST_CASE("identical-runs: a copy with another seed and shifted clock is named, real runs are not",
          "[advise][identical]") {
  TempDir dir;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  std::vector<lg::LogFacts> facts;
  for (std::size_t i = 0; i < 3; ++i)
    facts.push_back(facts_of(dir.path(), synthetic_bert_log(runs[i]),
                             "result_" + std::to_string(i) + ".txt"));
  lg::AdviceReport different;
  lg::advise_identical_runs(facts, different);
  CHECK(different.advisories.empty());

  SyntheticRun copy = runs[0];
  copy.seed = 999'999;
  copy.run_start_ms += 7'200'000;
  facts.push_back(facts_of(dir.path(), synthetic_bert_log(copy), "result_3.txt"));
  lg::AdviceReport copied;
  lg::advise_identical_runs(facts, copied);
  REQUIRE(copied.advisories.size() == 1);
  CHECK(copied.advisories[0].file.filename() == "result_3.txt");
  CHECK_THAT(copied.advisories[0].text, Catch::Contains("result_0.txt"));

  // Two runs that died in init log the same records: without an eval they are not compared.
  const std::string init_only = drop_key(synthetic_bert_log(runs[0]), "eval_accuracy");
  std::vector<lg::LogFacts> crashed = {facts_of(dir.path(), init_only, "result_4.txt"),
                                       facts_of(dir.path(), init_only, "result_5.txt")};
  lg::AdviceReport init;
  lg::advise_identical_runs(crashed, init);
  CHECK(init.advisories.empty());
}

TEST_CASE("rcp-envelope: the official pruning keeps 6144 and 6912, the lower convex envelope not",
          "[advise][rcp-envelope]") {
  const lg::RcpCatalog catalog("4.1.0");
  std::vector<double> pruned, envelope;
  for (const auto& p : catalog.points(lg::RcpPass::pruned)) pruned.push_back(p.batch_size);
  for (const auto& p : catalog.points(lg::RcpPass::envelope)) envelope.push_back(p.batch_size);
  // The official rcp_checker's pruned set for 4.1.0 (mlperf_logging 4.1.59), and the envelope.
  CHECK(pruned == std::vector<double>{448, 4608, 6144, 6912, 12288, 13056, 16384});
  CHECK(envelope == std::vector<double>{448, 4608, 12288, 13056, 16384});
}

TEST_CASE("rcp-envelope: a closed folder at GBS 6144 is judged otherwise under the envelope, "
          "one at 4608 is not",
          "[advise][rcp-envelope]") {
  TempDir dir;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");  // GBS 4608, slower than its RCP
  mlbert::test::write_results(dir.path() / "gbs4608", runs);
  lg::AdviceReport same;
  lg::advise_rcp_envelope(dir.path() / "gbs4608", "4.1.0", false, same);
  CHECK(same.advisories.empty());

  // At 6144 the official check uses bert_ref_6144 (mean 3,319,125): 3.2M samples pass, scaled;
  // the envelope interpolates 4608..12288 (mean ~3.13M): the same runs are slower, factor 1.
  for (auto& run : runs) {
    run.global_batch_size = 6144;
    run.samples_to_converge += 350'000;
  }
  mlbert::test::write_results(dir.path() / "gbs6144", runs);
  lg::AdviceReport differs;
  lg::advise_rcp_envelope(dir.path() / "gbs6144", "4.1.0", false, differs);
  REQUIRE(differs.advisories.size() == 1);
  const lg::Advisory& a = differs.advisories.front();
  CHECK(a.rule == advice::kRcpEnvelope);
  CHECK_THAT(a.text, Catch::Contains("against bert_ref_6144, scaling") &&
                         Catch::Contains("against bert_interp_6144") &&
                         Catch::Contains("drops bert_ref_6144, bert_ref_6912"));
  // The official verdict of the folder is what `mlbert rcp` says, untouched.
  lg::RcpOptions options;
  options.ruleset = "4.1.0";
  const lg::RcpResult official = lg::check_rcp_directory(dir.path() / "gbs6144", options);
  CHECK(official.reference->name == "bert_ref_6144");
  CHECK(official.scaling_factor > 1.0);
}

TEST_CASE("seed-source: a seed logged from the implementation's seed line passes, from a file "
          "or line the package does not hold, it does not",
          "[advise][seed-source]") {
  TempDir dir;
  const fs::path org = dir.path() / "org";
  mlbert::test::write_package(org, "box", "closed", "4.1.0", mlbert::test::ten_good_runs("4.1.0", "closed"));
  const fs::path impl = org / "benchmarks" / "bert" / "implementations" / "mlbert";
  const fs::path results = org / "results" / "box" / "bert";
  const auto audit = [&] {
    lg::AdviceReport report;
    std::vector<lg::LogFacts> runs;
    for (const auto& f : lg::find_result_files(results)) runs.push_back(lg::read_log_facts(f));
    lg::advise_seed_sources(org, runs, report);
    return report;
  };
  // The logs name /workspace/bert/run_pretraining.py, the seed at line 42; the package holds only
  // run.sh.
  lg::AdviceReport absent = audit();
  REQUIRE(absent.advisories.size() == 1);  // one source line, reported once for all ten runs
  CHECK(absent.advisories[0].rule == advice::kSeedSource);
  CHECK_THAT(absent.advisories[0].text, Catch::Contains("run_pretraining.py:42") &&
                                            Catch::Contains("no implementation folder holds"));

  std::string source;
  for (int i = 1; i <= 60; ++i)
    source += i == 42 ? "    mllogger.event(key=constants.SEED, value=args.seed)\n" : "pass\n";
  mlbert::test::write_text(impl / "bert" / "run_pretraining.py", source);
  CHECK(audit().advisories.empty());

  std::string moved = source;
  moved.replace(moved.find("    mllogger"), 0, "\n\n\n\n\n\n");  // the seed line is now 48
  mlbert::test::write_text(impl / "bert" / "run_pretraining.py", moved);
  lg::AdviceReport shifted = audit();
  REQUIRE(shifted.advisories.size() == 1);
  CHECK_THAT(shifted.advisories[0].text,
             Catch::Contains("lines 40-44 of mlbert/bert/run_pretraining.py do not mention a seed"));
}

TEST_CASE("audit of a package folder covers every results/<system>/bert, bad input names the "
          "folder",
          "[advise][audit]") {
  TempDir dir;
  auto runs = mlbert::test::ten_good_runs("4.1.0", "closed");
  mlbert::test::write_package(dir.path() / "org", "a", "closed", "4.1.0", runs);
  mlbert::test::write_package(dir.path() / "org", "b", "closed", "4.1.0", runs);
  const auto folders = lg::audit_directory(dir.path() / "org", "4.1.0");
  REQUIRE(folders.size() == 2);
  CHECK(folders[0].dir.parent_path().filename() == "a");
  CHECK(folders[1].runs.size() == 10);
  CHECK_THROWS_WITH(lg::audit_directory(dir.path() / "org" / "systems", "4.1.0"),
                    Catch::Contains("neither a result folder"));
  CHECK_THROWS_WITH(lg::audit_directory(dir.path() / "org", ""),
                    Catch::Contains("no --ruleset given"));
}
