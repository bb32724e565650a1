#include "solver/gradient_chains.h"

namespace topoep {

void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops) {
  if (count <= 0) return;
  const int R = topology.num_ranks();
  const int home_node = topology.node_of(home);
  RankId previous = -1;
  auto hop_to = [&](RankId next) {
    if (previous >= 0) {
      if (topology.same_node(previous, next)) {
        ++counts[next];          // received inside the node
        ++counts[R + previous];  // sent inside the node
        ++hops.nvlink;
      } else {
        ++counts[2 * R + next];
        ++counts[3 * R + previous];
        ++hops.ib;
      }
    }
    previous = next;
  };
  // Other nodes first, ascending (holders are ascending, so node by node), then the home's node.
  for (int i = 0; i < count; ++i) {
    if (topology.node_of(holders[i]) != home_node) hop_to(holders[i]);
  }
  for (int i = 0; i < count; ++i) {
    if (topology.node_of(holders[i]) == home_node) hop_to(holders[i]);
  }
  hop_to(home);
}

}  // namespace topoep
