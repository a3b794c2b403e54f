// Crash consistency of every command that writes files: `mlbert data prep`, `data stratify`,
// `data pack`, `checkpoint import`, `checkpoint export`, `train` and `demo` are each killed with
// SIGKILL 20 times at moments drawn uniformly over an uninterrupted run's duration (a seeded RNG:
// MLBERT_CRASH_SEED reproduces a run; the seed is printed), each run starting from what the last
// kill left. After every kill, each file under a final name must equal the uninterrupted run's
// file of that name (shards: validated by `mlbert data inspect` and the same summary; result logs:
// ending in run_stop; a length index in a folder a killed prep marked unfinished must be refused by
// readers instead); anything else must be a temporary name. Then a rerun must succeed, produce
// the uninterrupted run's files and leave no temporary behind.
//
// A kill hits the command's whole process tree at once (mpirun and every rank for `train`); every
// other kill of `demo` hits the demo process alone, whose training job must then end by itself.
// Beside them: the demo and launch's local runs stopped by a termination signal to their process
// group, and `data prep` killed after a given shard, whose folder every reader must refuse.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "data_prep/length_index.h"
#include "tests/harness/train_job.h"

using namespace mlbert::test;

namespace {

constexpr int kKills = 20;

fs::path crash_root() {
  return work_root() / "crash";
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::uint64_t crash_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("MLBERT_CRASH_SEED");
    const std::uint64_t s = env && *env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("crash test seed: %llu (MLBERT_CRASH_SEED=%llu reproduces it)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

// A name no reader takes for output: a writer's temporary (".<name>.partial-...") or a result
// log still being written ("result_<N>.txt.partial"); the demo's lock file and a data prep's
// mark of an unfinished run, which are no outputs.
bool is_temporary(const fs::path& path) {
  const std::string name = path.filename().string();
  return (name[0] == '.' && name.find(".partial-") != std::string::npos) ||
         std::regex_match(name, std::regex("result_[0-9]+\\.txt\\.partial"));
}
bool is_lock(const fs::path& path) {
  const std::string name = path.filename().string();
  return name == ".mlbert-prep-unfinished" || (name[0] == '.' && name.ends_with(".demo-lock"));
}

// The signature of a length index in a folder that a killed prep left marked (unfinished_prep.h):
// readers refuse it, so what it lists is never taken for the shards there.
const std::string kRefusedAsUnfinished = "an unfinished prep's index, refused by readers";

// What a complete output of this name holds, comparable between runs. Result logs and the demo's
// report differ in their times, so only their completeness is compared; names differ in their run
// index.
std::pair<std::string, std::string> signature(const fs::path& root, const fs::path& file) {
  std::string relative = fs::relative(file, root).string();
  const std::string name = file.filename().string();
  if (std::regex_match(name, std::regex("result_[0-9]+\\.txt"))) {
    relative = std::regex_replace(relative, std::regex("result_[0-9]+\\.txt$"), "result_N.txt");
    const std::string last = last_mllog_line(file);
    return {relative, last.find("\"key\": \"run_stop\"") != std::string::npos
                          ? "a result log ending in run_stop"
                          : "A RESULT LOG WITHOUT run_stop: " + last};
  }
  if (std::regex_match(name, std::regex("train_[0-9]+\\.out")))
    return {std::regex_replace(relative, std::regex("train_[0-9]+\\.out$"), "train_N.out"),
            "console"};
  if (file.extension() == ".html") {
    // The demo's report carries its run's timings: complete means the page ends.
    std::string text = read_text(file);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return {relative, text.ends_with("</html>")
                          ? "a complete HTML page"
                          : "AN HTML PAGE CUT SHORT: ..." +
                                text.substr(text.size() - std::min<std::size_t>(text.size(), 80))};
  }
  if (file.extension() == ".hdf5") {
    // Every row validated; the summary without the path. A file not changed since it was last
    // inspected (same inode, size and time) is not inspected again.
    static std::map<std::string, std::string> inspected;
    struct stat st {};
    ::stat(file.c_str(), &st);
    const std::string key = file.string() + "@" + std::to_string(st.st_ino) + ":" +
                            std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
                            "." + std::to_string(st.st_mtim.tv_nsec);
    auto& summary = inspected[key];
    if (summary.empty()) {
      auto [status, output] = run_command(mlbert_bin().string() + " data inspect " + file.string());
      output.erase(0, output.find(": ") + 2);
      // The verdict says whether the length index describes the shard, which a kill before the
      // index is written leaves otherwise than the uninterrupted run: the shard itself is compared.
      if (const auto verdict = output.find("verdict: "); verdict != std::string::npos)
        output.erase(verdict);
      summary = "inspect status " + std::to_string(status) + ": " + output;
    }
    return {relative, summary};
  }
  if (name == "lengths.index" || name.ends_with(".lengths.index")) {
    if (fs::exists(file.parent_path() / ".mlbert-prep-unfinished")) {
      // A prep killed before its index: whatever the index says, readers must refuse the folder.
      try {
        mlbert::data::read_length_index(file);
        return {relative, "THE INDEX OF AN UNFINISHED PREP WAS READ"};
      } catch (const std::exception& e) {
        const std::string why = e.what();
        return {relative, why.find("did not finish") != std::string::npos
                              ? kRefusedAsUnfinished
                              : "AN UNFINISHED PREP'S INDEX REFUSED OTHERWISE: " + why};
      }
    }
    // Its shards' sizes and sampled hashes differ between runs as their HDF5 bytes do: compare
    // what it says of the rows, and that every size it records is its shard's size now.
    std::ostringstream summary;
    try {
      const auto index = mlbert::data::read_length_index(file);
      for (const auto& shard : index.shards) {
        const fs::path path = file.parent_path() / shard.path;
        std::error_code ec;
        const auto bytes = fs::file_size(path, ec);
        summary << shard.path << " rows " << shard.rows << " layout "
                << static_cast<int>(shard.layout)
                << (!ec && bytes == shard.file_bytes ? " size as recorded\n" : " SIZE DIFFERS\n");
      }
      for (const auto length : index.lengths) summary << length << ' ';
    } catch (const std::exception& e) {
      summary << "UNREADABLE INDEX: " << e.what();
    }
    return {relative, summary.str()};
  }
  return {relative, read_text(file)};
}

using Outputs = std::map<std::string, std::string>;

// The final-named files under `root` by signature; temporaries counted apart.
Outputs outputs_of(const fs::path& root, int* temporaries = nullptr) {
  Outputs outputs;
  if (!fs::exists(root)) return outputs;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || is_lock(entry.path())) continue;
    if (is_temporary(entry.path())) {
      if (temporaries) ++*temporaries;
      continue;
    }
    auto [name, content] = signature(root, entry.path());
    outputs.emplace(name, content);  // result_N.txt: all must agree (checked by the caller)
  }
  return outputs;
}

// Checks every final-named file under `root`: it is one the uninterrupted run wrote, with the
// same content.
void check_no_partial_output(const fs::path& root, const Outputs& reference) {
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || is_lock(entry.path()) || is_temporary(entry.path())) continue;
    const auto [name, content] = signature(root, entry.path());
    INFO(entry.path().string());
    const auto it = reference.find(name);
    REQUIRE(it != reference.end());  // not an output of this command
    if (content == kRefusedAsUnfinished) continue;
    CHECK(content == it->second);  // complete, equal to the uninterrupted run's
  }
}

