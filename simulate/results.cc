// Reading a published result folder for `mlbert simulate --results` (see results.h).
#include "simulate/results.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/report/report.h"
#include "mlperf_logging/package/score.h"
#include "simulate/constants.h"

namespace mlbert::simulate {
namespace {

using nlohmann::json;

const std::set<std::string, std::less<>> kKeys = {
    "run_start",         "run_stop",
    "eval_accuracy",     "train_samples",
    "global_batch_size", "gradient_accumulation_steps",
    "opt_name",          "submission_division",
    "eval_samples",      "d_batch_size",
    "eval_start",        "eval_stop"};

// Counts in the logs (samples, batch sizes, epochs) are whole numbers up to 2^53, which a double
// holds exactly; anything else (a fraction is truncated) cannot be converted safely.
constexpr double kMaxLoggedCount = 9007199254740992.0;

std::optional<std::int64_t> logged_count(const nlohmann::json& value) {
  if (!value.is_number()) return std::nullopt;
  const double v = value.get<double>();
  if (!std::isfinite(v) || std::abs(v) > kMaxLoggedCount) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::int64_t integer_value(const mllog::LogRecord& r, const std::filesystem::path& file) {
  if (const auto n = logged_count(r.value)) return *n;
  throw std::runtime_error(file.string() + ":" + std::to_string(r.line) + ": " + r.key +
                           ": value " + r.value.dump() +
                           (r.value.is_number() ? " is out of range" : " is not a number"));
}

}  // namespace

std::int64_t skipped_steps(const std::filesystem::path& log) {
  static constexpr std::string_view kAnnouncements[] = {"reducing loss scale to ",
                                                        "reduced loss_scaler to "};
  std::ifstream in(log, std::ios::binary);
  std::set<std::string, std::less<>> scales;
  std::string line;
  while (std::getline(in, line) && scales.size() < 4096) {
    if (line.find(":::MLLOG") != std::string::npos) continue;
    for (const std::string_view announcement : kAnnouncements)
      for (std::size_t at = line.find(announcement); at != std::string::npos;
           at = line.find(announcement, at + 1)) {
        std::size_t end = at + announcement.size();
        const std::size_t begin = end;
        while (end < line.size() && end - begin < 32 &&
               (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.'))
          ++end;
        if (line.find_first_of("0123456789", begin) >= end) continue;
        // 65536.0 and 65536.000000 are one scale.
        std::string digits = line.substr(begin, end - begin);
        if (const std::size_t dot = digits.find('.'); dot != std::string::npos) {
          while (digits.back() == '0') digits.pop_back();
          if (digits.back() == '.') digits.pop_back();
        }
        scales.insert(std::move(digits));
      }
  }
  return static_cast<std::int64_t>(scales.size());
}

namespace {

PublishedRun read_run(const std::filesystem::path& file, PublishedResult& result) {
  PublishedRun run;
  run.file = file;
  std::optional<double> start, stop;
  std::int64_t last_epoch = 0;
  bool eval_open = false;  // an eval_start waits for its eval_stop
  mllog::ParseOptions options;
  options.wanted = [](std::string_view key, bool is_string) {
    return is_string && kKeys.count(key) ? mllog::ParseOptions::Want::all
                                         : mllog::ParseOptions::Want::skip;
  };
  mllog::for_each_record(
      file,
      [&](const mllog::LogRecord& r) {
        if (r.key == "run_start" && !start) {
          start = r.timestamp;
        } else if (r.key == "run_stop" && start && !stop) {
          stop = r.timestamp;
          if (r.metadata.is_object() && r.metadata.contains("status") &&
              r.metadata["status"].is_string())
            run.status = r.metadata["status"].get<std::string>();
        } else if (r.key == "eval_accuracy" && start && !stop) {
          ++run.evals;
          run.eval_times.push_back((r.timestamp - *start) / 1000.0);
          std::optional<std::int64_t> epoch;
          if (r.metadata.is_object() && r.metadata.contains("epoch_num"))
            epoch = logged_count(r.metadata["epoch_num"]);
          if (epoch) last_epoch = *epoch;
          run.eval_samples.push_back(epoch && *epoch > 1000 ? *epoch : 0);
        } else if (r.key == "eval_start" && start && !stop) {
          TimedEval e;
          e.start = e.stop = (r.timestamp - *start) / 1000.0;
          e.samples = logged_count(r.value);
          if ((!e.samples || *e.samples <= 1000) && r.metadata.is_object() &&
              r.metadata.contains("epoch_num"))
            e.samples = logged_count(r.metadata["epoch_num"]);
          if (e.samples && *e.samples <= 1000) e.samples.reset();
          if (eval_open) run.timed_evals.pop_back();  // a start without its stop times nothing
          run.timed_evals.push_back(e);
          eval_open = true;
        } else if (r.key == "eval_stop" && start && !stop && eval_open) {
          run.timed_evals.back().stop = (r.timestamp - *start) / 1000.0;
          eval_open = false;
        } else if (r.key == "train_samples" && start) {
          // What the run trained. Before run_start it is a configuration, not a count of this
          // run (Composer logs the dataset's size there); the last eval's epoch_num then counts.
          run.samples = integer_value(r, file);
        } else if (r.key == "global_batch_size") {
          result.global_batch_size = integer_value(r, file);
        } else if (r.key == "gradient_accumulation_steps") {
          const std::int64_t steps = integer_value(r, file);
          if (steps > std::numeric_limits<int>::max())
            throw std::runtime_error(file.string() + ":" + std::to_string(r.line) + ": " + r.key +
                                     ": value " + r.value.dump() + " is out of range");
          result.gradient_accumulation = static_cast<int>(steps);
        } else if (r.key == "eval_samples") {
          result.eval_samples = integer_value(r, file);
        } else if (r.key == "d_batch_size") {
          result.device_batch_size = integer_value(r, file);
        } else if (r.key == "opt_name" && r.value.is_string()) {
          result.opt_name = r.value.get<std::string>();
        } else if (r.key == "submission_division" && r.value.is_string()) {
          result.division = r.value.get<std::string>();
        }
      },
      [](const mllog::ParseError&) {});  // lines the official parser rejects carry no timing
  if (eval_open) run.timed_evals.pop_back();
  if (!start) throw IncompleteRun(file.string() + ": no run_start record");
  if (!stop)
    throw IncompleteRun(file.string() +
                        ": no run_stop record after run_start (the log ends before the run)");
  run.seconds = (*stop - *start) / 1000.0;
  run.skipped_steps = skipped_steps(file);
  // Early rounds log epoch_num 1 on every eval; later ones the samples seen.
  if (run.samples == 0 && last_epoch > 1000) run.samples = last_epoch;
  if (run.samples == 0)
    throw IncompleteRun(file.string() +
                        ": neither train_samples nor an eval epoch_num says how many samples "
                        "the run trained");
  return run;
}

// NVIDIA-style launch-line flags, read from the text around the MLLOG records.
void read_launch_flags(const std::filesystem::path& file, PublishedResult& result) {
  // Only the lines that look like a command line: the launch is echoed before the first records.
  std::ifstream in(file, std::ios::binary);
  std::string text, line;
  while (std::getline(in, line))
    if (line.find(":::MLLOG") == std::string::npos && line.find(" --") != std::string::npos &&
        text.size() < (1u << 20))
      text += line + "\n";
  // A flag is a word of its own: at the start or after a space or quote, followed by the end, a
  // space, a quote or "=" (so --unpad is not found in --unpad_fmha).
  const auto flag = [&](const std::string& name) {
    const auto separator = [](char c) {
      return std::isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"';
    };
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      if ((at == 0 || separator(text[at - 1])) &&
          (end == text.size() || separator(text[end]) || text[end] == '=')) {
        result.launch_flags.push_back(name);
        return true;
      }
    }
    return false;
  };
  result.global_exchange = flag("--exchange_padding");
  result.group_exchange = flag("--group_exchange_padding");
  result.bucket_clipping = flag("--local_gradient_clip");
  result.distributed_lamb = flag("--distributed_lamb");
  result.baseline = flag("--baseline");
  result.cuda_graph = flag("--use_cuda_graph");
  result.padded = flag("--pad_fmha");
  result.fmha = flag("--unpad_fmha");
  result.unpad = flag("--unpad") || result.fmha;
  result.dense_seq_output = flag("--dense_seq_output");
  // NVIDIA's run_pretraining.py pads every sequence to max_seq_length unless told otherwise.
  const bool nvidia_launch = text.find("run_pretraining.py") != std::string::npos &&
                             text.find("--train_batch_size=") != std::string::npos;
  result.full_padding =
      nvidia_launch && !result.unpad && !result.padded && !flag("--packed_samples");
  result.apex_amp = flag("--use_apex_amp");
  result.post_accumulation_allreduce = flag("--allreduce_post_accumulation");
  result.fp16_allreduce = flag("--allreduce_post_accumulation_fp16");
  std::smatch m;
  // Bounded repetitions only: libstdc++'s regex recurses once per repeated character.
  static const std::regex optimizer("--optimizer=(\\w{1,64})"),
      eval_batch("--eval_batch_size=(\\d{1,6})\\b"),
      eval_every("--eval_iter_samples=(\\d{1,12})\\b"),
      eval_first("--eval_iter_start_samples=(\\d{1,12})\\b");
  if (std::regex_search(text, m, optimizer)) {
    result.launch_flags.push_back(m.str(0));
    result.adam = ascii_lower(m.str(1)).find("adam") != std::string::npos;
  }
  if (std::regex_search(text, m, eval_batch)) {
    result.launch_flags.push_back(m.str(0));
    if (const int batch = std::stoi(m.str(1)); batch > 0) result.eval_batch_size = batch;
  }
  // NVIDIA's run_pretraining.py (and the codes derived from it) evaluate every
  // --eval_iter_samples samples from --eval_iter_start_samples on: v0.7 every 500,000 from
  // 3,000,000, which no later rule's cadence gives.
  if (std::regex_search(text, m, eval_every)) {
    result.launch_flags.push_back(m.str(0));
    if (const auto every = std::stoll(m.str(1)); every > 0) result.eval_every_samples = every;
  }
  if (std::regex_search(text, m, eval_first)) {
    result.launch_flags.push_back(m.str(0));
    if (const auto first = std::stoll(m.str(1)); first > 0) result.eval_first_samples = first;
  }
  // --split_batch_cnt Q1 Q2 ...: the whole numbers that follow it (at most 64, each < 10^6).
  if (const std::size_t at = text.find("--split_batch_cnt"); at != std::string::npos) {
    std::vector<int> quotas;
    std::size_t i = at + 17;
    while (quotas.size() < 64) {
      std::size_t j = i;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      std::size_t k = j;
      while (k < text.size() && k - j < 7 && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
      if (j == i || k == j || k - j > 6 ||
          (k < text.size() && !std::isspace(static_cast<unsigned char>(text[k])) &&
           text[k] != '\'' && text[k] != '"'))
        break;
      quotas.push_back(std::stoi(text.substr(j, k - j)));
      i = k;
    }
    if (!quotas.empty()) {
      std::string written;
      for (int q : quotas) written += " " + std::to_string(q);
      result.launch_flags.push_back("--split_batch_cnt" + written);
      result.stratified_quotas = quotas;
    }
  }
}

int positive_count(const json& system, const char* field, const std::filesystem::path& file) {
  const std::string text = system.contains(field) && system[field].is_string()
                               ? system[field].get<std::string>()
                           : system.contains(field) ? system[field].dump()
                                                    : "";
  try {  // a whole number, also written as a decimal ("1.0")
    std::size_t used = 0;
    const double n = std::stod(text, &used);
    if (used == text.size() && n >= 1 && n <= std::numeric_limits<int>::max() &&
        n == std::floor(n) && text.find_first_of("eEnNxX") == std::string::npos)
      return static_cast<int>(n);
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(file.string() + ": " + field + ": \"" + text +
                              "\" is not a positive whole number");
}

std::string string_field(const json& system, const char* field) {
  return system.contains(field) && system[field].is_string() ? system[field].get<std::string>()
                                                             : "";
}

// Samples per packed row: the samples each GPU trains per micro-step over the logged d_batch_size
// (rows), when that is a whole number from 2 to kMaxPacking; 1 otherwise (the shape undetermined,
// no d_batch_size, or rows that are samples).
int packing_factor(const PublishedResult& r) {
  if (!r.device_batch_size || *r.device_batch_size < 1 || r.global_batch_size < 1) return 1;
  std::int64_t world = 0;
  try {
    world = static_cast<std::int64_t>(positive_count(r.system, "number_of_nodes", r.system_file)) *
            positive_count(r.system, "accelerators_per_node", r.system_file);
  } catch (const std::invalid_argument&) {
    return 1;  // cluster_from_result names the field
  }
  // rows = world x accumulation x d_batch_size, refused once past the batch (no overflow).
  const std::int64_t gbs = r.global_batch_size, accumulation = std::max(1, r.gradient_accumulation);
  std::int64_t rows = *r.device_batch_size;
  if (rows > gbs / accumulation) return 1;
  rows *= accumulation;
  if (rows > gbs / world) return 1;
  rows *= world;
  if (gbs % rows != 0) return 1;
  const std::int64_t packing = gbs / rows;
  return packing <= kMaxPacking ? static_cast<int>(packing) : 1;
}

// A rack-scale NVLink (GB200 NVL72: `domain` GPUs) joins the trays' GPUs across nodes: for the
// network model a "node" is then an NVLink domain, the fewest of equal whole trays that hold the
// world, with its trays' NICs. Worlds past kMaxSimulatedRanks are left to cluster_from_result's
// error.
void group_nvlink_domains(int domain, NetworkSpec& n, std::vector<std::string>& notes) {
  const int tray = n.gpus_per_node;
  const std::int64_t world = static_cast<std::int64_t>(n.nodes) * tray;
  if (domain <= tray || world > kMaxSimulatedRanks) return;
  std::int64_t domains = (world + domain - 1) / domain;
  while (world % domains != 0 || (world / domains) % tray != 0) ++domains;  // at most n.nodes
  const auto trays = static_cast<int>(world / domains / tray);
  notes.push_back("NVLink across trays (up to " + std::to_string(domain) + " GPUs): " +
                  std::to_string(n.nodes) + " nodes of " + std::to_string(tray) + " GPUs as " +
                  std::to_string(domains) + " NVLink domain(s) of " + std::to_string(trays) +
                  " trays, " + std::to_string(trays * tray) + " GPUs, with the trays' NICs");
  n.nodes = static_cast<int>(domains);
  n.gpus_per_node = trays * tray;
  n.nics_per_node *= trays;
  n.nic_gbs_per_node *= trays;
}

// Why the network model cannot describe this accelerator (a TPU or IPU, a PCIe card), or nullopt.
std::optional<std::string> unmodelled_accelerator(const std::string& accelerator,
                                                  const std::filesystem::path& system_file) {
  if (!looks_like_gpu(accelerator))
    return system_file.string() + ": accelerator \"" + accelerator +
           "\" is not a GPU: mlbert simulate models GPU clusters only";
  if (is_pcie_card(accelerator))
    return system_file.string() + ": accelerator \"" + accelerator +
           "\" is a PCIe card: its GPUs talk over PCIe (or in pairs over an NVLink bridge), which "
           "mlbert simulate's network model (NVLink/NVSwitch inside a node, NICs between) does not "
           "describe";
  return std::nullopt;
}

}  // namespace

// Frameworks whose ops a Python program issues one by one (eager execution).
bool eager_framework(const PublishedResult& r) {
  return ascii_lower(r.framework).find("pytorch") != std::string::npos;
}

double PublishedResult::olympic_seconds() const {
  std::vector<double> seconds;
  for (const auto& r : runs) seconds.push_back(r.seconds);
  return logging::olympic_average(seconds, 0, 1).value_or(0);
}

std::optional<double> PublishedRun::run_start_excess() const {
  if (eval_times.size() < 2) return std::nullopt;
  const double excess = eval_times[0] - (eval_times[1] - eval_times[0]);
  if (!std::isfinite(excess)) return std::nullopt;
  return std::max(0.0, excess);
}

namespace {

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) +
          upper) /
         2;
}

}  // namespace

PublishedPhases published_phases(const PublishedResult& result,
                                 std::int64_t assumed_eval_interval) {
  std::vector<double> steps, evals, starts, intervals;  // intervals: one figure per run
  std::size_t interval_count = 0;
  bool from_cadence = false;
  const bool even_cadence = result.ruleset.rfind("0.", 0) != 0;
  for (const PublishedRun& run : result.runs) {
    const auto& t = run.timed_evals;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (std::isfinite(t[i].stop - t[i].start) && t[i].stop >= t[i].start)
        evals.push_back(t[i].stop - t[i].start);
      if (i + 1 == t.size() || !t[i].samples || !t[i + 1].samples || result.global_batch_size <= 0)
        continue;
      const double step_count = static_cast<double>(*t[i + 1].samples - *t[i].samples) /
                                static_cast<double>(result.global_batch_size);
      const double seconds = t[i + 1].start - t[i].stop;
      if (step_count >= 1 && std::isfinite(seconds) && seconds >= 0)
        steps.push_back(seconds / step_count);
    }
    if (even_cadence)
      if (const auto excess = run.run_start_excess()) starts.push_back(*excess);
    // From the second evaluation to the last: whole intervals, the run start left out.
    const std::size_t n = std::min(run.eval_samples.size(), run.eval_times.size());
    if (n >= 3 && result.global_batch_size > 0) {
      const std::int64_t first = run.eval_samples[1], last = run.eval_samples[n - 1];
      const bool stated = first > 0 && last > first;
      const double samples =
          stated ? static_cast<double>(last - first)
                 : static_cast<double>(n - 2) * static_cast<double>(assumed_eval_interval);
      const double step_count = samples / static_cast<double>(result.global_batch_size);
      const double seconds = run.eval_times[n - 1] - run.eval_times[1];
      if (step_count >= 1 && std::isfinite(seconds) && seconds >= 0) {
        intervals.push_back(seconds / step_count);
        interval_count += n - 2;
        from_cadence = from_cadence || !stated;
      }
    }
  }
  PublishedPhases p;
  p.step_seconds = median(steps);
  p.step_intervals = steps.size();
  p.eval_seconds = median(evals);
  p.timed_evals = evals.size();
  p.run_start_seconds = median(starts);
  p.interval_step_seconds = median(intervals);
  p.intervals = interval_count;
  p.intervals_from_cadence = from_cadence;
  return p;
}

PublishedResult read_published_result(const std::filesystem::path& dir,
                                      const std::string& ruleset) {
  PublishedResult result;
  result.dir = dir;
  auto files = logging::find_result_files(dir);
  // A submission package's <org>/results/<system>/ holds the logs in bert/.
  if (files.empty() && std::filesystem::is_directory(dir / logging::kBertBenchmark)) {
    result.dir = dir / logging::kBertBenchmark;
    files = logging::find_result_files(result.dir);
  }
  if (files.empty()) throw std::runtime_error(dir.string() + ": no result_*.txt files");
  const auto system_file = logging::find_system_description(result.dir);
  if (system_file.empty())
    throw std::runtime_error(dir.string() +
                             ": no system description (system.json beside the result files or "
                             "above bert/, or <org>/systems/<system>.json in a submission "
                             "package)");
  result.system_file = system_file;
  result.system = logging::read_json_file(system_file);
  if (!result.system.is_object())
    throw std::runtime_error(system_file.string() + ": must be a JSON object");
  // What cannot be modelled is said before the logs are read (a TPU's or an IPU's logs need not
  // follow the GPU implementations' records).
  if (const auto why = unmodelled_accelerator(string_field(result.system, "accelerator_model_name"),
                                              system_file))
    throw std::runtime_error(*why);
  if (!ruleset.empty()) {
    result.ruleset = ruleset;
  } else if (auto from_path = logging::ruleset_from_path(dir)) {
    result.ruleset = *from_path;
  }
  // A run whose log is cut short is left out, named; a folder of only such runs is an error.
  for (const auto& file : files) {
    try {
      result.runs.push_back(read_run(file, result));
    } catch (const IncompleteRun& e) {
      result.skipped_runs.push_back(e.what());
    }
  }
  if (result.runs.empty()) throw std::runtime_error(result.skipped_runs.front());
  read_launch_flags(files.front(), result);
  if (result.global_batch_size < 1)
    throw std::runtime_error(dir.string() + ": no global_batch_size record in the logs");
  if (result.division.empty()) result.division = string_field(result.system, "division");
  result.framework = string_field(result.system, "framework");
  // No flag of a launch line (the logs of most submissions echo none, or only the container's
  // `docker exec --env=...`): a PyTorch run is taken to be NVIDIA's reference launch.
  if (result.launch_flags.empty() && eager_framework(result)) {
    result.reference_launch = true;
    result.distributed_lamb = true;  // kReferenceLaunchFlags
  }
  // Packed samples come in rows of max_seq_length tokens, which hold about as many tokens on every
  // rank (the kernels run on the rows, padded); NVIDIA's packed configs, all but two, also replay
  // CUDA graphs.
  result.packing = packing_factor(result);
  if (result.packing > 1) {
    result.full_padding = false;  // rows of packed samples: attention on the real lengths
    result.padded = true;
    if (result.reference_launch) result.cuda_graph = true;
  }
  return result;
}

OfficialScore official_score(const PublishedResult& result) {
  OfficialScore out;
  if (result.ruleset.empty()) {
    out.note = "no official score: the ruleset is unknown (pass --ruleset)";
    return out;
  }
  try {
    logging::ScoreOptions options;
    options.ruleset = result.ruleset;
    const logging::SystemScore score = logging::score_system(result.dir, options);
    out.minutes = score.score;
    if (!score.score)
      out.note = "no official score: too few runs pass the " + result.ruleset + " compliance check";
  } catch (const std::exception& e) {
    out.note = std::string("no official score: ") + e.what();
  }
  return out;
}

namespace {

// One adapter group ("8x ConnectX-6 IB HDR 200Gb/Sec", "2x Mellanox ConnectX-6, 100Gb/s"): its
// speed, and its count before or after the speed; nullopt when it states no speed.
std::optional<ComputeNics> nics_of_group(const std::string& part) {
  ComputeNics nics;
  std::smatch m;
  static const std::regex rate(
      "(\\d{1,6}(?:\\.\\d{1,6})?)\\s{0,4}([gt])(?:bits?|b|bps)?(?:/s(?:ec)?|ps|e)?\\b",
      std::regex::icase);
  static const std::regex generation("\\b(edr|hdr|ndr|xdr)(\\d{0,4})\\b", std::regex::icase);
  std::size_t speed_end = 0, speed_begin = 0;
  if (std::regex_search(part, m, rate)) {
    nics.gbps_each = std::stod(m.str(1)) * (ascii_lower(m.str(2)) == "t" ? 1000 : 1);
    speed_begin = static_cast<std::size_t>(m.position());
    speed_end = speed_begin + static_cast<std::size_t>(m.length());
  } else if (std::regex_search(part, m, generation)) {
    const std::string g = ascii_lower(m.str(1));
    nics.gbps_each = !m.str(2).empty() ? std::stod(m.str(2))
                     : g == "edr"      ? 100
                     : g == "hdr"      ? 200
                     : g == "ndr"      ? 400
                                       : 800;
    speed_begin = static_cast<std::size_t>(m.position());
    speed_end = speed_begin + static_cast<std::size_t>(m.length());
  }
  if (!(nics.gbps_each > 0)) return std::nullopt;
  // The count: "8x" / "8 x" before the speed, else " x 8" after it (before a comma or semicolon).
  static const std::regex leading("(?:^|[^\\w.])(\\d{1,3})\\s{0,4}[xX](?=[\\s\\d]|$)");
  const std::string before = part.substr(0, speed_begin);
  std::optional<int> count;
  if (std::regex_search(before, m, leading)) count = std::stoi(m.str(1));
  for (std::size_t i = speed_end; !count && i + 1 < part.size() && part[i] != ',' && part[i] != ';';
       ++i) {
    if (!std::isspace(static_cast<unsigned char>(part[i])) ||
        (part[i + 1] != 'x' && part[i + 1] != 'X'))
      continue;
    std::size_t j = i + 2;
    while (j < part.size() && j < i + 6 && std::isspace(static_cast<unsigned char>(part[j]))) ++j;
    std::size_t k = j;
    while (k < part.size() && k < j + 4 && std::isdigit(static_cast<unsigned char>(part[k]))) ++k;
    if (k > j && k - j <= 3 &&
        (k == part.size() ||
         !(std::isalnum(static_cast<unsigned char>(part[k])) || part[k] == '_')))
      count = std::stoi(part.substr(j, k - j));
  }
  if (count && *count > 0) {
    nics.count = *count;
    nics.count_stated = true;
  }
  return nics;
}

bool names_other_network(const std::string& lowered) {
  for (const char* word : {"storage", "manag", "mgmt", "front"})
    if (lowered.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

std::optional<ComputeNics> parse_compute_nics(const std::string& host_networking) {
  // The parts of the text (its first 4 KB: a real one is a line or two): what precedes the first
  // "Label:" (label empty), then each label's part up to the next. The compute part is the one
  // labelled compute; else every part not labelled storage or management.
  const std::string networking = host_networking.substr(0, 4096);
  static const std::regex label("([A-Za-z][A-Za-z -]{0,24}):");
  std::vector<std::pair<std::string, std::string>> parts;
  std::string current;
  std::size_t at = 0;
  for (std::sregex_iterator it(networking.begin(), networking.end(), label), end; it != end; ++it) {
    parts.emplace_back(current, networking.substr(at, it->position() - at));
    current = ascii_lower(it->str(1));
    at = static_cast<std::size_t>(it->position() + it->length());
  }
  parts.emplace_back(current, networking.substr(at));
  std::string text;
  for (const auto& [name, part] : parts)
    if (name.find("compute") != std::string::npos) {
      text = part;
      break;
    }
  if (text.empty())
    for (const auto& [name, part] : parts)
      if (!names_other_network(name)) text += part + ",";

  // The part lists adapters apart (",", ";", "|", " + "): "1x Ethernet 40Gb/Sec, 8x ConnectX-6
  // IB HDR 200Gb/Sec". Items without a speed join the next item that has one ("2x Mellanox
  // ConnectX-6, 100Gb/s Ethernet" is two 100 Gb/s NICs), trailing ones the last group. The compute
  // fabric is the group of the most bandwidth (count x speed), the first on a tie; groups naming
  // storage, management or a front end only when nothing else states a speed.
  std::vector<std::string> items;
  std::string item;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool plus =
        c == '+' && i > 0 && text[i - 1] == ' ' && i + 1 < text.size() && text[i + 1] == ' ';
    if (c == ',' || c == ';' || c == '|' || plus) {
      items.push_back(item + ",");  // a count after the speed ends here
      item.clear();
    } else {
      item += c;
    }
  }
  items.push_back(item);
  std::vector<std::string> groups;
  std::string pending;
  for (const auto& it : items) {
    pending += it;
    if (nics_of_group(it)) {  // a speed never spans a separator
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty() && !groups.empty()) groups.back() += pending;
  std::optional<ComputeNics> best;
  bool best_other = true;
  for (const auto& group : groups) {
    const auto nics = nics_of_group(group);
    if (!nics) continue;
    const bool other = names_other_network(ascii_lower(group));
    const double total = nics->count * nics->gbps_each;
    if (!best || (best_other && !other) ||
        (best_other == other && total > best->count * best->gbps_each)) {
      best = nics;
      best_other = other;
    }
  }
  return best;
}

namespace {

// The machine from system.json: NVLink per GPU and direction (stated, or the datasheet's), the
// compute NICs (stated, or the reference system's one per GPU), the NVLink domains.
void read_network(const PublishedResult& r, const std::optional<AcceleratorDatasheet>& sheet,
                  NetworkSpec& n, std::vector<std::string>& notes) {
  const auto& system_file = r.system_file;
  std::smatch m;
  const std::string interconnect = string_field(r.system, "accelerator_interconnect");
  // A number of its own ("600GB/s", "900 GB/s"; not the "0" of "9o0 GB/s").
  static const std::regex nvlink("(?:^|[^\\w.])(\\d{1,6}(?:\\.\\d{1,6})?)\\s{0,4}GB/s",
                                 std::regex::icase);
  // Dell's "18xNVLink 25GB/s" states the links and each link's rate per direction (NVLink 3 and
  // 4: 25 GB/s); a figure alone ("600GB/s") is the GPU's total over both directions.
  static const std::regex links("(?:^|[^\\w.])(\\d{1,3})\\s{0,2}x\\s{0,2}nvlink",
                                std::regex::icase);
  std::smatch count;
  if (std::regex_search(interconnect, m, nvlink)) {
    const double stated = std::stod(m.str(1));
    if (std::regex_search(interconnect, count, links) && count.position() < m.position()) {
      n.nvlink_gbs = std::stoi(count.str(1)) * stated;
      notes.push_back("accelerator_interconnect \"" + interconnect.substr(0, 80) + "\": " +
                      count.str(1) + " NVLinks of " + m.str(1) + " GB/s per direction each");
    } else {
      n.nvlink_gbs = stated / 2;
    }
    if (!(n.nvlink_gbs > 0))
      throw std::invalid_argument(system_file.string() + ": accelerator_interconnect: \"" +
                                  m.str(1) + " GB/s\" is no bandwidth");
  } else if (sheet) {
    n.nvlink_gbs = sheet->nvlink_gbs / 2;
    notes.push_back("accelerator_interconnect states no GB/s: the datasheet's " +
                    std::to_string(static_cast<int>(sheet->nvlink_gbs)) + " GB/s NVLink");
  } else {
    throw std::invalid_argument(system_file.string() +
                                ": accelerator_interconnect states no bandwidth (e.g. 600GB/s)");
  }
  const std::string networking = string_field(r.system, "host_networking");
  const double reference_gbps = sheet ? sheet->reference_nic_gbps : kDefaultReferenceNicGbps;
  if (const auto nics = parse_compute_nics(networking)) {
    n.nics_per_node = nics->count;
    n.nic_gbs_per_node = nics->count * nics->gbps_each / 8;
    if (!nics->count_stated && n.nodes > 1)
      notes.push_back("host_networking states a compute NIC speed but no count: one NIC per node");
  } else if (n.nodes > 1) {
    n.nics_per_node = n.gpus_per_node;
    n.nic_gbs_per_node = n.gpus_per_node * reference_gbps / 8;
    notes.push_back("host_networking states no compute NICs: default one " +
                    std::to_string(static_cast<int>(reference_gbps)) +
                    " Gb/s NIC per GPU (the accelerator's reference system)");
  }

  if (sheet) group_nvlink_domains(sheet->nvlink_domain, n, notes);
}

// The run from the logs over these ranks: the batch, the optimizer, the clipping, the sampler and
// the load balancing, the skipped steps, the launch line, the evaluation cadence.
void read_run(const PublishedResult& r, const NetworkSpec& n, harness::RunSpec& run,
              std::vector<std::string>& notes) {
  const auto& system_file = r.system_file;
  run.ruleset = r.ruleset;
  run.division = r.division;
  run.global_batch_size = r.global_batch_size;
  run.gradient_accumulation = std::max(1, r.gradient_accumulation);
  const std::int64_t world = static_cast<std::int64_t>(n.nodes) * n.gpus_per_node;
  if (world > kMaxSimulatedRanks)
    throw std::invalid_argument(
        system_file.string() + ": number_of_nodes " + std::to_string(n.nodes) +
        " x accelerators_per_node " + std::to_string(n.gpus_per_node) + " is more than the " +
        std::to_string(kMaxSimulatedRanks) + " ranks mlbert simulate models");
  if (run.global_batch_size % (world * run.gradient_accumulation) != 0)
    throw std::invalid_argument(r.dir.string() + ": global_batch_size " +
                                std::to_string(run.global_batch_size) + " does not split over " +
                                std::to_string(world) + " GPUs x accumulation " +
                                std::to_string(run.gradient_accumulation));
  run.per_rank_batch =
      static_cast<int>(run.global_batch_size / (world * run.gradient_accumulation));
  if (r.opt_name) {
    run.optimizer.kind = ascii_lower(*r.opt_name).find("adam") != std::string::npos
                             ? harness::OptimizerKind::adamw
                             : harness::OptimizerKind::lamb;
  } else if (r.adam) {
    run.optimizer.kind = harness::OptimizerKind::adamw;
  } else {
    run.optimizer.kind = harness::OptimizerKind::lamb;
    notes.push_back("the logs name no optimizer (no opt_name): LAMB assumed");
  }
  // --local_gradient_clip clips each bucket before its allreduce on Samsung's own path; on the
  // --baseline path it clips the whole local gradient before the one allreduce.
  if (r.bucket_clipping && !r.baseline && !r.distributed_lamb)
    run.clipping = harness::ClippingMode::bucket_before_allreduce;
  else
    run.clipping = harness::ClippingMode::after_allreduce;
  if (r.stratified_quotas &&
      std::accumulate(r.stratified_quotas->begin(), r.stratified_quotas->end(), std::int64_t{0}) ==
          run.per_rank_batch) {
    run.sampler = harness::SamplerKind::stratified;
    run.stratified_quotas = *r.stratified_quotas;
  }
  if (r.group_exchange) {
    run.load_balancing = harness::LoadBalancing::node_exchange;
  } else if (r.global_exchange) {
    run.load_balancing = harness::LoadBalancing::global_exchange;
  } else if (r.full_padding) {
    run.load_balancing = harness::LoadBalancing::none;
    notes.push_back(
        "no --unpad on NVIDIA's run_pretraining.py launch line: every sequence padded to " +
        std::to_string(run.max_seq_length) +
        " tokens, attention too (the model removes no padding), and no load balancing (every "
        "rank's work is the same)");
  } else if (r.packing > 1) {
    run.load_balancing = harness::LoadBalancing::none;
    notes.push_back("packed samples: d_batch_size " + std::to_string(*r.device_batch_size) +
                    " rows per GPU for " + std::to_string(run.per_rank_batch) + " samples, " +
                    std::to_string(r.packing) +
                    " per row; no load balancing (NVIDIA's packed configs pass no "
                    "--exchange_padding: the packing evens the rows)");
  } else {
    run.load_balancing = harness::LoadBalancing::global_exchange;
    notes.push_back(
        "the logs state no load balancing: global-exchange assumed (NVIDIA's "
        "exchange padding, the GPU submissions' practice); --set "
        "run.load_balancing=none to change");
  }
  std::int64_t skipped = 0, most = 0;
  for (const PublishedRun& run : r.runs) {
    skipped += run.skipped_steps;
    most = std::max(most, run.skipped_steps);
  }
  if (skipped > 0)
    notes.push_back("loss-scale overflows: " + std::to_string(skipped) + " steps over the " +
                    std::to_string(r.runs.size()) + " runs (at most " + std::to_string(most) +
                    " in one) were skipped for an overflow, which the logs announce, and not "
                    "counted in train_samples (global_step does not advance on them): each is "
                    "timed as a whole step beyond the logged samples");
  if (!r.launch_flags.empty()) {
    std::string flags;
    for (const auto& f : r.launch_flags) flags += (flags.empty() ? "" : " ") + f;
    notes.push_back("read from the launch line in the logs: " + flags);
  }
  if (r.reference_launch)
    notes.push_back(std::string("the logs echo no launch flag: NVIDIA's reference launch of its "
                                "PyTorch BERT assumed, ") +
                    kReferenceLaunchFlags +
                    " (its run_and_time.sh passes it to every run in the v1.1-v3.1 results; the "
                    "config's CUDA graphs, padding or packing are not in the folder)");
  run.eval.eval_samples = r.eval_samples;
  if (r.eval_every_samples) {  // the cadence the run used, where its launch line states it
    run.eval.mlperf_cadence = false;
    run.eval.interval_samples = *r.eval_every_samples;
    run.eval.start_samples = r.eval_first_samples.value_or(0);
  }
  run.eval.batch_size = r.eval_batch_size.value_or(kAssumedEvalBatchSize);
  if (!r.eval_batch_size)
    notes.push_back("eval batch size not stated: " + std::to_string(kAssumedEvalBatchSize) +
                    " per rank assumed");
  run.max_steps = 0;
}

// How the implementation reduces its gradients and issues its kernels, from its launch flags.
void read_reduction(const PublishedResult& r, const NetworkSpec& n, harness::RunSpec& run,
                    std::vector<std::string>& notes) {
  if (r.distributed_lamb) {
    // apex DistributedFusedLAMB (NVIDIA's optim/distributed_fused_lamb.py in the v2.0 results):
    // the model's fp16 gradients flattened, their norm, the pre-reduction scaling, a
    // reduce-scatter in the node, an allreduce of each shard between nodes, LAMB on the shard, an
    // all-gather of the fp16 parameters in the node.
    run.bucket_mb = kWholeGradientBucketMb;
    notes.push_back(
        "--distributed_lamb: the gradient flattened, normed and scaled (10 bytes per parameter), "
        "reduce-scattered in the node and allreduced between nodes in fp16 after backward, the "
        "optimizer on the node's 1/" +
        std::to_string(n.gpus_per_node) + " shard, the fp16 parameters all-gathered in the node");
  } else if (r.bucket_clipping && !r.baseline) {
    // Samsung's run_pretraining.py (v1.1 results): with --local_gradient_clip the model is wrapped
    // in DDP (bucket_cap_mb=25) with a comm hook that norms and scales each bucket before its
    // allreduce; take_optimizer_step, the --allreduce_post_accumulation path, runs only with
    // --baseline.
    run.bucket_mb = kDdpBucketCapMb * sizeof(float) / 2;  // fp16 gradients in f32 bucket units
    notes.push_back(
        "--local_gradient_clip without --baseline (Samsung's code): DDP allreduces 25 MiB buckets "
        "of fp16 gradients as backward fills them, each normed and scaled first (6 bytes per "
        "element); amp then unscales into the f32 master gradients (6 bytes per parameter); "
        "--allreduce_post_accumulation is unused on this path");
  } else if (r.post_accumulation_allreduce) {
    // NVIDIA's --allreduce_post_accumulation: the whole gradient in one allreduce after backward.
    run.bucket_mb = kWholeGradientBucketMb;
    notes.push_back(
        "--allreduce_post_accumulation: one allreduce of the whole gradient after backward, not "
        "overlapped" +
        std::string(r.fp16_allreduce ? ", in fp16" : "") +
        "; amp's unscale into the f32 master gradients, the scaling into the flat buffer and "
        "back (18 bytes per parameter)" +
        (r.bucket_clipping ? "; --local_gradient_clip: the norm and scaling of the master "
                             "gradients before it (12 more)"
                           : ""));
  } else {
    run.bucket_mb = harness::RunSpec().bucket_mb;
    notes.push_back("no gradient reduction stated: mlbert's overlapped 25 MiB f32 buckets");
  }
  notes.push_back(r.cuda_graph ? "--use_cuda_graph: kernels replayed from CUDA graphs, no host "
                                 "issue per kernel"
                  : eager_framework(r)
                      ? "framework \"" + r.framework +
                            "\" without --use_cuda_graph: each kernel issued by an eager op "
                            "from Python, 7 us (pytorch/pytorch#41383) + 3 us launch"
                      : "no framework stated: mlbert's C++ launches, 3 us per kernel");
  if (r.packing > 1)
    notes.push_back("packed rows: kernels on rows x " + std::to_string(run.max_seq_length) +
                    " tokens, attention on the real lengths" +
                    (r.reference_launch
                         ? std::string(", the step replayed from CUDA graphs, as NVIDIA's packed "
                                       "configs run (--packed_samples --pad_fmha --use_cuda_graph "
                                       "in 90 of the 92 with PACKING_FACTOR 2, v2.0-v4.0 results)")
                         : std::string()));
  else if (r.padded)
    notes.push_back("--pad_fmha: kernels on sequences x " + std::to_string(run.max_seq_length) +
                    " tokens, attention on the real lengths");
}

}  // namespace

ClusterRun cluster_from_result(const PublishedResult& r) {
  const auto& system_file = r.system_file;
  ClusterRun c;
  c.name = (r.dir.filename() == logging::kBertBenchmark ? r.dir.parent_path() : r.dir)
               .filename()
               .string();
  c.accelerator = string_field(r.system, "accelerator_model_name");
  if (const auto why = unmodelled_accelerator(c.accelerator, system_file))
    throw std::invalid_argument(*why);
  auto& notes = c.notes;
  NetworkSpec& n = c.network;
  n.nodes = positive_count(r.system, "number_of_nodes", system_file);
  n.gpus_per_node = positive_count(r.system, "accelerators_per_node", system_file);
  read_network(r, datasheet_for(c.accelerator), n, notes);
  read_run(r, n, c.run, notes);
  read_reduction(r, n, c.run, notes);
  c.model = bert::BertConfig::preset("bert-large");
  return c;
}

namespace {

// The read-backs, host loops and buffer broadcast the published implementation's code makes
// (results.h), in SimulationOptions. CUDA graphs replay a step with none of them (NVIDIA removed
// the read-backs to capture the whole step).
void implementation_host(const PublishedResult& r, SimulationOptions& o) {
  if (r.cuda_graph || !eager_framework(r)) return;
  const double eager_op = kPytorchEagerOpSeconds, launch = kDriverLaunchSeconds;
  if (r.unpad) {
    o.syncs_before_encoder = kUnpadReadBacks;
    o.host_notes.push_back(
        "--unpad: " + std::to_string(kUnpadReadBacks) +
        " read-backs before the encoder (generate_mask: nonzero, the longest sequence, the token "
        "count; padding.py), each emptying the GPU's queue and costing a 20 us round trip");
  }
  if (r.dense_seq_output) {
    o.syncs_before_heads = kDenseSeqOutputReadBacks;
    o.host_notes.push_back("--dense_seq_output: " + std::to_string(kDenseSeqOutputReadBacks) +
                           " read-backs before the heads (nonzero of the masked positions and a "
                           "boolean-mask index: dynamic shapes; modeling.py)");
  }
  if (!(r.bucket_clipping && !r.baseline && !r.distributed_lamb)) return;
  // Samsung's own path: DDP with the bucket-wise clipping hook, apex amp O2.
  o.sync_per_bucket = true;
  o.bucket_hook_seconds = kBucketHookOps * (eager_op + launch);
  o.host_notes.push_back(
      "DDP communication hook (Samsung's run_pretraining.py): a read-back per gradient bucket "
      "(the clip coefficient, a CUDA tensor, passed as apex multi_tensor_scale's float argument) "
      "as backward finishes it, and " +
      std::to_string(kBucketHookOps) + " eager ops with a launch each (" +
      std::to_string(static_cast<int>(std::lround(o.bucket_hook_seconds * 1e6))) + " us of host)");
  if (r.apex_amp) {
    o.sync_after_backward = true;
    o.host_seconds_per_tensor = kAmpEagerOpsPerTensor * eager_op + kAmpLaunchesPerTensor * launch;
    o.host_notes.push_back(
        "--use_apex_amp: the loss scaler reads its overflow flag back after backward; then per "
        "parameter tensor amp's empty_like of the f32 master gradient and zero_grad's detach and "
        "zero_ (" +
        std::to_string(kAmpEagerOpsPerTensor) + " eager ops, " +
        std::to_string(kAmpLaunchesPerTensor) + " launch: " +
        std::to_string(static_cast<int>(std::lround(o.host_seconds_per_tensor * 1e6))) +
        " us a tensor) run on the host while the GPU does the passes and the optimizer");
  }
  if (r.fmha) {
    const bert::BertConfig model = bert::BertConfig::preset("bert-large");
    const double h = static_cast<double>(model.hidden_size);
    o.forward_broadcast_bytes = static_cast<double>(model.num_hidden_layers) * (3 * h * h + 3 * h) *
                                kFmhaBufferBytesPerElement;
    o.host_notes.push_back(
        "DDP's broadcast_buffers (on by default): before each forward rank 0 broadcasts the "
        "module buffers, the FMHA layers' fused QKV weights and biases (fmha.py registers them as "
        "buffers): " +
        std::to_string(static_cast<long long>(o.forward_broadcast_bytes)) +
        " bytes of fp16, NCCL's ring broadcast, exposed");
  }
}

}  // namespace

SimulationOptions simulation_options_for(const PublishedResult& result, SimulationOptions base) {
  if (result.distributed_lamb) {
    base.overlap = false;
    base.gradient_wire_bytes = 2;
    base.optimizer_shard = OptimizerShard::node;
    base.gradient_pass_bytes_per_parameter = kDistributedLambPassBytes;
    base.gradient_passes =
        "DistributedFusedLAMB: fp16 gradients flattened (2 + 2), their norm (2), scaled (2 + 2)";
  } else if (result.bucket_clipping && !result.baseline) {
    base.overlap = true;
    base.gradient_wire_bytes = 2;
    base.bucket_norm_bytes_per_element = kDdpBucketNormBytes;
    base.gradient_pass_bytes_per_parameter = kAmpUnscaleBytes;
    base.gradient_passes = "amp unscale of the fp16 gradients into f32 master gradients (2 + 4)";
  } else if (result.post_accumulation_allreduce) {
    base.overlap = false;
    if (result.fp16_allreduce) base.gradient_wire_bytes = 2;
    base.gradient_pass_bytes_per_parameter =
        kPostAccumulationPassBytes + (result.bucket_clipping ? kLocalClipPassBytes : 0);
    base.gradient_passes =
        std::string(
            "amp unscale of the fp16 gradients into f32 master gradients (2 + 4), scaled "
            "into the flat allreduce buffer (4 + 2) and back (2 + 4)") +
        (result.bucket_clipping ? ", --local_gradient_clip: norm (4) and scaling (4 + 4)" : "");
  }
  if (result.cuda_graph) {
    base.host_seconds_per_kernel = 0;
    base.host_issue = "--use_cuda_graph: replayed CUDA graphs";
  } else if (eager_framework(result)) {
    base.host_seconds_per_kernel = kPytorchEagerOpSeconds + kDriverLaunchSeconds;
    base.host_issue = "eager " + result.framework +
                      " from Python: ~7 us per op (pytorch/pytorch#41383) + a 3 us launch";
  }
  base.padded = result.padded || result.full_padding;
  base.padded_attention = result.full_padding;
  base.packing = result.packing;
  implementation_host(result, base);
  return base;
}

void time_longest_run(const PublishedResult& result, std::int64_t global_batch_size,
                      SimulationOptions& o) {
  std::int64_t steps = 0, evals = 0;
  for (const PublishedRun& run : result.runs) {
    steps = std::max(steps, run.steps(global_batch_size));
    evals = std::max(evals, run.evals);
  }
  o.steps = steps;
  o.evals = evals;
}

}  // namespace mlbert::simulate
