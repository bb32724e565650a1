// `--check` (sim/plan_check.h): a valid plan priced with its own loads and bytes passes, and an
// invalid plan, or one priced with other figures, stops the run with the plan and what is wrong
// named.

#include "sim/plan_check.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "solver/static_plan.h"

namespace topoep {
namespace {

constexpr Bytes kDispatchBytes = 100;  // per token
const TopologyView kTopology{2, 2};    // 2 nodes x 2 GPUs

// 4 ranks x 8 experts with one spare slot each, planned statically, with the loads and bytes
// its routes imply: the test's own count, what check_priced_plan() is to find again.
struct Priced {
  RoutingCounts counts = RoutingCounts(4, 8);
  PlannerDecision decision;
  std::vector<TokenCount> loads;
  Bytes nvlink_bytes = 0, ib_bytes = 0;

  Priced() {
    for (RankId src = 0; src < 4; ++src) {
      for (ExpertId e = 0; e < 8; ++e) counts.set(src, e, 1 + (src * 3 + e * 5) % 7);
    }
    decision.placement = Placement::contiguous(8, 4, 1);
    decision.plan = static_plan(counts, decision.placement);
    loads = rank_loads(decision.plan);
    for (const Route& route : decision.plan.routes) {
      if (route.src == route.dst) continue;
      (route.src / 2 == route.dst / 2 ? nvlink_bytes : ib_bytes) += route.tokens * kDispatchBytes;
    }
  }
};

std::string check_message(const Priced& p) {
  try {
    check_priced_plan("planner 'broken', step 2 microbatch 1 layer 3",
                      PricedPlan{p.counts, p.decision, p.loads, p.nvlink_bytes, p.ib_bytes},
                      kTopology, kDispatchBytes);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "<passed>";
}

TEST(PlanCheck, PassesAValidPlanPricedWithWhatItsRoutesImply) {
  EXPECT_EQ(check_message(Priced()), "<passed>");
}

TEST(PlanCheck, NamesThePlanAndTheRouteThatLosesTokens) {
  Priced priced;
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
  Priced priced;
  priced.loads[1] -= 1;
  const std::string message = check_message(priced);
  EXPECT_NE(message.find("load_mismatch"), std::string::npos) << message;
}

TEST(PlanCheck, CatchesAReplicaOnItsExpertsHomeRank) {
  Priced priced;
  priced.decision.plan.replica_expert[0] = 0;  // expert 0 lives on rank 0
  const std::string message = check_message(priced);
  EXPECT_NE(message.find("replica_on_home_rank"), std::string::npos) << message;
}

TEST(PlanCheck, CatchesIbBytesTheRoutesDoNotCarry) {
  Priced priced;
  priced.ib_bytes += kDispatchBytes;  // one token more over IB than the routes send
  const std::string message = check_message(priced);
  EXPECT_NE(
      message.find("dispatch_bytes: priced with " + std::to_string(priced.ib_bytes) + " IB bytes"),
      std::string::npos)
      << message;
}

}  // namespace
}  // namespace topoep
