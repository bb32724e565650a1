// Replica gradients a step already owes when a microbatch is planned: their chains
// (solver/gradient_chains.h), and how the solver charges new replicas against them.

#include <gtest/gtest.h>

#include <vector>

#include "solver/gradient_chains.h"
#include "solver/plan_encoding.h"
#include "solver/topoep_solver.h"
#include "tests/input_error_field.h"

namespace topoep {
namespace {

TEST(GradientChains, RunOtherNodesFirstThenTheHomeNodeIntoTheHome) {
  // Two nodes of four GPUs; expert homed on rank 0 with replicas on 1, 4 and 5: the chain is
  // 4 -> 5 (NVLink), 5 -> 1 (IB), 1 -> 0 (NVLink).
  const TopologyView topology{2, 4};
  const std::vector<RankId> holders = {1, 4, 5};
  std::vector<std::int32_t> counts(4 * 8, 0);
  GradientHops hops;
  add_gradient_chain(0, holders.data(), 3, topology, counts.data(), hops);
  auto at = [&](int kind, RankId rank) { return counts[kind * 8 + rank]; };
  EXPECT_EQ(hops.nvlink, 2);
  EXPECT_EQ(hops.ib, 1);
  EXPECT_EQ(at(0, 5), 1);  // received inside the node
  EXPECT_EQ(at(0, 0), 1);
  EXPECT_EQ(at(1, 4), 1);  // sent inside the node
  EXPECT_EQ(at(1, 1), 1);
  EXPECT_EQ(at(2, 1), 1);  // received across nodes
  EXPECT_EQ(at(3, 5), 1);  // sent across nodes
  int total = 0;
  for (const std::int32_t count : counts) total += count;
  EXPECT_EQ(total, 6);
}

// One node of two GPUs, one expert homed on each, one spare slot each; 1 ns per token of
// compute; replica weights hidden; a replica's gradient takes 0.4 µs over NVLink.
TopoepProblem two_gpus() {
  TopoepProblem problem;
  problem.topology = TopologyView{1, 2};
  problem.placement = Placement::contiguous(2, 2, 1);
  problem.cost.compute_ps_per_token = 1000;
  problem.cost.replica_weight_bytes = 100;
  problem.cost.weight_overlap_ps = 1000000000;
  problem.cost.replica_gradient_bytes = 400;
  problem.cost.scale_up = LinkCost{1000, 0};
  problem.cost.scale_out = LinkCost{1000, 0};
  return problem;
}

RoutingCounts hot_expert_zero() {
  RoutingCounts counts(2, 2);
  for (RankId src = 0; src < 2; ++src) {
    counts.set(src, 0, 1000);
    counts.set(src, 1, 50);
  }
  return counts;
}

TEST(OwedGradients, OfZeroPlanAsNoneDo) {
  const TopoepProblem problem = two_gpus();
  const RoutingCounts counts = hot_expert_zero();
  TopoepHostSolver solver(problem);
  Plan none, zeros;
  solver.solve(counts, {}, &none);
  solver.solve(counts, {}, &zeros, std::vector<std::int32_t>(8, 0));
  EXPECT_EQ(plan_hash(zeros), plan_hash(none));
  EXPECT_EQ(none.replica_at(1, 0), 0);  // the hot expert's replica pays its 0.4 µs gradient
}

TEST(OwedGradients, LetAReplicaUnderTheStepsReductionRideFree) {
  // Three GPUs, expert 0 hot (900 tokens on rank 0, 300 on each other rank): a replica on rank
  // 1 takes 200 tokens, 0.2 µs of compute, but its gradient takes 0.4 µs: not worth it alone.
  // When rank 2 already owes the step two gradients (0.8 µs), the replica's gradients (one
  // sent by rank 1, one received by rank 0) end before rank 2's do: the step's reduction does
  // not grow, and the replica pays.
  TopoepProblem problem = two_gpus();
  problem.topology = TopologyView{1, 3};
  problem.placement = Placement::contiguous(3, 3, 1);
  RoutingCounts counts(3, 3);
  for (RankId src = 0; src < 3; ++src) {
    counts.set(src, 0, 300);
    counts.set(src, 1, 100);
    counts.set(src, 2, 100);
  }
  TopoepHostSolver solver(problem);
  Plan alone;
  solver.solve(counts, {}, &alone);
  EXPECT_EQ(alone.replica_at(1, 0), kNoExpert);
  EXPECT_EQ(alone.replica_at(2, 0), kNoExpert);
  std::vector<std::int32_t> owed(12, 0);
  owed[1 * 3 + 2] = 2;  // sent inside the node, by rank 2
  check_topoep_inputs(problem, counts, {}, owed);
  Plan riding;
  solver.solve(counts, {}, &riding, owed);
  EXPECT_EQ(riding.replica_at(1, 0), 0);
}

TEST(OwedGradients, OutsideTheirShapeOrRangeAreRejected) {
  const TopoepProblem problem = two_gpus();
  const RoutingCounts counts = hot_expert_zero();
  EXPECT_EQ(testing::input_error_field(
                [&] { check_topoep_inputs(problem, counts, {}, std::vector<std::int32_t>(7, 0)); }),
            "owed_gradients");
  std::vector<std::int32_t> negative(8, 0);
  negative[2 * 2 + 1] = -1;
  EXPECT_EQ(testing::input_error_field([&] { check_topoep_inputs(problem, counts, {}, negative); }),
            "owed_gradients[2][1]");
  std::vector<std::int32_t> too_many(8, 0);
  too_many[0] = 3;  // two experts: at most one chain each
  EXPECT_EQ(testing::input_error_field([&] { check_topoep_inputs(problem, counts, {}, too_many); }),
            "owed_gradients[0][0]");
}

}  // namespace
}  // namespace topoep
