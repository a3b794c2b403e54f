// Demo corpus generator. The knowledge base (who lives where, which job uses which tool...) is
// drawn once from the seed; documents then sample sentences about one entity each. Everything goes
// through PyRandom so the corpus is identical on every machine.
#include "data_prep/demo_corpus.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "common/atomic_file.h"
#include "data_prep/py_random.h"

namespace mlbert::data {
namespace {

const std::vector<std::string> kFirstSyllables = {"ar",  "bel", "cor", "dan", "el",  "fin",
                                                  "gar", "hol", "jor", "kal", "lun", "mor"};
const std::vector<std::string> kSecondSyllables = {"##ak", "##en", "##ia",  "##on",
                                                   "##us", "##ra", "##eth", "##ix"};
const std::vector<std::string> kCities = {
    "paris",  "london", "berlin", "madrid", "rome",   "vienna", "prague", "oslo",
    "dublin", "lisbon", "athens", "warsaw", "zurich", "munich", "milan",  "geneva"};
const std::vector<std::string> kCountries = {"france", "england", "germany", "spain",
                                             "italy",  "austria", "norway",  "ireland"};
const std::vector<std::string> kWeather = {"sunny", "rainy", "cold", "warm", "windy", "foggy"};
const std::vector<std::string> kRivers = {"north", "south", "east",   "west",
                                          "red",   "blue",  "silver", "golden"};
struct Job {
  std::string name, tool, place;
};
const std::vector<Job> kJobs = {
    {"doctor", "stethoscope", "hospital"}, {"teacher", "chalkboard", "school"},
    {"farmer", "tractor", "field"},        {"baker", "oven", "bakery"},
    {"painter", "brush", "studio"},        {"pilot", "radio", "airport"},
    {"chef", "knife", "kitchen"},          {"writer", "pen", "library"},
    {"builder", "hammer", "site"},         {"sailor", "rope", "harbor"},
    {"gardener", "shovel", "garden"},      {"miner", "lamp", "mine"}};
struct Animal {
  std::string singular, plural, sound_singular, sound_plural;
};
const std::vector<Animal> kAnimals = {
    {"dog", "dogs", "barks", "bark"},     {"cat", "cats", "meows", "meow"},
    {"bird", "birds", "sings", "sing"},   {"horse", "horses", "neighs", "neigh"},
    {"cow", "cows", "moos", "moo"},       {"sheep", "sheep", "bleats", "bleat"},
    {"duck", "ducks", "quacks", "quack"}, {"frog", "frogs", "croaks", "croak"},
    {"lion", "lions", "roars", "roar"},   {"owl", "owls", "hoots", "hoot"}};
const std::vector<std::string> kColors = {"black", "white",  "brown",  "gray",
                                          "green", "yellow", "orange", "purple"};
const std::vector<std::string> kFoods = {"bread", "cheese", "rice",  "soup",  "apples", "fish",
                                         "pasta", "beans",  "honey", "salad", "cake",   "eggs"};
const std::vector<std::string> kNumbers = {"two", "three", "four", "five"};
// Words of the templates (everything not in the lists above).
const std::vector<std::string> kTemplateWords = {
    "he",    "she",   "his",     "her",    "lives",    "in",    "works",   "as",     "a",
    "an",    "the",   "every",   "uses",   "favorite", "food",  "is",      "has",    "all",
    "day",   "city",  "weather", "often",  "and",      "are",   "friends", "walks",  "to",
    "river", "each",  "morning", "at",     "eats",     "for",   "lunch",   "of",     "with",
    "likes", "very",  "much",    "visits", "near",     "old",   "best",    "friend", "pet",
    "loud",  "there", "people",  "many",   "own",      "flows", "through", "works",  "loves"};

struct City {
  int country, weather, river;
};
struct Entity {
  std::string name;  // as written in text
  bool female;
  int city, job, animal, color, food, friend_entity;
};

std::string pick(PyRandom& rng, const std::vector<std::string>& v) {
  return v[static_cast<size_t>(rng.randbelow(v.size()))];
}

class Writer {
 public:
  Writer(PyRandom& rng, const std::vector<Entity>& entities, const std::vector<City>& cities)
      : rng_(rng), entities_(entities), cities_(cities) {}

