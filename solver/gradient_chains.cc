#include "solver/gradient_chains.h"

namespace topoep {

void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops) {
  const int num_ranks = topology.num_ranks();
  walk_gradient_chain(
      home, count, topology.gpus_per_node, [&](int i) { return holders[i]; },
      [&](RankId from, RankId to, bool same_node) {
        ++counts[chain_count_index(num_ranks, to, same_node, false)];
        ++counts[chain_count_index(num_ranks, from, same_node, true)];
        ++(same_node ? hops.nvlink : hops.ib);
      });
}

}  // namespace topoep
