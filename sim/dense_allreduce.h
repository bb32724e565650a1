#pragma once
// The data-parallel all-reduce of a MoE layer's dense gradients (attention, shared experts, and
// the layer's share of the dense-only layers and embeddings) across the expert-parallel group's
// GPUs, which hold those parameters replicated. It runs at the end of the step's last
// microbatch, in the same attention-backward window as the replica gradients, and is the same
// for every planner.
//
// Model (sim/README.md, "The data-parallel all-reduce"): NCCL's ring all-reduce over R GPUs,
// one ring per GPU of a node, each ring carrying 1/G of the buffer and leaving a node through
// its own NIC (rail-aligned, as NCCL builds rings on HGX nodes). Each GPU sends and receives
// 2 (R - 1) / R of the buffer; with more than one node, 1/G of that crosses IB on its NIC and
// the rest NVLink. The two classes pipeline (max); of the ring's 2 (R - 1) steps, the 2 (N - 1)
// that cross nodes pay IB's latency and the others NVLink's, as NCCL's tuning model counts them
// (src/graph/tuning.cc). Deterministic integers: the same inputs give the same picoseconds and
// bytes.

#include "solver/cost_params.h"
#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

struct DenseAllReduce {
  Bytes nvlink_bytes_per_gpu = 0;  // sent (and received) by each GPU
  Bytes ib_bytes_per_gpu = 0;
  Picoseconds time_ps = 0;
};

// `gradient_bytes`: one GPU's copy of the layer's dense gradients. Zero for one GPU or no bytes.
DenseAllReduce dense_allreduce(const TopologyView& topology, Bytes gradient_bytes,
                               const CostParams& cost);

}  // namespace topoep
