// libFuzzer target: the compliance engine. Byte 0 picks the ruleset and the --werror/--quiet flags;
// with bit 0x80 of byte 1 set, the rest of the input is spliced into a compliant example log (at a
// line chosen by byte 1) so mutations reach every config of the queue; otherwise the rest is the
// whole log. A verdict must never contradict its messages.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "mlperf_logging/rules/checker.h"
#include "mlperf_logging/rules/example_log.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mllog = mlbert::mllog;

namespace {

const std::string& example(std::size_t ruleset, bool open) {
  static std::vector<std::string> logs = [] {
    std::vector<std::string> out;
    for (const auto& r : mllog::supported_rulesets())
      for (const char* division : {"closed", "open"}) {
        mllog::ExampleLogOptions options;
        // A ruleset without BERT (5.1.0) has no compliant BERT log: seed it with the last round's.
        options.ruleset = mllog::bert_absence(r).empty() ? r : mllog::bert_rulesets().back();
        options.division = division;
        options.evals = 2;
        // Only closed logs of the rulesets that ask for the 398 tensor records get them (the
        // open division does not check them): a log without them parses ~8x faster.
        options.weights_initialization = mllog::find_training_ruleset(r)->weights_initialization &&
                                         division == std::string("closed");
        out.push_back(mllog::example_bert_log(options));
      }
    return out;
  }();
  return logs[ruleset * 2 + (open ? 1 : 0)];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto& rulesets = mllog::supported_rulesets();
  const std::size_t ruleset = data[0] % rulesets.size();
  mllog::CheckOptions options;
  options.ruleset = rulesets[ruleset];
  options.werror = data[0] & 0x10;
  options.quiet = data[0] & 0x20;
  std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  std::string log;
  if (data[1] & 0x80) {
    const std::string& base = example(ruleset, data[0] & 0x40);
    // Insert after the n-th line of the example.
    std::size_t target = data[1] & 0x7F, at = 0;
    for (std::size_t line = 0; line < target && at < base.size(); ++line) {
      std::size_t nl = base.find('\n', at);
      at = nl == std::string::npos ? base.size() : nl + 1;
    }
    log = base.substr(0, at) + std::string(rest) + "\n" + base.substr(at);
  } else {
    log = std::string(rest);
  }
  mllog::CheckResult result = mllog::check_log_text(log, options, "fuzz.txt");
  std::size_t errors = result.error_count();
  if (result.success && errors != 0) std::abort();
  if (!result.success && errors == 0) std::abort();
  if (options.quiet && !options.werror && result.warning_count() != 0) std::abort();
  if (result.configs.empty() && !result.official_checker_crashes) std::abort();
  (void)mllog::format_result(result);
  return 0;
}
