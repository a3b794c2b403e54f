// Reading the launch line a published log echoes (see launch_line.h).
#include "simulate/launch_line.h"

#include <cctype>
#include <fstream>
#include <regex>

#include "simulate/profile.h"

namespace mlbert::simulate {
namespace {

// The lines of `log` that look like a command line: the launch is echoed before the first records.
std::string command_text(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::string text, line;
  while (std::getline(in, line))
    if (line.find(":::MLLOG") == std::string::npos && line.find(" --") != std::string::npos &&
        text.size() < (1u << 20))
      text += line + "\n";
  return text;
}

bool separator(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"';
}

// The flags of one command text, each recorded in LaunchLine::flags as it is found.
class FlagReader {
 public:
  FlagReader(const std::string& text, LaunchLine& line) : text_(text), line_(line) {}

  // A flag is a word of its own: at the start or after a space or quote, followed by the end, a
  // space, a quote or "=".
  bool flag(const std::string& name) {
    for (std::size_t at = text_.find(name); at != std::string::npos;
         at = text_.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      if ((at == 0 || separator(text_[at - 1])) &&
          (end == text_.size() || separator(text_[end]) || text_[end] == '=')) {
        line_.flags.push_back(name);
        return true;
      }
    }
    return false;
  }

  // The first match of `pattern`, recorded; its first group, or nullopt.
  std::optional<std::string> value(const std::regex& pattern) {
    std::smatch m;
    if (!std::regex_search(text_, m, pattern)) return std::nullopt;
    line_.flags.push_back(m.str(0));
    return m.str(1);
  }

  // --split_batch_cnt Q1 Q2 ...: the whole numbers that follow it (at most 64, each < 10^6).
  std::optional<std::vector<int>> quotas() {
    static const std::string name = "--split_batch_cnt";
    const std::size_t at = text_.find(name);
    if (at == std::string::npos) return std::nullopt;
    std::vector<int> quotas;
    std::size_t i = at + name.size();
    while (quotas.size() < 64) {
      std::size_t j = i;
      while (j < text_.size() && (text_[j] == ' ' || text_[j] == '\t')) ++j;
      std::size_t k = j;
      while (k < text_.size() && k - j < 7 && std::isdigit(static_cast<unsigned char>(text_[k])))
        ++k;
      if (j == i || k == j || k - j > 6 || (k < text_.size() && !separator(text_[k]))) break;
      quotas.push_back(std::stoi(text_.substr(j, k - j)));
      i = k;
    }
    if (quotas.empty()) return std::nullopt;
    std::string written;
    for (int q : quotas) written += " " + std::to_string(q);
    line_.flags.push_back(name + written);
    return quotas;
  }

 private:
  const std::string& text_;
  LaunchLine& line_;
};

// The flags that switch a code path on; their order is the order LaunchLine::flags lists them in.
void read_switches(const std::string& text, FlagReader& read, LaunchLine& l) {
  l.exchange_padding = read.flag("--exchange_padding");
  l.group_exchange_padding = read.flag("--group_exchange_padding");
  l.local_gradient_clip = read.flag("--local_gradient_clip");
  l.distributed_lamb = read.flag("--distributed_lamb");
  l.baseline = read.flag("--baseline");
  l.use_cuda_graph = read.flag("--use_cuda_graph");
  l.pad_fmha = read.flag("--pad_fmha");
  l.unpad_fmha = read.flag("--unpad_fmha");
  l.unpad = read.flag("--unpad") || l.unpad_fmha;
  l.dense_seq_output = read.flag("--dense_seq_output");
  l.nvidia_run_pretraining = text.find("run_pretraining.py") != std::string::npos &&
                             text.find("--train_batch_size=") != std::string::npos;
  l.packed_samples =
      l.nvidia_run_pretraining && !l.unpad && !l.pad_fmha && read.flag("--packed_samples");
  l.use_apex_amp = read.flag("--use_apex_amp");
  l.allreduce_post_accumulation = read.flag("--allreduce_post_accumulation");
  l.allreduce_post_accumulation_fp16 = read.flag("--allreduce_post_accumulation_fp16");
}

// The flags with a value: the optimizer, the evaluation's batch and cadence, the sampler's quotas.
void read_values(FlagReader& read, LaunchLine& l) {
  // Bounded repetitions only: libstdc++'s regex recurses once per repeated character.
  static const std::regex optimizer("--optimizer=(\\w{1,64})"),
      eval_batch("--eval_batch_size=(\\d{1,6})\\b"),
      eval_every("--eval_iter_samples=(\\d{1,12})\\b"),
      eval_first("--eval_iter_start_samples=(\\d{1,12})\\b");
  if (const auto name = read.value(optimizer))
    l.adam = ascii_lower(*name).find("adam") != std::string::npos;
  if (const auto batch = read.value(eval_batch); batch && std::stoi(*batch) > 0)
    l.eval_batch_size = std::stoi(*batch);
  // NVIDIA's run_pretraining.py (and the codes derived from it) evaluate every
  // --eval_iter_samples samples from --eval_iter_start_samples on: v0.7 every 500,000 from
  // 3,000,000, which no later rule's cadence gives.
  if (const auto every = read.value(eval_every); every && std::stoll(*every) > 0)
    l.eval_every_samples = std::stoll(*every);
  if (const auto first = read.value(eval_first); first && std::stoll(*first) > 0)
    l.eval_first_samples = std::stoll(*first);
  l.stratified_quotas = read.quotas();
}

}  // namespace

LaunchLine read_launch_line(const std::filesystem::path& log) {
  const std::string text = command_text(log);
  LaunchLine line;
  FlagReader read(text, line);
  read_switches(text, read, line);
  read_values(read, line);
  return line;
}

}  // namespace mlbert::simulate
