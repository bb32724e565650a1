// Replica gradients reduced at a step's end, one chain per expert (solver/gradient_chains.h):
// the chains the step's earlier microbatches owe when one is planned, and how the solver and
// predict_plan_cost() charge new replicas along them.

#include <gtest/gtest.h>

#include <vector>

#include "solver/gradient_chains.h"
#include "solver/plan_cost.h"
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

// `ranks` GPUs, one expert each: every GPU sends `hot` tokens to expert 0, `cold` to the others.
RoutingCounts hot_expert_zero(int ranks, TokenCount hot, TokenCount cold) {
  RoutingCounts counts(ranks, ranks);
  for (RankId src = 0; src < ranks; ++src) {
    for (ExpertId e = 0; e < ranks; ++e) counts.set(src, e, e == 0 ? hot : cold);
  }
  return counts;
}

TEST(OwedHolders, AllZeroPlanAsNoneDo) {
  const TopoepProblem problem = two_gpus();
  const RoutingCounts counts = hot_expert_zero(2, 1000, 50);
  TopoepHostSolver solver(problem);
  Plan none, zeros;
  solver.solve(counts, {}, &none);
  solver.solve(counts, {}, &zeros, std::vector<std::uint8_t>(4, 0));
  EXPECT_EQ(plan_hash(zeros), plan_hash(none));
  EXPECT_EQ(none.replica_at(1, 0), 0);  // the hot expert's replica pays its 0.4 µs gradient
}

// Three GPUs, expert 0 hot (900 tokens on rank 0, 300 on each other rank): a replica of it
// takes 200 tokens, 0.2 µs of compute, but its gradient takes 0.4 µs: not worth it alone.
TopoepProblem three_gpus() {
  TopoepProblem problem = two_gpus();
  problem.topology = TopologyView{1, 3};
  problem.placement = Placement::contiguous(3, 3, 1);
  return problem;
}

// The three-GPU plans below: no replica at all, or one of expert 0 (homed on rank 0) on rank 1
// or 2.
void expect_no_replica(const Plan& plan) {
  for (RankId rank = 0; rank < 3; ++rank) EXPECT_EQ(plan.replica_at(rank, 0), kNoExpert);
}
bool replicates_expert_zero(const Plan& plan) {
  return plan.replica_at(1, 0) == 0 || plan.replica_at(2, 0) == 0;
}

TEST(OwedHolders, LetAReplicaUnderTheStepsReductionRideFree) {
  // When rank 2 already held replicas of experts 0 and 1 this step, it sends two gradients at
  // the step's end (0.8 µs). A new replica of expert 0 on rank 1 joins expert 0's chain
  // (1 -> 2 -> 0): rank 1 sends one gradient, rank 2 receives one, and no rank's reduction
  // outlasts rank 2's: the replica pays.
  const TopoepProblem problem = three_gpus();
  const RoutingCounts counts = hot_expert_zero(3, 300, 100);
  TopoepHostSolver solver(problem);
  Plan alone;
  solver.solve(counts, {}, &alone);
  expect_no_replica(alone);
  std::vector<std::uint8_t> owed(9, 0);
  owed[0 * 3 + 2] = 1;  // expert 0 on rank 2
  owed[1 * 3 + 2] = 1;  // expert 1 on rank 2
  check_topoep_inputs(problem, counts, {}, owed);
  Plan riding;
  solver.solve(counts, {}, &riding, owed);
  EXPECT_TRUE(replicates_expert_zero(riding));
}

TEST(OwedHolders, ChargeAReplicaItsChainHopsNotADirectSendHome) {
  // Rank 2 held a replica of expert 0 this step; rank 1 owes nothing. A star would have rank 0
  // receive a second gradient for a new replica on rank 1 (0.8 µs at rank 0: more than its
  // compute saves); in the chain 1 -> 2 -> 0 rank 0 still receives one, and rank 1's and rank
  // 2's reductions take 0.4 µs each, no longer than the step's already: the replica pays.
  const TopoepProblem problem = three_gpus();
  const RoutingCounts counts = hot_expert_zero(3, 300, 100);
  std::vector<std::uint8_t> owed(9, 0);
  owed[0 * 3 + 2] = 1;
  TopoepHostSolver solver(problem);
  Plan plan;
  solver.solve(counts, {}, &plan, owed);
  EXPECT_TRUE(replicates_expert_zero(plan));
}

TEST(ReplicaUses, ShareTheStepEndReductionOverTheMicrobatchesAReplicaCanServe) {
  // The replica's 0.4 µs gradient outweighs the 0.2 µs of compute it saves in one microbatch;
  // over the four microbatches left in the step it can serve, its share is 0.1 µs: it pays.
  const TopoepProblem problem = three_gpus();
  const RoutingCounts counts = hot_expert_zero(3, 300, 100);
  TopoepHostSolver solver(problem);
  Plan one, four;
  solver.solve(counts, {}, &one, {}, 1);
  solver.solve(counts, {}, &four, {}, 4);
  expect_no_replica(one);
  EXPECT_TRUE(replicates_expert_zero(four));
}

TEST(PredictedGradientPhase, IsTheChainsNotAStar) {
  // Four GPUs in one node, expert 0 replicated on the other three: the chain 1 -> 2 -> 3 -> 0
  // has every rank send or receive one gradient (0.4 µs); a star would have rank 0 receive
  // three (1.2 µs).
  TopoepProblem problem = two_gpus();
  problem.topology = TopologyView{1, 4};
  problem.placement = Placement::contiguous(4, 4, 1);
  RoutingCounts counts(4, 4);
  for (RankId src = 0; src < 4; ++src) counts.set(src, 0, 100);
  Plan plan;
  plan.num_ranks = 4;
  plan.num_experts = 4;
  plan.slots_per_rank = 1;
  plan.replica_expert = {kNoExpert, 0, 0, 0};
  for (RankId src = 0; src < 4; ++src) plan.routes.push_back(Route{src, 0, src, 100});
  const PlanCost cost =
      predict_plan_cost(problem.topology, problem.placement, plan, {}, problem.cost);
  EXPECT_EQ(cost.times.gradient, 400000);
  EXPECT_EQ(cost.gradient_counts[0 * 4 + 0], 1);  // the home receives one gradient
}

TEST(OwedHolders, OutsideTheirShapeOrValuesAreRejected) {
  const TopoepProblem problem = two_gpus();
  const RoutingCounts counts = hot_expert_zero(2, 1000, 50);
  EXPECT_EQ(testing::input_error_field(
                [&] { check_topoep_inputs(problem, counts, {}, std::vector<std::uint8_t>(3, 0)); }),
            "owed_holders");
  std::vector<std::uint8_t> two(4, 0);
  two[0 * 2 + 1] = 2;
  EXPECT_EQ(testing::input_error_field([&] { check_topoep_inputs(problem, counts, {}, two); }),
            "owed_holders[0][1]");
  std::vector<std::uint8_t> home(4, 0);
  home[1 * 2 + 1] = 1;  // expert 1 lives on rank 1
  EXPECT_EQ(testing::input_error_field([&] { check_topoep_inputs(problem, counts, {}, home); }),
            "owed_holders[1][1]");
}

}  // namespace
}  // namespace topoep
