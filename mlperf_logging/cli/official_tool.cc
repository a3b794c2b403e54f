// Python logging, exit statuses and USAGE / RULESET arguments of the official command lines
// (official_tool.h).
#include "mlperf_logging/cli/official_tool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/atomic_file.h"
#include "mlperf_logging/rules/rulesets.h"

namespace mlbert::logging::official {
namespace {

namespace fs = std::filesystem;

// The file's folder, "." for a bare name.
fs::path folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

std::string existing_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A device or a pipe (/dev/null, a FIFO) is opened for appending, as Python's FileHandler does;
// renaming a temporary over it would replace the device with a file.
void append_to_special_file(const fs::path& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw OfficialStop(file.string() + ": cannot open the log: " + std::strerror(errno));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw OfficialStop(file.string() + ": cannot write the log: " + std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0)
    throw OfficialStop(file.string() + ": cannot write the log: " + std::strerror(errno));
}

}  // namespace

OfficialLog::OfficialLog(fs::path file) : file_(std::move(file)) {
  std::error_code ec;
  if (!fs::is_directory(folder_of(file_), ec)) {
    throw OfficialStop(file_.string() + ": cannot write the log: no folder " +
                       folder_of(file_).string());
  }
  if (fs::is_directory(file_, ec))
    throw OfficialStop(file_.string() + ": cannot write the log: it is a folder");
}

void OfficialLog::record(std::string_view level, std::string_view message) {
  std::string line = std::string(level) + " - " + std::string(message) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  lines_ += line;
}

void OfficialLog::close() {
  std::error_code ec;
  const auto status = fs::status(file_, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    append_to_special_file(file_, lines_);
  } else {
    try {
      files::write_file_atomically(file_,
                                   (fs::exists(status) ? existing_text(file_) : "") + lines_);
    } catch (const std::exception& e) {
      throw OfficialStop(std::string("cannot write the log: ") + e.what());
    }
  }
  lines_.clear();
}

int run_official(std::string_view tool, const std::string& log_file,
                 const std::function<int(OfficialLog&)>& body) {
  std::optional<OfficialLog> log;
  try {
    log.emplace(log_file);
  } catch (const OfficialStop& e) {
    std::fprintf(stderr, "mlbert: error: %.*s: %s\n", static_cast<int>(tool.size()), tool.data(),
                 e.what());
    return 1;
  }
  int status = 1;
  try {
    status = body(*log);
  } catch (const std::exception& e) {
    log->error(e.what());
    status = 1;
  }
  try {
    log->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlbert: error: %.*s: %s\n", static_cast<int>(tool.size()), tool.data(),
                 e.what());
    return 1;
  }
  return status;
}

void check_usage(std::string_view tool, const std::string& usage, bool hpc_allowed) {
  if (usage == "hpc" && !hpc_allowed) {
    throw CLI::ValidationError(
        "USAGE",
        "'hpc' is not supported: mlbert audits MLPerf Training BERT results (use the "
        "official mlperf_logging." +
            std::string(tool) + " for MLPerf HPC)");
  }
}

std::vector<std::string> official_rulesets() {
  std::vector<std::string> names;
  for (const auto& row : mllog::training_rulesets()) names.emplace_back(row.name);
  return names;
}

void add_usage_and_ruleset(CLI::App* command, std::string& usage, std::string& ruleset) {
  command->add_option("usage", usage, "the usage: training (hpc is not supported)")
      ->required()
      ->check(CLI::IsMember({"training", "hpc"}));
  command->add_option("ruleset", ruleset, "the ruleset such as 0.6.0, 0.7.0, 1.0.0, etc.")
      ->required()
      ->check(CLI::IsMember(official_rulesets()));
}

std::string python_repr(std::string_view text) {
  const bool double_quoted =
      text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = double_quoted ? '"' : '\'';
  std::string out(1, quote);
  for (const unsigned char c : text) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string python_list_repr(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + python_repr(items[i]);
  return out + "]";
}

}  // namespace mlbert::logging::official
