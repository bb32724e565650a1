#pragma once
// NCCL's ring collectives over every GPU of the cluster: what the data-parallel sync of the
// dense parameters costs (sim/README.md, "The data-parallel sync"). Those parameters (attention,
// shared experts, a layer's shares of the dense-only layers and embeddings) are held by every
// GPU of the group; plain data parallelism all-reduces their gradients once a step, Megatron-LM's
// distributed optimizer (ZeRO-1) reduce-scatters them and all-gathers the updated parameters.
// Between data-parallel copies of the group, a GPU's home experts sync with their peers the same
// way: a ring of one GPU on each of D nodes (TopologyView{D, 1}), all of it over IB.
//
// Model: R GPUs, one ring per GPU of a node, each ring carrying 1/G of the buffer and leaving a
// node through its own NIC (rail-aligned, as NCCL builds rings on HGX nodes). An all-reduce is
// two passes round the ring, a reduce-scatter or an all-gather one: each GPU sends and receives
// passes x (R - 1) / R of the buffer; with more than one node, 1/G of that crosses IB on its NIC
// and the rest NVLink. The two classes pipeline (max); of the ring's passes x (R - 1) steps, the
// passes x (N - 1) that cross nodes pay IB's latency and the others NVLink's, as NCCL's tuning
// model counts them (src/graph/tuning.cc). Deterministic integers: the same inputs give the
// same picoseconds and bytes.

#include "solver/cost_params.h"
#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

enum class RingCollective { kAllReduce, kReduceScatter, kAllGather };

struct RingTraffic {
  Bytes nvlink_bytes_per_gpu = 0;  // sent (and received) by each GPU
  Bytes ib_bytes_per_gpu = 0;
  Picoseconds time_ps = 0;
};

// `buffer_bytes`: the whole buffer (one GPU's gradients, or every GPU's parameters gathered).
// Zero for one GPU or no bytes.
RingTraffic ring_collective(RingCollective collective, const TopologyView& topology,
                            Bytes buffer_bytes, const CostParams& cost);

}  // namespace topoep