struct Command {
  std::string name;
  std::string line;       // run with /bin/sh from the output root; "{out}" is replaced by it
  int status = 0;         // the uninterrupted run's exit status
  bool tree_only = true;  // false: every other kill hits the main process alone
};

// A process: its pid and start time (which tells a recycled pid apart).
struct Process {
  pid_t pid = 0;
  std::string start_time;
};

// pid -> (parent pid, start time) of every process, from /proc/<pid>/stat.
std::map<pid_t, std::pair<pid_t, std::string>> process_table() {
  std::map<pid_t, std::pair<pid_t, std::string>> table;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const pid_t pid = std::atoi(entry.path().filename().c_str());
    if (pid <= 0) continue;
    const std::string stat = read_proc_file(entry.path() / "stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                               std::istream_iterator<std::string>());
    if (f.size() > 19) table[pid] = {std::atoi(f[1].c_str()), f[19]};  // fields 4 and 22
  }
  return table;
}

// `root` and all its descendants.
std::vector<Process> process_tree(pid_t root) {
  const auto table = process_table();
  std::vector<Process> tree;
  if (auto it = table.find(root); it != table.end()) tree.push_back({root, it->second.second});
  for (std::size_t k = 0; k < tree.size(); ++k)
    for (const auto& [pid, parent] : table)
      if (parent.first == tree[k].pid) tree.push_back({pid, parent.second});
  return tree;
}

