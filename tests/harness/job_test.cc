// The job script of `mlbert launch` and `mlbert reproduce`: a preflight before the first run, N
// runs each checked, the image's paths inside the image, and the combinations it refuses.
#include <catch2/catch.hpp>

#include "harness/launch/job.h"
#include "tests/common/shared_fixtures.h"

namespace {

using namespace mlbert::harness;

SystemConfig system_named(const std::string& name) {
  return load_system(name, mlbert::test::source_dir() / "systems");
}

JobOptions job_for(const SystemConfig& system) {
  JobOptions o;
  o.system_file = std::filesystem::absolute(system.path);
  o.data = "/lustre/bert data/train";
  o.eval_data = "/lustre/bert data/eval.hdf5";
  o.results = "/scratch/results";
  o.runs = 10;
  return o;
}

std::size_t position(const std::string& text, const std::string& what) {
  const auto at = text.find(what);
  INFO(what);
  REQUIRE(at != std::string::npos);
  return at;
}

}  // namespace

TEST_CASE("the job's preflight comes before its first run and stops the job", "[job]") {
  const SystemConfig system = system_named("cpu_demo");
  const std::string script = job_script(system, job_for(system));
  const auto preflight = position(script, "if ! ranks preflight --system ");
  const auto loop = position(script, "for ((i = 0; i < RUNS; i++)); do");
  CHECK(preflight < loop);
  CHECK(position(script, "  exit 4\nfi\n") < loop);
  CHECK_THAT(script, Catch::Contains("readonly RUNS=10\n"));
}

TEST_CASE("every run gets a fresh seed, is checked, and a failed run does not stop the loop",
          "[job]") {
  const SystemConfig system = system_named("cpu_demo");
  const std::string script = job_script(system, job_for(system));
  CHECK_THAT(script, Catch::Contains("seed=$(( $(od -An -N4 -tu4 /dev/urandom)"));
  CHECK_THAT(script, Catch::Contains("--run-index \"${i}\" --seed \"${seed}\""));
  CHECK_THAT(script, Catch::Contains("single check --ruleset 4.1.0 "));
  CHECK_THAT(script, Catch::Contains("note \"run ${i}: aborted (exit status ${status})\""));
  CHECK_THAT(script, Catch::Contains("set -uo pipefail\n"));
  CHECK_THAT(script, !Catch::Contains("set -e"));
  // The folder is scored once the loop is over.
  CHECK(position(script, "done\n") < position(script, "single score --ruleset 4.1.0 "));
}

TEST_CASE("paths with spaces are quoted on the host", "[job]") {
  const SystemConfig system = system_named("cpu_demo");
  const std::string script = job_script(system, job_for(system));
  CHECK_THAT(script, Catch::Contains("--data '/lustre/bert data/train'"));
}

TEST_CASE("in an image the commands name the image's paths and the host folders are mounted",
          "[job]") {
  const SystemConfig system = system_named("cpu_demo");
  JobOptions o = job_for(system);
  o.engine = Engine::podman;
  o.image = "localhost/mlbert:cpu";
  const std::string script = job_script(system, o);
  CHECK_THAT(script, Catch::Contains("-v '/lustre/bert data/train:/data'"));
  CHECK_THAT(script, Catch::Contains("-v /scratch/results:/results"));
  CHECK_THAT(script, Catch::Contains("localhost/mlbert:cpu mpirun "));
  CHECK_THAT(script, Catch::Contains("train --system /mlbert-system/cpu_demo.json --data /data "
                                     "--eval-data /eval/eval.hdf5 --results /results"));
  CHECK_THAT(script, Catch::Contains("single check --ruleset 4.1.0 /results/cpu_demo/bert/result_"));
}

TEST_CASE("Slurm: 1,024 GPUs with pyxis, the output under --results", "[job]") {
  const SystemConfig system = system_named("samsung_dgxa100_128x8");
  JobOptions o = job_for(system);
  o.scheduler = Scheduler::slurm;
  o.engine = Engine::pyxis;
  o.image = "nvcr.io#mlbert:latest";
  o.launch.partition = "gpu";
  const std::string script = job_script(system, o);
  CHECK(script.rfind("#!/bin/bash\n", 0) == 0);
  CHECK_THAT(script, Catch::Contains("#SBATCH --nodes=128\n#SBATCH --ntasks-per-node=8\n"
                                     "#SBATCH --gpus-per-node=8\n#SBATCH --cpus-per-task=16\n"));
  CHECK_THAT(script, Catch::Contains("#SBATCH --partition=gpu\n"));
  CHECK_THAT(script, Catch::Contains("#SBATCH --output=/scratch/results/samsung_dgxa100_128x8/"
                                     "slurm-%j.out\n"));
  CHECK_THAT(script, Catch::Contains("srun --mpi=pmix --cpu-bind=none --kill-on-bad-exit=1 "
                                     "'--container-image=nvcr.io#mlbert:latest' "));
  CHECK_THAT(script, Catch::Contains("/scratch/results:/results"));
  CHECK_THAT(script, Catch::Contains(
                         "#   local rank 7: cpus 56-63,120-127, NUMA node 7, GPU 7, NIC mlx5_2"));
}

TEST_CASE("apptainer wraps each rank under mpirun", "[job]") {
  const SystemConfig system = system_named("dgxa100_1x8");
  JobOptions o = job_for(system);
  o.engine = Engine::apptainer;
  o.image = "/images/mlbert.sif";
  const std::string script = job_script(system, o);
  CHECK_THAT(script, Catch::Contains("ranks() { mpirun -np 8 "));
  CHECK_THAT(script, Catch::Contains("apptainer exec --nv --bind "));
  CHECK_THAT(script, Catch::Contains("/images/mlbert.sif mlbert bind --system /mlbert-system/"));
}

TEST_CASE("the job refuses what it cannot run, naming the option", "[job]") {
  const SystemConfig one_node = system_named("cpu_demo");
  const SystemConfig many = system_named("dgxa100_128x8");
  JobOptions o = job_for(one_node);
  SECTION("no data") {
    o.data.clear();
    CHECK_THROWS_WITH(job_script(one_node, o), Catch::Contains("--data: missing"));
  }
  SECTION("an engine without an image") {
    o.engine = Engine::apptainer;
    CHECK_THROWS_WITH(job_script(one_node, o), Catch::Contains("--image: missing"));
  }
  SECTION("podman on 128 nodes") {
    o.engine = Engine::podman;
    o.image = "mlbert";
    CHECK_THROWS_WITH(job_script(many, o), Catch::Contains("one node only"));
  }
  SECTION("pyxis without Slurm") {
    o.engine = Engine::pyxis;
    o.image = "mlbert";
    CHECK_THROWS_WITH(job_script(one_node, o), Catch::Contains("pyxis is a Slurm plugin"));
  }
  SECTION("a Slurm output folder with a space") {
    o.scheduler = Scheduler::slurm;
    o.results = "/scratch/my results";
    CHECK_THROWS_WITH(job_script(one_node, o), Catch::Contains("#SBATCH --output"));
  }
  SECTION("zero runs") {
    o.runs = 0;
    CHECK_THROWS_WITH(job_script(one_node, o), Catch::Contains("--runs 0"));
  }
}
