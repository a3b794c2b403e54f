// Compliant example BERT logs (see example_log.h), built record by record with format_line so the
// text is exactly what the Python mllog would print for the same calls.
#include "mlperf_logging/rules/example_log.h"

#include <stdexcept>
#include <string>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/rules/bert_tensors.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::mllog {
namespace {

class Writer {
 public:
  explicit Writer(std::int64_t start_ms) : now_(start_ms) {}
  void advance(std::int64_t ms) { now_ += ms; }
  void record(EventType type, std::string_view key, const Json& value,
              Json metadata = Json::object()) {
    Json merged = Json::object();
    merged["file"] = "run_pretraining.py";
    merged["lineno"] = ++lineno_;
    for (const auto& [k, v] : metadata.items()) merged[k] = v;
    text_ += format_line("", now_, type, key, value, merged);
    text_ += '\n';
  }
  void event(std::string_view key, const Json& value, Json metadata = Json::object()) {
    record(EventType::point_in_time, key, value, std::move(metadata));
  }
  void start(std::string_view key, const Json& value, Json metadata = Json::object()) {
    record(EventType::interval_start, key, value, std::move(metadata));
  }
  void end(std::string_view key, const Json& value, Json metadata = Json::object()) {
    record(EventType::interval_end, key, value, std::move(metadata));
  }
  void chatter(const std::string& line) { text_ += line + '\n'; }
  std::string take() { return std::move(text_); }

 private:
  std::int64_t now_;
  int lineno_ = 0;
  std::string text_;
};

}  // namespace

std::string example_bert_log(const ExampleLogOptions& o) {
  if (const std::string absence = bert_absence(o.ruleset); !absence.empty())
    throw std::invalid_argument("no compliant BERT log exists for this ruleset: " + absence);
  Writer w(o.start_ms);
  const TrainingRuleset& r = training_ruleset(o.ruleset);
  const bool samples_count = r.epoch_alternative == "samples_count";
  const int global_batch_size = 448;
  const int samples_per_eval = 150000;  // floor(0.05 * (230.23 * 448 + 3e6), 25000)

  w.event(key::cache_clear, true);
  w.start(key::init_start, nullptr);
  if (r.submission_org_platform) {
    w.event(key::submission_org, "mlbert");
    w.event(key::submission_platform, "1xDGX-A100");
  }
  w.event(key::submission_division, o.division);
  if (r.submission_status) w.event(key::submission_status, "onprem");
  w.event(key::submission_benchmark, "bert");
  w.event(key::seed, 12345);
  if (o.weights_initialization) {
    for (const auto& tensor : bert_weight_tensor_names())
      w.event(key::weights_initialization, nullptr, {{"tensor", tensor}});
  }
  w.event(key::global_batch_size, global_batch_size);
  w.event(key::opt_base_learning_rate, 0.000425);
  w.event(r.lamb_epsilon_key, 1e-06);
  w.event(key::opt_learning_rate_training_steps, 6700);
  w.event(key::opt_learning_rate_warmup_steps, 0);
  w.event(key::num_warmup_steps, 0);
  w.event(key::start_warmup_step, 0);
  w.event(key::opt_lamb_beta_1, 0.9);
  w.event(key::opt_lamb_beta_2, 0.999);
  w.event(key::opt_lamb_weight_decay_rate, 0.01);
  w.event(key::gradient_accumulation_steps, 1);
  w.event(key::max_sequence_length, 512);
  w.event(key::train_samples, 156725653);
  w.event(key::eval_samples, 10000);
  w.advance(95000);
  w.end(key::init_stop, nullptr);
  w.advance(10);
  w.start(key::run_start, nullptr);

  const double accuracies[] = {0.6571, 0.6983, 0.7115, 0.7206};
  const int evals = o.evals < 1 ? 1 : o.evals;
  for (int e = 0; e < evals; ++e) {
    const int first = e * samples_per_eval;
    const int last = (e + 1) * samples_per_eval;
    Json block = {{"first_epoch_num", first}, {"epoch_count", samples_per_eval}};
    if (samples_count) block["samples_count"] = first;
    w.start(key::block_start, nullptr, block);
    for (int n = 0; n < o.noise_lines_per_eval; ++n)
      w.chatter("step " + std::to_string(n) + " : loss 2.1537, lr 0.000425, samples " +
                std::to_string(first + n * global_batch_size));
    w.advance(60000);
    Json at_eval = {{"epoch_num", last}};
    if (samples_count) at_eval["samples_count"] = last;
    w.start(key::eval_start, nullptr, at_eval);
    w.advance(3000);
    double accuracy = e == evals - 1 ? accuracies[3] : accuracies[e % 3];
    w.event(key::eval_accuracy, accuracy, at_eval);
    w.end(key::eval_stop, nullptr, at_eval);
    Json stop = {{"first_epoch_num", first}};
    if (samples_count) stop["samples_count"] = last;
    w.end(key::block_stop, nullptr, stop);
  }
  w.end(key::run_stop, nullptr, {{"status", "success"}});
  return w.take();
}

}  // namespace mlbert::mllog
