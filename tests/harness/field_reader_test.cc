// The field table of the system-file readers: values land in their targets, problems come in the
// table's order with the field's JSON path, rules see only values that were read.
#include <catch2/catch.hpp>

#include "harness/config/field_reader.h"

namespace {

using namespace mlbert::harness::field_table;
using nlohmann::json;

enum class Colour { red, green };
const std::vector<std::string> kColours = {"red", "green"};

}  // namespace

TEST_CASE("a field table stores what it reads and names every problem in table order",
          "[system][field_table]") {
  const json object = {{"count", 12},   {"share", 0.25},  {"flag", true},    {"name", "x"},
                       {"colour", "green"}, {"big", 1LL << 40}, {"ratio", 1.5}, {"wrong", "7"}};
  std::vector<std::string> problems;
  const FieldReader r(&object, "run.part", &problems);
  int count = 0, big = 0;
  double share = 0, ratio = 0;
  bool flag = false;
  std::string name;
  Colour colour = Colour::red;
  std::int64_t wrong = 5, absent = 9;
  read_fields(r, {{"count", &count, true, in_range(1, 16)},
                  {"share", &share, true, in_half_open_unit_interval()},
                  {"flag", &flag, true},
                  {"name", &name, true},
                  {"colour", one_of(&colour, kColours), true},
                  {"big", &big, true, in_range(1, 100)},
                  {"ratio", &ratio, true, in_open_unit_interval()},
                  {"wrong", &wrong, true, at_least(0)},
                  {"absent", &absent, true, at_least(100)},
                  {"optional", &absent, false, at_least(100)}});
  CHECK(count == 12);
  CHECK(share == 0.25);
  CHECK(flag);
  CHECK(name == "x");
  CHECK(colour == Colour::green);
  CHECK(big == static_cast<int>(1LL << 40));  // stored as cast, and reported out of range
  CHECK(ratio == 1.5);
  CHECK(wrong == 5);   // not an integer: the default stays
  CHECK(absent == 9);  // absent: the default stays, and its rule is not applied
  CHECK(problems == std::vector<std::string>{
                        "run.part.big: must be in 1..100",
                        "run.part.ratio: must be in (0, 1)",
                        "run.part.wrong: must be an integer, found string \"7\"",
                        "run.part.absent: missing (an integer is required)",
                    });
}

TEST_CASE("field rules word their limits the way the system messages do", "[system][field_table]") {
  CHECK(positive()(0) == "must be > 0, found 0.000000");
  CHECK(positive()(0.5).empty());
  CHECK(non_negative()(-1) == "must be >= 0, found -1.000000");
  CHECK(non_negative()(0).empty());
  CHECK(in_range(1, 8, "max_seq_length")(9) == "must be in 1..max_seq_length");
  CHECK(in_range(0, -1)(0) == "must be in 0..-1");
  CHECK(at_least(1)(0) == "must be >= 1");
  CHECK(in_half_open_unit_interval()(1) == "must be in [0, 1)");
  CHECK(in_half_open_unit_interval()(0).empty());
  CHECK(in_open_unit_interval()(0) == "must be in (0, 1)");
}

TEST_CASE("an unknown name lists the accepted ones, and an invalid reader reads nothing",
          "[system][field_table]") {
  const json object = {{"colour", "blue"}, {"inner", 3}};
  std::vector<std::string> problems;
  const FieldReader r(&object, "", &problems);
  Colour colour = Colour::red;
  read_fields(r, {{"colour", one_of(&colour, kColours), true}});
  const FieldReader inner = r.child("inner", true);  // not an object
  int value = 4;
  read_fields(inner, {{"value", &value, true}});  // nothing read, nothing more reported
  CHECK(colour == Colour::red);
  CHECK(value == 4);
  CHECK(problems == std::vector<std::string>{"colour: \"blue\" is not one of \"red\", \"green\"",
                                             "inner: must be an object, found number"});
}
