#include "topologies/topology_shape.h"

#include <cstdint>
#include <string>

#include "solver/input_error.h"

namespace topoep {
namespace {

void check_count(int value, const char* field) {
  if (value < 0 || value > kMaxTopologyGpus) {
    throw InputError(field, "must be from 1 to " + std::to_string(kMaxTopologyGpus) +
                                " (or 0, the topology's own; got " + std::to_string(value) + ")");
  }
}

std::string shape_text(int nodes, int gpus_per_node) {
  return std::to_string(nodes) + "x" + std::to_string(gpus_per_node);
}

}  // namespace

Topology reshaped(Topology base, int nodes, int gpus_per_node) {
  check_count(nodes, "nodes");
  check_count(gpus_per_node, "gpus_per_node");
  const int new_nodes = nodes > 0 ? nodes : base.nodes;
  const int new_gpus = gpus_per_node > 0 ? gpus_per_node : base.gpus_per_node;
  if (new_nodes == base.nodes && new_gpus == base.gpus_per_node) return base;
  if (static_cast<std::int64_t>(new_nodes) * new_gpus > kMaxTopologyGpus) {
    throw InputError("nodes", std::to_string(new_nodes) + " nodes x " + std::to_string(new_gpus) +
                                  " GPUs exceeds " + std::to_string(kMaxTopologyGpus) + " GPUs");
  }
  const std::string old_shape = shape_text(base.nodes, base.gpus_per_node);
  const std::string new_shape = shape_text(new_nodes, new_gpus);
  const std::string old_suffix = "-" + old_shape;
  const bool named_by_shape =
      base.name.size() > old_suffix.size() &&
      base.name.compare(base.name.size() - old_suffix.size(), old_suffix.size(), old_suffix) == 0;
  const std::string stem =
      named_by_shape ? base.name.substr(0, base.name.size() - old_suffix.size()) : base.name;
  base.description =
      base.name + " reshaped from " + old_shape + " to " + new_shape +
      " (the same GPU, per-GPU links and GEMM curve)" +
      (base.description.empty() ? "" : ". As " + base.name + ": " + base.description);
  base.name = stem + "-" + new_shape;
  base.nodes = new_nodes;
  base.gpus_per_node = new_gpus;
  return base;
}

std::string fitting_nodes_hint(const Topology& topology, int gpus, bool sweep_key) {
  if (gpus <= 0 || gpus % topology.gpus_per_node != 0) return "";
  const std::string n = std::to_string(gpus / topology.gpus_per_node);
  return "; on " + n + " of its nodes it fits (--nodes " + n +
         (sweep_key ? "; in a sweep, \"nodes\": [" + n + "]" : "") + ")";
}

}  // namespace topoep
