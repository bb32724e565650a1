// Replicas resident from the step's earlier microbatches (TopoepLayerInput::resident): keeping
// one is free, and a rank's replicas are a set, whichever slot holds them.

#include <gtest/gtest.h>

#include <vector>

#include "solver/plan_cost.h"
#include "solver/plan_validator.h"
#include "solver/topoep_solver.h"
#include "tests/topoep_corpus.h"

namespace topoep {
namespace {

TEST(ResidentReplicas, AreUsedForFree) {
  // All tokens go to expert 0 (home rank 0); a replica of it already sits on every other rank.
  TopoepProblem problem;
  problem.topology = TopologyView{2, 4};
  problem.placement = Placement::contiguous(16, 8, 1);
  problem.cost = testing::corpus_cost(true);
  RoutingCounts counts(8, 16);
  for (RankId src = 0; src < 8; ++src) counts.set(src, 0, 1000);
  std::vector<ExpertId> resident(8, 0);
  resident[0] = kNoExpert;
  const LayerPlan result = solve_topoep(problem, counts, resident);
  EXPECT_EQ(result.cost.new_replicas, 0);
  EXPECT_LT(result.cost.max_mean_load(), 1.05);
  EXPECT_FALSE(find_plan_violation(counts, problem.placement, result.plan));
}

TEST(ResidentReplicas, OneEvictedIdleAndMadeAgainOnItsRankIsPricedAsKept) {
  // One node of four GPUs; rank 0 sends every token. Rank 3 holds idle replicas of experts 12
  // and 6 and has one empty slot. Compute is so dear (0.1 ms a token) that every move pays for
  // its replica's gradient reduction. The search gives rank 3 a new replica of expert 0 (the
  // empty slot), then of 16, which evicts the lowest idle slot: 12's. Then it wants 12 there
  // again and evicts 6 for it. The plan lists rank 3's replicas as {0, 12, 16}: 12 was kept, its
  // weights never left, and it joins no gradient chain. The search had charged it as a new
  // replica, one gradient hop more than predict_plan_cost() finds (found by a sweep of 1.2
  // million seeds of KeepsEveryPropertyOnRandomShapesPlacementsAndCosts, 2026-12-01).
  TopoepProblem problem;
  problem.topology = TopologyView{1, 4};
  problem.placement.home_rank = {1, 0, 0, 3, 0, 3, 1, 0, 2, 2, 0, 0, 0, 1, 2, 3, 2, 1, 2, 1};
  problem.placement.num_ranks = 4;
  problem.placement.slots_per_rank = 3;
  problem.cost = testing::corpus_cost(false);
  problem.cost.compute_ps_per_token = 100000000;
  problem.cost.replica_gradient_bytes = 2LL * 3 * 7168 * 2048;  // bf16 gradients
  RoutingCounts counts(4, 20);
  const std::vector<TokenCount> row = {429, 21, 73,  49, 59,  29,  111, 23,  112, 105,
                                       148, 83, 187, 87, 166, 136, 206, 180, 110, 0};
  for (ExpertId e = 0; e < 20; ++e) counts.set(0, e, row[e]);
  const std::vector<ExpertId> resident = {kNoExpert, kNoExpert, 14,        3,
                                          kNoExpert, kNoExpert, kNoExpert, kNoExpert,
                                          kNoExpert, kNoExpert, 12,        6};
  TopoepHostSolver solver(problem);
  Plan plan;
  solver.solve(counts, resident, &plan);
  const std::vector<ExpertId> rank3(plan.replica_expert.begin() + 9, plan.replica_expert.end());
  ASSERT_EQ(rank3, (std::vector<ExpertId>{0, 12, 16}));  // the case this test is about
  const PlanCost priced =
      predict_plan_cost(problem.topology, problem.placement, plan, resident, problem.cost);
  EXPECT_EQ(priced.new_replicas, 2);
  EXPECT_EQ(solver.last_predicted().gradient, priced.times.gradient);
  EXPECT_EQ(solver.last_predicted().weight_exposed, priced.times.weight_exposed);
  EXPECT_EQ(solver.last_predicted().total, priced.times.total);
  EXPECT_FALSE(find_plan_violation(counts, problem.placement, plan));
}

}  // namespace
}  // namespace topoep
