#include "solver/planners/shadowing_planner.h"

#include <algorithm>
#include <numeric>

#include "solver/plan_cost.h"
#include "solver/planners/host_planning.h"
#include "solver/planners/instance_layout.h"
#include "solver/static_plan.h"
#include "solver/static_tally.h"

namespace topoep {

ShadowingPlanner::ShadowingPlanner(const PlannerContext& context, const PlannerOptions& options)
    : context_(context),
      policy_ps_(context.placement.slots_per_rank == 0
                     ? 0
                     : host_planning_ps(options, 0, context.topology,
                                        context.placement.num_experts(), context.cost)) {}

PlannerDecision ShadowingPlanner::plan(const RecordId&, const RoutingCounts& counts) {
  const Placement& base = context_.placement;
  const int E = base.num_experts(), R = base.num_ranks;
  const std::vector<TokenCount> totals = counts.expert_totals();
  std::vector<ExpertId> by_load(E);
  std::iota(by_load.begin(), by_load.end(), 0);
  std::stable_sort(by_load.begin(), by_load.end(),
                   [&](ExpertId a, ExpertId b) { return totals[a] > totals[b]; });

  InstanceLayout layout;
  layout.instances.resize(E);
  for (ExpertId e = 0; e < E; ++e) layout.instances[e] = {base.home_rank[e]};
  // No shadow yet: the static plan (what plan_layout() gives a layout of homes alone), priced
  // from its sums (static_tally.h): its routes are written only if it is kept and read.
  PlanTally best_tally;
  static_plan_tally(context_.topology, base, counts, &best_tally);
  LayoutPlan best{base, static_layout(base)};
  Picoseconds best_time =
      plan_cost_from_tally(context_.topology, base, best.plan, {}, context_.cost, best_tally)
          .times.total;
  bool shadowed = false;
  for (int shadows = 1; shadows <= base.slots_per_rank && shadows <= E; ++shadows) {
    const ExpertId expert = by_load[shadows - 1];
    if (totals[expert] == 0) break;
    for (RankId r = 0; r < R; ++r) {
      if (r != base.home_rank[expert]) layout.instances[expert].push_back(r);
    }
    // Priced from its sums; its routes written only where the replay will read them.
    PlanTally tally;
    LayoutPlan candidate = plan_layout(layout, counts, context_.topology, base.slots_per_rank,
                                       &tally, context_.routes);
    const Picoseconds time =
        plan_cost_from_tally(context_.topology, candidate.placement, candidate.plan, {},
                             context_.cost, tally, WeightDelivery::kChainBroadcast)
            .times.total;
    if (time >= best_time) break;  // stop once another shadow no longer helps
    best_time = time;
    best = std::move(candidate);
    best_tally = std::move(tally);
    shadowed = true;
  }
  PlannerDecision decision{best.placement, std::move(best.plan), {}, {}, {}};
  decision.tally = std::move(best_tally);
  decision.weight_delivery = WeightDelivery::kChainBroadcast;
  decision.overhead.host_ps = policy_ps_;
  if (!shadowed && context_.routes) route_all_home(counts, base, &decision.plan);
  return decision;
}

}  // namespace topoep
