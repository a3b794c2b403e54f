// `mlbert report` on real 10-run result folders: the page in process (read, check, score, RCP,
// render), its parts, and the whole `mlbert report` command, each as a median of REPEAT runs,
// with the same folder's `score_system` (what `mlbert score` does) as the baseline measured in
// the same run. Target: a 10-run Samsung folder (9 MB of logs) in under 1 s.
// usage: report_bench MLBERT FIXTURES_DIR [REPEAT]
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/package/score.h"

namespace fs = std::filesystem;
namespace lg = mlbert::logging;

namespace {

// Median wall and CPU milliseconds (this process; the command's children for `system`).
struct Timing {
  double wall = 0, cpu = 0;
};

double cpu_ms() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  const auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(self.ru_utime) + ms(self.ru_stime) + ms(children.ru_utime) + ms(children.ru_stime);
}

Timing median_ms(int repeat, const std::function<void()>& once) {
  once();  // warm the page cache
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeat; ++i) {
    const double cpu_start = cpu_ms();
    const auto start = std::chrono::steady_clock::now();
    once();
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    cpu.push_back(cpu_ms() - cpu_start);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

std::uintmax_t folder_bytes(const fs::path& dir) {
  std::uintmax_t bytes = 0;
  for (const auto& file : lg::find_result_files(dir)) bytes += fs::file_size(file);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MLBERT FIXTURES_DIR [REPEAT]\n", argv[0]);
    return 2;
  }
  const std::string mlbert = argv[1];
  const fs::path fixtures = argv[2];
  const int repeat = argc > 3 ? std::max(1, std::atoi(argv[3])) : 9;
  const char* folders[] = {
      "v1.1/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch",
      "v2.0/Samsung/samsung_supercomputer21_dgxa100_n128_pytorch",
      "v3.0/NVIDIA/dgxh100_n8_ngc23.04_pytorch",
      "v4.0/NVIDIA/h200_ngc23.09_pytorch",
  };
  const fs::path out = fs::temp_directory_path() / "mlbert_report_bench.html";
  std::printf(
      "| folder (10 runs) | logs | score_system (baseline) | read_system_report | render | "
      "report / score (CPU) | `mlbert report` command |\n|---|---|---|---|---|---|---|\n");
  try {
    for (const char* folder : folders) {
      const fs::path dir = fixtures / folder;
      const std::string ruleset = *lg::ruleset_from_path(dir);
      lg::ReportInput input;
      input.dir = dir;
      input.ruleset = ruleset;
      const Timing score = median_ms(repeat, [&] { lg::score_system(dir, {ruleset, true}); });
      const Timing read = median_ms(repeat, [&] { lg::read_system_report(input); });
      const std::vector<lg::SystemReport> systems = {lg::read_system_report(input)};
      std::size_t page_bytes = 0;
      const Timing render = median_ms(repeat, [&] {
        page_bytes = lg::render_report_html(systems, lg::ReportOptions{}).size();
      });
      const std::string command = "'" + mlbert + "' report '" + dir.string() + "' --out '" +
                                  out.string() + "' >/dev/null 2>&1";
      const Timing whole = median_ms(repeat, [&] {
        if (std::system(command.c_str()) != 0) throw std::runtime_error(command + " failed");
      });
      std::printf(
          "| %s | %.1f MB | %.1f ms (CPU %.1f) | %.1f ms (CPU %.1f) | %.1f ms (%.0f KB page) | "
          "%.2fx | **%.1f ms** (CPU %.1f) |\n",
          folder, static_cast<double>(folder_bytes(dir)) / 1e6, score.wall, score.cpu, read.wall,
          read.cpu, render.wall, static_cast<double>(page_bytes) / 1e3,
          (read.cpu + render.cpu) / score.cpu, whole.wall, whole.cpu);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_bench: %s\n", e.what());
    return 2;
  }
  fs::remove(out);
  return 0;
}
