// The byte scan under the MLLOG parser: the next ":::MLLOG " in a buffer together with the count of
// '\n' before it and whether a '\r' occurs there, found in one pass over the bytes. Log files are
// mostly text without records (a v0.7 log holds 47 records in 8,558 lines), so this pass is the
// parser's cost; it runs 32 bytes at a time with AVX2 where the CPU has it (chosen at run time, as
// the build targets plain x86-64), else with the portable code below.
#pragma once
#include <cstddef>
#include <string_view>

namespace mlbert::mllog {

inline constexpr std::string_view kMllogToken = ":::MLLOG ";

struct TokenScan {
  const char* token = nullptr;  // the first token in [begin, end), or nullptr
  std::size_t newlines = 0;     // '\n' bytes in [begin, token) (to `end` when there is none)
  bool has_cr = false;          // a '\r' in that same range
};

TokenScan scan_to_token(const char* begin, const char* end);

// The first token in [begin, end), or nullptr (for short ranges: a record's own line).
const char* find_token(const char* begin, const char* end);

namespace detail {
// The code scan_to_token runs on CPUs without AVX2; tests compare the two on the same bytes.
TokenScan scan_to_token_portable(const char* begin, const char* end);
bool scan_has_avx2();
}  // namespace detail

}  // namespace mlbert::mllog
