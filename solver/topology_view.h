#pragma once
// The solver's view of a cluster: only its shape. Link speeds reach the solver through the
// cost parameters, and files and JSON stay outside the solver (see topologies/).

#include "solver/host_device.h"
#include "solver/types.h"

namespace topoep {

// N nodes x G GPUs. Ranks are numbered node-major: rank = node * gpus_per_node + local GPU, so
// ranks that share a node (the scale-up domain: NVLink) are contiguous.
struct TopologyView {
  int num_nodes = 1;
  int gpus_per_node = 1;

  TOPOEP_HOST_DEVICE int num_ranks() const { return num_nodes * gpus_per_node; }
  TOPOEP_HOST_DEVICE int node_of(RankId rank) const { return rank / gpus_per_node; }
  TOPOEP_HOST_DEVICE bool same_node(RankId a, RankId b) const { return node_of(a) == node_of(b); }
};

// Throws InputError unless both sizes are positive and the rank count fits in RankId.
void check_topology_view(const TopologyView& topology);

}  // namespace topoep
