#include "solver/plan_validator.h"

#include <gtest/gtest.h>

#include <functional>

#include "solver/static_plan.h"
#include "tests/plan_fixtures.h"

namespace topoep {
namespace {

using testing::small_balanced_plan;
using testing::small_counts;
using testing::small_placement;

std::optional<PlanViolation> violation_after(const std::function<void(Plan&)>& edit) {
  Plan plan = small_balanced_plan();
  edit(plan);
  return find_plan_violation(small_counts(), small_placement(), plan);
}

TEST(PlanValidator, AcceptsAValidPlanAndItsLoads) {
  const Plan plan = small_balanced_plan();
  const std::vector<TokenCount> loads = {20, 0, 30, 0};
  EXPECT_EQ(rank_loads(plan), loads);
  EXPECT_FALSE(find_plan_violation(small_counts(), small_placement(), plan, &loads));
}

TEST(PlanValidator, AcceptsTheStaticPlan) {
  const Plan plan = static_plan(small_counts(), small_placement());
  EXPECT_FALSE(find_plan_violation(small_counts(), small_placement(), plan));
  EXPECT_EQ(rank_loads(plan), (std::vector<TokenCount>{40, 0, 10, 0}));
}

TEST(PlanValidator, AcceptsAnIdleReplica) {
  const auto violation = violation_after([](Plan& p) { p.replica_expert[1] = 5; });
  EXPECT_FALSE(violation) << violation->message;
}

struct ViolationCase {
  const char* name;
  std::function<void(Plan&)> edit;
  PlanViolationKind kind;
  const char* message_fragment;
};

class PlanValidatorCatches : public ::testing::TestWithParam<ViolationCase> {};

TEST_P(PlanValidatorCatches, EachKindWithAPreciseMessage) {
  const ViolationCase& c = GetParam();
  const auto violation = violation_after(c.edit);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->kind, c.kind) << violation->message;
  EXPECT_NE(violation->message.find(c.message_fragment), std::string::npos) << violation->message;
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, PlanValidatorCatches,
    ::testing::Values(ViolationCase{"rank_count", [](Plan& p) { p.num_ranks = 5; },
                                    PlanViolationKind::kShapeMismatch, "plan has 5 ranks"},
                      ViolationCase{"slot_list", [](Plan& p) { p.replica_expert.pop_back(); },
                                    PlanViolationKind::kShapeMismatch, "lists 3 slots"},
                      ViolationCase{"slot_expert", [](Plan& p) { p.replica_expert[1] = 8; },
                                    PlanViolationKind::kReplicaOutOfRange,
                                    "rank 1 slot 0 holds expert 8"},
                      ViolationCase{"home", [](Plan& p) { p.replica_expert[1] = 2; },
                                    PlanViolationKind::kReplicaOnHomeRank, "rank 1 slot 0"},
                      ViolationCase{"slot_count",
                                    [](Plan& p) {
                                      p.slots_per_rank = 2;
                                      p.replica_expert = {kNoExpert, kNoExpert, kNoExpert,
                                                          kNoExpert, 0,         0,
                                                          kNoExpert, kNoExpert};
                                    },
                                    PlanViolationKind::kShapeMismatch, "2 spare slots"},
                      ViolationCase{"route_range", [](Plan& p) { p.routes[7].dst = 4; },
                                    PlanViolationKind::kRouteOutOfRange, "route 7"},
                      ViolationCase{"zero_route", [](Plan& p) { p.routes[1].tokens = 0; },
                                    PlanViolationKind::kNonPositiveRoute, "route 1"},
                      ViolationCase{"order", [](Plan& p) { std::swap(p.routes[2], p.routes[3]); },
                                    PlanViolationKind::kRouteOrder, "route 3"},
                      ViolationCase{"non_instance", [](Plan& p) { p.routes[0].dst = 1; },
                                    PlanViolationKind::kRouteToNonInstance,
                                    "rank 1 holds no instance of expert 0"},
                      ViolationCase{"lost_tokens", [](Plan& p) { p.routes[0].tokens = 9; },
                                    PlanViolationKind::kTokensNotConserved,
                                    "src 0, expert 0: routes assign 9 tokens, counts hold 10"},
                      ViolationCase{"missing_pair", [](Plan& p) { p.routes.pop_back(); },
                                    PlanViolationKind::kTokensNotConserved, "src 3, expert 5"}),
    [](const ::testing::TestParamInfo<ViolationCase>& info) { return info.param.name; });

// Placement with 2 slots per rank, for the slot-level checks the 1-slot fixture cannot reach.
class PlanValidatorTwoSlots : public ::testing::Test {
 protected:
  Placement placement = Placement::contiguous(8, 4, 2);
  RoutingCounts counts = testing::small_counts();
  Plan plan = static_plan(counts, placement);
};

TEST_F(PlanValidatorTwoSlots, CatchesDuplicateReplicaOnOneRank) {
  plan.replica_expert[2] = 0;
  plan.replica_expert[3] = 0;
  const auto violation = find_plan_violation(counts, placement, plan);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->kind, PlanViolationKind::kDuplicateReplica);
  EXPECT_NE(violation->message.find("rank 1 slot 1"), std::string::npos) << violation->message;
}

TEST_F(PlanValidatorTwoSlots, CatchesSlotsOutOfCanonicalOrder) {
  plan.replica_expert[2] = 4;
  plan.replica_expert[3] = 0;
  auto violation = find_plan_violation(counts, placement, plan);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->kind, PlanViolationKind::kReplicaOrder);

  plan.replica_expert[2] = kNoExpert;
  plan.replica_expert[3] = 0;
  violation = find_plan_violation(counts, placement, plan);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->kind, PlanViolationKind::kReplicaOrder);
  EXPECT_NE(violation->message.find("after an empty slot"), std::string::npos);
}

TEST(PlanValidator, CatchesReportedLoadsThatDisagree) {
  const std::vector<TokenCount> wrong = {20, 0, 29, 1};
  const auto violation =
      find_plan_violation(small_counts(), small_placement(), small_balanced_plan(), &wrong);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->kind, PlanViolationKind::kLoadMismatch);
  EXPECT_NE(violation->message.find("rank 2: reported load 29"), std::string::npos);

  const std::vector<TokenCount> short_list = {20, 0, 30};
  EXPECT_EQ(
      find_plan_violation(small_counts(), small_placement(), small_balanced_plan(), &short_list)
          ->kind,
      PlanViolationKind::kLoadMismatch);
}

TEST(PlanValidator, NamesEveryKind) {
  EXPECT_STREQ(to_string(PlanViolationKind::kReplicaOnHomeRank), "replica_on_home_rank");
  EXPECT_STREQ(to_string(PlanViolationKind::kLoadMismatch), "load_mismatch");
}

}  // namespace
}  // namespace topoep
