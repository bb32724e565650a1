// The solver and the shared cost model when an expert instance costs at least
// CostParams::instance_min_tokens tokens' compute (grouped GEMMs below the roofline knee).

#include <gtest/gtest.h>

#include "solver/plan_cost.h"
#include "solver/topoep_solver.h"

namespace topoep {
namespace {

// One node of two GPUs, one expert homed on each, one spare slot each; 1 ns per token of
// compute, links free, replica weights free: only compute decides.
TopoepProblem two_gpus(TokenCount min_tokens) {
  TopoepProblem problem;
  problem.topology = TopologyView{1, 2};
  problem.placement = Placement::contiguous(2, 2, 1);
  problem.cost.compute_ps_per_token = 1000;
  problem.cost.instance_min_tokens = min_tokens;
  return problem;
}

// Both sources send the same: expert 0's and expert 1's totals are twice these.
RoutingCounts both_sources_send(TokenCount expert0, TokenCount expert1) {
  RoutingCounts counts(2, 2);
  for (RankId src = 0; src < 2; ++src) {
    counts.set(src, 0, expert0);
    counts.set(src, 1, expert1);
  }
  return counts;
}

TEST(InstanceMinimum, AddsAReplicaOnlyWhereItsTokensPayTheMinimum) {
  // 1,000 tokens on rank 0, 900 on rank 1: levelling token loads moves 50 tokens to a new
  // replica, which would then cost rank 1 295 tokens' compute: 1,195 > 1,000.
  const RoutingCounts counts = both_sources_send(500, 450);
  const LayerPlan linear = solve_topoep(two_gpus(0), counts);
  EXPECT_EQ(linear.cost.loads, (std::vector<TokenCount>{950, 950}));
  const LayerPlan knee = solve_topoep(two_gpus(295), counts);
  EXPECT_EQ(knee.plan.replica_at(1, 0), kNoExpert);
  EXPECT_EQ(knee.cost.times.compute, 1000 * 1000);
}

TEST(InstanceMinimum, LevelsComputeLoadsNotTokenLoads) {
  // Expert 0: 2,000 tokens on rank 0; expert 1: 100 tokens on rank 1, which cost it 295.
  // Levelled tokens (1,050 each) leave rank 1 computing 295 + 950 = 1,245; levelled compute
  // (1,148 and 295 + 852 = 1,147) is what the phase waits for.
  const RoutingCounts counts = both_sources_send(1000, 50);
  const TopoepProblem problem = two_gpus(295);
  const LayerPlan knee = solve_topoep(problem, counts);
  EXPECT_EQ(knee.cost.loads, (std::vector<TokenCount>{1148, 952}));
  EXPECT_EQ(knee.cost.times.compute, 1148 * 1000);
  const LayerPlan linear = solve_topoep(two_gpus(0), counts);
  EXPECT_EQ(linear.cost.loads, (std::vector<TokenCount>{1050, 1050}));
  const PlanCost linear_at_knee =
      predict_plan_cost(problem.topology, problem.placement, linear.plan, {}, problem.cost);
  EXPECT_EQ(linear_at_knee.times.compute, 1245 * 1000);
}

TEST(InstanceMinimum, CostsNothingForAnIdleInstance) {
  // Expert 1 gets no token: its home computes nothing, so rank 1 is idle, not at 295.
  const TopoepProblem problem = two_gpus(295);
  const RoutingCounts counts = both_sources_send(100, 0);
  const LayerPlan result = solve_topoep(problem, counts);
  EXPECT_EQ(result.static_cost.times.compute, 295 * 1000);
  EXPECT_LE(result.cost.times.compute, result.static_cost.times.compute);
}

}  // namespace
}  // namespace topoep
