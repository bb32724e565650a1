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
  std::sort(replicas.begin(), replicas.end());
  replicas.erase(std::unique(replicas.begin(), replicas.end()), replicas.end());
  std::vector<RankId> holders;
  for (std::size_t begin = 0; begin < replicas.size();) {
    std::size_t end = begin;
    holders.clear();
    // Sorted by (expert, home, rank): each chain's holders come out ascending.
    for (; end < replicas.size() && replicas[end].expert == replicas[begin].expert &&
           replicas[end].home == replicas[begin].home;
         ++end) {
      if (replicas[end].rank != replicas[begin].home) holders.push_back(replicas[end].rank);
    }
    add_gradient_chain(replicas[begin].home, holders.data(), static_cast<int>(holders.size()),
                       topology, counts, hops);
    begin = end;
  }
}

void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops) {
  const int num_ranks = topology.num_ranks();
  auto members = [&](int lo, int hi, auto&& visit) {  // `holders` is ascending
    for (const RankId* h = std::lower_bound(holders, holders + count, lo);
         h < holders + count && *h < hi; ++h) {
      visit(*h);
    }
  };
  walk_gradient_chain(home, num_ranks, topology.gpus_per_node, members,
                      [&](RankId from, RankId to, bool same_node) {
                        ++counts[chain_count_index(num_ranks, to, same_node, false)];
                        ++counts[chain_count_index(num_ranks, from, same_node, true)];
                        ++(same_node ? hops.nvlink : hops.ib);
                      });
}

}  // namespace topoep
