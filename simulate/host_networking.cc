// Reading the compute NICs of a host_networking text (see host_networking.h).
#include "simulate/host_networking.h"

#include <cctype>
#include <regex>
#include <utility>
#include <vector>

#include "simulate/profile.h"

namespace mlbert::simulate {
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

}  // namespace mlbert::simulate