  std::vector<std::string> document(const Entity& e) {
    std::vector<std::string> lines;
    const int sentences = static_cast<int>(rng_.randint(8, 14));
    const std::string he = e.female ? "she" : "he", his = e.female ? "her" : "his";
    const City& c = cities_[static_cast<size_t>(e.city)];
    const std::string& city = kCities[static_cast<size_t>(e.city)];
    const Job& job = kJobs[static_cast<size_t>(e.job)];
    const Animal& pet = kAnimals[static_cast<size_t>(e.animal)];
    const std::string& color = kColors[static_cast<size_t>(e.color)];
    lines.push_back(e.name + " lives in " + city + " .");
    for (int s = 1; s < sentences; ++s) {
      const std::string subject = rng_.random() < 0.5 ? he : e.name;
      switch (rng_.randbelow(12)) {
        case 0:
          lines.push_back(subject + " works as a " + job.name + " at the " + job.place + " .");
          break;
        case 1:
          lines.push_back("every " + job.name + " uses a " + job.tool + " .");
          break;
        case 2:
          lines.push_back(his + " favorite food is " + kFoods[static_cast<size_t>(e.food)] + " .");
          break;
        case 3:
          lines.push_back(subject + " has a " + color + " " + pet.singular + " .");
          break;
        case 4: {
          const std::string n = pick(rng_, kNumbers);
          lines.push_back(subject + " has " + n + " " + color + " " + pet.plural + " .");
          break;
        }
        case 5:
          if (rng_.random() < 0.5) {
            lines.push_back("the " + pet.singular + " " + pet.sound_singular + " all day .");
          } else {
            lines.push_back("the " + pet.plural + " " + pet.sound_plural + " all day .");
          }
          break;
        case 6:
          lines.push_back(city + " is a city in " + kCountries[static_cast<size_t>(c.country)] +
                          " .");
          break;
        case 7:
          lines.push_back("the weather in " + city + " is often " +
                          kWeather[static_cast<size_t>(c.weather)] + " .");
          break;
        case 8:
          lines.push_back(e.name + " and " + entities_[static_cast<size_t>(e.friend_entity)].name +
                          " are best friends .");
          break;
        case 9:
          lines.push_back(subject + " walks to the " + kRivers[static_cast<size_t>(c.river)] +
                          " river each morning .");
          break;
        case 10:
          lines.push_back("the " + kRivers[static_cast<size_t>(c.river)] + " river flows through " +
                          city + " .");
          break;
        default:
          lines.push_back(subject + " eats " + kFoods[static_cast<size_t>(e.food)] +
                          " for lunch .");
          break;
      }
    }
    return lines;
  }

 private:
  PyRandom& rng_;
  const std::vector<Entity>& entities_;
  const std::vector<City>& cities_;
};

void write_lines_atomically(const std::filesystem::path& path,
                            const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) (text += l) += '\n';
  files::write_file_atomically(path, text);
}

}  // namespace

