#include "tools/cli/topology_flags.h"

#include "common/flag_errors.h"
#include "tools/cli/implied_presets.h"
#include "topologies/topology_presets.h"
#include "topologies/topology_shape.h"

namespace topoep {

void add_reshape_flags(CLI::App* command, TopologyFlags& flags, CLI::Option* topology_option) {
  CLI::Option* nodes =
      command
          ->add_option("--nodes", flags.nodes,
                       "Run the topology on this many nodes (its GPU and per-GPU links)")
          ->check(CLI::Range(1, kMaxTopologyGpus));
  CLI::Option* gpus_per_node =
      command
          ->add_option("--gpus-per-node", flags.gpus_per_node,
                       "Give the topology's nodes this many GPUs (its scale-up domain)")
          ->check(CLI::Range(1, kMaxTopologyGpus));
  if (topology_option != nullptr) {
    nodes->needs(topology_option);
    gpus_per_node->needs(topology_option);
  }
}

Topology load_topology_flags(const TopologyFlags& flags, int implied_gpus,
                             int implied_gpus_per_node) {
  const Topology base =
      load_topology(flags.topology.empty() ? implied_topology(implied_gpus, implied_gpus_per_node)
                                           : flags.topology);
  Topology shaped;
  naming_flags({{"nodes", "--nodes"}, {"gpus_per_node", "--gpus-per-node"}},
               [&] { shaped = reshaped(base, flags.nodes, flags.gpus_per_node); });
  return shaped;
}

}  // namespace topoep
