// sim/own_routing.h: your own routing read from a counts file or a trace, and the problem
// `topoep solve` and the benchmarks plan it with.

#include "sim/own_routing.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_input_error.h"
#include "models/model_json.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"
#include "tests/input_error_field.h"
#include "topologies/topology_presets.h"
#include "traces/synthetic_trace.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;
using testing::input_error_field;

std::string fresh_dir(const std::string& name) {
  const fs::path path = fs::path(::testing::TempDir()) / name;
  fs::remove_all(path);
  return path.string();
}

const RoutingInputNames kNames{"mine.json", "--topology", "--model", "--slots"};

TEST(OwnRouting, ReadsEveryLayerOfACountsFile) {
  const std::string dir = fresh_dir("own_counts");
  fs::create_directories(dir);
  const std::string path = dir + "/counts.json";
  std::ofstream(path) << R"({"layers": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]})";
  const std::vector<RoutingCounts> layers = read_routing_layers(path, 1);
  // A counts file is read whole: the record limit is a trace's.
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[1].at(1, 0), 7);
}

TEST(OwnRouting, ReadsATracesFirstRecordsUpToTheLimit) {
  SyntheticTraceSpec spec;
  spec.num_ranks = 8;
  spec.num_experts = 16;
  spec.top_k = 2;
  spec.num_layers = 2;
  spec.microbatches = 2;
  spec.steps = 1;
  spec.tokens_per_rank = 64;
  const std::string dir = fresh_dir("own_trace");
  write_synthetic_trace(spec, dir);
  const std::vector<RoutingCounts> layers = read_routing_layers(dir, 3);
  ASSERT_EQ(layers.size(), 3u);
  TraceReader reader(dir);
  TraceRecord record;
  for (const RoutingCounts& layer : layers) {
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(layer.values(), record.counts.values());
  }
  EXPECT_EQ(read_routing_layers(dir, 100).size(), 4u);  // all it has
}

TEST(OwnRouting, RefusesADirectoryWithoutATrace) {
  const std::string dir = fresh_dir("own_not_a_trace");
  fs::create_directories(dir);
  EXPECT_THROW(read_routing_layers(dir, 64), FileInputError);  // naming its index.json
}

TEST(OwnRouting, PlansAtTheCostsOfTheTokensTheCountsImply) {
  const Topology topology = load_topology("h800-4x8");
  const ModelSpec model = load_model("deepseek-v3");
  // 32 ranks x 256 experts, 64 assignments per rank: 64 / top-8 = 8 tokens per rank.
  const RoutingCounts counts(32, 256, std::vector<TokenCount>(32 * 256, 0));
  RoutingCounts busy = counts;
  for (int rank = 0; rank < 32; ++rank) busy.set(rank, rank, 64);
  const TopoepProblem problem = problem_for_routing({busy}, topology, model, 2, kNames);
  EXPECT_EQ(problem.placement.slots_per_rank, 2);
  EXPECT_EQ(problem.placement.home_rank, Placement::contiguous(256, 32, 2).home_rank);
  EXPECT_EQ(problem.topology.num_ranks(), 32);
  const CostParams expected = derive_solver_cost(topology, model, 8, true).params;
  EXPECT_EQ(problem.cost.weight_overlap_ps, expected.weight_overlap_ps);
  EXPECT_EQ(problem.cost.replica_weight_bytes, expected.replica_weight_bytes);
  EXPECT_EQ(
      problem_for_routing({busy}, topology, model, 2, kNames, false).cost.replica_weight_bytes, 0);
  // No tokens at all still plans with one token per rank's window.
  EXPECT_EQ(problem_for_routing({counts}, topology, model, 1, kNames).cost.weight_overlap_ps,
            derive_solver_cost(topology, model, 1, true).params.weight_overlap_ps);
}

TEST(OwnRouting, NamesTheCallersInputsInItsErrors) {
  const Topology topology = load_topology("h800-4x8");
  const ModelSpec model = load_model("deepseek-v3");
  const RoutingCounts fits(32, 256, std::vector<TokenCount>(32 * 256, 1));
  const RoutingCounts few_experts(32, 64, std::vector<TokenCount>(32 * 64, 1));
  const RoutingCounts few_ranks(16, 256, std::vector<TokenCount>(16 * 256, 1));
  EXPECT_EQ(
      input_error_field([&] { problem_for_routing({few_experts}, topology, model, 1, kNames); }),
      "--model");
  EXPECT_EQ(
      input_error_field([&] { problem_for_routing({few_ranks}, topology, model, 1, kNames); }),
      "--topology");
  EXPECT_EQ(input_error_field([&] { problem_for_routing({fits}, topology, model, 249, kNames); }),
            "--slots");
  EXPECT_EQ(input_error_field([&] { problem_for_routing({}, topology, model, 1, kNames); }),
            "counts");
  try {
    problem_for_routing({few_experts}, topology, model, 1, kNames);
    ADD_FAILURE() << "no error for 64 experts against 256";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--model: mine.json has 64 experts, model 'deepseek-v3' has 256; presets with 64 "
              "experts: deepseek-v2-lite");
  }
  // 16 experts on 32 GPUs: refused, with the layout that would take them, which homes none on
  // ranks 16 and beyond.
  ModelSpec small = model;
  small.num_experts = 16;
  const RoutingCounts few(32, 16, std::vector<TokenCount>(32 * 16, 1));
  try {
    problem_for_routing({few}, topology, small, 1, kNames);
    ADD_FAILURE() << "no error for 16 experts on 32 GPUs";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--topology: mine.json has 16 experts, which do not divide evenly over the 32 GPUs "
              "of topology 'h800-4x8': uneven homes (--uneven-homes; in a sweep, "
              "\"uneven_homes\": [true]) would home 1 expert on the first 16 GPUs and 0 on the "
              "others");
  }
  const TopoepProblem spread =
      problem_for_routing({few}, topology, small, 1, kNames, true, HomeLayout::kUneven);
  EXPECT_EQ(spread.placement.home_rank.back(), 15);
  EXPECT_EQ(spread.placement.most_homed(), 1);
}

}  // namespace
}  // namespace topoep
