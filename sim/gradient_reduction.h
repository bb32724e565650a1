#pragma once
// The backward pass's reduction of replica weight gradients back to each expert's home rank.
//
// Model: solver/gradient_chains.h (one pipelined chain reduce per expert into its home); a
// rank's time is the link formula of its busier direction per link class, the classes
// pipelined (max); the reduction ends when the slowest rank ends.

#include <vector>

#include "solver/cost_params.h"
#include "solver/gradient_chains.h"  // ReplicaInstance
#include "solver/topology_view.h"

namespace topoep {

struct GradientReduction {
  Bytes nvlink_bytes = 0;  // summed over hops
  Bytes ib_bytes = 0;
  Picoseconds time_ps = 0;
};

// `replicas` in any order; duplicates count once. `gradient_bytes`: one replica's gradient.
GradientReduction reduce_replica_gradients(std::vector<ReplicaInstance> replicas,
                                           const TopologyView& topology, Bytes gradient_bytes,
                                           const CostParams& cost);

}  // namespace topoep
