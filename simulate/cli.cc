// `mlbert simulate --system S | --results DIR` and `mlbert simulate calibrate --results DIR`.
#include "simulate/cli.h"

#include <fstream>
#include <iostream>

#include "common/atomic_file.h"
#include "common/input_file.h"
#include "common/standard_output.h"
#include "simulate/calibrate.h"
#include "simulate/report.h"
#include "simulate/result_model.h"
#include "simulate/settings.h"
#include "simulate/simulator.h"
#include "simulate/sweep_progress.h"
#include "common/cli.h"

namespace mlbert::simulate {
namespace {

struct Options {
  std::string system;
  std::filesystem::path systems_dir = "systems";
  std::filesystem::path results;
  std::string ruleset;
  std::filesystem::path profile;
  std::filesystem::path profiles_dir;  // default <systems_dir>/profiles
  std::vector<std::string> sets;
  std::string sweep;
  bool json = false;
  bool quiet = false;
  double progress_every = 10;  // seconds between a sweep's progress lines off a terminal
  std::filesystem::path plot;
  std::filesystem::path data;
  std::filesystem::path output;          // calibrate
  std::filesystem::path bench;           // calibrate --bench
  std::filesystem::path second_results;  // calibrate --second-results
  BenchCalibrationOptions bench_options;
};

std::filesystem::path profiles_dir_of(const Options& o) {
  return o.profiles_dir.empty() ? o.systems_dir / "profiles" : o.profiles_dir;
}

SimulationOptions simulation_options(const Options& o) {
  SimulationOptions s;
  if (!o.data.empty()) {
    s.lengths = SimulationOptions::Lengths::shards;
    s.data_dir = o.data;
  }
  return s;
}

// The profile named by --profile, or the one in the profiles directory for the accelerator; a
// clear error otherwise (never a guess).
AcceleratorProfile profile_for(const Options& o, const std::string& accelerator,
                               ClusterRun& cluster) {
  if (!looks_like_gpu(accelerator))
    throw std::runtime_error("accelerator \"" + accelerator +
                             "\" is not a GPU: mlbert simulate models GPU clusters only");
  if (!o.profile.empty()) {
    AcceleratorProfile p = load_profile(o.profile);
    if (p.matches_accelerator(accelerator)) return p;
    if (same_silicon(p.accelerator, accelerator)) {
      cluster.notes.push_back("--profile " + o.profile.string() + " (for " + p.accelerator +
                              ", the same silicon by the datasheets) adapted to the HBM "
                              "bandwidth of " +
                              accelerator);
      return adapt_profile(p, accelerator);
    }
    cluster.notes.push_back("--profile " + o.profile.string() + " (for " + p.accelerator +
                            ") stands in for " + accelerator);
    return p;
  }
  const auto dir = profiles_dir_of(o);
  if (auto p = profile_for_accelerator(dir, accelerator, cluster.notes, cluster.run.ruleset))
    return *p;
  throw std::runtime_error("no accelerator profile for \"" + accelerator + "\" (" +
                           describe_profiles(dir) +
                           "): measure one with a device check, or calibrate one from a "
                           "single-node result with `mlbert simulate calibrate --results DIR`");
}

// small_batch_note for the run's samples per GPU and step, into its notes.
void note_small_batch(const AcceleratorProfile& profile, ClusterRun& cluster) {
  const double per_gpu =
      static_cast<double>(cluster.run.global_batch_size) / std::max(1, cluster.world());
  if (auto note = small_batch_note(profile, per_gpu)) cluster.notes.push_back(*note);
}

std::filesystem::path system_path(const Options& o) {
  std::filesystem::path path = o.system;
  if (o.system.find('/') == std::string::npos && path.extension() != ".json")
    path = o.systems_dir / (o.system + ".json");
  return path;
}

// The system file with the settings applied, validated by the harness's loader.
harness::SystemConfig configured_system(const Options& o, const std::vector<Setting>& settings,
                               SimulatorSettings& sim) {
  if (settings.empty()) return harness::load_system(o.system, o.systems_dir);
  const auto path = system_path(o);
  std::ifstream in = files::open_input(path, "system file");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number out of range
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
  harness::SystemConfig config = harness::parse_system(apply_settings(root, settings, sim, path.string()), path);
  if (!config.run.model.config_path.empty() && config.run.model.config_path.is_relative())
    config.run.model.config_path = path.parent_path() / config.run.model.config_path;
  return config;
}

void write_plot(const Options& o, const std::string& field, const std::vector<SweepPoint>& points) {
  if (o.plot.empty()) return;
  if (files::names_standard_output(o.plot))
    return files::write_output(o.plot, sweep_svg(field, points));
  files::refuse_replacing_inputs(o.plot, {system_path(o), o.profile});
  files::write_file_atomically(o.plot, sweep_svg(field, points));
  std::cerr << "mlbert simulate: wrote " << o.plot.string() << "\n";
}

// Where the prediction is printed: standard output, or standard error when the plot is stdout.
std::ostream& prediction_stream(const Options& o) {
  return files::names_standard_output(o.plot) ? std::cerr : std::cout;
}

// One point of a sweep (or the single run): the system with `settings` applied, predicted.
SweepPoint simulate_variant(const Options& o, const std::vector<Setting>& settings,
                            std::optional<AcceleratorProfile>& first_profile) {
  SimulatorSettings sim;
  const harness::SystemConfig system = configured_system(o, settings, sim);
  if (system.topology.accelerator.kind != "gpu")
    throw std::runtime_error(system.path.string() + ": topology.accelerator.kind is \"" +
                             system.topology.accelerator.kind +
                             "\": mlbert simulate models GPU clusters only");
  ClusterRun cluster = cluster_from_system(system);
  SimulationOptions options = simulation_options(o);
  apply_simulator_settings(sim, cluster, options);
  const AcceleratorProfile profile = profile_for(o, cluster.accelerator, cluster);
  note_small_batch(profile, cluster);
  if (!first_profile) first_profile = profile;
  return {settings.empty() || o.sweep.empty() ? system.name : settings.back().value,
          predict(cluster, profile, options)};
}

int run_system(const Options& o) {
  std::vector<Setting> base;
  for (const auto& s : o.sets) base.push_back(parse_setting(s));
  std::vector<std::vector<Setting>> variants;
  std::string field;
  if (o.sweep.empty()) {
    variants.push_back(base);
  } else {
    for (const Setting& v : parse_sweep(o.sweep)) {
      auto settings = base;
      settings.push_back(v);
      variants.push_back(settings);
      field = v.field;
    }
  }
  std::vector<SweepPoint> points;
  std::optional<AcceleratorProfile> first_profile;
  SweepProgress progress(field, variants.size(), o.progress_every, !o.sweep.empty() && !o.quiet);
  for (const auto& settings : variants) {
    try {
      points.push_back(simulate_variant(o, settings, first_profile));
      // Without --sweep there is one variant, and perhaps no setting at all.
      if (!o.sweep.empty()) progress.value_done(points.size(), settings.back().value);
    } catch (const std::exception& e) {
      if (o.sweep.empty()) throw;
      progress.end();
      // The values done are kept: printed, then the one that failed named.
      if (!points.empty())
        prediction_stream(o) << (o.json ? sweep_to_json(field, points).dump(2) + "\n"
                                        : format_sweep(field, points));
      throw std::runtime_error("--sweep " + field + "=" + settings.back().value + ": " + e.what() +
                               " (the sweep stopped there; " + std::to_string(points.size()) +
                               " value(s) before it printed)");
    }
  }
  progress.end();
  std::ostream& out = prediction_stream(o);
  if (o.sweep.empty()) {
    if (o.json)
      out << prediction_to_json(points.front().prediction).dump(2) << "\n";
    else
      out << format_prediction(points.front().prediction, *first_profile);
    write_plot(o, "system", points);
  } else {
    if (o.json)
      out << sweep_to_json(field, points).dump(2) << "\n";
    else
      out << format_sweep(field, points);
    write_plot(o, field, points);
  }
  return 0;
}

int run_results(const Options& o) {
  const PublishedResult result = read_published_result(o.results, o.ruleset);
  ClusterRun cluster = cluster_from_result(result);
  SimulationOptions options = simulation_options_for(result, simulation_options(o));
  std::vector<Setting> settings;
  for (const auto& s : o.sets) settings.push_back(parse_setting(s));
  apply_result_settings(settings, cluster, options);
  const AcceleratorProfile profile = profile_for(o, cluster.accelerator, cluster);
  note_small_batch(profile, cluster);
  time_longest_run(result, cluster.run.global_batch_size, options);
  const ResultComparison c = compare_with_result(result, predict(cluster, profile, options));
  if (o.json)
    std::cout << comparison_to_json(c).dump(2) << "\n";
  else
    std::cout << format_comparison(c, profile);
  return 0;
}

// Where a calibrated profile goes: --output, else <profiles-dir>/<accelerator>.json.
std::filesystem::path profile_output(const Options& o, const AcceleratorProfile& profile) {
  return o.output.empty() ? profiles_dir_of(o) / (profile_stem(profile.accelerator) + ".json")
                          : o.output;
}

int run_bench_calibrate(const Options& o) {
  BenchCalibrationOptions options = o.bench_options;
  options.command =
      "mlbert simulate calibrate --bench " + o.bench.string() +
      (options.accelerator.empty() ? "" : " --accelerator \"" + options.accelerator + "\"");
  const AcceleratorProfile profile = measured_profile(o.bench, options);
  const auto out = profile_output(o, profile);
  save_profile(profile, out);
  const auto& fit = profile.provenance["fit"];
  std::cout << "measured " << profile.accelerator << " from " << o.bench.string() << " (device "
            << profile.provenance["device"].get<std::string>() << ")\n"
            << "  tensor rate " << fit["tensor_tflops"].get<double>() << " TFLOP/s ("
            << fit["fraction_of_gemm_ceiling"].get<double>() * 100
            << "% of the measured GEMM ceiling), memory " << profile.memory_bytes_per_second / 1e9
            << " GB/s (measured copy)\n";
  for (const auto& c : profile.provenance["checks"])
    std::cout << "  " << c["dtype"].get<std::string>() << " " << c["mix"].get<std::string>()
              << ": measured " << c["measured_fwd_bwd_ms"].get<double>() << " ms, "
              << (c["fitted"].get<bool>() ? "fitted " : "predicted ")
              << c["predicted_fwd_bwd_ms"].get<double>() << " ms ("
              << c["error"].get<double>() * 100 << "%)\n";
  std::cout << "wrote " << out.string() << "\n";
  return 0;
}

int run_calibrate(const Options& o) {
  if (!o.second_results.empty() && o.results.empty())
    throw std::runtime_error("simulate calibrate: --second-results goes with --results");
  if (o.bench.empty() == o.results.empty())
    throw std::runtime_error("simulate calibrate: give --results or --bench (one of them)");
  if (!o.bench.empty()) return run_bench_calibrate(o);
  const PublishedResult result = read_published_result(o.results, o.ruleset);
  CalibrationOptions options;
  options.command =
      "mlbert simulate calibrate --results " + o.results.string() +
      (o.second_results.empty() ? "" : " --second-results " + o.second_results.string()) +
      (o.ruleset.empty() ? "" : " --ruleset " + o.ruleset);
  options.simulation = simulation_options(o);
  const AcceleratorProfile profile =
      o.second_results.empty()
          ? calibrate(result, options)
          : calibrate(result, read_published_result(o.second_results, o.ruleset), options);
  const auto out = profile_output(o, profile);
  save_profile(profile, out);
  const auto& fit = profile.provenance["fit"];
  std::cout << "calibrated " << profile.accelerator << " from " << result.runs.size() << " runs of "
            << result.dir.string() << "\n"
            << "  tensor rate " << fit["tensor_tflops"].get<double>() << " TFLOP/s ("
            << fit["fraction_of_fp16_peak"].get<double>() * 100 << "% of the fp16 peak), run start "
            << profile.run_start_seconds << " s\n"
            << "  simulated step " << fit["simulated_step_ms"].get<double>() << " ms, evaluation "
            << fit["simulated_eval_ms"].get<double>() << " ms\n";
  if (fit.contains("second"))
    std::cout << "  fixed cost per step " << fit["fixed_step_ms"].get<double>()
              << " ms, fitted with the rate; second result "
              << fit["second"]["source"].get<std::string>() << ": simulated step "
              << fit["second"]["simulated_step_ms"].get<double>() << " ms\n";
  std::cout << "wrote " << out.string() << "\n";
  return 0;
}

}  // namespace

void register_cli(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* simulate =
      app.add_subcommand("simulate", "predict time to train from a system or a published result")
          ->group("train");
  simulate->add_option("--system", o->system, "system name (systems/<name>.json) or file");
  simulate->add_option("--systems-dir", o->systems_dir, "where system names are looked up");
  simulate->add_option("--results", o->results,
                       "a published result folder (result_*.txt and system.json, or a "
                       "package's <org>/results/<system> with <org>/systems/<system>.json)");
  simulate->add_option("--ruleset", o->ruleset, "ruleset of --results (default: from the path)");
  simulate->add_option("--profile", o->profile, "accelerator profile (default: by accelerator)");
  simulate->add_option("--profiles-dir", o->profiles_dir,
                       "where profiles are looked up (default <systems-dir>/profiles)");
  simulate->add_option("--set", o->sets, "FIELD=VALUE on the system (repeatable)");
  simulate->add_option("--sweep", o->sweep, "FIELD=V1,V2,...: one prediction per value");
  simulate->add_flag("--json", o->json, "print JSON");
  simulate->add_flag("--quiet", o->quiet, "no --sweep progress on stderr");
  simulate
      ->add_option("--progress-every", o->progress_every,
                   "SECONDS: a --sweep's progress on stderr, off a terminal one line per SECONDS "
                   "(default 10; 0: after every value); on a terminal one line rewritten in place; "
                   "a sweep shorter than that says nothing")
      ->check(CLI::NonNegativeNumber);
  simulate->add_option("--plot", o->plot,
                       "write an SVG of time to train, stacked by component (- or /dev/stdout: "
                       "the SVG on standard output, the prediction then on stderr)");
  simulate->add_option("--data", o->data, "take sample lengths from the HDF5 shards here");
  CLI::App* calibrate_cmd =
      simulate->add_subcommand("calibrate",
                               "fit an accelerator profile to ONE published result (or two "
                               "of one implementation) or to a device check's measurement");
  calibrate_cmd->add_option("--results", o->results, "the result folder");
  calibrate_cmd->add_option(
      "--second-results", o->second_results,
      "a second result of the same implementation (accelerator and round) at another batch per "
      "GPU: fits a fixed cost per step beside the tensor rate");
  calibrate_cmd->add_option("--bench", o->bench,
                            "a measurement of bert_cuda_bench --json (a measured profile)");
  calibrate_cmd->add_option("--accelerator", o->bench_options.accelerator,
                            "--bench: the accelerator_model_name it stands for (default: the "
                            "device's name)");
  calibrate_cmd->add_option("--dtype", o->bench_options.dtype, "--bench: the dtype to fit (bf16)");
  calibrate_cmd->add_option("--mix", o->bench_options.mix, "--bench: the length mix to fit (mix)");
  calibrate_cmd
      ->add_option("--run-start", o->bench_options.run_start_seconds,
                   "--bench: run start seconds to record (not measured; 0)")
      ->check(CLI::NonNegativeNumber);
  calibrate_cmd->add_option("--ruleset", o->ruleset, "its ruleset (default: from the path)");
  calibrate_cmd->add_option("--output", o->output,
                            "profile file (default <profiles-dir>/<accelerator>.json)");
  calibrate_cmd->add_option("--profiles-dir", o->profiles_dir, "where the profile goes");
  calibrate_cmd->add_option("--systems-dir", o->systems_dir, "(default profiles dir parent)");
  calibrate_cmd->callback([o, &exit_code] { exit_code = run_calibrate(*o); });
  cli::set_example(*simulate,
                       "mlbert simulate --system dgxa100_128x8 --sweep nodes=16,32,64,128 "
                       "--plot scaling.svg");
  cli::set_example(*calibrate_cmd,
                       "mlbert simulate calibrate --results results/v1.0/NVIDIA/dgxa100_ngc21.05");
  simulate->callback([o, simulate, calibrate_cmd, &exit_code] {
    if (simulate->got_subcommand(calibrate_cmd)) return;
    if (o->system.empty() == o->results.empty())
      throw std::runtime_error("simulate: give --system or --results (one of them)");
    if (!o->results.empty() && !o->sweep.empty())
      throw std::runtime_error("simulate: --sweep applies to --system only");
    exit_code = o->results.empty() ? run_system(*o) : run_results(*o);
  });
}

}  // namespace mlbert::simulate
