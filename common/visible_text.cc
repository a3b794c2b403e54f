#include "common/visible_text.h"

#include <cstdio>

namespace mlbert::text {

std::string visible(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out.push_back(c);
      continue;
    }
    char escape[5];
    std::snprintf(escape, sizeof(escape), "\\x%02x", byte);
    out += escape;
  }
  return out;
}

}  // namespace mlbert::text
