// `--check` (sim/plan_check.h): a valid plan priced with its own loads passes, and an invalid
// one stops the run with the plan and the violation named.

#include "sim/plan_check.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "solver/static_plan.h"

namespace topoep {
namespace {

// 4 ranks x 8 experts with one spare slot each, planned statically, priced with its own loads.
struct PricedPlan {
  RoutingCounts counts = RoutingCounts(4, 8);
  PlannerDecision decision;
  std::vector<TokenCount> loads;

  PricedPlan() {
    for (RankId src = 0; src < 4; ++src) {
      for (ExpertId e = 0; e < 8; ++e) counts.set(src, e, 1 + (src * 3 + e * 5) % 7);
    }
    decision.placement = Placement::contiguous(8, 4, 1);
    decision.plan = static_plan(counts, decision.placement);
    loads = rank_loads(decision.plan);
  }
};

std::string check_message(const PricedPlan& priced) {
  try {
    check_priced_plan("planner 'broken', step 2 microbatch 1 layer 3", priced.counts,
                      priced.decision, priced.loads);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "<passed>";
}

TEST(PlanCheck, PassesAValidPlanPricedWithTheLoadsItsRoutesImply) {
  EXPECT_EQ(check_message(PricedPlan()), "<passed>");
}

TEST(PlanCheck, NamesThePlanAndTheRouteThatLosesTokens) {
  PricedPlan priced;
  priced.decision.plan.routes[5].tokens += 1;
  priced.loads = rank_loads(priced.decision.plan);
  const std::string message = check_message(priced);
  EXPECT_EQ(message.rfind("plan check: planner 'broken', step 2 microbatch 1 layer 3: "
                          "tokens_not_conserved: ",
                          0),
            0u)
      << message;
}

TEST(PlanCheck, CatchesLoadsThatDisagreeWithTheRoutesPriced) {
  PricedPlan priced;
  priced.loads[1] -= 1;
  const std::string message = check_message(priced);
  EXPECT_NE(message.find("load_mismatch"), std::string::npos) << message;
}

TEST(PlanCheck, CatchesAReplicaOnItsExpertsHomeRank) {
  PricedPlan priced;
  priced.decision.plan.replica_expert[0] = 0;  // expert 0 lives on rank 0
  const std::string message = check_message(priced);
  EXPECT_NE(message.find("replica_on_home_rank"), std::string::npos) << message;
}

}  // namespace
}  // namespace topoep
