// The checks of `mlbert preflight` (see job_preflight.h).
#include "harness/launch/job_preflight.h"

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>
#include <vector>

#include "data_prep/length_index.h"
#include "harness/comm/mpi_communicator.h"
#include "harness/config/system_config.h"
#include "harness/launch/launcher.h"

#ifdef MLBERT_HAVE_CUDA
#include <cuda_runtime.h>

#include "harness/comm/nccl_communicator.h"
#include "harness/train/init_phase.h"
#endif

namespace mlbert::harness {
namespace {

namespace fs = std::filesystem;

// Allreduce of this many f32 per rank, timed over kTimedAllreduces after one untimed.
constexpr std::size_t kAllreduceFloats = std::size_t{4} << 20;  // 16 MiB
constexpr int kTimedAllreduces = 5;
// A fabric is flagged below this fraction of a rank's NIC line rate: far under what a healthy
// InfiniBand fabric gives, far over a link that fell back to TCP or a wrong HCA.
constexpr double kMinNicFraction = 0.25;

class Report {
 public:
  explicit Report(int rank) : rank_(rank) {}
  void line(bool pass, const std::string& check, const std::string& detail) {
    if (!pass) ++failures_;
    std::printf("preflight: rank %d: %s: %s %s\n", rank_, check.c_str(), pass ? "PASS" : "FAIL",
                detail.c_str());
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

int visible_gpus() {
#ifdef MLBERT_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess) return count;
  return 0;
#else
  int count = 0;
  static const std::regex device("nvidia[0-9]+");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec))
    if (std::regex_match(e.path().filename().string(), device)) ++count;
  return count;
#endif
}

void check_accelerators(const SystemConfig& system, Report& r) {
  const Topology& t = system.topology;
  if (t.accelerator.kind == "gpu") {
    const int gpus = visible_gpus();
    r.line(gpus >= t.ranks_per_node, "accelerators",
           std::to_string(gpus) + " GPUs visible, " + std::to_string(t.ranks_per_node) +
               " needed (" + t.accelerator.model + ")");
  } else {
    const unsigned cpus = std::thread::hardware_concurrency();
    r.line(cpus >= 1, "accelerators",
           "CPU ranks: " + std::to_string(cpus) + " logical CPUs for " +
               std::to_string(t.ranks_per_node) + " ranks");
  }
}

void check_nics(const SystemConfig& system, Report& r) {
  if (system.topology.nics.empty()) {
    r.line(true, "NICs", "the system names none");
    return;
  }
  for (const NicSpec& nic : system.topology.nics) {
    const fs::path device = fs::path("/sys/class/infiniband") / nic.name;
    std::error_code ec;
    r.line(fs::exists(device, ec), "NIC " + nic.name, device.string());
  }
}

void check_data(const fs::path& data, const fs::path& eval, Report& r) {
  std::error_code ec;
  if (!fs::is_directory(data, ec)) {
    r.line(false, "data", data.string() + ": no such folder");
    return;
  }
  const fs::path index_file = data::length_index_path(data);
  if (!fs::is_regular_file(index_file, ec)) {
    r.line(false, "length index",
           index_file.string() + ": missing (write it with `mlbert data index " + data.string() + "`)");
  } else {
    try {
      const data::LengthIndex index = data::read_length_index(index_file);
      int bad = 0;
      std::string first_bad;
      for (const auto& shard : index.shards) {
        const fs::path file = data / shard.path;
        const bool same = fs::is_regular_file(file, ec) &&
                          data::shard_content_hash(file) == shard.content_hash;
        if (!same && bad++ == 0) first_bad = file.string();
      }
      const std::size_t on_disk = data::find_shards(data).size();
      r.line(index.shards.size() == on_disk && bad == 0 && on_disk > 0, "data",
             std::to_string(on_disk) + " shards, " + std::to_string(index.shards.size()) +
                 " indexed, " + std::to_string(bad) + " differing from their content hash" +
                 (first_bad.empty() ? "" : " (first: " + first_bad + ")"));
    } catch (const std::exception& e) {
      r.line(false, "length index", e.what());
    }
  }
  r.line(fs::exists(eval, ec), "eval data", eval.string());
}

// Times the allreduce of kAllreduceFloats f32 at `data` (memory of the kind `comm` reduces).
void time_allreduce(const SystemConfig& system, Communicator& comm, void* data,
                    const std::string& memory, Report& r) {
  comm.allreduce(data, kAllreduceFloats, DataType::f32, ReduceOp::sum);
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kTimedAllreduces; ++i)
    comm.allreduce(data, kAllreduceFloats, DataType::f32, ReduceOp::sum);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      kTimedAllreduces;
  const int n = comm.size();
  // Bus bandwidth: what each rank moves in a ring allreduce, 2 (n-1)/n of the buffer.
  const double bus_gbs =
      n > 1 ? 2.0 * (n - 1) / n * kAllreduceFloats * sizeof(float) / seconds / 1e9 : 0.0;
  std::string detail = std::to_string(n) + " ranks, " + std::to_string(bus_gbs) +
                       " GB/s bus bandwidth (" + comm.backend() + ", " + memory + ")";
  bool pass = true;
  if (system.topology.nodes > 1 && !system.topology.nics.empty()) {
    const double nic_gbs = system.topology.nics.front().bandwidth_gbps / 8.0;
    pass = bus_gbs >= kMinNicFraction * nic_gbs;
    detail += "; expected at least " + std::to_string(kMinNicFraction * nic_gbs) +
              " GB/s (a quarter of the NIC line rate)";
  } else {
    detail += "; one node: no network figure to compare with";
  }
  r.line(pass, "allreduce", detail);
}

#ifdef MLBERT_HAVE_CUDA
// A CUDA system's gradients go through NCCL on device memory: the preflight times that, over the
// GPU each rank trains on. Every rank first says whether it has its GPU and buffer, so a rank
// without one fails the check on all ranks instead of leaving the others waiting in NCCL's init.
void check_nccl_allreduce(const SystemConfig& system, Communicator& world, Report& r) {
  const int device = cuda_device(system);
  void* buffer = nullptr;
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaMalloc(&buffer, kAllreduceFloats * sizeof(float));
  if (status == cudaSuccess) status = cudaMemset(buffer, 0, kAllreduceFloats * sizeof(float));
  const int missing = world.sum(status == cudaSuccess ? 0 : 1);
  if (missing > 0) {
    r.line(false, "allreduce",
           std::to_string(missing) + " ranks have no usable GPU buffer" +
               (status == cudaSuccess ? std::string()
                                      : " (this rank, GPU " + std::to_string(device) +
                                            ": " + cudaGetErrorString(status) + ")"));
  } else {
    try {
      NcclCommunicator nccl(world.split(0, world.rank()), device, nullptr);
      time_allreduce(system, nccl, buffer, "device memory, GPU " + std::to_string(device), r);
    } catch (const std::exception& e) {
      r.line(false, "allreduce", std::string("NCCL: ") + e.what());
    }
  }
  if (buffer) cudaFree(buffer);
}
#endif

void check_allreduce(const SystemConfig& system, Communicator& world, Report& r) {
#ifdef MLBERT_HAVE_CUDA
  if (system.run.backend == "cuda") {
    check_nccl_allreduce(system, world, r);
    return;
  }
#endif
  std::vector<float> buffer(kAllreduceFloats, 1.0f);
  time_allreduce(system, world, buffer.data(), "host memory", r);
}

}  // namespace

int run_job_preflight(const JobPreflightOptions& o) {
  const SystemConfig system = load_system(o.system, o.systems_dir);
  MpiRuntime runtime(nullptr, nullptr);
  auto comm = MpiCommunicator::world(runtime, MpiProgress::none);
  Report report(comm->rank());
  if (local_rank_from_environment().value_or(0) == 0) {
    check_accelerators(system, report);
    check_nics(system, report);
    check_data(o.data, o.eval_data, report);
  }
  if (comm->size() != system.topology.world_size())
    report.line(false, "ranks",
                std::to_string(comm->size()) + " started, the system has " +
                    std::to_string(system.topology.world_size()));
  else
    check_allreduce(system, *comm, report);
  const int failures = comm->sum(report.failures());
  if (comm->rank() == 0)
    std::printf("preflight: %s (%d failed checks)\n", failures == 0 ? "PASS" : "FAIL", failures);
  std::fflush(stdout);
  return failures == 0 ? 0 : 4;
}

}  // namespace mlbert::harness
