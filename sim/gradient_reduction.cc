#include "sim/gradient_reduction.h"

#include <algorithm>
#include <tuple>

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
  std::vector<TokenCount> nvlink_out(num_ranks, 0), nvlink_in(num_ranks, 0), ib_out(num_ranks, 0),
      ib_in(num_ranks, 0);
  GradientReduction result;
  auto hop = [&](RankId from, RankId to) {
    if (topology.same_node(from, to)) {
      ++nvlink_out[from];
      ++nvlink_in[to];
      result.nvlink_bytes += gradient_bytes;
    } else {
      ++ib_out[from];
      ++ib_in[to];
      result.ib_bytes += gradient_bytes;
    }
  };
  for (std::size_t begin = 0; begin < replicas.size();) {
    std::size_t end = begin;
    while (end < replicas.size() && replicas[end].expert == replicas[begin].expert &&
           replicas[end].home == replicas[begin].home) {
      ++end;
    }
    const RankId home = replicas[begin].home;
    std::vector<RankId> chain;
    for (std::size_t i = begin; i < end; ++i) {
      if (replicas[i].rank != home) chain.push_back(replicas[i].rank);
    }
    // Other nodes first (ascending), the home's node last, then the home itself.
    const int home_node = topology.node_of(home);
    std::stable_sort(chain.begin(), chain.end(), [&](RankId a, RankId b) {
      const bool a_home = topology.node_of(a) == home_node;
      const bool b_home = topology.node_of(b) == home_node;
      if (a_home != b_home) return b_home;
      return a < b;
    });
    chain.push_back(home);
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) hop(chain[i], chain[i + 1]);
    begin = end;
  }
  for (RankId rank = 0; rank < num_ranks; ++rank) {
    result.time_ps =
        std::max(result.time_ps, link_phase_ps(nvlink_out[rank], nvlink_in[rank], ib_out[rank],
                                               ib_in[rank], gradient_bytes, cost));
  }
  return result;
}

}  // namespace topoep