bool alive(const Process& p) {
  const auto table = process_table();
  const auto it = table.find(p.pid);
  return it != table.end() && it->second.second == p.start_time;
}

// SIGKILL for `root` and every process it started (mpirun puts its ranks in their own process
// groups), frozen first so none can start another meanwhile.
void kill_tree(pid_t root) {
  const auto tree = process_tree(root);
  for (const auto& p : tree) ::kill(p.pid, SIGSTOP);
  for (const auto& p : process_tree(root)) ::kill(p.pid, SIGKILL);
  for (const auto& p : tree) ::kill(p.pid, SIGKILL);
}

// Waits until every process of `tree` has ended.
bool ended(const std::vector<Process>& tree, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    bool any = false;
    for (const auto& p : tree) any |= alive(p);
    if (!any) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string with_root(std::string line, const fs::path& root) {
  for (std::size_t at; (at = line.find("{out}")) != std::string::npos;)
    line.replace(at, 5, root.string());
  return line;
}

void kill_and_rerun(const Command& c) {
  std::mt19937_64 rng(crash_seed() ^ std::hash<std::string>{}(c.name));
  const fs::path base = crash_root() / c.name;
  fs::remove_all(base);
  const fs::path reference_root = base / "reference", root = base / "killed";
  fs::create_directories(reference_root);
  fs::create_directories(root);

  // The uninterrupted run: its duration spreads the kills, its files are the reference.
  const auto started = Clock::now();
  {
    Job job("exec " + with_root(c.line, reference_root), base / "reference.out");
    const auto status = job.wait_for(300);
    INFO(read_text(base / "reference.out"));
    REQUIRE(status == c.status);
  }
  const double duration = std::chrono::duration<double>(Clock::now() - started).count();
  const Outputs reference = outputs_of(reference_root);
  REQUIRE_FALSE(reference.empty());
  for (const auto& [name, content] : reference) {
    INFO(name);
    CHECK(content.find("RESULT LOG WITHOUT") == std::string::npos);
  }

  std::uniform_real_distribution<double> moment(0.0, duration);
  int temporaries_seen = 0;
  for (int k = 0; k < kKills; ++k) {
    const double at = moment(rng);
    const bool whole_tree = c.tree_only || k % 2 == 0;
    INFO(c.name << ": kill " << k + 1 << " at " << at << " s of " << duration << " s"
                << (whole_tree ? " (process tree)" : " (main process)"));
    {
      Job job("exec " + with_root(c.line, root), base / ("kill_" + std::to_string(k) + ".out"));
      std::this_thread::sleep_for(std::chrono::duration<double>(at));
      const auto tree = process_tree(job.pid());
      if (whole_tree)
        kill_tree(job.pid());
      else
        ::kill(job.pid(), SIGKILL);
      REQUIRE(job.wait_for(30).has_value());
      // What the main process started must end by itself (the demo's training job).
      CHECK(ended(tree, 30));
    }
    int temporaries = 0;
    outputs_of(root, &temporaries);
    temporaries_seen += temporaries;
    check_no_partial_output(root, reference);
  }

  // The rerun succeeds from whatever the kills left, with the uninterrupted run's outputs.
  {
    Job job("exec " + with_root(c.line, root), base / "rerun.out");
    const auto status = job.wait_for(300);
    INFO(read_text(base / "rerun.out"));
    REQUIRE(status == c.status);
  }
  int left = 0;
  const Outputs rerun = outputs_of(root, &left);
  CHECK(rerun == reference);
  CHECK(left == 0);  // the rerun removed every temporary the kills left
  check_no_partial_output(root, reference);
  std::printf(
      "crash %s: %d kills over %.2f s runs survived, %d temporaries seen after kills, "
      "rerun complete\n",
      c.name.c_str(), kKills, duration, temporaries_seen);
  std::fflush(stdout);
  fs::remove_all(base);
}

// Inputs shared by the commands: a demo corpus of 6 parts, the multi-rank tests' shards and eval
// set, the TF bundle of the checkpoint tests.
struct Inputs {
  fs::path vocab, shards, eval, checkpoint, checkpoint_config;
  std::string parts, shard_list;
};

Inputs inputs() {
  const TestData data = test_data();
  Inputs in;
  const fs::path corpus = crash_root() / "corpus";
  if (!fs::exists(corpus / "vocab.txt")) {
    const fs::path tmp = crash_root() / "corpus.tmp";
    fs::remove_all(tmp);
    const auto [status, output] =
        run_command(mlbert_bin().string() + " data demo-corpus --output " + tmp.string() +
                    " --documents 900 --parts 6");
    INFO(output);
    REQUIRE(status == 0);
    fs::rename(tmp, corpus);
  }
  in.vocab = corpus / "vocab.txt";
  in.shards = data.train;
  in.eval = data.eval;
  in.checkpoint = source_dir() / "tests/bert/data/tf_bundle/model.ckpt-7";
  in.checkpoint_config = source_dir() / "tests/bert/data/tf_bundle/bert_config.json";
  std::set<std::string> parts, shards;
  for (const auto& f : fs::directory_iterator(corpus))
    if (f.path().filename().string().starts_with("part-")) parts.insert(f.path().string());
  for (const auto& f : fs::directory_iterator(in.shards))
    if (f.path().extension() == ".hdf5") shards.insert(f.path().string());
  for (const auto& p : parts) in.parts += " " + p;
  for (const auto& p : shards) in.shard_list += " " + p;
  return in;
}

const std::string kShape = " --max-seq-length 128 --max-predictions-per-seq 20";

}  // namespace

