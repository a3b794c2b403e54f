// GEMM algorithm tuning as host logic: the token-count buckets a tuned choice is kept for, the key,
// the choice of the fastest candidate, and the plans file (round trip, other devices' entries
// kept, malformed files named down to the entry and field).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "bert/cuda/gemm.h"
#include "bert/cuda/gemm_tuning.h"

namespace {

namespace cuda = mlbert::cuda;
namespace fs = std::filesystem;

cuda::GemmArgs args_of(const cuda::ColumnMajorGemm& shape, cuda::GemmEpilogue epilogue) {
  cuda::GemmArgs a;
  a.shape = shape;
  a.epilogue = epilogue;
  return a;
}

fs::path scratch_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "mlbert_gemm_tuning_test";
  fs::create_directories(dir);
  fs::remove(dir / name);
  return dir / name;
}

}  // namespace

TEST_CASE("token buckets: a quarter octave wide, never below the count, exact at powers of two") {
  for (int64_t tokens = 1; tokens <= 70000; ++tokens) {
    const int64_t b = cuda::token_bucket(tokens);
    REQUIRE(b >= tokens);
    if (tokens > 4) REQUIRE(b <= tokens + tokens / 4 + 1);
    REQUIRE(cuda::token_bucket(b) == b);  // a bucket is its own bucket
    if (tokens > 1) REQUIRE(b >= cuda::token_bucket(tokens - 1));
  }
  CHECK(cuda::token_bucket(8192) == 8192);
  CHECK(cuda::token_bucket(1024) == 1024);
  CHECK(cuda::token_bucket(3837) == 4096);
  CHECK(cuda::token_bucket(3000) == 3072);
  CHECK(cuda::token_bucket(30528) == 32768);
  CHECK(cuda::token_bucket(9) == 10);
}

TEST_CASE("a tuned choice is kept per product and token-count bucket") {
  using cuda::GemmEpilogue;
  const auto fwd = [](int64_t tokens) {
    return cuda::tuning_key(
        args_of(cuda::plan_linear_forward(tokens, 4096, 1024, false), GemmEpilogue::gelu_aux_bias));
  };
  CHECK(fwd(3700) == fwd(3837));  // both in (3584, 4096]
  CHECK(fwd(3837) != fwd(3500));
  CHECK(fwd(8192) != fwd(4096));
  const auto wgrad = [](int64_t tokens) {
    return cuda::tuning_key(args_of(cuda::plan_linear_backward_weight(tokens, 1024, 4096, false),
                                    GemmEpilogue::bgrad_a));
  };
  CHECK(wgrad(3700) == wgrad(3837));  // the token count is k of a weight product
  CHECK(wgrad(3837) != wgrad(2000));
  CHECK(fwd(3837) != cuda::tuning_key(args_of(cuda::plan_linear_forward(3837, 4096, 1024, false),
                                              GemmEpilogue::bias)));
  CHECK(fwd(3837) != cuda::tuning_key(args_of(cuda::plan_linear_forward(3837, 3072, 1024, true),
                                              GemmEpilogue::gelu_aux_bias)));
}

TEST_CASE("the fastest candidate: smallest finite time, first on a tie, none when none ran") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  CHECK(cuda::fastest_candidate(std::vector<double>{30, 12, 18}) == 1);
  CHECK(cuda::fastest_candidate(std::vector<double>{12, 30, 12}) == 0);
  CHECK(cuda::fastest_candidate(std::vector<double>{inf, 40, nan, 35}) == 3);
  CHECK(cuda::fastest_candidate(std::vector<double>{-1, 5}) == 1);
  CHECK(cuda::fastest_candidate(std::vector<double>{inf, nan}) == 2);
  CHECK(cuda::fastest_candidate(std::vector<double>{}) == 0);
}

