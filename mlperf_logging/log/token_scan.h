// The byte scan under the MLLOG parser: the next ":::MLLOG " in a buffer together with the count of
// '\n' before it and whether a '\r' occurs there, found in one pass over the bytes. Log files are
// mostly text without records (a v0.7 log holds 47 records in 8,558 lines), so this pass is the
// parser's cost; it runs 64 bytes at a time with AVX-512BW, or 32 with AVX2, where the CPU has
// them (chosen at run time, as the build targets plain x86-64), else with portable code.
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
// The codes scan_to_token chooses from; tests compare each the CPU runs with the portable one.
enum class ScanCode { portable, avx2, avx512 };  // slowest first
ScanCode best_scan_code();  // the fastest this CPU runs
TokenScan scan_to_token_with(ScanCode code, const char* begin, const char* end);
TokenScan scan_to_token_portable(const char* begin, const char* end);
}  // namespace detail

}  // namespace mlbert::mllog
