#include "solver/static_plan.h"

#include <string>

#include "solver/input_error.h"

namespace topoep {

Plan static_plan(const RoutingCounts& counts, const Placement& placement) {
  Plan plan = static_layout(placement);
  route_all_home(counts, placement, &plan);
  return plan;
}

Plan static_layout(const Placement& placement) {
  check_placement(placement);
  Plan plan;
  plan.num_ranks = placement.num_ranks;
  plan.num_experts = placement.num_experts();
  plan.slots_per_rank = placement.slots_per_rank;
  plan.replica_expert.assign(static_cast<std::size_t>(plan.num_ranks) * plan.slots_per_rank,
                             kNoExpert);
  return plan;
}

void route_all_home(const RoutingCounts& counts, const Placement& placement, Plan* plan) {
  if (counts.num_ranks() != placement.num_ranks) {
    throw InputError("counts", "has " + std::to_string(counts.num_ranks()) +
                                   " source ranks, the placement " +
                                   std::to_string(placement.num_ranks));
  }
  if (counts.num_experts() != placement.num_experts()) {
    throw InputError("counts", "has " + std::to_string(counts.num_experts()) +
                                   " experts, the placement " +
                                   std::to_string(placement.num_experts()));
  }
  // Written through a raw cursor into the largest size, then trimmed: one pass, no per-route
  // capacity checks (the replay builds this plan for every record).
  RouteList& routes = plan->routes;
  routes.resize(counts.values().size());
  Route* out = routes.data();
  const TokenCount* row = counts.values().data();
  const RankId* home = placement.home_rank.data();
  const int num_experts = counts.num_experts();
  for (RankId src = 0; src < counts.num_ranks(); ++src, row += num_experts) {
    for (ExpertId expert = 0; expert < num_experts; ++expert) {
      if (row[expert] > 0) *out++ = Route{src, expert, home[expert], row[expert]};
    }
  }
  routes.resize(static_cast<std::size_t>(out - routes.data()));
}

}  // namespace topoep
