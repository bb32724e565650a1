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
  // Written through a raw cursor into the largest size, then trimmed: one pass, no per-route
  // capacity checks (the replay builds this plan for every record).
  plan.routes.resize(counts.values().size());
  Route* out = plan.routes.data();
  const TokenCount* row = counts.values().data();
  const RankId* home = placement.home_rank.data();
  for (RankId src = 0; src < plan.num_ranks; ++src, row += plan.num_experts) {
    for (ExpertId expert = 0; expert < plan.num_experts; ++expert) {
      if (row[expert] > 0) *out++ = Route{src, expert, home[expert], row[expert]};
    }
  }
  plan.routes.resize(static_cast<std::size_t>(out - plan.routes.data()));
  return plan;
}

}  // namespace topoep
