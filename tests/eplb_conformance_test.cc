// The C++ EPLB against the exact outputs of DeepSeek's reference in
// ../shared/conformance/eplb_reference_vectors.json (read in place; tools/test passes the
// folder in TOPOEP_SHARED_DIR) and in tests/golden/eplb_reference_long_rows.json, plus its
// preconditions and invariants.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "solver/eplb/eplb.h"
#include "solver/input_error.h"
#include "tests/input_error_field.h"

namespace topoep {
namespace {

EplbWeights weights_from(const nlohmann::json& rows) {
  EplbWeights weights;
  weights.num_layers = static_cast<int>(rows.size());
  weights.num_experts = static_cast<int>(rows[0].size());
  for (const auto& row : rows) {
    for (const auto& value : row) weights.values.push_back(value.get<float>());
  }
  return weights;
}

// The reference's [layers][...] outputs, flattened row-major.
std::vector<int> flatten(const nlohmann::json& nested) {
  std::vector<int> flat;
  if (!nested.is_array()) {
    flat.push_back(nested.get<int>());
    return flat;
  }
  for (const auto& item : nested) {
    const std::vector<int> inner = flatten(item);
    flat.insert(flat.end(), inner.begin(), inner.end());
  }
  return flat;
}

// Every case of a file in the conformance vectors' schema, reproduced exactly.
void expect_reference_outputs(const std::string& path) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  const nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string name = c["name"];
    EplbParams params{c["num_replicas"], c["num_groups"], c["num_nodes"], c["num_gpus"]};
    const EplbResult result = rebalance_experts(weights_from(c["weight"]), params);
    EXPECT_EQ(result.hierarchical, c["policy"] == "hierarchical") << name;
    EXPECT_EQ(result.physical_to_logical, flatten(c["phy2log"])) << name << " phy2log";
    EXPECT_EQ(result.logical_count, flatten(c["logcnt"])) << name << " logcnt";
    EXPECT_EQ(result.max_count, static_cast<int>(c["log2phy"][0][0].size())) << name;
    EXPECT_EQ(result.logical_to_physical, flatten(c["log2phy"])) << name << " log2phy";
  }
}

TEST(EplbConformance, ReproducesEveryReferenceVectorExactly) {
  const char* shared = std::getenv("TOPOEP_SHARED_DIR");
  if (shared == nullptr) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  expect_reference_outputs(std::string(shared) + "/conformance/eplb_reference_vectors.json");
}

// The shared vectors sort at most 12 items a row, where PyTorch's CPU sort leaves ties as a
// stable sort would. These rows hold 32 to 432 (DeepSeek-V3 on 4 x 8 GPUs, one group on four
// nodes, all weights equal, two 72-GPU domains), whose ties (replicas of one expert always tie)
// come out in std::sort's order: the reference's outputs on PyTorch 1.13, written by
// tests/eplb_long_rows_generate.py.
TEST(EplbConformance, ReproducesTheReferenceTieOrderOnRowsLongerThanSixteen) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  expect_reference_outputs(std::string(srcdir ? srcdir : ".") +
                           "/topoep/tests/golden/eplb_reference_long_rows.json");
}

TEST(Eplb, EveryExpertKeepsASlotAndTheMapsAgree) {
  EplbWeights weights{2, 16, {}};
  for (int i = 0; i < 32; ++i) weights.values.push_back(static_cast<float>((i * 37) % 101 + 1));
  for (const EplbParams params : {EplbParams{24, 4, 2, 8}, EplbParams{24, 8, 3, 6}}) {
    const EplbResult r = rebalance_experts(weights, params);
    for (int layer = 0; layer < 2; ++layer) {
      std::vector<int> seen(16, 0);
      for (int p = 0; p < 24; ++p) ++seen[r.physical_to_logical[layer * 24 + p]];
      for (int e = 0; e < 16; ++e) {
        EXPECT_GE(seen[e], 1);
        EXPECT_EQ(seen[e], r.logical_count[layer * 16 + e]);
        for (int k = 0; k < r.logical_count[layer * 16 + e]; ++k) {
          const int p = r.logical_to_physical[(layer * 16 + e) * r.max_count + k];
          EXPECT_EQ(r.physical_to_logical[layer * 24 + p], e);
        }
      }
    }
  }
}

TEST(Eplb, FallsBackToTheGlobalPolicyWhenNodesDoNotDivideGroups) {
  EplbWeights weights{1, 12, {}};
  for (int i = 0; i < 12; ++i) weights.values.push_back(static_cast<float>(i + 1));
  EXPECT_TRUE(rebalance_experts(weights, EplbParams{16, 4, 2, 8}).hierarchical);
  EXPECT_FALSE(rebalance_experts(weights, EplbParams{16, 3, 2, 8}).hierarchical);
}

TEST(Eplb, RejectsBrokenPreconditionsNamingTheParameter) {
  EplbWeights weights{1, 12, std::vector<float>(12, 1.0f)};
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {16, 5, 1, 8});
            }),
            "num_groups");
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {24, 6, 3, 8});
            }),
            "num_gpus");
  // The global policy (nodes do not divide groups) ignores groups and nodes, as the reference.
  EXPECT_NO_THROW(rebalance_experts(weights, {16, 5, 3, 8}));
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {18, 4, 2, 8});
            }),
            "num_replicas");
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {8, 4, 2, 8});
            }),
            "num_replicas");
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {16, 0, 2, 8});
            }),
            "num_groups");
  // 10^9 replicas (one pass over the experts each) ran for minutes.
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {1000000000, 4, 2, 8});
            }),
            "num_replicas");
  weights.values[3] = -1.0f;
  EXPECT_EQ(testing::input_error_field([&] {
              rebalance_experts(weights, {16, 4, 2, 8});
            }),
            "weight");
}

}  // namespace
}  // namespace topoep