TEST_CASE("data prep killed at random moments leaves only complete shards and a rerun completes",
          "[crash]") {
  const Inputs in = inputs();
  kill_and_rerun({"prep", mlbert_bin().string() + " data prep --vocab " + in.vocab.string() +
                              " --input" + in.parts +
                              " --output {out}/train --threads 1 --dupe-factor 3" + kShape +
                              " --progress never"});
}

namespace {

// The shards under `dir` by their final names.
int shards_in(const fs::path& dir) {
  int shards = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it)
    shards += it->path().extension() == ".hdf5" && !is_temporary(it->path());
  return shards;
}

// Starts `command` and SIGKILLs its process tree once `dir` holds `shards` shards.
void kill_at_shard(const std::string& command, const fs::path& dir, int shards,
                   const fs::path& output) {
  Job job("exec " + command, output);
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (shards_in(dir) < shards && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  INFO(read_text(output));
  REQUIRE(shards_in(dir) >= shards);
  REQUIRE_FALSE(job.wait_for(0).has_value());  // killed before its index, not finished
  kill_tree(job.pid());
  REQUIRE(job.wait_for(30).has_value());
}

}  // namespace

TEST_CASE("data prep killed after a shard leaves a folder every reader refuses by name, and a "
          "rerun with fewer inputs completes it",
          "[crash]") {
  const Inputs in = inputs();
  const fs::path base = crash_root() / "prep_unfinished";
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path out = base / "train";
  const std::string prep = mlbert_bin().string() + " data prep --vocab " + in.vocab.string() +
                           " --output " + out.string() + " --threads 1 --dupe-factor 3" + kShape +
                           " --progress never --input";
  const std::string refusal =
      out.string() + ": a `mlbert data prep` into this folder did not finish (killed?)";
  // Killed after its first shard, then a rerun killed after its third: each time the folder holds
  // shards whose index is missing or stale, and `data check` and `data index` refuse it.
  for (const int shards : {1, 3}) {
    INFO("killed once " << shards << " shard(s) were written");
    kill_at_shard(prep + in.parts, out, shards, base / ("kill_" + std::to_string(shards) + ".out"));
    for (const std::string reader : {"check ", "index "}) {
      const auto [status, output] = run_command(mlbert_bin().string() + " data " + reader + out.string());
      INFO(reader << output);
      CHECK(status == 2);
      CHECK_THAT(output, Catch::Contains(refusal));
    }
  }
  // A rerun with half the inputs, without --replace: the unfinished run's other shards go.
  std::istringstream parts(in.parts);
  std::vector<std::string> part_list((std::istream_iterator<std::string>(parts)),
                                     std::istream_iterator<std::string>());
  REQUIRE(part_list.size() == 6);
  const auto [status, output] = run_command(prep + " " + part_list[0] + " " + part_list[1] + " " +
                                            part_list[2]);
  INFO(output);
  REQUIRE(status == 0);
  CHECK(shards_in(out) == 3);
  CHECK_FALSE(fs::exists(out / ".mlbert-prep-unfinished"));
  const auto [check_status, check_output] =
      run_command(mlbert_bin().string() + " data check " + out.string());
  INFO(check_output);
  CHECK(check_status == 0);
  CHECK(mlbert::data::read_length_index(out / "lengths.index").shards.size() == 3);
  fs::remove_all(base);
}

