#include "solver/balance_bound.h"

#include <algorithm>
#include <vector>

namespace topoep {
namespace {

// Fewest replicas any plan with maximum rank load `limit` needs. Every replica belongs to one
// expert and so to one home rank; per home rank r it needs the larger of
//  - sum over r's experts of ceil(T_e / limit) - 1 (no instance above the limit), and
//  - the fewest of r's experts whose replicas can carry r's excess H_r - limit, one replica of
//    expert e carrying at most min(T_e, limit) (largest first).
std::int64_t replicas_needed(const std::vector<std::vector<TokenCount>>& experts_by_home,
                             TokenCount limit) {
  std::int64_t needed = 0;
  for (const std::vector<TokenCount>& totals : experts_by_home) {  // sorted descending
    std::int64_t for_experts = 0;
    TokenCount home_load = 0;
    for (const TokenCount total : totals) {
      for_experts += (total + limit - 1) / limit - 1;
      home_load += total;
    }
    std::int64_t for_excess = 0;
    for (TokenCount excess = home_load - limit;
         excess > 0 && for_excess < static_cast<std::int64_t>(totals.size()); ++for_excess) {
      excess -= std::min(totals[for_excess], limit);
    }
    if (home_load - limit > 0 && for_excess == static_cast<std::int64_t>(totals.size())) {
      // Even one replica of every expert cannot carry the excess: count what it takes with
      // extra replicas of the largest, each carrying at most `limit`.
      TokenCount left = home_load - limit;
      for (const TokenCount total : totals) left -= std::min(total, limit);
      for_excess += (left + limit - 1) / limit;
    }
    needed += std::max(for_experts, for_excess);
  }
  return needed;
}

}  // namespace

TokenCount balance_lower_bound(const RoutingCounts& counts, const TopologyView& topology,
                               const Placement& placement) {
  const int num_ranks = counts.num_ranks();
  const std::vector<TokenCount> totals = counts.expert_totals();
  std::vector<TokenCount> home_loads(num_ranks, 0);
  for (ExpertId e = 0; e < counts.num_experts(); ++e)
    home_loads[placement.home_rank[e]] += totals[e];
  const TokenCount static_max = *std::max_element(home_loads.begin(), home_loads.end());
  if (placement.slots_per_rank == 0 || static_max == 0) return static_max;

  TokenCount bound = (counts.total() + num_ranks - 1) / num_ranks;
  for (const TokenCount total : totals)
    bound = std::max(bound, (total + num_ranks - 1) / num_ranks);
  std::vector<TokenCount> node_local(topology.num_nodes, 0);
  for (RankId src = 0; src < num_ranks; ++src) {
    for (ExpertId e = 0; e < counts.num_experts(); ++e) {
      if (topology.same_node(src, placement.home_rank[e]))
        node_local[topology.node_of(src)] += counts.at(src, e);
    }
  }
  for (const TokenCount local : node_local) {
    bound = std::max(bound, (local + topology.gpus_per_node - 1) / topology.gpus_per_node);
  }
  // Smallest limit in [bound, static_max] that the slots can serve: the need shrinks as the
  // limit grows, so binary search.
  std::vector<std::vector<TokenCount>> experts_by_home(num_ranks);
  for (ExpertId e = 0; e < counts.num_experts(); ++e)
    experts_by_home[placement.home_rank[e]].push_back(totals[e]);
  for (auto& experts : experts_by_home) std::sort(experts.rbegin(), experts.rend());
  const std::int64_t slots = static_cast<std::int64_t>(num_ranks) * placement.slots_per_rank;
  TokenCount low = bound, high = static_max;
  while (low < high) {
    const TokenCount mid = low + (high - low) / 2;
    if (replicas_needed(experts_by_home, mid) <= slots) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  return low;
}

}  // namespace topoep
