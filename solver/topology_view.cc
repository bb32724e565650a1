#include "solver/topology_view.h"

#include <limits>
#include <string>

#include "solver/input_error.h"

namespace topoep {

void check_topology_view(const TopologyView& topology) {
  require_at_least(topology.num_nodes, 1, "num_nodes");
  require_at_least(topology.gpus_per_node, 1, "gpus_per_node");
  if (topology.num_nodes > std::numeric_limits<RankId>::max() / topology.gpus_per_node) {
    throw InputError("num_nodes", "num_nodes x gpus_per_node overflows the rank type");
  }
}

}  // namespace topoep