DemoCorpus generate_demo_corpus(const DemoCorpusOptions& o) {
  if (o.train_documents < 1 || o.eval_documents < 1 || o.parts < 1) {
    throw std::invalid_argument("demo corpus: documents and parts must be positive");
  }
  PyRandom rng(o.seed);
  std::vector<City> cities;
  for (size_t i = 0; i < kCities.size(); ++i) {
    cities.push_back({static_cast<int>(i % kCountries.size()),
                      static_cast<int>(rng.randbelow(kWeather.size())),
                      static_cast<int>(rng.randbelow(kRivers.size()))});
  }
  DemoCorpus corpus;
  // Vocabulary: special tokens, punctuation, then every word and piece in a fixed order.
  corpus.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","};
  std::set<std::string> seen(corpus.vocab.begin(), corpus.vocab.end());
  auto add = [&](const std::string& w) {
    if (seen.insert(w).second) corpus.vocab.push_back(w);
  };
  for (const auto& w : kTemplateWords) add(w);
  for (const auto& w : kFirstSyllables) add(w);
  for (const auto& w : kSecondSyllables) add(w);
  for (const auto& w : kCities) add(w);
  for (const auto& w : kCountries) add(w);
  for (const auto& w : kWeather) add(w);
  for (const auto& w : kRivers) add(w);
  for (const auto& j : kJobs) add(j.name), add(j.tool), add(j.place);
  for (const auto& a : kAnimals)
    add(a.singular), add(a.plural), add(a.sound_singular), add(a.sound_plural);
  for (const auto& w : kColors) add(w);
  for (const auto& w : kFoods) add(w);
  for (const auto& w : kNumbers) add(w);

  // Entity names are two pieces ("kal" "##ix"); a name is kept only when greedy WordPiece splits it
  // that way, i.e. no longer vocabulary word is a prefix of it ("are" would swallow "aren").
  std::vector<Entity> entities;
  for (const auto& first : kFirstSyllables) {
    for (const auto& second : kSecondSyllables) {
      const std::string name = first + second.substr(2);
      bool clean = true;
      for (const auto& w : corpus.vocab) {
        if (w.size() > first.size() && w.size() <= name.size() &&
            name.compare(0, w.size(), w) == 0) {
          clean = false;
        }
      }
      if (!clean) continue;
      Entity e;
      e.name = name;
      e.female = rng.random() < 0.5;
      e.city = static_cast<int>(rng.randbelow(kCities.size()));
      e.job = static_cast<int>(rng.randbelow(kJobs.size()));
      e.animal = static_cast<int>(rng.randbelow(kAnimals.size()));
      e.color = static_cast<int>(rng.randbelow(kColors.size()));
      e.food = static_cast<int>(rng.randbelow(kFoods.size()));
      entities.push_back(e);
    }
  }
  for (size_t i = 0; i < entities.size(); ++i) {
    size_t f = static_cast<size_t>(rng.randbelow(entities.size() - 1));
    if (f >= i) ++f;  // never oneself
    entities[i].friend_entity = static_cast<int>(f);
  }

  Writer writer(rng, entities, cities);
  corpus.parts.resize(static_cast<size_t>(o.parts));
  for (int32_t d = 0; d < o.train_documents; ++d) {
    const Entity& e = entities[static_cast<size_t>(rng.randbelow(entities.size()))];
    auto& part = corpus.parts[static_cast<size_t>(d % o.parts)];
    if (!part.empty()) part.emplace_back();
    for (auto& line : writer.document(e)) part.push_back(std::move(line));
  }
  for (int32_t d = 0; d < o.eval_documents; ++d) {
    const Entity& e = entities[static_cast<size_t>(rng.randbelow(entities.size()))];
    if (!corpus.eval.empty()) corpus.eval.emplace_back();
    for (auto& line : writer.document(e)) corpus.eval.push_back(std::move(line));
  }
  return corpus;
}

DemoCorpusFiles write_demo_corpus(const DemoCorpus& corpus, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error(dir.string() + ": cannot create output directory");
  }
  DemoCorpusFiles files;
  files.vocab = dir / "vocab.txt";
  write_lines_atomically(files.vocab, corpus.vocab);
  const size_t n = corpus.parts.size();
  for (size_t k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "part-%05zu-of-%05zu.txt", k, n);
    files.parts.push_back(dir / name);
    write_lines_atomically(files.parts.back(), corpus.parts[k]);
  }
  files.eval = dir / "eval.txt";
  write_lines_atomically(files.eval, corpus.eval);
  return files;
}

}  // namespace mlbert::data
