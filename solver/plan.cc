#include "solver/plan.h"

namespace topoep {

std::vector<TokenCount> rank_loads(const Plan& plan) {
  std::vector<TokenCount> loads(plan.num_ranks, 0);
  for (const Route& route : plan.routes) loads[route.dst] += route.tokens;
  return loads;
}

}  // namespace topoep
