// One pass over a result log for its facts (see log_facts.h). Every record is decoded: the digest
// of the records needs them all, and the advisory audit runs only when asked for.
#include "mlperf_logging/advise/log_facts.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/sha256.h"

namespace mlbert::logging {
namespace {

// Keys that set the training besides the opt_* ones (BERT's closed rules ask for these).
constexpr std::array<std::string_view, 7> kSettingKeys = {
    "global_batch_size",  "gradient_accumulation_steps", "max_predictions_per_seq",
    "max_sequence_length", "num_warmup_steps",           "start_warmup_step",
    "seed"};

bool is_hyperparameter(std::string_view key) {
  return key.starts_with("opt_") || std::find(kSettingKeys.begin(), kSettingKeys.end(), key) !=
                                        kSettingKeys.end();
}

// JSON text that never throws: a string the parser could not make valid UTF-8 is replaced.
std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const nlohmann::json* metadata_field(const nlohmann::json& metadata, const char* name) {
  if (!metadata.is_object()) return nullptr;
  const auto it = metadata.find(name);
  return it == metadata.end() ? nullptr : &*it;
}

void set_first(std::optional<LoggedValue>& slot, const mllog::LogRecord& record) {
  if (!slot) slot = LoggedValue{record.value, record.line};
}

class FactsReader {
 public:
  explicit FactsReader(LogFacts& facts) : facts_(facts) {}

  void on_record(const mllog::LogRecord& r) {
    ++facts_.records;
    read_clock(r);
    if (const nlohmann::json* file = metadata_field(r.metadata, "file"); file && file->is_string())
      facts_.source_files.insert(file->get<std::string>());
    if (r.key != "seed") {
      digest_.update(r.event_type + '\x1f' + r.key + '\x1f' + json_text(r.value) + '\x1f' +
                     json_text(r.metadata) + '\n');
    }
    if (!r.key_is_string) return;
    if (!facts_.run_start_line && is_hyperparameter(r.key) &&
        !find_hyperparameter(facts_, r.key))
      facts_.hyperparameters.push_back({r.key, LoggedValue{r.value, r.line}});
    if (r.key == "global_batch_size") set_first(facts_.global_batch_size, r);
    else if (r.key == "submission_org") set_first(facts_.submission_org, r);
    else if (r.key == "submission_platform") set_first(facts_.submission_platform, r);
    else if (r.key == "submission_division") set_first(facts_.submission_division, r);
    else if (r.key == "seed") read_seed(r);
    else if (r.key == "eval_accuracy") read_eval(r);
    else if (r.key == "run_start" && !facts_.run_start_line) {
      facts_.run_start_line = r.line;
      facts_.run_start_ms = r.time_ms;
    } else if (r.key == "run_stop" && !facts_.run_stop_line) {
      facts_.run_stop_line = r.line;
      facts_.run_stop_ms = r.time_ms;
    }
  }

  std::string digest() { return digest_.hex(); }

 private:
  void read_clock(const mllog::LogRecord& r) {
    if (r.time_ms <= 0 || (!facts_.run_start_line && r.key != "run_start")) return;
    if (latest_ms_ && r.time_ms < *latest_ms_ - kClockJitterMs)
      facts_.clock_steps_back.push_back({r.line, *latest_ms_, r.time_ms});
    latest_ms_ = std::max(latest_ms_.value_or(r.time_ms), r.time_ms);
  }

  void read_seed(const mllog::LogRecord& r) {
    LoggedSeed seed{r.value, "", 0, r.line};
    if (const nlohmann::json* file = metadata_field(r.metadata, "file"); file && file->is_string())
      seed.source_file = file->get<std::string>();
    if (const nlohmann::json* lineno = metadata_field(r.metadata, "lineno");
        lineno && lineno->is_number_integer())
      seed.source_line = lineno->get<std::int64_t>();
    facts_.seeds.push_back(std::move(seed));
  }

  void read_eval(const mllog::LogRecord& r) {
    const nlohmann::json* epoch = metadata_field(r.metadata, "epoch_num");
    facts_.evals.push_back({epoch ? *epoch : nlohmann::json(), r.value, r.line});
  }

  LogFacts& facts_;
  Sha256 digest_;
  std::optional<std::int64_t> latest_ms_;
};

}  // namespace

LogFacts read_log_facts(const std::filesystem::path& file) {
  LogFacts facts;
  facts.file = file;
  FactsReader reader(facts);
  try {
    facts.sha256 = sha256_file_hex(file);
    mllog::for_each_record(
        file, [&](const mllog::LogRecord& r) { reader.on_record(r); },
        [&](const mllog::ParseError&) { ++facts.parse_errors; });
  } catch (const std::exception& e) {
    facts.read_error = e.what();
  }
  facts.records_digest = reader.digest();
  return facts;
}

const LoggedValue* find_hyperparameter(const LogFacts& facts, std::string_view key) {
  for (const auto& [name, value] : facts.hyperparameters)
    if (name == key) return &value;
  return nullptr;
}

std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : json_text(value);
}

}  // namespace mlbert::logging
