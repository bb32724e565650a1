// Every planner behind the Planner interface: valid plans on their own layouts over a sequence
// of steps and microbatches, the documented state each keeps, and the ideal bound below all.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "solver/plan_cost.h"
#include "solver/plan_encoding.h"
#include "solver/plan_validator.h"
#include "solver/planners/balance_topoep_planner.h"
#include "solver/planners/host_planning.h"
#include "solver/planners/ideal.h"
#include "solver/planners/planner.h"
#include "solver/static_plan.h"
#include "solver/topoep_solver.h"
#include "tests/input_error_field.h"
#include "tests/tally_checks.h"
#include "tests/topoep_corpus.h"

namespace topoep {
namespace {

// The default overheads, with EPLB replanning every `period` steps from `window` steps.
PlannerOptions eplb_every(int period, int window) {
  PlannerOptions options;
  options.eplb_period_steps = period;
  options.eplb_window_steps = window;
  return options;
}

PlannerContext context_for(int experts, int ranks, int slots, bool weights) {
  return PlannerContext{TopologyView{ranks / 8, 8}, Placement::contiguous(experts, ranks, slots),
                        testing::corpus_cost(weights)};
}

RoutingCounts record_counts(int experts, int ranks, std::uint64_t seed) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = ranks;
  spec.num_experts = experts;
  spec.tokens_per_rank = 256;
  spec.top_k = 8;
  spec.seed = seed;
  return generate_routing(spec);
}

// The TopoEP solver's own plan of `counts` under `problem`: what the planner's must equal.
Plan solver_plan(const TopoepProblem& problem, const RoutingCounts& counts) {
  Plan plan;
  TopoepHostSolver(problem).solve(counts, {}, &plan);
  return plan;
}

Picoseconds total_with_overhead(const PlannerContext& context, const PlannerDecision& d) {
  const PlanCost cost = predict_plan_cost(context.topology, d.placement, d.plan, d.resident,
                                          context.cost, d.weight_delivery);
  return cost.times.total + overhead_time_ps(d.overhead, cost, context.cost);
}

TEST(Planners, EveryPlanIsValidOnItsLayoutAndIdealIsBelowAll) {
  for (const bool weights : {false, true}) {
    const PlannerContext context = context_for(64, 32, 2, weights);
    std::vector<std::unique_ptr<Planner>> planners;
    for (const std::string& name : planner_names()) {
      planners.push_back(make_planner(name, context, eplb_every(2, 2)));
    }
    for (int step = 0; step < 5; ++step) {
      for (int microbatch = 0; microbatch < 2; ++microbatch) {
        const RoutingCounts counts = record_counts(64, 32, 100 + step * 2 + microbatch);
        std::vector<PhaseTimes> times;
        std::vector<Picoseconds> totals;
        for (auto& planner : planners) {
          const PlannerDecision d = planner->plan(RecordId{step, microbatch}, counts);
          const auto violation = find_plan_violation(counts, d.placement, d.plan);
          EXPECT_FALSE(violation) << planner->name() << " step " << step << ": "
                                  << violation->message;
          if (!d.tally.empty()) {
            testing::expect_tally_matches_routes(d.tally, context.topology, d.placement, d.plan,
                                                 d.resident, context.cost,
                                                 planner->name() + " step " + std::to_string(step));
          }
          const PlanCost cost = predict_plan_cost(context.topology, d.placement, d.plan, d.resident,
                                                  context.cost, d.weight_delivery);
          times.push_back(cost.times);
          totals.push_back(total_with_overhead(context, d));
        }
        const PhaseTimes ideal = ideal_phase_times(counts, context.cost, times);
        for (std::size_t i = 0; i < planners.size(); ++i) {
          EXPECT_LE(ideal.total, totals[i]) << planners[i]->name();
        }
      }
    }
  }
}

TEST(Planners, WithoutRoutesEveryPlannerDecidesTheSameSlotsAndSums) {
  PlannerContext with = context_for(64, 32, 2, true), without = with;
  without.routes = false;
  for (const std::string& name : planner_names()) {
    auto a = make_planner(name, with, eplb_every(1, 1));
    auto b = make_planner(name, without, eplb_every(1, 1));
    for (int step = 0; step < 3; ++step) {
      const RoutingCounts counts = record_counts(64, 32, 300 + step);
      const PlannerDecision da = a->plan(RecordId{step, 0}, counts);
      const PlannerDecision db = b->plan(RecordId{step, 0}, counts);
      EXPECT_EQ(da.plan.replica_expert, db.plan.replica_expert) << name;
      EXPECT_EQ(da.placement.home_rank, db.placement.home_rank) << name;
      EXPECT_EQ(da.tally.loads, db.tally.loads) << name;
      EXPECT_EQ(da.tally.ib_in, db.tally.ib_in) << name;
      EXPECT_EQ(da.tally.instances, db.tally.instances) << name;
      // A planner that hands over its sums may leave the routes unwritten.
      if (!db.tally.empty()) {
        EXPECT_TRUE(db.plan.routes.empty()) << name;
      } else {
        EXPECT_EQ(da.plan.routes.size(), db.plan.routes.size()) << name;
      }
    }
  }
}

TEST(Planners, EplbHoldsExpertsPerGpuPlusSpareSlotsAndEveryExpert) {
  const PlannerContext context = context_for(64, 32, 1, true);
  auto planner = make_planner("eplb-microbatch", context, PlannerOptions{});
  const RoutingCounts counts = record_counts(64, 32, 7);
  const PlannerDecision d = planner->plan(RecordId{0, 0}, counts);
  std::vector<std::set<ExpertId>> hosted(32);
  for (ExpertId e = 0; e < 64; ++e) hosted[d.placement.home_rank[e]].insert(e);
  for (RankId r = 0; r < 32; ++r) {
    for (int s = 0; s < d.plan.slots_per_rank; ++s) {
      if (d.plan.replica_at(r, s) != kNoExpert) hosted[r].insert(d.plan.replica_at(r, s));
    }
    EXPECT_LE(hosted[r].size(), 64u / 32 + 1) << "rank " << r;
  }
  EXPECT_LT(predict_plan_cost(context.topology, d.placement, d.plan, d.resident, context.cost)
                .max_mean_load(),
            predict_plan_cost(context.topology, context.placement,
                              static_plan(counts, context.placement), {}, context.cost)
                .max_mean_load());
  EXPECT_GT(d.overhead.host_ps, 0);
  // Leaving the home layout moves weights: at least one replica per spare slot's worth.
  EXPECT_GE(d.overhead.migration_nvlink_bytes + d.overhead.migration_ib_bytes,
            context.cost.replica_weight_bytes);
}

// EPLB's groups: one a node keeps every expert's instances on its home node (the reference
// packs n groups onto n nodes in order); the model's, more groups than nodes, are packed onto
// nodes by load, so that experts leave their home nodes and their weights cross IB.
TEST(Planners, EplbGroupsPerNodeStayHomeAndTheModelsMovesExpertsAcrossNodes) {
  PlannerContext context = context_for(64, 32, 1, true);
  context.expert_groups = 8;  // of 8 experts, two a node
  const RoutingCounts counts = record_counts(64, 32, 7);
  const auto off_home_node = [&](int eplb_groups) {
    PlannerOptions options;
    options.eplb_groups = eplb_groups;
    const PlannerDecision d =
        make_planner("eplb-microbatch", context, options)->plan(RecordId{0, 0}, counts);
    int off = 0;
    for (ExpertId e = 0; e < 64; ++e) {
      const int node = context.placement.home_rank[e] / 8;
      off += d.placement.home_rank[e] / 8 != node;
      for (RankId r = 0; r < 32; ++r) {
        off += d.plan.replica_at(r, 0) == e && r / 8 != node;
      }
    }
    return std::make_pair(off, d.overhead.migration_ib_bytes);
  };
  EXPECT_EQ(off_home_node(kEplbGroupsPerNode), std::make_pair(0, Bytes{0}));
  const auto [off, ib_bytes] = off_home_node(kEplbGroupsOfModel);
  EXPECT_GT(off, 0);
  EXPECT_GE(ib_bytes, off * context.cost.replica_weight_bytes);
  // A count of groups that the nodes do not divide balances globally, as one group does.
  EXPECT_GT(off_home_node(2).first, 0);
  EXPECT_EQ(off_home_node(2), off_home_node(1));
  context.expert_groups = 0;  // a model without groups: one
  EXPECT_EQ(off_home_node(kEplbGroupsOfModel), off_home_node(1));
}

TEST(Planners, DeployedEplbReplansEveryPeriodFromPastStepsOnly) {
  const PlannerContext context = context_for(64, 32, 1, true);
  auto planner = make_planner("eplb", context, eplb_every(2, 1));
  // Step 0: no history, the home layout. Step 1: still none (period 2). Step 2: replans.
  const PlannerDecision first = planner->plan(RecordId{0, 0}, record_counts(64, 32, 1));
  EXPECT_EQ(first.overhead.host_ps, 0);
  EXPECT_EQ(first.placement.home_rank, context.placement.home_rank);
  const PlannerDecision second = planner->plan(RecordId{1, 0}, record_counts(64, 32, 2));
  EXPECT_EQ(second.overhead.host_ps, 0);
  const PlannerDecision third = planner->plan(RecordId{2, 0}, record_counts(64, 32, 3));
  EXPECT_GT(third.overhead.host_ps, 0);
  const PlannerDecision fourth = planner->plan(RecordId{2, 1}, record_counts(64, 32, 4));
  EXPECT_EQ(fourth.overhead.host_ps, 0);  // same step: the layout stays
  EXPECT_EQ(fourth.placement.home_rank, third.placement.home_rank);
  EXPECT_EQ(fourth.plan.replica_expert, third.plan.replica_expert);
}

TEST(Planners, TopoepKeepsReplicasResidentWithinAStep) {
  const PlannerContext context = context_for(64, 32, 1, true);
  auto planner = make_planner("topoep", context, PlannerOptions{});
  const PlannerDecision first = planner->plan(RecordId{0, 0}, record_counts(64, 32, 1));
  EXPECT_TRUE(first.resident.empty());
  const PlannerDecision second = planner->plan(RecordId{0, 1}, record_counts(64, 32, 2));
  EXPECT_EQ(second.resident, first.plan.replica_expert);
  const PlannerDecision third = planner->plan(RecordId{1, 0}, record_counts(64, 32, 3));
  EXPECT_TRUE(third.resident.empty());
}

// Without a spare slot TopoEP's plan is the static one, and no solve is launched to find that.
TEST(Planners, TopoepChargesItsSolveOnlyWhereThereAreSpareSlots) {
  const RoutingCounts counts = record_counts(64, 32, 1);
  const PlannerDecision none =
      make_planner("topoep", context_for(64, 32, 0, true), PlannerOptions{})
          ->plan(RecordId{0, 0}, counts);
  EXPECT_EQ(none.overhead.host_ps, 0);
  EXPECT_EQ(plan_hash(none.plan), plan_hash(static_plan(counts, none.placement)));
  const PlannerDecision one = make_planner("topoep", context_for(64, 32, 1, true), PlannerOptions{})
                                  ->plan(RecordId{0, 0}, counts);
  EXPECT_EQ(one.overhead.host_ps, 20000000);  // PlannerOptions' 20 µs
}

// A later microbatch is solved with the replicas the earlier ones used as owed holders (their
// gradient chains are reduced at the step's end); a new step owes nothing.
TEST(Planners, TopoepOwesTheStepsEarlierReplicaGradientsUntilTheStepEnds) {
  PlannerContext context = context_for(64, 32, 1, true);
  context.cost.replica_gradient_bytes = context.cost.replica_weight_bytes;
  auto planner = make_planner("topoep", context, PlannerOptions{});
  const PlannerDecision first = planner->plan(RecordId{0, 0}, record_counts(64, 32, 1));
  const PlannerDecision second = planner->plan(RecordId{0, 1}, record_counts(64, 32, 2));
  const PlannerDecision next_step = planner->plan(RecordId{1, 0}, record_counts(64, 32, 3));

  const TopoepProblem problem{context.topology, context.placement, context.cost, 0};
  std::vector<std::uint8_t> owed(64 * 32, 0);
  int holders = 0;
  for (RankId rank = 0; rank < 32; ++rank) {
    const ExpertId expert = first.plan.replica_at(rank, 0);
    if (expert == kNoExpert) continue;
    owed[static_cast<std::size_t>(expert) * 32 + rank] = 1;
    ++holders;
  }
  ASSERT_GT(holders, 0);
  TopoepHostSolver solver(problem);
  Plan expected;
  solver.solve(record_counts(64, 32, 2), first.plan.replica_expert, &expected, owed);
  EXPECT_EQ(plan_hash(second.plan), plan_hash(expected));
  solver.solve(record_counts(64, 32, 3), {}, &expected);
  EXPECT_EQ(plan_hash(next_step.plan), plan_hash(expected));
}

// A new replica can serve the step's remaining microbatches: the planner tells the solver how
// many are left, at most PlannerOptions::topoep_replica_uses (default 2), so that the step-end
// gradient reduction is weighed as their shared cost.
TEST(Planners, TopoepWeighsGradientsOverTheStepsRemainingMicrobatches) {
  PlannerContext context = context_for(64, 32, 1, true);
  context.cost.replica_gradient_bytes = context.cost.replica_weight_bytes;
  context.microbatches_per_step = 4;
  const TopoepProblem problem{context.topology, context.placement, context.cost, 0};
  TopoepHostSolver solver(problem);
  Plan expected;
  for (const int uses : {2, 4}) {
    PlannerOptions options;
    if (uses == 4) options.topoep_replica_uses = 8;  // more than the step has left
    auto planner = make_planner("topoep", context, options);
    const PlannerDecision first = planner->plan(RecordId{0, 0}, record_counts(64, 32, 1));
    const PlannerDecision last = planner->plan(RecordId{0, 3}, record_counts(64, 32, 2));
    solver.solve(record_counts(64, 32, 1), {}, &expected, {}, uses);
    EXPECT_EQ(plan_hash(first.plan), plan_hash(expected)) << uses;
    std::vector<std::uint8_t> owed(64 * 32, 0);
    for (RankId rank = 0; rank < 32; ++rank) {
      const ExpertId expert = first.plan.replica_at(rank, 0);
      if (expert != kNoExpert) owed[static_cast<std::size_t>(expert) * 32 + rank] = 1;
    }
    solver.solve(record_counts(64, 32, 2), first.plan.replica_expert, &expected, owed, 1);
    EXPECT_EQ(plan_hash(last.plan), plan_hash(expected)) << uses;
  }
}

// PlannerOptions::topoep_max_moves is the solver's move cap: the planner's plan is the capped
// solver's, and a cap of one move plans differently from the default here.
TEST(Planners, TopoepCapsEachSearchAtTheOptionsMoves) {
  const PlannerContext context = context_for(64, 32, 1, false);
  const RoutingCounts counts = record_counts(64, 32, 1);
  PlannerOptions options;
  options.topoep_max_moves = 1;
  const PlannerDecision capped = make_planner("topoep", context, options)->plan(RecordId{}, counts);
  TopoepHostSolver solver(TopoepProblem{context.topology, context.placement, context.cost, 1});
  Plan expected;
  EXPECT_EQ(solver.solve(counts, {}, &expected), 1);
  EXPECT_EQ(plan_hash(capped.plan), plan_hash(expected));
  const PlannerDecision full =
      make_planner("topoep", context, PlannerOptions{})->plan(RecordId{}, counts);
  EXPECT_NE(plan_hash(capped.plan), plan_hash(full.plan));
}

TEST(Planners, TopoepTakesTheDispatchersIbSlackUnlessTheOptionsSetOne) {
  PlannerOptions options;
  EXPECT_EQ(topoep_ib_load_slack(options, false), kTopoepIbSlackPerAssignment);
  EXPECT_EQ(topoep_ib_load_slack(options, true), kTopoepIbSlackNodeDeduplicated);
  options.topoep_ib_load_slack = 0;
  EXPECT_EQ(topoep_ib_load_slack(options, false), 0);
  EXPECT_EQ(topoep_ib_load_slack(options, true), 0);

  // Two nodes of 16 behind IB: the relaxed pass trades compute for IB, so the slack shows.
  PlannerContext context{TopologyView{2, 16}, Placement::contiguous(64, 32, 1),
                         testing::corpus_cost(false)};
  const RoutingCounts counts = record_counts(64, 32, 3);
  TopoepProblem problem{context.topology, context.placement, context.cost};
  problem.ib_load_slack_permille = 50;
  const std::uint64_t per_assignment = plan_hash(solver_plan(problem, counts));
  problem.ib_load_slack_permille = 10;
  const std::uint64_t deduplicated = plan_hash(solver_plan(problem, counts));
  ASSERT_NE(per_assignment, deduplicated);
  EXPECT_EQ(
      plan_hash(make_planner("topoep", context, PlannerOptions{})->plan(RecordId{}, counts).plan),
      per_assignment);
  context.node_deduplicated_dispatch = true;
  EXPECT_EQ(
      plan_hash(make_planner("topoep", context, PlannerOptions{})->plan(RecordId{}, counts).plan),
      deduplicated);
}

// The IB-opened run (solver/README.md, step 6) is priced per assignment: on by default where
// the dispatch sends every assignment on its own, off under DeepEP's once-a-node sends, and
// as the options set it otherwise.
TEST(Planners, TopoepRunsItsIbOpenedRunUnlessTheDispatchSendsOnceANode) {
  PlannerOptions options;
  EXPECT_TRUE(topoep_ib_opened_run(options, false));
  EXPECT_FALSE(topoep_ib_opened_run(options, true));
  options.topoep_ib_opened_run = 0;
  EXPECT_FALSE(topoep_ib_opened_run(options, false));
  options.topoep_ib_opened_run = 1;
  EXPECT_TRUE(topoep_ib_opened_run(options, true));
  options.topoep_ib_opened_run = 2;
  EXPECT_EQ(testing::input_error_field([&] { check_planner_options(options); }),
            "topoep_ib_opened_run");

  // Two nodes of 8, all 8 experts homed on node 0 (one a GPU), replicas twice DeepSeek-V3's
  // size: no replica on node 1 pays for its IB weights alone, so the first run places none
  // there; the IB-opened run does (the slack is set alike for both dispatchers, so that only
  // the run differs).
  const Placement placement = Placement::contiguous(8, 16, 1, HomeLayout::kUneven);
  CostParams cost = testing::corpus_cost(true);
  cost.replica_weight_bytes *= 2;
  PlannerContext context{TopologyView{2, 8}, placement, cost};
  const RoutingCounts counts = record_counts(8, 16, 5);
  TopoepProblem problem{context.topology, context.placement, context.cost};
  const Plan opened_plan = solver_plan(problem, counts);
  problem.ib_opened_run = false;
  const Plan first_plan = solver_plan(problem, counts);
  const auto on_node_1 = [](const Plan& plan) {
    return std::count_if(plan.replica_expert.begin() + 8, plan.replica_expert.end(),
                         [](ExpertId e) { return e != kNoExpert; });
  };
  EXPECT_EQ(on_node_1(first_plan), 0);
  EXPECT_GT(on_node_1(opened_plan), 0);
  const std::uint64_t opened = plan_hash(opened_plan), first = plan_hash(first_plan);
  ASSERT_NE(opened, first);
  PlannerOptions same_slack;
  same_slack.topoep_ib_load_slack = kDefaultIbLoadSlackPermille / 1000.0;
  EXPECT_EQ(plan_hash(make_planner("topoep", context, same_slack)->plan(RecordId{}, counts).plan),
            opened);
  context.node_deduplicated_dispatch = true;
  EXPECT_EQ(plan_hash(make_planner("topoep", context, same_slack)->plan(RecordId{}, counts).plan),
            first);
}

TEST(Planners, TopoepFallbackIsTheStaticRoutingWithTheRecordsResidentReplicasIdle) {
  const PlannerContext context = context_for(64, 32, 1, false);
  auto planner = make_planner("topoep", context, PlannerOptions{});
  const RoutingCounts first_counts = record_counts(64, 32, 1);
  const PlannerDecision first = planner->plan(RecordId{0, 0}, first_counts);
  PlannerDecision fallback;
  ASSERT_TRUE(planner->static_fallback(&fallback));
  EXPECT_TRUE(fallback.plan.routes.empty());  // the caller routes it only if it runs it
  route_all_home(first_counts, fallback.placement, &fallback.plan);
  EXPECT_EQ(plan_hash(fallback.plan), plan_hash(static_plan(first_counts, context.placement)));
  EXPECT_EQ(fallback.overhead.host_ps, first.overhead.host_ps);  // the solve ran either way

  // Not run: the next microbatch starts from the decision's replicas.
  const RoutingCounts second_counts = record_counts(64, 32, 2);
  const PlannerDecision second = planner->plan(RecordId{0, 1}, second_counts);
  EXPECT_EQ(second.resident, first.plan.replica_expert);
  ASSERT_TRUE(planner->static_fallback(&fallback));
  EXPECT_EQ(fallback.resident, first.plan.replica_expert);
  route_all_home(second_counts, fallback.placement, &fallback.plan);
  Plan expected = static_plan(second_counts, context.placement);
  expected.replica_expert = first.plan.replica_expert;  // kept, idle, free
  EXPECT_EQ(plan_hash(fallback.plan), plan_hash(expected));
  EXPECT_FALSE(find_plan_violation(second_counts, fallback.placement, fallback.plan));

  // Run: the next microbatch starts from the fallback's replicas, not the second decision's.
  planner->ran_fallback(fallback);
  const PlannerDecision third = planner->plan(RecordId{0, 2}, record_counts(64, 32, 3));
  EXPECT_EQ(third.resident, first.plan.replica_expert);
  EXPECT_NE(second.plan.replica_expert, first.plan.replica_expert);  // else nothing was shown
}

TEST(Planners, OnlyTheTopoepSolversOfferAFallback) {
  const PlannerContext context = context_for(64, 32, 1, false);
  const RoutingCounts counts = record_counts(64, 32, 1);
  for (const std::string& name : planner_names()) {
    auto planner = make_planner(name, context, PlannerOptions{});
    planner->plan(RecordId{}, counts);
    PlannerDecision fallback;
    EXPECT_EQ(planner->static_fallback(&fallback), name.rfind("topoep", 0) == 0) << name;
  }
}

// The ablation of TopoEP's cost model levels compute alone: it plans as the topoep planner
// would with every byte free, so it balances at least as well, while TopoEP, weighing links
// and weights, predicts the shorter layers at their real cost. Its replicas' gradients are
// charged at their real size.
TEST(Planners, TopoepBalancePlansWithEveryByteFreeAndPaysTheRealCost) {
  const PlannerContext context = context_for(64, 32, 2, true);
  PlannerContext free = context;
  free.cost = compute_only_cost(context.cost);
  EXPECT_EQ(free.cost.compute_ps_per_token, context.cost.compute_ps_per_token);
  EXPECT_EQ(free.cost.replica_weight_bytes + free.cost.dispatch_bytes_per_token, 0);
  auto balance = make_planner("topoep-balance", context, PlannerOptions{});
  auto topoep_free = make_planner("topoep", free, PlannerOptions{});
  auto topoep = make_planner("topoep", context, PlannerOptions{});
  double balance_max_mean = 0, topoep_max_mean = 0;
  Picoseconds balance_time = 0, topoep_time = 0;
  for (int step = 0; step < 3; ++step) {
    for (int microbatch = 0; microbatch < 2; ++microbatch) {  // the second with residents
      const RoutingCounts counts = record_counts(64, 32, 80 + 2 * step + microbatch);
      const RecordId record{step, microbatch};
      const PlannerDecision b = balance->plan(record, counts);
      EXPECT_EQ(plan_hash(b.plan), plan_hash(topoep_free->plan(record, counts).plan));
      const PlannerDecision t = topoep->plan(record, counts);
      const PlanCost b_cost =
          predict_plan_cost(context.topology, b.placement, b.plan, b.resident, context.cost);
      const PlanCost t_cost =
          predict_plan_cost(context.topology, t.placement, t.plan, t.resident, context.cost);
      balance_max_mean += b_cost.max_mean_load();
      topoep_max_mean += t_cost.max_mean_load();
      balance_time += total_with_overhead(context, b);
      topoep_time += total_with_overhead(context, t);
      // Its replicas' gradients (free to it) reduce at their real size.
      const bool replicated =
          std::any_of(b.plan.replica_expert.begin(), b.plan.replica_expert.end(),
                      [](ExpertId e) { return e != kNoExpert; });
      EXPECT_EQ(b.overhead.gradient_nvlink_bytes + b.overhead.gradient_ib_bytes > 0, replicated);
    }
  }
  EXPECT_LE(balance_max_mean, topoep_max_mean);
  EXPECT_GT(balance_time, topoep_time);
}

// The ablation of TopoEP's topology awareness sees one NVLink domain of all the GPUs: how the
// real cluster splits them into nodes cannot change its plans, and on one node it is TopoEP.
TEST(Planners, TopoepFlatPlansAlikeOnEveryNodeSplitAndAsTopoepOnOneNode) {
  const TopologyView splits[] = {{4, 8}, {2, 16}, {32, 1}, {1, 32}};
  std::vector<std::uint64_t> flat_hashes, topoep_hashes;
  for (const TopologyView& split : splits) {
    PlannerContext context = context_for(64, 32, 2, true);
    context.topology = split;
    auto flat = make_planner("topoep-flat", context, PlannerOptions{});
    auto topoep = make_planner("topoep", context, PlannerOptions{});
    for (int microbatch = 0; microbatch < 2; ++microbatch) {  // the second with residents
      const RoutingCounts counts = record_counts(64, 32, 40 + microbatch);
      flat_hashes.push_back(plan_hash(flat->plan(RecordId{0, microbatch}, counts).plan));
      topoep_hashes.push_back(plan_hash(topoep->plan(RecordId{0, microbatch}, counts).plan));
    }
  }
  for (std::size_t i = 2; i < flat_hashes.size(); ++i) {
    EXPECT_EQ(flat_hashes[i], flat_hashes[i % 2]) << "split " << i / 2;
  }
  // On one node (the last split) the two are the same planner.
  EXPECT_EQ(topoep_hashes[6], flat_hashes[6]);
  EXPECT_EQ(topoep_hashes[7], flat_hashes[7]);
  // Else TopoEP weighs the hierarchy, so the ablation shows something.
  EXPECT_NE(topoep_hashes[0], flat_hashes[0]);
}

// Its plans are priced where they run: no sums of the flat view (the replay walks the routes on
// the real cluster), and the gradient reduction along the real chains, IB hops included.
TEST(Planners, TopoepFlatIsPricedOnTheRealCluster) {
  const PlannerContext context = context_for(64, 32, 2, true);
  auto flat = make_planner("topoep-flat", context, PlannerOptions{});
  auto topoep = make_planner("topoep", context, PlannerOptions{});
  Bytes flat_ib = 0, topoep_ib = 0;
  for (int step = 0; step < 4; ++step) {
    const RoutingCounts counts = record_counts(64, 32, 60 + step);
    const PlannerDecision d = flat->plan(RecordId{step, 0}, counts);
    EXPECT_TRUE(d.tally.empty());
    EXPECT_FALSE(d.plan.routes.empty());
    PlannerDecision real = d;
    charge_gradient_reduction(real, context);
    EXPECT_EQ(d.overhead.gradient_ib_bytes, real.overhead.gradient_ib_bytes);
    EXPECT_EQ(d.overhead.gradient_ps, real.overhead.gradient_ps);
    PlannerDecision fallback;
    ASSERT_TRUE(flat->static_fallback(&fallback));
    EXPECT_TRUE(fallback.tally.empty());  // priced from the counts, on the real cluster
    flat_ib += predict_plan_cost(context.topology, d.placement, d.plan, d.resident, context.cost)
                   .ib_dispatch_bytes;
    const PlannerDecision t = topoep->plan(RecordId{step, 0}, counts);
    topoep_ib += predict_plan_cost(context.topology, t.placement, t.plan, t.resident, context.cost)
                     .ib_dispatch_bytes;
  }
  // Blind to which links a move crosses, it sends more over IB than TopoEP.
  EXPECT_GT(flat_ib, topoep_ib);
}

TEST(Planners, ShadowingUsesAtMostTheSpareSlotsAndNeverPredictsWorseThanStatic) {
  const PlannerContext context = context_for(64, 32, 2, false);
  auto planner = make_planner("shadowing", context, PlannerOptions{});
  const RoutingCounts counts = record_counts(64, 32, 9);
  const PlannerDecision d = planner->plan(RecordId{0, 0}, counts);
  EXPECT_LE(d.plan.slots_per_rank, 2);
  EXPECT_LE(
      predict_plan_cost(context.topology, d.placement, d.plan, {}, context.cost, d.weight_delivery)
          .times.total,
      predict_plan_cost(context.topology, context.placement, static_plan(counts, context.placement),
                        {}, context.cost)
          .times.total);
}

// FasterMoE's policy gathers the counts and copies them to the host on every record, shadow or
// not; without a spare slot there is nothing to decide.
TEST(Planners, ShadowingPaysItsPolicysHostRoundTripWhereThereAreSpareSlots) {
  const RoutingCounts counts = record_counts(64, 32, 9);
  PlannerOptions options;
  options.host_roundtrip_us = 7;
  const PlannerContext two = context_for(64, 32, 2, true);
  const PlannerDecision d = make_planner("shadowing", two, options)->plan(RecordId{}, counts);
  // 7 µs, and a tree of 2 log2 32 = 10 IB steps of 64 loads x 8 bytes.
  EXPECT_EQ(d.overhead.host_ps, 7000000 + 10 * transfer_ps(64 * 8, two.cost.scale_out));
  EXPECT_EQ(d.overhead.host_ps, host_planning_ps(options, 0, two.topology, 64, two.cost));
  const PlannerDecision none =
      make_planner("shadowing", context_for(64, 32, 0, true), options)->plan(RecordId{}, counts);
  EXPECT_EQ(none.overhead.host_ps, 0);
}

// A migration's weights move as new replicas' do, after them on the same links: both hide
// behind one overlap window.
TEST(Planners, MigrationsHideBehindWhatTheNewReplicasLeaveOfTheOverlapWindow) {
  PlannerOverhead overhead;
  overhead.host_ps = 5;
  overhead.migration_ps = 100;
  PlanCost plan_cost;
  plan_cost.weight_transfer = 30;
  CostParams cost;
  cost.weight_overlap_ps = 0;
  EXPECT_EQ(overhead_time_ps(overhead, plan_cost, cost), 5 + 100);
  cost.weight_overlap_ps = 50;  // 20 left after the new replicas' 30
  EXPECT_EQ(overhead_time_ps(overhead, plan_cost, cost), 5 + 80);
  cost.weight_overlap_ps = 130;  // all of it hidden
  EXPECT_EQ(overhead_time_ps(overhead, plan_cost, cost), 5);
  plan_cost.weight_transfer = 200;  // the new replicas alone overrun the window
  EXPECT_EQ(overhead_time_ps(overhead, plan_cost, cost), 5 + 100);
}

TEST(Planners, EveryPlannerPaysTheGradientReductionOfItsReplicas) {
  const PlannerContext context = context_for(64, 32, 2, true);
  const RoutingCounts counts = record_counts(64, 32, 11);
  for (const std::string& name : planner_names()) {
    const PlannerDecision d =
        make_planner(name, context, PlannerOptions{})->plan(RecordId{}, counts);
    Bytes replicas = 0;
    for (const ExpertId expert : d.plan.replica_expert) replicas += expert != kNoExpert;
    // One weight-sized gradient per replica, one hop of its expert's chain: NVLink or IB.
    EXPECT_EQ(d.overhead.gradient_nvlink_bytes + d.overhead.gradient_ib_bytes,
              replicas * context.cost.replica_weight_bytes)
        << name;
    EXPECT_EQ(d.overhead.gradient_ps > 0, replicas > 0) << name;
    // A window as long as the reduction hides all of it; the bytes still cross the links.
    PlannerContext hiding = context;
    hiding.cost.gradient_overlap_ps = d.overhead.gradient_ps;
    PlannerDecision hidden = d;
    charge_gradient_reduction(hidden, hiding);
    EXPECT_EQ(hidden.overhead.gradient_ps, 0) << name;
    EXPECT_EQ(hidden.overhead.gradient_ib_bytes, d.overhead.gradient_ib_bytes) << name;
  }
}

TEST(Planners, UnknownNamesAreRejected) {
  EXPECT_EQ(testing::input_error_field(
                [] { make_planner("magic", context_for(64, 32, 1, false), PlannerOptions{}); }),
            "planner");
}

// Every caller (simulate, sweeps, the harness) builds planners here, so a bad option is caught
// here once: a time beyond 1e6 us overflowed its picoseconds and was charged as no time at all.
TEST(Planners, OptionsOutOfRangeNameTheirField) {
  const auto field_for = [](auto set) {
    PlannerOptions options;
    set(options);
    return testing::input_error_field(
        [&] { make_planner("topoep", context_for(64, 32, 1, false), options); });
  };
  EXPECT_EQ(field_for([](PlannerOptions&) {}), "<no error>");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.topoep_solve_us = 1e308; }), "topoep_solve_us");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.host_roundtrip_us = -1; }), "host_roundtrip_us");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.eplb_cpu_us_per_layer = std::nan(""); }),
            "eplb_cpu_us_per_layer");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.eplb_window_steps = 0; }), "eplb_window_steps");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.topoep_replica_uses = 0; }), "topoep_replica_uses");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.topoep_ib_load_slack = 1.5; }),
            "topoep_ib_load_slack");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.topoep_max_moves = -1; }), "topoep_max_moves");
  EXPECT_EQ(field_for([](PlannerOptions& o) { o.eplb_groups = -2; }), "eplb_groups");
}

TEST(Planners, EplbGroupsAreNodesModelOrACount) {
  int groups = 99;
  EXPECT_TRUE(parse_eplb_groups("nodes", &groups));
  EXPECT_EQ(groups, kEplbGroupsPerNode);
  EXPECT_TRUE(parse_eplb_groups("model", &groups));
  EXPECT_EQ(groups, kEplbGroupsOfModel);
  EXPECT_TRUE(parse_eplb_groups("8", &groups));
  EXPECT_EQ(groups, 8);
  for (const char* bad : {"0", "-1", "x", "", "8x", "1234567"}) {
    EXPECT_FALSE(parse_eplb_groups(bad, &groups)) << bad;
  }
  for (const int value : {kEplbGroupsPerNode, kEplbGroupsOfModel, 8}) {
    ASSERT_TRUE(parse_eplb_groups(eplb_groups_name(value), &groups));
    EXPECT_EQ(groups, value);
  }
}

}  // namespace
}  // namespace topoep
