// System description check: required fields, the 4.x status vocabulary, the summarizer-oriented
// warnings and malformed files.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "mlperf_logging/package/layout.h"
#include "mlperf_logging/package/system_desc.h"
#include "tests/mlperf_logging/audit_synthetic.h"

namespace lg = mlbert::logging;
using mlbert::test::TempDir;

namespace {
nlohmann::json good_desc(const std::string& ruleset) {
  return nlohmann::json::parse(mlbert::test::synthetic_system_json("sys", "closed", ruleset));
}
bool has_finding(const lg::SystemDescResult& result, const std::string& field,
                 lg::SystemDescFinding::Level level) {
  for (const auto& f : result.findings) {
    if (f.field == field && f.level == level) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("a description with all 33 fields passes", "[system]") {
  CHECK(lg::system_desc_required_fields().size() == 33);
  for (const std::string ruleset :
       {"0.7.0", "1.0.0", "1.1.0", "3.0.0", "4.0.0", "5.0.0", "5.1.0"}) {
    const auto result = lg::check_system_desc(good_desc(ruleset), ruleset, "sys.json");
    INFO(ruleset);
    CHECK(result.valid);
    CHECK(result.findings.empty());
    CHECK(result.system_name == "sys");
    CHECK(result.division == "closed");
  }
}

TEST_CASE("every required field is checked for presence", "[system]") {
  for (auto field : lg::system_desc_required_fields()) {
    auto desc = good_desc("4.1.0");
    desc.erase(std::string(field));
    const auto result = lg::check_system_desc(desc, "4.1.0", "sys.json");
    INFO(field);
    CHECK_FALSE(result.valid);
    CHECK(has_finding(result, std::string(field), lg::SystemDescFinding::Level::error));
  }
}

TEST_CASE("status must be an availability category from ruleset 4.0.0 on", "[system]") {
  auto desc = good_desc("3.1.0");
  desc["status"] = "onprem";
  CHECK(lg::check_system_desc(desc, "3.1.0", "s.json").valid);
  CHECK_FALSE(lg::check_system_desc(desc, "4.0.0", "s.json").valid);
  CHECK_FALSE(lg::check_system_desc(desc, "5.0.0", "s.json").valid);
  for (auto status : lg::system_availability_statuses()) {
    desc["status"] = std::string(status);
    CHECK(lg::check_system_desc(desc, "4.1.0", "s.json").valid);
  }
  desc["status"] = "available on-premise";  // the official test is case-sensitive
  CHECK_FALSE(lg::check_system_desc(desc, "4.1.0", "s.json").valid);
  desc["status"] = 3;
  CHECK_FALSE(lg::check_system_desc(desc, "4.1.0", "s.json").valid);
}

TEST_CASE("types, integer counts and division are warnings, errors with werror", "[system]") {
  auto desc = good_desc("4.1.0");
  desc["number_of_nodes"] = 8;               // not a string
  desc["accelerators_per_node"] = "eight";   // not an integer
  desc["division"] = "Closed";               // neither closed nor open
  desc["other_software_stack"] = "CUDA 12";  // a string is accepted here
  const auto lenient = lg::check_system_desc(desc, "4.1.0", "s.json");
  CHECK(lenient.valid);  // the official verdict
  CHECK(has_finding(lenient, "number_of_nodes", lg::SystemDescFinding::Level::warning));
  CHECK(has_finding(lenient, "accelerators_per_node", lg::SystemDescFinding::Level::warning));
  CHECK(has_finding(lenient, "division", lg::SystemDescFinding::Level::warning));
  CHECK_FALSE(has_finding(lenient, "other_software_stack", lg::SystemDescFinding::Level::warning));
  CHECK(lenient.warning_count() == 3);
  const auto strict = lg::check_system_desc(desc, "4.1.0", "s.json", true);
  CHECK_FALSE(strict.valid);
  CHECK(strict.error_count() == 3);
  // Fields the official checker joins as text stop it when they are not strings: an error.
  auto joined = good_desc("4.1.0");
  joined["accelerators_per_node"] = 8;
  const auto joined_result = lg::check_system_desc(joined, "4.1.0", "s.json");
  CHECK_FALSE(joined_result.valid);
  CHECK(has_finding(joined_result, "accelerators_per_node", lg::SystemDescFinding::Level::error));
  desc["other_software_stack"] = nlohmann::json::array();
  CHECK(has_finding(lg::check_system_desc(desc, "4.1.0", "s.json"), "other_software_stack",
                    lg::SystemDescFinding::Level::warning));
}

TEST_CASE("malformed and non-object files fail with the position, missing files throw",
          "[system][bad-input]") {
  TempDir tmp;
  mlbert::test::write_text(tmp.path() / "truncated.json", R"({"submitter": "x",)");
  const auto truncated = lg::check_system_desc_file(tmp.path() / "truncated.json", "4.1.0");
  CHECK_FALSE(truncated.valid);
  REQUIRE(truncated.findings.size() == 1);
  CHECK(truncated.findings[0].text.find("malformed JSON") == 0);
  CHECK(truncated.findings[0].text.find("line 1") != std::string::npos);
  // A number past double: nlohmann's out_of_range, a failed check like a syntax error.
  mlbert::test::write_text(tmp.path() / "overflow.json", R"({"number_of_nodes": 1e999})");
  const auto overflow = lg::check_system_desc_file(tmp.path() / "overflow.json", "4.1.0");
  CHECK_FALSE(overflow.valid);
  REQUIRE(overflow.findings.size() == 1);
  CHECK(overflow.findings[0].text == "malformed JSON: number overflow parsing '1e999'");
  mlbert::test::write_text(tmp.path() / "list.json", "[1, 2]");
  const auto list = lg::check_system_desc_file(tmp.path() / "list.json", "4.1.0");
  CHECK_FALSE(list.valid);
  CHECK(list.findings[0].text.find("JSON object") != std::string::npos);
  mlbert::test::write_text(tmp.path() / "empty.json", "");
  CHECK_FALSE(lg::check_system_desc_file(tmp.path() / "empty.json", "4.1.0").valid);
  CHECK_THROWS_AS(lg::check_system_desc_file(tmp.path() / "absent.json", "4.1.0"), lg::AuditError);
  CHECK_THROWS_AS(lg::check_system_desc(good_desc("4.1.0"), "9.9.9", "s.json"), lg::AuditError);
}

TEST_CASE("a missing field is named with the key that misspells it", "[system]") {
  auto desc = good_desc("4.1.0");
  desc["coolng"] = desc["cooling"];
  desc.erase("cooling");
  desc["system_type"] = "datacenter";  // an extra field near no missing one: not a misspelling
  const auto result = lg::check_system_desc(desc, "4.1.0", "sys.json");
  CHECK_FALSE(result.valid);
  REQUIRE(result.misspelled_keys.size() == 1);
  CHECK(result.misspelled_keys[0] == std::pair<std::string, std::string>("coolng", "cooling"));
  bool named = false;
  for (const auto& f : result.findings)
    named |= f.field == "cooling" && f.text.find("the file has 'coolng'") != std::string::npos;
  CHECK(named);
  // A key near a field that is present is no misspelling of it.
  auto both = good_desc("4.1.0");
  both["coolng"] = "air";
  CHECK(lg::check_system_desc(both, "4.1.0", "sys.json").misspelled_keys.empty());
}

TEST_CASE("the official reasons are its list: missing fields in order, or the status alone",
          "[system]") {
  auto desc = good_desc("4.1.0");
  desc.erase("hw_notes");
  desc.erase("cooling");
  const auto missing = lg::check_system_desc(desc, "4.1.0", "s.json");
  CHECK(missing.official_reasons ==
        std::vector<std::string>{"Missing field cooling", "Missing field hw_notes"});
  CHECK(missing.official_stop.empty());
  // The official checker replaces its list with the status reason (str() of the value).
  desc["status"] = 3;
  const auto status = lg::check_system_desc(desc, "4.1.0", "s.json");
  REQUIRE(status.official_reasons.size() == 1);
  CHECK(status.official_reasons[0] ==
        "Field status contains a non valid value: 3, must be one of ['Available on-premise', "
        "'Available cloud', 'Research, Development, or Internal (RDI)', 'Preview']");
  auto joined = good_desc("4.1.0");
  joined["system_name"] = 8;  // joined into its CSV row: a TypeError stops it
  CHECK(lg::check_system_desc(joined, "4.1.0", "s.json").official_stop.find("system_name") !=
        std::string::npos);
}
