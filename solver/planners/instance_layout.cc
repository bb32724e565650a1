#include "solver/planners/instance_layout.h"

#include <algorithm>

namespace topoep {

LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank) {
  const int R = counts.num_ranks(), E = counts.num_experts();
  LayoutPlan result;
  result.placement.num_ranks = R;
  result.placement.home_rank.resize(E);
  std::vector<std::vector<ExpertId>> replicas(R);
  for (ExpertId e = 0; e < E; ++e) {
    result.placement.home_rank[e] = layout.instances[e][0];
    for (std::size_t i = 1; i < layout.instances[e].size(); ++i)
      replicas[layout.instances[e][i]].push_back(e);
  }
  int slots = min_slots_per_rank;
  for (const auto& row : replicas) slots = std::max(slots, static_cast<int>(row.size()));
  result.placement.slots_per_rank = slots;

  Plan& plan = result.plan;
  plan.num_ranks = R;
  plan.num_experts = E;
  plan.slots_per_rank = slots;
  plan.replica_expert.assign(static_cast<std::size_t>(R) * slots, kNoExpert);
  for (RankId r = 0; r < R; ++r) {
    std::sort(replicas[r].begin(), replicas[r].end());
    std::copy(replicas[r].begin(), replicas[r].end(),
              plan.replica_expert.begin() + static_cast<std::ptrdiff_t>(r) * slots);
  }
  std::vector<std::vector<RankId>> sorted(E);
  for (ExpertId e = 0; e < E; ++e) {
    sorted[e] = layout.instances[e];
    std::sort(sorted[e].begin(), sorted[e].end());
  }
  std::vector<RankId> targets;
  for (RankId src = 0; src < R; ++src) {
    for (ExpertId e = 0; e < E; ++e) {
      const TokenCount tokens = counts.at(src, e);
      if (tokens == 0) continue;
      targets.clear();
      if (std::binary_search(sorted[e].begin(), sorted[e].end(), src)) {
        targets.push_back(src);
      } else {
        for (const RankId r : sorted[e]) {
          if (topology.same_node(r, src)) targets.push_back(r);
        }
        if (targets.empty()) targets = sorted[e];
      }
      const TokenCount k = static_cast<TokenCount>(targets.size());
      for (TokenCount i = 0; i < k; ++i) {
        const TokenCount share = tokens / k + (i < tokens % k ? 1 : 0);
        if (share > 0) plan.routes.push_back(Route{src, e, targets[i], share});
      }
    }
  }
  return result;
}

}  // namespace topoep
