// The summarizer's private ids (private_id.h).
//
// Design choice: OpenSSL's libcrypto is opened with dlopen when the first id is hashed, not linked:
// loading and relocating libcrypto.so at start-up adds about a millisecond to every `mlbert check`,
// which `mlbert` runs in its own process to start fast; only --generate_private_ids needs it.
#include "mlperf_logging/cli/private_id.h"

#include <dlfcn.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "mlperf_logging/log/pyops.h"

namespace mlbert::logging::official {
namespace {

// humanhash's DEFAULT_WORDLIST, as the summarizer carries it.
constexpr std::array<std::string_view, 256> kWords = {
    "ack",          "alabama",    "alanine",       "alaska",      "alpha",     "angel",
    "apart",        "april",      "arizona",       "arkansas",    "artist",    "asparagus",
    "aspen",        "august",     "autumn",        "avocado",     "bacon",     "bakerloo",
    "batman",       "beer",       "berlin",        "beryllium",   "black",     "blossom",
    "blue",         "bluebird",   "bravo",         "bulldog",     "burger",    "butter",
    "california",   "carbon",     "cardinal",      "carolina",    "carpet",    "cat",
    "ceiling",      "charlie",    "chicken",       "coffee",      "cola",      "cold",
    "colorado",     "comet",      "connecticut",   "crazy",       "cup",       "dakota",
    "december",     "delaware",   "delta",         "diet",        "don",       "double",
    "early",        "earth",      "east",          "echo",        "edward",    "eight",
    "eighteen",     "eleven",     "emma",          "enemy",       "equal",     "failed",
    "fanta",        "fifteen",    "fillet",        "finch",       "fish",      "five",
    "fix",          "floor",      "florida",       "football",    "four",      "fourteen",
    "foxtrot",      "freddie",    "friend",        "fruit",       "gee",       "georgia",
    "glucose",      "golf",       "green",         "grey",        "hamper",    "happy",
    "harry",        "hawaii",     "helium",        "high",        "hot",       "hotel",
    "hydrogen",     "idaho",      "illinois",      "india",       "indigo",    "ink",
    "iowa",         "island",     "item",          "jersey",      "jig",       "johnny",
    "juliet",       "july",       "jupiter",       "kansas",      "kentucky",  "kilo",
    "king",         "kitten",     "lactose",       "lake",        "lamp",      "lemon",
    "leopard",      "lima",       "lion",          "lithium",     "london",    "louisiana",
    "low",          "magazine",   "magnesium",     "maine",       "mango",     "march",
    "mars",         "maryland",   "massachusetts", "may",         "mexico",    "michigan",
    "mike",         "minnesota",  "mirror",        "mississippi", "missouri",  "mobile",
    "mockingbird",  "monkey",     "montana",       "moon",        "mountain",  "muppet",
    "music",        "nebraska",   "neptune",       "network",     "nevada",    "nine",
    "nineteen",     "nitrogen",   "north",         "november",    "nuts",      "october",
    "ohio",         "oklahoma",   "one",           "orange",      "oranges",   "oregon",
    "oscar",        "oven",       "oxygen",        "papa",        "paris",     "pasta",
    "pennsylvania", "pip",        "pizza",         "pluto",       "potato",    "princess",
    "purple",       "quebec",     "queen",         "quiet",       "red",       "river",
    "robert",       "robin",      "romeo",         "rugby",       "sad",       "salami",
    "saturn",       "september",  "seven",         "seventeen",   "shade",     "sierra",
    "single",       "sink",       "six",           "sixteen",     "skylark",   "snake",
    "social",       "sodium",     "solar",         "south",       "spaghetti", "speaker",
    "spring",       "stairway",   "steak",         "stream",      "summer",    "sweet",
    "table",        "tango",      "ten",           "tennessee",   "tennis",    "texas",
    "thirteen",     "three",      "timing",        "triple",      "twelve",    "twenty",
    "two",          "uncle",      "undress",       "uniform",     "uranus",    "utah",
    "vegan",        "venus",      "vermont",       "victor",      "video",     "violet",
    "virginia",     "washington", "west",          "whiskey",     "white",     "william",
    "winner",       "winter",     "wisconsin",     "wolfram",     "wyoming",   "xray",
    "yankee",       "yellow",     "zebra",         "zulu"};

// The fields hashed, in order.
constexpr std::array<std::string_view, 9> kHashedFields = {"division",
                                                           "submitter",
                                                           "system_name",
                                                           "number_of_nodes",
                                                           "host_processor_model_name",
                                                           "host_processors_per_node",
                                                           "accelerator_model_name",
                                                           "accelerators_per_node",
                                                           "framework"};

constexpr int kWordsPerId = 4;

// libcrypto's one-shot digest, looked up once; throws naming the library when it is absent.
struct Libcrypto {
  decltype(&EVP_Digest) digest = nullptr;
  decltype(&EVP_sha256) sha256 = nullptr;
};

const Libcrypto& libcrypto() {
  static const Libcrypto loaded = [] {
    Libcrypto lib;
    void* handle = ::dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      lib.digest = reinterpret_cast<decltype(&EVP_Digest)>(::dlsym(handle, "EVP_Digest"));
      lib.sha256 = reinterpret_cast<decltype(&EVP_sha256)>(::dlsym(handle, "EVP_sha256"));
    }
    return lib;
  }();
  if (loaded.digest == nullptr || loaded.sha256 == nullptr) {
    throw std::runtime_error(
        "--generate_private_ids needs OpenSSL 3's libcrypto.so.3 for SHA-256, which cannot be "
        "loaded (Debian package libssl3)");
  }
  return loaded;
}

}  // namespace

std::string sha256_hex(const std::string& text) {
  const Libcrypto& lib = libcrypto();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (lib.digest(text.data(), text.size(), digest, &length, lib.sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

std::string humanhash(const std::string& hex_digest) {
  std::vector<unsigned> bytes;
  for (std::size_t i = 0; i + 1 < hex_digest.size(); i += 2)
    bytes.push_back(static_cast<unsigned>(std::stoul(hex_digest.substr(i, 2), nullptr, 16)));
  std::vector<unsigned> segments(kWordsPerId, 0);
  if (bytes.size() <= static_cast<std::size_t>(kWordsPerId)) {
    segments = bytes;  // fewer bytes than words: the bytes themselves
  } else {
    const double segment_size = static_cast<double>(bytes.size()) / kWordsPerId;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const auto segment =
          std::min<std::size_t>(static_cast<std::size_t>(i / segment_size), kWordsPerId - 1);
      segments[segment] ^= bytes[i];
    }
  }
  std::string words;
  for (unsigned byte : segments) words += (words.empty() ? "" : "-") + std::string(kWords[byte]);
  return words;
}

std::string PrivateIds::operator()(const nlohmann::json& description, const std::string& system) {
  std::string text;
  for (auto field : kHashedFields) {
    const auto it = description.find(std::string(field));
    if (it == description.end())
      throw std::runtime_error("field \"" + std::string(field) +
                               "\" missing, which a private id is made of");
    text += mllog::py::str(*it);
  }
  if (hashed_.count(text)) text += system;
  hashed_.insert(text);
  return humanhash(sha256_hex(text));
}

}  // namespace mlbert::logging::official
