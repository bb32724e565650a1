#pragma once
// A GPU cluster as the simulator and the solver's cost model see it. Every constant comes from
// a preset or user file whose sections cite their sources (see topologies/README.md).
//
// Units: bandwidth in decimal GB/s (1e9 bytes/s), one direction, per GPU; latency in µs;
// compute in TFLOP/s (1e12 FLOP/s, dense, no sparsity).

#include <string>
#include <vector>

#include "solver/topology_view.h"

namespace topoep {

// One link class: scale-up (NVLink inside a node) or scale-out (InfiniBand/RoCE between nodes).
struct LinkSpec {
  std::string name;
  double spec_gb_per_s = 0;       // vendor figure, one direction, per GPU
  double bandwidth_gb_per_s = 0;  // achieved, one direction, per GPU: what the cost model uses
  double latency_us = 0;          // α: fixed cost of one transfer phase on this link class
  std::string source;
};

struct GpuSpec {
  std::string name;
  double peak_tflops_bf16 = 0;  // dense tensor-core peak
  double peak_tflops_fp8 = 0;   // dense tensor-core peak; 0 where the GPU has none (A100)
  double hbm_bandwidth_gb_per_s = 0;
  double hbm_capacity_gb = 0;
  std::string source;
};

// Achieved fraction of peak for the expert grouped GEMM as a function of tokens per expert.
// Points sorted by strictly increasing tokens; efficiency in (0, 1].
struct GemmEfficiencyCurve {
  std::vector<double> tokens_per_expert;
  std::vector<double> efficiency;
  std::string source;
};

// Achieved fraction of the bf16 peak for the fused attention core (FlashAttention, cuDNN's fused
// attention) as a function of the training sequence length, forward and backward, each
// counted at its own FLOPs (the backward's 2.5 x the forward's). Points sorted by strictly
// increasing length; efficiencies in (0, 1]. Empty (no points): the GPU has no published
// figures here, and the core runs at the GEMM curve's best efficiency in both passes.
struct AttentionEfficiencyCurve {
  std::vector<double> sequence_length;
  std::vector<double> forward;
  std::vector<double> backward;
  std::string source;

  bool empty() const { return sequence_length.empty(); }
};

// The most GPUs a topology may have (files and reshapes alike): far past any cluster, and small
// enough that rank ids and per-rank arrays stay well inside int.
constexpr int kMaxTopologyGpus = 1 << 20;

struct Topology {
  std::string name;
  // What it was read from: a file path or "preset:NAME" (empty when built in code), so that
  // errors about it can name the file.
  std::string origin;
  std::string description;
  int nodes = 0;
  int gpus_per_node = 0;  // the scale-up domain: 8 for HGX, 72 for NVL72
  LinkSpec scale_up;
  LinkSpec scale_out;
  GpuSpec gpu;
  GemmEfficiencyCurve gemm_efficiency;
  AttentionEfficiencyCurve attention_efficiency;  // optional

  int num_gpus() const { return nodes * gpus_per_node; }
  TopologyView view() const { return TopologyView{nodes, gpus_per_node}; }
};

}  // namespace topoep
