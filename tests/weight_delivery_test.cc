// How a plan's new replicas receive their weights (solver/plan_cost.h, WeightDelivery): from the
// home, one copy each, or broadcast along the expert's gradient chain walked the other way, as
// NCCL's broadcast runs it (what FasterMoE's shadowing does). The cluster: 2 nodes x 4 GPUs,
// expert e homed on rank e, expert 0 replicated on every other rank.

#include <gtest/gtest.h>

#include <algorithm>

#include "solver/plan_cost.h"
#include "solver/plan_validator.h"
#include "solver/planners/planner.h"
#include "tests/topoep_corpus.h"

namespace topoep {
namespace {

constexpr int kRanks = 8;

struct Shadowed {
  TopologyView topology{2, 4};
  Placement placement = Placement::contiguous(kRanks, kRanks, 1);
  RoutingCounts counts{kRanks, kRanks};
  Plan plan;
};

// Every rank sends 100 tokens to expert 0, and each runs its own on its replica (the home on
// itself).
Shadowed shadow_expert_zero_everywhere() {
  Shadowed s;
  s.plan.num_ranks = s.plan.num_experts = kRanks;
  s.plan.slots_per_rank = 1;
  s.plan.replica_expert.assign(kRanks, 0);
  s.plan.replica_expert[0] = kNoExpert;  // the home holds it already
  for (RankId r = 0; r < kRanks; ++r) {
    s.counts.set(r, 0, 100);
    s.plan.routes.push_back(Route{r, 0, r, 100});
  }
  return s;
}

int sent(const PlanCost& c, RankId r) { return c.weight_nvlink_out[r] + c.weight_ib_out[r]; }
int received(const PlanCost& c, RankId r) { return c.weight_nvlink_in[r] + c.weight_ib_in[r]; }

TEST(WeightDelivery, TheTestPlanIsValid) {
  const Shadowed s = shadow_expert_zero_everywhere();
  EXPECT_FALSE(find_plan_violation(s.counts, s.placement, s.plan, {}).has_value());
}

TEST(WeightDelivery, FromTheHomeTheHomeSendsEveryCopy) {
  const Shadowed s = shadow_expert_zero_everywhere();
  const CostParams cost = testing::corpus_cost(true);
  const PlanCost c = predict_plan_cost(s.topology, s.placement, s.plan, {}, cost);
  // Ranks 1-3 share the home's node, 4-7 do not.
  EXPECT_EQ(c.weight_nvlink_out[0], 3);
  EXPECT_EQ(c.weight_ib_out[0], 4);
  EXPECT_EQ(c.nvlink_weight_bytes, 3 * cost.replica_weight_bytes);
  EXPECT_EQ(c.ib_weight_bytes, 4 * cost.replica_weight_bytes);
}

TEST(WeightDelivery, ABroadcastSendsAndReceivesOneCopyPerRankAndCrossesEachNodeOnce) {
  const Shadowed s = shadow_expert_zero_everywhere();
  const CostParams cost = testing::corpus_cost(true);
  const PlanCost c =
      predict_plan_cost(s.topology, s.placement, s.plan, {}, cost, WeightDelivery::kChainBroadcast);
  EXPECT_EQ(received(c, 0), 0);
  for (RankId r = 1; r < kRanks; ++r) EXPECT_EQ(received(c, r), 1) << "rank " << r;
  for (RankId r = 0; r < kRanks; ++r) EXPECT_LE(sent(c, r), 1) << "rank " << r;
  // The gradient chain 4 > 5 > 6 > 7 > 1 > 2 > 3 > 0, walked from the home: one IB hop (1 to 7).
  EXPECT_EQ(c.weight_ib_out[1], 1);
  EXPECT_EQ(c.weight_ib_in[7], 1);
  EXPECT_EQ(c.ib_weight_bytes, cost.replica_weight_bytes);
  EXPECT_EQ(c.nvlink_weight_bytes, 6 * cost.replica_weight_bytes);
  // The same hops as the gradient reduction, each the other way.
  for (RankId r = 0; r < kRanks; ++r) {
    EXPECT_EQ(c.weight_nvlink_in[r], c.gradient_counts[1 * kRanks + r]) << "rank " << r;
    EXPECT_EQ(c.weight_nvlink_out[r], c.gradient_counts[0 * kRanks + r]) << "rank " << r;
    EXPECT_EQ(c.weight_ib_in[r], c.gradient_counts[3 * kRanks + r]) << "rank " << r;
    EXPECT_EQ(c.weight_ib_out[r], c.gradient_counts[2 * kRanks + r]) << "rank " << r;
  }
}

TEST(WeightDelivery, ABroadcastsWeightPhaseIsOneCopyOverTheSlowerLink) {
  const Shadowed s = shadow_expert_zero_everywhere();
  CostParams cost = testing::corpus_cost(true);
  cost.weight_overlap_ps = 0;  // the whole transfer exposed
  const PlanCost chain =
      predict_plan_cost(s.topology, s.placement, s.plan, {}, cost, WeightDelivery::kChainBroadcast);
  const PlanCost star = predict_plan_cost(s.topology, s.placement, s.plan, {}, cost);
  // Rank 1 receives over NVLink and forwards over IB; rank 7 the other way round.
  EXPECT_EQ(chain.times.weight_exposed, link_phase_ps(1, 0, 1, 0, cost.replica_weight_bytes, cost));
  // From the home: 3 copies over NVLink and 4 over IB leave one rank.
  EXPECT_EQ(star.times.weight_exposed, link_phase_ps(3, 0, 4, 0, cost.replica_weight_bytes, cost));
  EXPECT_LT(chain.times.total, star.times.total);
}

TEST(WeightDelivery, ResidentReplicasAreNotSentEitherWay) {
  const Shadowed s = shadow_expert_zero_everywhere();
  const CostParams cost = testing::corpus_cost(true);
  const std::vector<ExpertId> resident = s.plan.replica_expert;  // every replica kept
  for (const WeightDelivery delivery :
       {WeightDelivery::kFromHome, WeightDelivery::kChainBroadcast}) {
    const PlanCost c = predict_plan_cost(s.topology, s.placement, s.plan, resident, cost, delivery);
    EXPECT_EQ(c.nvlink_weight_bytes + c.ib_weight_bytes, 0);
    EXPECT_EQ(c.new_replicas, 0);
  }
}

TEST(WeightDelivery, ShadowingBroadcastsItsShadows) {
  const PlannerContext context{TopologyView{4, 8}, Placement::contiguous(64, 32, 1),
                               testing::corpus_cost(true)};
  // One expert takes most of every rank's tokens: worth a shadow on every rank.
  std::vector<std::vector<TokenCount>> rows(32, std::vector<TokenCount>(64, 10));
  for (auto& row : rows) row[5] = 20000;
  const RoutingCounts counts = RoutingCounts::from_rows(rows);
  const PlannerDecision d =
      make_planner("shadowing", context, PlannerOptions{})->plan(RecordId{}, counts);
  EXPECT_EQ(d.weight_delivery, WeightDelivery::kChainBroadcast);
  ASSERT_EQ(std::count(d.plan.replica_expert.begin(), d.plan.replica_expert.end(), 5), 31);
  const PlanCost c = predict_plan_cost(context.topology, d.placement, d.plan, d.resident,
                                       context.cost, d.weight_delivery);
  // Its home sends one copy, not 31.
  EXPECT_EQ(sent(c, d.placement.home_rank[5]), 1);
  EXPECT_EQ(c.ib_weight_bytes, 3 * context.cost.replica_weight_bytes);  // into 3 other nodes
}

}  // namespace
}  // namespace topoep
