#pragma once
// The step-end reduction of replica weight gradients, counted per rank: for each expert, one
// pipelined chain reduce into its home rank, as NCCL's reduce runs it: the replicas on other
// nodes first (node by node, ascending), then those in the home's node, ending at the home.
// Each hop carries one weight-sized gradient, so a chain crosses IB once per node it leaves and
// each rank sends and receives at most one gradient per chain it is in.
// Shared by the simulator's pricing (sim/gradient_reduction.h) and the TopoEP planner, which
// hands the counts of the step so far to the solver (owed gradients, solver/phase_times.h).

#include <cstdint>

#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

struct GradientHops {
  std::int64_t nvlink = 0;
  std::int64_t ib = 0;
};

// Adds the chain of an expert homed on `home` whose replicas are on `holders` (`count` ranks,
// ascending, distinct, `home` not among them) to `counts` ([4][R] in the owed gradients'
// order: received and sent inside a node, received and sent across nodes) and to `hops`.
void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops);

}  // namespace topoep
