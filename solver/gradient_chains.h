#pragma once
// The step-end reduction of replica weight gradients, counted per rank: for each expert, one
// pipelined chain reduce into its home rank, as NCCL's reduce runs it: the replicas on other
// nodes first (node by node, ascending), then those in the home's node, ending at the home.
// Each hop carries one weight-sized gradient, so a chain crosses IB once per node it leaves and
// each rank sends and receives at most one gradient per chain it is in.
// Shared by the simulator's pricing (sim/gradient_reduction.h), predict_plan_cost() and the
// TopoEP solver, which keeps every expert's chain as replicas join it (owed holders and
// gradient counts, solver/phase_times.h), from one source.

#include <cstdint>
#include <vector>

#include "solver/host_device.h"
#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

struct GradientHops {
  std::int64_t nvlink = 0;
  std::int64_t ib = 0;
};

// Calls hop(from, to, same_node) for each hop of the chain of an expert homed on `home` whose
// replicas are on the ranks rank_at(0), ..., rank_at(n - 1) returns: ascending, -1 for none,
// `home` never among them. Ranks are node-major (`gpus_per_node` per node).
template <typename RankAt, typename Hop>
TOPOEP_HOST_DEVICE void walk_gradient_chain(RankId home, int n, int gpus_per_node, RankAt rank_at,
                                            Hop hop) {
  const int home_node = home / gpus_per_node;
  RankId previous = -1;
  // Other nodes first (ascending ranks, so node by node), then the home's node, then the home.
  for (int home_pass = 0; home_pass < 2; ++home_pass) {
    for (int i = 0; i < n; ++i) {
      const RankId rank = rank_at(i);
      if (rank < 0 || (rank / gpus_per_node == home_node) != (home_pass == 1)) continue;
      if (previous >= 0) hop(previous, rank, previous / gpus_per_node == rank / gpus_per_node);
      previous = rank;
    }
  }
  if (previous >= 0) hop(previous, home, previous / gpus_per_node == home_node);
}

// The index in [4][R] counts (gradient counts' order: received and sent inside a node, received
// and sent across nodes) of a hop's receiving end (`sent` false) or sending end.
TOPOEP_HOST_DEVICE inline std::int64_t chain_count_index(int num_ranks, RankId rank, bool same_node,
                                                         bool sent) {
  return static_cast<std::int64_t>((same_node ? 0 : 2) + (sent ? 1 : 0)) * num_ranks + rank;
}

// One replica of `expert` on `rank`, whose gradient goes to `home`.
struct ReplicaInstance {
  ExpertId expert;
  RankId home;
  RankId rank;
  bool operator<(const ReplicaInstance& other) const;
  bool operator==(const ReplicaInstance& other) const;
};

// Adds one chain per (expert, home) over `replicas` to `counts` ([4][R] in the gradient counts'
// order) and to `hops`. `replicas` in any order (sorted here); a replica listed twice counts
// once, one on its expert's home not at all.
void add_replica_chains(std::vector<ReplicaInstance>& replicas, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops);

// Adds the chain of an expert homed on `home` whose replicas are on `holders` (`count` ranks,
// ascending, distinct, `home` not among them) to `counts` ([4][R] in the gradient counts'
// order) and to `hops`.
void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops);

}  // namespace topoep
