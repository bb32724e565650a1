#include "sim/gradient_reduction.h"

#include <algorithm>
#include <tuple>

#include "solver/gradient_chains.h"
#include "solver/phase_times.h"

namespace topoep {

bool ReplicaInstance::operator<(const ReplicaInstance& other) const {
  return std::tie(expert, home, rank) < std::tie(other.expert, other.home, other.rank);
}

bool ReplicaInstance::operator==(const ReplicaInstance& other) const {
  return expert == other.expert && home == other.home && rank == other.rank;
}

GradientReduction reduce_replica_gradients(std::vector<ReplicaInstance> replicas,
                                           const TopologyView& topology, Bytes gradient_bytes,
                                           const CostParams& cost) {
  std::sort(replicas.begin(), replicas.end());
  replicas.erase(std::unique(replicas.begin(), replicas.end()), replicas.end());
  const int num_ranks = topology.num_ranks();
  std::vector<std::int32_t> counts(4 * static_cast<std::size_t>(num_ranks), 0);
  GradientHops hops;
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
                       topology, counts.data(), hops);
    begin = end;
  }
  GradientReduction result;
  result.nvlink_bytes = hops.nvlink * gradient_bytes;
  result.ib_bytes = hops.ib * gradient_bytes;
  result.time_ps = gradient_chains_ps(counts.data(), num_ranks, gradient_bytes, cost);
  return result;
}

}  // namespace topoep
