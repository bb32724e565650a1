#include "solver/static_plan.h"

#include <string>

#include "solver/input_error.h"

namespace topoep {

Plan static_plan(const RoutingCounts& counts, const Placement& placement) {
  check_placement(placement);
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
  Plan plan;
  plan.num_ranks = placement.num_ranks;
  plan.num_experts = placement.num_experts();
  plan.slots_per_rank = placement.slots_per_rank;
  plan.replica_expert.assign(static_cast<std::size_t>(plan.num_ranks) * plan.slots_per_rank,
                             kNoExpert);
  plan.routes.reserve(counts.values().size());
  for (RankId src = 0; src < plan.num_ranks; ++src) {
    for (ExpertId expert = 0; expert < plan.num_experts; ++expert) {
      const TokenCount tokens = counts.at(src, expert);
      if (tokens > 0)
        plan.routes.push_back(Route{src, expert, placement.home_rank[expert], tokens});
    }
  }
  return plan;
}

}  // namespace topoep
