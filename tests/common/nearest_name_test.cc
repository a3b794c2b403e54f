#include "common/nearest_name.h"

#include <catch2/catch.hpp>

using mlbert::edit_distance;
using mlbert::nearest_name;

TEST_CASE("edit_distance counts an adjacent swap as one edit", "[common][nearest_name]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("check", "check") == 0);
  CHECK(edit_distance("chekc", "check") == 1);   // swap
  CHECK(edit_distance("chek", "check") == 1);    // insertion
  CHECK(edit_distance("checks", "check") == 1);  // deletion
  CHECK(edit_distance("chuck", "check") == 1);   // substitution
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("nearest_name names the system-description key a misspelling was meant to be",
          "[common][nearest_name]") {
  const std::vector<std::string> keys = {
      "cooling", "hw_notes", "sw_notes", "framework", "accelerators_per_node", "number_of_nodes"};
  CHECK(nearest_name("coolng", keys) == "cooling");
  CHECK(nearest_name("framwork", keys) == "framework");
  CHECK(nearest_name("accelerator_per_node", keys) == "accelerators_per_node");
  CHECK(nearest_name("hw_nots", keys) == "hw_notes");
  // The first of equally close names wins: "xw_notes" is one edit from both notes keys.
  CHECK(nearest_name("xw_notes", keys) == "hw_notes");
}

TEST_CASE("nearest_name suggests nothing when more than a third of the word differs",
          "[common][nearest_name]") {
  const std::vector<std::string> keys = {"cooling", "framework"};
  CHECK(nearest_name("system_type", keys).empty());
  CHECK(nearest_name("cool", keys).empty());  // three insertions from "cooling"; one allowed
  CHECK(nearest_name("c", {"cd"}) == "cd");   // one edit is always allowed
  CHECK(nearest_name("ab", {"xy"}).empty());
  CHECK(nearest_name("anything", {}).empty());
}
