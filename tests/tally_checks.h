#pragma once
// A plan's sums (PlanTally: TopoepHostSolver::last_tally(), a planner's decision, the static
// plan's tally) checked against a walk over the plan's routes.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "solver/plan_cost.h"

namespace topoep::testing {

// Every per-rank counter and every instance's tokens equal the routes' sums, and the phase
// times priced from the tally equal those priced from the routes (what the simulator prices a
// plan from).
inline void expect_tally_matches_routes(const PlanTally& tally, const TopologyView& topology,
                                        const Placement& placement, const Plan& plan,
                                        const std::vector<ExpertId>& resident,
                                        const CostParams& cost, const std::string& where) {
  const PlanCost walked = predict_plan_cost(topology, placement, plan, resident, cost);
  const PlanCost summed = plan_cost_from_tally(topology, placement, plan, resident, cost, tally);
  EXPECT_EQ(tally.loads, walked.loads) << where;
  EXPECT_EQ(tally.nvlink_out, walked.nvlink_tokens_out) << where;
  EXPECT_EQ(tally.nvlink_in, walked.nvlink_tokens_in) << where;
  EXPECT_EQ(tally.ib_out, walked.ib_tokens_out) << where;
  EXPECT_EQ(tally.ib_in, walked.ib_tokens_in) << where;
  EXPECT_EQ(summed.times.total, walked.times.total) << where;
  EXPECT_EQ(summed.times.compute, walked.times.compute) << where;
  EXPECT_EQ(summed.times.dispatch, walked.times.dispatch) << where;
  EXPECT_EQ(summed.ib_dispatch_bytes, walked.ib_dispatch_bytes) << where;
  std::map<std::pair<RankId, ExpertId>, TokenCount> by_instance;
  for (const Route& route : plan.routes) by_instance[{route.dst, route.expert}] += route.tokens;
  std::vector<std::pair<RankId, TokenCount>> routed;
  for (const auto& [instance, tokens] : by_instance) routed.emplace_back(instance.first, tokens);
  std::vector<std::pair<RankId, TokenCount>> tallied = tally.instances;
  std::sort(routed.begin(), routed.end());
  std::sort(tallied.begin(), tallied.end());
  EXPECT_EQ(tallied, routed) << where;
}

}  // namespace topoep::testing