TEST_CASE("data stratify killed at random moments leaves only complete shards", "[crash]") {
  const Inputs in = inputs();
  // A memory budget of about a third of the output: shards are built and committed in groups.
  kill_and_rerun({"stratify", mlbert_bin().string() + " data stratify --input" + in.shard_list +
                                  " --output {out}/stratified --shards 3 --bounds 32,64,96,128" +
                                  kShape + " --memory-gb 0.0008"});
}

TEST_CASE("data pack killed at random moments leaves only complete shards", "[crash]") {
  const Inputs in = inputs();
  kill_and_rerun({"pack", mlbert_bin().string() + " data pack --input" + in.shard_list +
                              " --output {out}/packed --shards 4" + kShape +
                              " --memory-gb 0.0008"});
}

TEST_CASE("checkpoint import killed at random moments never leaves a partial checkpoint",
          "[crash]") {
  const Inputs in = inputs();
  kill_and_rerun({"import", mlbert_bin().string() + " checkpoint import " + in.checkpoint.string() +
                                " --config " + in.checkpoint_config.string() +
                                " --out {out}/model.safetensors"});
}

TEST_CASE("checkpoint export killed at random moments never leaves a partial checkpoint",
          "[crash]") {
  const Inputs in = inputs();
  const fs::path source = crash_root() / "export_source.safetensors";
  fs::create_directories(crash_root());
  const auto [status, output] =
      run_command(mlbert_bin().string() + " checkpoint import " + in.checkpoint.string() +
                  " --config " + in.checkpoint_config.string() + " --out " + source.string());
  INFO(output);
  REQUIRE(status == 0);
  kill_and_rerun({"export", mlbert_bin().string() + " checkpoint export " + source.string() +
                                " --out {out}/hf/model.safetensors"});
}

TEST_CASE("train killed while writing its result log leaves no log cut short under a final name",
          "[crash][mpi]") {
  const Inputs in = inputs();
  const fs::path system = write_system("crash_train", 2, 4, 1, "after-allreduce", "none", 20, 4, 8);
  // 4 steps, an eval after each: the log grows the whole run; exit 3 (max steps, not converged).
  kill_and_rerun({"train",
                  mpirun(2) + mlbert_bin().string() + " train --quiet --system " + system.string() +
                      " --data " + in.shards.string() + " --eval-data " + in.eval.string() +
                      " --results {out} --seed 5",
                  3});
}

