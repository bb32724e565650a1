#include "solver/gradient_chains.h"

#include <algorithm>
#include <tuple>

namespace topoep {

bool ReplicaInstance::operator<(const ReplicaInstance& other) const {
  return std::tie(expert, home, rank) < std::tie(other.expert, other.home, other.rank);
}

bool ReplicaInstance::operator==(const ReplicaInstance& other) const {
  return expert == other.expert && home == other.home && rank == other.rank;
}

void add_replica_chains(std::vector<ReplicaInstance>& replicas, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops) {
  for_each_replica_chain(replicas, [&](RankId home, const RankId* holders, int count) {
    add_gradient_chain(home, holders, count, topology, counts, hops);
  });
}

void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops) {
  const int num_ranks = topology.num_ranks();
  walk_holder_chain(home, holders, count, topology, [&](RankId from, RankId to, bool same_node) {
    ++counts[chain_count_index(num_ranks, to, same_node, false)];
    ++counts[chain_count_index(num_ranks, from, same_node, true)];
    ++(same_node ? hops.nvlink : hops.ib);
  });
}

}  // namespace topoep
