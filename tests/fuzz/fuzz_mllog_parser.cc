// libFuzzer target: the MLLOG reader and the Python JSON dialect on arbitrary bytes. Beyond "no
// crash, no sanitizer report", it checks that re-encoding is stable (dumps(loads(dumps(loads(x))))
// equals dumps(loads(x))), that canonical() accepts whatever loads() accepts, and that record
// views stay inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mlperf_logging/log/mllog.h"
#include "mlperf_logging/log/parser.h"
#include "mlperf_logging/log/python_json.h"

namespace mllog = mlbert::mllog;

namespace {

void check_json(std::string_view text) {
  nlohmann::json value;
  try {
    value = mllog::pyjson::loads(text);
  } catch (const mllog::pyjson::DecodeError&) {
    return;
  }
  (void)mllog::pyjson::canonical(text);  // must not throw on text loads() accepted
  std::string once = mllog::python_json_dumps(mllog::Json(value));
  std::string twice = mllog::python_json_dumps(mllog::Json(mllog::pyjson::loads(once)));
  if (once != twice) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_json(text);
  std::size_t records = 0, errors = 0;
  auto stats = mllog::for_each_record_in(
      text,
      [&](const mllog::LogRecord& r) {
        ++records;
        if (r.raw.substr(0, 9) != ":::MLLOG ") std::abort();
        if (r.line == 0 || r.value_text.data() < r.raw.data() ||
            r.value_text.data() + r.value_text.size() > r.raw.data() + r.raw.size())
          std::abort();
        (void)mllog::pyjson::canonical(r.value_text);
      },
      [&](const mllog::ParseError& e) {
        ++errors;
        if (e.line == 0 || e.message.empty()) std::abort();
      });
  if (stats.records != records || stats.errors != errors || stats.bytes != size) std::abort();
  return 0;
}
