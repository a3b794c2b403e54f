// Python's str.strip() (whitespace as str.isspace(): common/utf8.h).
#include "data_prep/text_input.h"

namespace mlbert::data {
std::string_view python_strip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    size_t next = begin;
    if (!is_python_space(decode_utf8(s, next))) break;
    begin = next;
  }
  size_t end = s.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t probe = start;
    if (!is_python_space(decode_utf8(s, probe))) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

}  // namespace mlbert::data
