// Input expansion for `data prep`: folders to their text files, with what is skipped named.
#include "data_prep/prep_inputs.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "common/atomic_file.h"
#include "common/input_file.h"

namespace mlbert::data {
namespace fs = std::filesystem;
namespace {

// Enough to see a vocabulary's special tokens (BERT's sit in its first 105 lines) and the start of
// any binary format.
constexpr std::size_t kHeadBytes = 64 << 10;

std::string head_of(const fs::path& file) {
  std::ifstream in = files::open_input(file, "input file");
  std::string head(kHeadBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

// One token a line, [UNK], [CLS] and [SEP] among them: text has spaces, a vocabulary has none.
bool looks_like_vocab(std::string_view head) {
  if (head.size() == kHeadBytes) head = head.substr(0, head.rfind('\n') + 1);  // last line cut
  bool unk = false, cls = false, sep = false;
  while (!head.empty()) {
    const std::size_t end = std::min(head.find('\n'), head.size());
    std::string_view line = head.substr(0, end);
    head.remove_prefix(std::min(end + 1, head.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_of(" \t") != std::string_view::npos) return false;
    unk |= line == "[UNK]";
    cls |= line == "[CLS]";
    sep |= line == "[SEP]";
  }
  return unk && cls && sep;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return !b.empty() && fs::equivalent(a, b, ec);
}

// Why a file of an input folder is not training text, or "" when it is.
std::string not_text_reason(const fs::path& file, const fs::path& vocab) {
  const std::string name = file.filename().string();
  if (name.starts_with(".")) return "a hidden file";
  if (same_file(file, vocab)) return "the vocabulary given as --vocab";
  const std::string head = head_of(file);
  if (head.find('\0') != std::string::npos)
    return "binary, not text (an HDF5 shard, a length index or an archive?)";
  if (looks_like_vocab(head)) return "a WordPiece vocabulary";
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.starts_with("eval"))
    return "held-out eval text (name it as --input by itself to make eval shards)";
  return "";
}

void add_folder(const fs::path& dir, const fs::path& vocab, PrepInputs& out) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    // A temporary of an unfinished writer (a killed `data demo-corpus`) is not input.
    if (e.is_regular_file() && !files::is_partial_name(e.path())) found.push_back(e.path());
  }
  if (found.empty()) throw std::runtime_error(dir.string() + ": input directory has no files");
  std::sort(found.begin(), found.end());
  const std::size_t before = out.files.size();
  std::string skipped_names;
  for (auto& f : found) {
    std::string reason = not_text_reason(f, vocab);
    if (reason.empty()) {
      out.files.push_back(std::move(f));
    } else {
      skipped_names += (skipped_names.empty() ? "" : ", ") + f.filename().string();
      out.skipped.push_back({std::move(f), std::move(reason)});
    }
  }
  if (out.files.size() == before) {
    throw std::runtime_error(dir.string() + ": input directory has no training text files (" +
                             skipped_names + " skipped)");
  }
}

}  // namespace

PrepInputs expand_inputs(const std::vector<fs::path>& inputs, const fs::path& vocab) {
  PrepInputs out;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      add_folder(in, vocab, out);
    } else if (fs::is_regular_file(in, ec)) {
      if (same_file(in, vocab) || looks_like_vocab(head_of(in))) {
        throw std::runtime_error(in.string() +
                                 ": a WordPiece vocabulary, not training text (it goes to --vocab)");
      }
      out.files.push_back(in);
    } else if (fs::exists(in, ec)) {
      throw std::runtime_error(in.string() +
                               ": not a text file or a folder of them (a device, "
                               "a pipe or a socket)");
    } else {
      throw std::runtime_error(in.string() + ": no such input file");
    }
  }
  if (out.files.empty()) throw std::runtime_error("no input files given");
  for (const auto& f : out.files) {
    files::open_input(f, "input file");
    // Refused here, before hours of other inputs' work that a failed run then takes back.
    std::error_code ec;
    if (fs::file_size(f, ec) == 0 && !ec)
      throw std::runtime_error(f.string() + ": no text to make samples from (an empty file)");
  }
  return out;
}

}  // namespace mlbert::data
