// `mlbert reproduce plan`: a published result folder to a plan folder (system file, plan.json,
// README.md, job.sh), with the simulator's expected time to train; `mlbert reproduce compare`.
#include "harness/reproduce/cli.h"

#include <iostream>

#include "common/cli.h"
#include "harness/config/system_config.h"
#include "harness/launch/job.h"
#include "harness/launch/launcher.h"
#include "harness/reproduce/compare.h"
#include "harness/reproduce/plan.h"
#include "harness/reproduce/published_runs.h"
#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/report.h"
#include "simulate/published_launch.h"
#include "simulate/result_model.h"
#include "simulate/results.h"
#include "simulate/simulator.h"

namespace mlbert::harness::reproduce {
namespace {

namespace fs = std::filesystem;

// The plan's system file (write_plan's name); its stem is the system's name in the job's results.
constexpr const char* kPlannedSystemFile = "system.json";

std::string basis_text(simulate::Basis basis, const std::string& source) {
  switch (basis) {
    case simulate::Basis::launch_flag: return "launch line the logs echo: " + source;
    case simulate::Basis::mllog: return "log " + source;
    case simulate::Basis::system_description: return "system.json " + source;
    case simulate::Basis::reference_launch:
      return "NVIDIA's reference launch (the logs echo no flag): " + source;
    case simulate::Basis::unstated: break;
  }
  return "";
}

// What the published launch states beyond the MLLOG records, as the simulator's reader derives it.
LaunchFacts launch_facts(const simulate::PublishedResult& result) {
  LaunchFacts facts;
  const simulate::PublishedLaunch& l = result.launch;
  const auto add = [&](const char* field, const std::string& value, simulate::Basis basis,
                       const std::string& source) {
    if (basis != simulate::Basis::unstated)
      facts.fields.push_back(FieldSource{field, value, basis_text(basis, source)});
  };
  add("run.optimizer.name", to_string(l.optimizer.value), l.optimizer.basis, l.optimizer.source);
  add("run.load_balancing", to_string(l.load_balancing.value), l.load_balancing.basis,
      l.load_balancing.source);
  add("run.clipping.mode", to_string(l.clipping()), l.gradient_path.basis, l.gradient_path.source);
  return facts;
}

// The simulator's time to train for the published cluster and run, or why there is none.
nlohmann::json expected_time(const simulate::PublishedResult& result, const fs::path& profiles_dir) {
  try {
    simulate::ClusterRun cluster = simulate::cluster_from_result(result);
    const auto options = simulate::simulation_options_for(result, simulate::SimulationOptions{});
    const auto profile = simulate::profile_for_accelerator(profiles_dir, cluster.accelerator,
                                                           cluster.notes, cluster.run.ruleset);
    if (!profile)
      return {{"none", "no accelerator profile for \"" + cluster.accelerator + "\" in " +
                           profiles_dir.string()}};
    const simulate::Prediction p = simulate::predict(cluster, *profile, options);
    return {{"minutes", p.total_seconds / 60.0},
            {"source", "mlbert simulate --results (profile " + profile->accelerator + ")"},
            {"notes", cluster.notes}};
  } catch (const std::exception& e) {
    return {{"none", std::string("the simulator cannot predict it: ") + e.what()}};
  }
}

struct PlanOptions {
  fs::path result_dir, out_dir, system_description, profiles_dir;
  JobOptions job;  // written when --data is given
  std::string scheduler = "slurm", engine = "none";
};

// The job of a plan: the planned system file as the job will find it in the plan folder.
std::string plan_job(const ReproductionPlan& plan, const PlanOptions& o) {
  const fs::path system_file = fs::absolute(o.out_dir).lexically_normal() / kPlannedSystemFile;
  const SystemConfig system = parse_system(plan.system, system_file);
  JobOptions job = o.job;
  job.scheduler = o.scheduler == "mpirun" ? Scheduler::mpirun : Scheduler::slurm;
  job.engine = parse_engine(o.engine);
  job.system_file = system_file;
  for (fs::path* p : {&job.data, &job.eval_data, &job.checkpoint, &job.results})
    if (!p->empty()) *p = fs::absolute(*p).lexically_normal();
  if (job.launch.mlbert.empty()) job.launch.mlbert = mlbert_executable();
  return job_script(system, job);
}

int run_plan(const PlanOptions& o) {
  const PublishedRuns runs = read_published_runs(o.result_dir);
  fs::path description = o.system_description;
  if (description.empty()) description = logging::find_system_description(o.result_dir);
  if (description.empty())
    throw std::runtime_error(o.result_dir.string() +
                             ": system.json: none in the folder or its package (pass "
                             "--system-description FILE)");
  std::optional<simulate::PublishedResult> published;
  std::string unread;
  try {
    published = simulate::read_published_result(o.result_dir);
  } catch (const std::exception& e) {
    unread = e.what();
  }
  ReproductionPlan plan = make_plan(runs, description, published ? launch_facts(*published) : LaunchFacts{});
  const fs::path profiles =
      o.profiles_dir.empty() ? default_systems_dir() / "profiles" : o.profiles_dir;
  if (plan.refusal) plan.expected_time = {{"none", "not reproducible"}};
  else if (published) plan.expected_time = expected_time(*published, profiles);
  else plan.expected_time = {{"none", "the simulator cannot read the folder: " + unread}};
  std::map<std::string, std::string> job;
  if (!plan.refusal && !o.job.data.empty()) job["job.sh"] = plan_job(plan, o);
  write_plan(plan, o.out_dir, job);
  // Slurm opens the job's output file (#SBATCH --output) there before the script runs.
  if (!job.empty())
    fs::create_directories(fs::absolute(o.job.results) / plan.system_name);
  if (plan.refusal) {
    std::cerr << "mlbert reproduce plan: " << o.result_dir.string()
              << ": not reproducible: " << *plan.refusal << " (plan.json and README.md in "
              << o.out_dir.string() << ")\n";
    return 3;
  }
  std::cout << "wrote " << (o.out_dir / "system.json").string() << ", plan.json, README.md"
            << (job.empty() ? "" : " and job.sh") << " (" << plan.fields.size()
            << " fields with their sources, " << plan.differences.size() << " differences)\n";
  if (job.empty()) std::cout << "no job written: pass --data and --eval-data for job.sh\n";
  return 0;
}

void register_plan(CLI::App& reproduce, int& exit_code) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* plan = reproduce.add_subcommand(
      "plan", "a published BERT result folder to an mlbert system file and its sources");
  plan->add_option("result_dir", o->result_dir,
                   "result_*.txt folder (flat, <org>/results/<system>, or mlbert's results/<s>/bert)")
      ->required()
      ->check(cli::existing_directory());
  plan->add_option("--out", o->out_dir, "the plan folder to create (new or empty)")->required();
  plan->add_option("--system-description", o->system_description,
                   "system.json when the folder has none (default: found like `mlbert score`)")
      ->check(cli::existing_file());
  plan->add_option("--profiles-dir", o->profiles_dir,
                   "accelerator profiles for the expected time (default systems/profiles)");
  o->job.runs = 10;
  o->job.results = "results";
  plan->add_option("--data", o->job.data, "training shards the job reads (writes job.sh)");
  plan->add_option("--eval-data", o->job.eval_data, "the eval set the job reads");
  plan->add_option("--init-checkpoint", o->job.checkpoint, "initial weights");
  plan->add_option("--results", o->job.results, "the job's result root (default results)");
  plan->add_option("--runs", o->job.runs, "runs, each with a fresh seed (default 10, BERT's)")
      ->check(CLI::Range(1, 1000));
  plan->add_option("--scheduler", o->scheduler, "slurm (default) or mpirun")
      ->check(CLI::IsMember({"mpirun", "slurm"}));
  plan->add_option("--engine", o->engine, "none (default), pyxis, apptainer, docker or podman");
  plan->add_option("--image", o->job.image, "the image the engine runs");
  plan->add_option("--time", o->job.launch.time_limit, "Slurm time limit (default 01:00:00)");
  plan->add_option("--partition", o->job.launch.partition, "Slurm partition");
  plan->add_option("--account", o->job.launch.account, "Slurm account");
  plan->add_flag("--allow-run-as-root", o->job.launch.allow_run_as_root, "Open MPI's root flag");
  plan->add_flag("--oversubscribe", o->job.launch.oversubscribe, "more ranks than cores");
  plan->add_flag("--best-effort", o->job.launch.bind_best_effort,
                 "bind what the machine has (small machines)");
  o->job.launch.mlbert = "";
  plan->callback([o, &exit_code] { exit_code = run_plan(*o); });
  cli::set_example(*plan, "mlbert reproduce plan results/v3.0/NVIDIA/dgxh100_n8 --out plan_h100");
}

struct CompareOptions {
  fs::path reproduced, published, reproduced_system;
  std::string tolerance = "5%", ruleset;
  bool json = false;
};

int run_compare(const CompareOptions& o) {
  std::string ruleset = o.ruleset;
  for (const fs::path& dir : {o.published, o.reproduced})
    if (ruleset.empty())
      if (const auto from_path = logging::ruleset_from_path(dir)) ruleset = *from_path;
  if (ruleset.empty())
    throw std::runtime_error("reproduce compare: neither path names a round (v4.0/...); pass "
                             "--ruleset");
  const Comparison c = compare_results(o.reproduced, o.published, ruleset,
                                       parse_tolerance(o.tolerance), o.reproduced_system);
  if (o.json) std::cout << comparison_json(c).dump(2) << "\n";
  else std::cout << format_comparison(c);
  return c.reproduced_verdict ? 0 : 1;
}

void register_compare(CLI::App& reproduce, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* compare = reproduce.add_subcommand(
      "compare", "a reproduction against the published result: scores, RCP, differing fields");
  compare->add_option("reproduced", o->reproduced, "the reproduction's result folder")
      ->required()
      ->check(cli::existing_directory());
  compare->add_option("published", o->published, "the published result folder")
      ->required()
      ->check(cli::existing_directory());
  compare->add_option("--tolerance", o->tolerance,
                      "largest difference of the scores that still reproduces (default 5%)");
  compare->add_option("--ruleset", o->ruleset, "ruleset of both (default: the round in a path)");
  compare->add_option("--reproduced-system", o->reproduced_system,
                      "the reproduction's system file or description (default: found like "
                      "`mlbert score`)")
      ->check(CLI::ExistingFile);
  compare->add_flag("--json", o->json, "print the comparison as JSON");
  const std::string verdict_rules =
      "Not reproduced when a logged hyperparameter differs, when number_of_nodes or\n"
      "accelerators_per_node differ (another accelerator count trains another batch\n"
      "per accelerator with other communication: another experiment), or when the\n"
      "olympic means differ by more than the tolerance. The other system fields\n"
      "(accelerator model, host processor, interconnect, framework, ...) and the phase\n"
      "times (init, training, eval: medians over the successful runs) are reported,\n"
      "not judged: a reproduction on another cluster changes them by design.";
  compare->callback([o, &exit_code] { exit_code = run_compare(*o); });
  cli::set_example(*compare, "mlbert reproduce compare results/system/bert v4.0/NVIDIA/h200 "
                             "--tolerance 5%");
  compare->footer(verdict_rules + "\n\n" + compare->get_footer());
}

}  // namespace

logging::ComparisonSection report_comparison(const std::filesystem::path& reproduced,
                                             const std::filesystem::path& published,
                                             const std::string& ruleset,
                                             const std::string& tolerance) {
  return comparison_section(
      compare_results(reproduced, published, ruleset, parse_tolerance(tolerance)));
}

void register_cli(CLI::App& app, int& exit_code) {
  CLI::App* reproduce =
      app.add_subcommand("reproduce", "plan a published result's reproduction, compare with it")
          ->group("train");
  reproduce->require_subcommand(1);
  cli::set_example(*reproduce,
                   "mlbert reproduce plan results/v4.0/NVIDIA/h200_ngc23.09_pytorch --out plan");
  register_plan(*reproduce, exit_code);
  register_compare(*reproduce, exit_code);
}

}  // namespace mlbert::harness::reproduce