TEST_CASE("demo killed at random moments leaves only complete outputs and a rerun completes",
          "[crash][mpi]") {
  // The demo system with a target its first eval reaches: a short run.
  json s = demo_system();
  s["system_name"] = "crash_demo";
  s["run"]["target_accuracy"] = 0.01;
  s["run"]["eval"] = {{"cadence", 32}, {"eval_samples", 100}, {"batch_size", 50}};
  s["run"]["warmup_iterations"] = 0;
  const fs::path systems = crash_root() / "systems";
  fs::create_directories(systems);
  std::ofstream(systems / "crash_demo.json") << s.dump(2);
  Command demo{"demo",
               mlbert_bin().string() + " demo --system crash_demo --systems-dir " +
                   systems.string() + " --results {out} --seed 3",
               0};
  demo.tree_only = false;
  kill_and_rerun(demo);
}

namespace {

// The demo system under `name`, evaluating every 32 samples; by default a target its first evals
// reach (a run of a few seconds).
fs::path short_demo_system(const std::string& name, double target_accuracy = 0.01) {
  json s = demo_system();
  s["system_name"] = name;
  s["run"]["target_accuracy"] = target_accuracy;
  s["run"]["eval"] = {{"cadence", 32}, {"eval_samples", 100}, {"batch_size", 50}};
  s["run"]["warmup_iterations"] = 0;
  const fs::path systems = crash_root() / "systems";
  fs::create_directories(systems);
  std::ofstream(systems / (name + ".json")) << s.dump(2);
  return systems;
}

std::string demo_line(const std::string& system, const fs::path& systems, const fs::path& results) {
  return "exec " + mlbert_bin().string() + " demo --system " + system + " --systems-dir " +
         systems.string() + " --results " + results.string() + " --seed 3";
}

// Every file under `dir` (recursively) whose name is a temporary or a partial result log.
std::vector<std::string> temporaries_under(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (is_temporary(entry.path())) found.push_back(entry.path().string());
  return found;
}

}  // namespace

TEST_CASE("the demo interrupted by SIGINT to its process group 10 times leaves every log whole",
          "[crash][mpi]") {
  // A target no run reaches, so every interrupt lands while the ranks train (with 0.01 a run can
  // reach it in 0.3 s, before the interrupt's random delay is over).
  const fs::path systems = short_demo_system("interrupt_demo", 0.99);
  const fs::path base = crash_root() / "interrupt";
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path bert = base / "results" / "interrupt_demo" / "bert";
  std::mt19937_64 rng(crash_seed());
  std::uniform_real_distribution<double> delay(0.0, 0.5);
  for (int k = 0; k < 10; ++k) {
    const fs::path output = base / ("interrupt_" + std::to_string(k) + ".out");
    INFO("interrupt " << k + 1 << "; the demo's output: " << output);
    Job job(demo_line("interrupt_demo", systems, base / "results"), output);
    // A Ctrl-C while the ranks train: once this run's result log is open, at a random moment.
    const fs::path partial = bert / ("result_" + std::to_string(k) + ".txt.partial");
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!fs::exists(partial) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(fs::exists(partial));
    std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    REQUIRE(::killpg(job.pid(), SIGINT) == 0);
    const auto status = job.wait_for(60);
    INFO(read_text(output));
    REQUIRE(status.has_value());
    CHECK(*status == 128 + SIGINT);
    CHECK_THAT(read_text(output), Catch::Contains("mlbert demo: interrupted by SIGINT"));
    // Every run so far: its log under its final name, ending in run_stop; its console output.
    for (int run = 0; run <= k; ++run) {
      const fs::path log = bert / ("result_" + std::to_string(run) + ".txt");
      INFO(log);
      REQUIRE(fs::exists(log));
      CHECK_THAT(last_mllog_line(log), Catch::Contains("\"key\": \"run_stop\""));
      CHECK(fs::exists(bert / ("train_" + std::to_string(run) + ".out")));
    }
    CHECK(temporaries_under(base / "results").empty());
  }
  fs::remove_all(base);
}

