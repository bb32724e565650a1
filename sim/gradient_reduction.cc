#include "sim/gradient_reduction.h"

#include "solver/gradient_chains.h"
#include "solver/phase_times.h"

namespace topoep {

GradientReduction reduce_replica_gradients(std::vector<ReplicaInstance> replicas,
                                           const TopologyView& topology, Bytes gradient_bytes,
                                           const CostParams& cost) {
  std::vector<std::int32_t> counts(4 * static_cast<std::size_t>(topology.num_ranks()), 0);
  GradientHops hops;
  add_replica_chains(replicas, topology, counts.data(), hops);
  GradientReduction result;
  result.nvlink_bytes = hops.nvlink * gradient_bytes;
  result.ib_bytes = hops.ib * gradient_bytes;
  result.time_ps = gradient_chains_ps(counts.data(), topology.num_ranks(), gradient_bytes, cost);
  return result;
}

}  // namespace topoep
