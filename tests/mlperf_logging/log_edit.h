// Small text edits on MLLOG logs for the checker tests: drop, duplicate, rewrite or add records.
#pragma once
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace mlbert::test {

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

inline bool has_key(const std::string& line, const std::string& key) {
  return line.find("\"key\": \"" + key + "\"") != std::string::npos;
}

// Removes every record of `key`.
inline std::string drop_key(const std::string& log, const std::string& key) {
  std::vector<std::string> kept;
  for (const auto& l : split_lines(log))
    if (!has_key(l, key)) kept.push_back(l);
  return join_lines(kept);
}

// Applies `edit` to every record of `key` (the n-th only when n >= 0).
inline std::string edit_key(const std::string& log, const std::string& key,
                            const std::function<std::string(const std::string&)>& edit,
                            int n = -1) {
  std::vector<std::string> lines = split_lines(log);
  int seen = 0;
  for (auto& l : lines) {
    if (!has_key(l, key)) continue;
    if (n < 0 || seen == n) l = edit(l);
    ++seen;
  }
  return join_lines(lines);
}

// Replaces the text between `"<field>": ` and the next `, "` (a scalar field) in `line`; for
// "metadata" (the last field) the rest of the line, closing braces included, is replaced.
inline std::string set_field(const std::string& line, const std::string& field,
                             const std::string& json) {
  std::string marker = "\"" + field + "\": ";
  auto at = line.find(marker);
  if (at == std::string::npos) return line;
  at += marker.size();
  if (field == "metadata") return line.substr(0, at) + json;
  auto end = line.find(", \"", at);
  if (end == std::string::npos) end = line.find('}', at);
  return line.substr(0, at) + json + line.substr(end);
}

// Repeats every record of `key` right after itself, edited by `edit`.
inline std::string duplicate_key(const std::string& log, const std::string& key,
                                 const std::function<std::string(const std::string&)>& edit = {}) {
  std::vector<std::string> out;
  for (const auto& l : split_lines(log)) {
    out.push_back(l);
    if (has_key(l, key)) out.push_back(edit ? edit(l) : l);
  }
  return join_lines(out);
}

// Inserts `record` after the first record of `after_key` (at the end when absent).
inline std::string insert_after(const std::string& log, const std::string& after_key,
                                const std::string& record) {
  std::vector<std::string> out;
  bool done = false;
  for (const auto& l : split_lines(log)) {
    out.push_back(l);
    if (!done && has_key(l, after_key)) {
      out.push_back(record);
      done = true;
    }
  }
  if (!done) out.push_back(record);
  return join_lines(out);
}

// Moves the first record of `key` to just after the first record of `after_key`.
inline std::string move_after(const std::string& log, const std::string& key,
                              const std::string& after_key) {
  std::string moved;
  std::vector<std::string> rest;
  for (const auto& l : split_lines(log)) {
    if (moved.empty() && has_key(l, key)) {
      moved = l;
    } else {
      rest.push_back(l);
    }
  }
  return insert_after(join_lines(rest), after_key, moved);
}

}  // namespace mlbert::test
