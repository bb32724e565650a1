#pragma once
// The cluster a command runs on: --topology (a preset or file) and --nodes / --gpus-per-node,
// which reshape it (topologies/topology_shape.h), so that a trace recorded on 16 or 128 GPUs
// runs on a preset's GPU and links without a hand-edited file.

#include <CLI/CLI.hpp>
#include <string>

#include "topologies/topology.h"

namespace topoep {

struct TopologyFlags {
  std::string topology;   // a preset or file; empty: the preset the routing implies
  int nodes = 0;          // 0: the topology's own
  int gpus_per_node = 0;  // 0: the topology's own
};

// Adds --nodes and --gpus-per-node to `command`, both needing `topology_option` where it is not
// null (a command whose topology is implied by the routing: a reshape of the implied preset
// would no longer be the preset the routing implied).
void add_reshape_flags(CLI::App* command, TopologyFlags& flags,
                       CLI::Option* topology_option = nullptr);

// The topology `flags` name, reshaped; with no --topology, the one preset with `implied_gpus`
// GPUs (implied_topology(), whose error suggests a reshape to `implied_gpus_per_node` GPUs a
// node). Errors name the flag.
Topology load_topology_flags(const TopologyFlags& flags, int implied_gpus,
                             int implied_gpus_per_node = 8);

}  // namespace topoep