TEST_CASE("launch's local run stopped by SIGINT, SIGTERM or SIGHUP to its group ends its log and "
          "exits 128 + signal", "[crash][mpi]") {
  const TestData data = test_data();
  // Long enough that every signal lands while rank 0 trains: an eval every 4 steps, up to 400.
  const fs::path system =
      write_system("launch_interrupt", 2, 4, 1, "after-allreduce", "none", 20, 400, 4);
  const fs::path base = crash_root() / "launch_interrupt";
  fs::remove_all(base);
  fs::create_directories(base);
  const std::string root = ::geteuid() == 0 ? " --allow-run-as-root" : "";
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    const std::string name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP";
    const fs::path results = base / name;
    const fs::path output = base / (name + ".out");
    INFO(name << "; launch's output: " << output);
    // Two runs: the signal must also keep the second from starting.
    Job job("exec " + mlbert_bin().string() + " launch --system " + system.string() +
                " --runs 2 --oversubscribe --best-effort" + root + " --data " + data.train.string() +
                " --eval-data " + data.eval.string() + " --results " + results.string(),
            output);
    const fs::path bert = results / "launch_interrupt" / "bert";
    const auto deadline = Clock::now() + std::chrono::seconds(180);
    while (!fs::exists(bert / "result_0.txt.partial") && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(fs::exists(bert / "result_0.txt.partial"));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    REQUIRE(::killpg(job.pid(), signal) == 0);
    const auto status = job.wait_for(90);
    INFO(read_text(output));
    REQUIRE(status.has_value());
    CHECK(*status == 128 + signal);
    CHECK_THAT(read_text(output), Catch::Contains("interrupted by " + name + " in run 0") &&
                                      Catch::Contains("no further runs, no scoring"));
    const fs::path log = bert / "result_0.txt";
    REQUIRE(fs::exists(log));
    CHECK_THAT(last_mllog_line(log), Catch::Contains("\"key\": \"run_stop\"") &&
                                         Catch::Contains("\"status\": \"aborted\""));
    CHECK_FALSE(fs::exists(bert / "result_1.txt.partial"));
    CHECK_FALSE(fs::exists(bert / "result_1.txt"));
    CHECK(temporaries_under(results).empty());
  }
  fs::remove_all(base);
}

TEST_CASE("two demos at once into one results folder both keep their runs' logs", "[crash][mpi]") {
  const fs::path systems = short_demo_system("twin_demo");
  const fs::path base = crash_root() / "twins";
  fs::remove_all(base);
  fs::create_directories(base / "results" / "twin_demo" / "bert");
  // A result the user had there already: neither demo may remove it.
  const fs::path earlier = base / "results" / "twin_demo" / "bert" / "result_5.txt";
  std::ofstream(earlier) << "an earlier result\n";
  Job first(demo_line("twin_demo", systems, base / "results"), base / "first.out");
  Job second(demo_line("twin_demo", systems, base / "results"), base / "second.out");
  const auto first_status = first.wait_for(300);
  const auto second_status = second.wait_for(300);
  INFO(read_text(base / "first.out") << "\n---\n" << read_text(base / "second.out"));
  CHECK(first_status == 0);
  CHECK(second_status == 0);
  CHECK(read_text(earlier) == "an earlier result\n");
  for (const char* name : {"result_6.txt", "result_7.txt"}) {
    const fs::path log = base / "results" / "twin_demo" / "bert" / name;
    INFO(log);
    REQUIRE(fs::exists(log));
    CHECK_THAT(last_mllog_line(log), Catch::Contains("\"status\": \"success\""));
  }
  CHECK(temporaries_under(base / "results").empty());
  fs::remove_all(base);
}
