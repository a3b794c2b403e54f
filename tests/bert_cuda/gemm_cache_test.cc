// The GEMM runner's bounded plan cache and its once-per-product refusal lines, as host logic: the
// LruMap the runner keeps its plans in, and the key a refusal is reported once for. (GemmRunner
// itself needs a device: the device check's "gemm plan cache" case runs it past its capacity.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "bert/cuda/gemm.h"

namespace {

namespace cuda = mlbert::cuda;
using cuda::GemmEpilogue;
using cuda::MatrixType;

TEST_CASE("LruMap: never holds more than its capacity and evicts the least recently used entry") {
  cuda::LruMap<int, std::string> map(3);
  std::vector<std::string> evicted;
  auto on_evict = [&](std::string& value) { evicted.push_back(value); };
  for (int key = 0; key < 3; ++key) map.insert(key, "v" + std::to_string(key), on_evict);
  CHECK(map.size() == 3);
  CHECK(evicted.empty());
  // Using key 0 makes key 1 the least recently used.
  REQUIRE(map.find(0) != nullptr);
  CHECK(*map.find(0) == "v0");
  map.insert(3, "v3", on_evict);
  CHECK(map.size() == 3);
  CHECK(evicted == std::vector<std::string>{"v1"});
  CHECK(map.find(1) == nullptr);
  CHECK(map.find(0) != nullptr);
  // A run of new keys (a new token count every step) keeps the size at the capacity.
  for (int key = 100; key < 1100; ++key) {
    map.insert(key, "k", on_evict);
    CHECK(map.size() <= map.capacity());
  }
  CHECK(map.size() == 3);
  CHECK(map.evictions() == 1001);
  CHECK(evicted.size() == 1001);
  // What is left is the newest three, most recent first.
  std::vector<std::string> left;
  map.for_each([&](std::string& value) { left.push_back(value); });
  CHECK(left.size() == 3);
  CHECK(map.find(1099) != nullptr);
  CHECK(map.find(1097) != nullptr);
  CHECK(map.find(1096) == nullptr);
}

TEST_CASE("LruMap: a value keeps its address until evicted, and a zero capacity is rejected") {
  cuda::LruMap<int, int> map(2);
  int& first = map.insert(1, 10, [](int&) {});
  map.insert(2, 20, [](int&) {});
  map.find(1);  // moves the entry to the front without moving the value
  CHECK(&first == map.find(1));
  first = 11;
  CHECK(*map.find(1) == 11);
  CHECK_THROWS(map.insert(2, 0, [](int&) {}));
  using IntMap = cuda::LruMap<int, int>;
  CHECK_THROWS_AS(IntMap(0), std::invalid_argument);
}

cuda::GemmArgs args_for(const cuda::ColumnMajorGemm& shape, GemmEpilogue epilogue,
                        MatrixType d_type = MatrixType::bf16) {
  cuda::GemmArgs a;
  a.shape = shape;
  a.ab_type = MatrixType::bf16;
  a.d_type = d_type;
  a.bias_type = d_type;
  a.epilogue = epilogue;
  return a;
}

TEST_CASE("refusal_report_key: one line per product whatever its token count") {
  using cuda::plan_linear_backward_data;
  using cuda::plan_linear_backward_weight;
  using cuda::plan_linear_forward;
  using cuda::refusal_report_key;
  // The token count M is n of the forward and data products and k of the weight products.
  CHECK(refusal_report_key(
            args_for(plan_linear_forward(991, 4096, 1024, false), GemmEpilogue::gelu_aux_bias)) ==
        refusal_report_key(
            args_for(plan_linear_forward(8123, 4096, 1024, false), GemmEpilogue::gelu_aux_bias)));
  CHECK(refusal_report_key(args_for(plan_linear_backward_data(991, 1024, 4096, false),
                                    GemmEpilogue::dgelu_bgrad)) ==
        refusal_report_key(args_for(plan_linear_backward_data(27000, 1024, 4096, false),
                                    GemmEpilogue::dgelu_bgrad)));
  CHECK(refusal_report_key(args_for(plan_linear_backward_weight(991, 2, 1024, true),
                                    GemmEpilogue::bgrad_b, MatrixType::f32)) ==
        refusal_report_key(args_for(plan_linear_backward_weight(7, 2, 1024, true),
                                    GemmEpilogue::bgrad_b, MatrixType::f32)));
  // Another layer size, epilogue, type or transposition is another product.
  const std::string ffn1 = refusal_report_key(
      args_for(plan_linear_forward(991, 4096, 1024, false), GemmEpilogue::gelu_aux_bias));
  CHECK(ffn1 != refusal_report_key(args_for(plan_linear_forward(991, 4096, 512, false),
                                            GemmEpilogue::gelu_aux_bias)));
  CHECK(ffn1 != refusal_report_key(args_for(plan_linear_forward(991, 1024, 1024, false),
                                            GemmEpilogue::gelu_aux_bias)));
  CHECK(ffn1 != refusal_report_key(
                    args_for(plan_linear_forward(991, 4096, 1024, false), GemmEpilogue::bias)));
  CHECK(ffn1 != refusal_report_key(args_for(plan_linear_forward(991, 4096, 1024, false),
                                            GemmEpilogue::gelu_aux_bias, MatrixType::f16)));
  CHECK(ffn1 != refusal_report_key(args_for(plan_linear_forward(991, 4096, 1024, true),
                                            GemmEpilogue::gelu_aux_bias)));
  CHECK(refusal_report_key(args_for(plan_linear_backward_weight(991, 1024, 4096, false),
                                    GemmEpilogue::bgrad_a, MatrixType::f32)) !=
        refusal_report_key(args_for(plan_linear_backward_weight(991, 4096, 1024, false),
                                    GemmEpilogue::bgrad_a, MatrixType::f32)));
}

}  // namespace
