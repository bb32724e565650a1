#include "solver/planners/shadowing_planner.h"

#include <algorithm>
#include <numeric>

#include "solver/plan_cost.h"
#include "solver/planners/instance_layout.h"
#include "solver/static_plan.h"

namespace topoep {

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
  // No shadow yet: the static plan (what plan_layout() gives a layout of homes alone, written
  // without its instance index).
  LayoutPlan best{base, static_plan(counts, base)};
  Picoseconds best_time =
      predict_plan_cost(context_.topology, best.placement, best.plan, {}, context_.cost)
          .times.total;
  for (int shadows = 1; shadows <= base.slots_per_rank && shadows <= E; ++shadows) {
    const ExpertId expert = by_load[shadows - 1];
    if (totals[expert] == 0) break;
    for (RankId r = 0; r < R; ++r) {
      if (r != base.home_rank[expert]) layout.instances[expert].push_back(r);
    }
    LayoutPlan candidate = plan_layout(layout, counts, context_.topology, base.slots_per_rank);
    const Picoseconds time =
        predict_plan_cost(context_.topology, candidate.placement, candidate.plan, {}, context_.cost)
            .times.total;
    if (time >= best_time) break;  // stop once another shadow no longer helps
    best_time = time;
    best = std::move(candidate);
  }
  return PlannerDecision{best.placement, best.plan, {}, {}, {}};
}

}  // namespace topoep
