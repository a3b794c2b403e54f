// The summarizer's private ids (private_id.h).
// The digest is the project's own SHA-256 (mlperf_logging/log/sha256.h), so `mlbert` stays free of
// libcrypto.
#include "mlperf_logging/cli/private_id.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "mlperf_logging/log/pyops.h"
#include "mlperf_logging/log/sha256.h"

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

}  // namespace

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
  return humanhash(logging::sha256_hex(text));
}

}  // namespace mlbert::logging::official