TEST_CASE("tuning options: 1 to 64 candidates") {
  cuda::GemmTuning t;
  CHECK_NOTHROW(cuda::validate(t));
  t.candidates = 0;
  CHECK_THROWS_WITH(cuda::validate(t), Catch::Contains("candidates must be in [1, 64]"));
  t.candidates = 65;
  CHECK_THROWS_AS(cuda::validate(t), std::invalid_argument);
}

TEST_CASE("the plans file keeps each device's choices and round-trips them exactly") {
  const fs::path file = scratch_file("plans.json");
  const std::string h200 = cuda::tuning_device("NVIDIA H200", 13000, 130100);
  const std::string a100 = cuda::tuning_device("NVIDIA A100-SXM4-80GB", 13000, 130100);
  CHECK(h200 == "NVIDIA H200 | driver 13000 | cuBLASLt 130100");
  cuda::TunedPlans other(a100);
  cuda::TunedPlan a;
  a.algo.words = {1, 2, 3, 4, 5, 6, 7, 0xffffffffffffffffull};
  a.microseconds = 812.5;
  a.candidates = 8;
  other.record("A100 problem", a);
  other.save(file);

  cuda::TunedPlans mine(h200);
  mine.load(file);  // the A100's entry is not this device's
  CHECK(mine.size() == 0);
  CHECK(mine.find("A100 problem") == nullptr);
  cuda::TunedPlan b = a;
  b.algo.words[0] = 0x0123456789abcdefull;
  b.microseconds = 97.25;
  mine.record("BIAS m=3072 n~8192 k~1024", b);
  mine.save(file);  // writes the A100's entry back beside its own

  cuda::TunedPlans again(h200), a100_again(a100);
  again.load(file);
  a100_again.load(file);
  REQUIRE(again.size() == 1);
  const cuda::TunedPlan* got = again.find("BIAS m=3072 n~8192 k~1024");
  REQUIRE(got != nullptr);
  CHECK(got->algo == b.algo);
  CHECK(got->microseconds == b.microseconds);
  CHECK(got->candidates == 8);
  REQUIRE(a100_again.find("A100 problem") != nullptr);
  CHECK(a100_again.find("A100 problem")->algo == a.algo);
  // No file yet: nothing to load, no error.
  cuda::TunedPlans empty(h200);
  CHECK_NOTHROW(empty.load(scratch_file("absent.json")));
  CHECK(empty.size() == 0);
}

TEST_CASE("a malformed plans file is refused naming the file, the entry and the field") {
  const fs::path file = scratch_file("bad.json");
  const std::string device = cuda::tuning_device("NVIDIA H200", 13000, 130100);
  auto load = [&](const std::string& text) {
    std::ofstream(file) << text;
    cuda::TunedPlans plans(device);
    plans.load(file);
  };
  CHECK_THROWS_WITH(load("{"), Catch::Contains(file.string() + ": not valid JSON"));
  CHECK_THROWS_WITH(load(R"({"format": "other", "plans": []})"),
                    Catch::Contains("not a GEMM plans file"));
  const std::string head = R"({"format": "mlbert-gemm-plans/1", "plans": [)";
  const std::string entry = R"({"device": ")" + device + R"(", "problem": "p", )";
  CHECK_THROWS_WITH(load(head + entry + R"("microseconds": 1, "candidates": 2}]})"),
                    Catch::Contains(file.string() + ": plans[0]: field \"algo\" is missing"));
  CHECK_THROWS_WITH(
      load(head + entry +
           R"("algo": ["0x1","0x2","0x3","0x4","0x5","0x6","0x7","zz"], "microseconds": 1, )"
           R"("candidates": 2}]})"),
      Catch::Contains("plans[0]: field \"algo\" word 7 \"zz\" is not a hexadecimal number"));
  CHECK_THROWS_WITH(
      load(head + entry + R"("algo": ["0x1"], "microseconds": 1, "candidates": 2}]})"),
      Catch::Contains("needs 8 words, has 1"));
  CHECK_THROWS_WITH(load(head + R"({"device": 3}]})"),
                    Catch::Contains("plans[0]: field \"device\" has the wrong type"));
}
