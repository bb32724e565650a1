#pragma once
// A topology on another number of nodes or with another scale-up domain: the same GPU, links and
// GEMM curve, so that a trace recorded on 16 or 128 GPUs runs on a preset without a hand-edited
// file. Bandwidths are per GPU (topologies/README.md), so they carry over as they are; a
// scale-up domain of another size is the caller's claim about the hardware (HGX nodes hold 8
// GPUs, an NVL72 rack 72), and nothing checks it.

#include <string>

#include "topologies/topology.h"

namespace topoep {

// `base` with `nodes` nodes of `gpus_per_node` GPUs each; 0 keeps the base's value. A new shape
// renames it: a name ending in its shape ("h800-4x8") gets the new one ("h800-16x8"), any other
// gains the shape as a suffix; the description says what it was reshaped from. Throws
// InputError naming "nodes" or "gpus_per_node" for a negative count or more GPUs in all than
// kMaxTopologyGpus.
Topology reshaped(Topology base, int nodes, int gpus_per_node);

// The end of an error about `topology` not having `gpus` GPUs where its nodes divide them:
// "; on N of its nodes it fits (--nodes N)", with "; in a sweep, "nodes": [N]" inside the
// parentheses where `sweep_key`; "" where they do not divide.
std::string fitting_nodes_hint(const Topology& topology, int gpus, bool sweep_key);

}  // namespace topoep
