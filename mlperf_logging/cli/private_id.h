// The private id the official result_summarizer gives a system with --generate_private_ids: four
// words of the public-domain humanhash word list, from the SHA-256 of nine description fields
// joined as text (the system's folder name appended when an earlier system hashed the same text).
// Design choice: one PrivateIds per command run holds the texts already hashed, as the summarizer's
// module-level set does across every organization of one run.
#pragma once
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace mlbert::logging::official {

class PrivateIds {
 public:
  // Throws std::runtime_error naming the field when the description lacks one of the nine.
  std::string operator()(const nlohmann::json& description, const std::string& system);

 private:
  std::set<std::string> hashed_;
};

// humanhash of a hex digest: its bytes XORed into 4 segments, each a word of the list.
std::string humanhash(const std::string& hex_digest);

}  // namespace mlbert::logging::official
