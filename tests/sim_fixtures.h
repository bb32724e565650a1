#pragma once
// Small clusters and models with round numbers, so the simulator's outputs can be checked
// against formulas worked by hand.

#include "models/model.h"
#include "topologies/topology.h"

namespace topoep {

// NVLink 100 GB/s with alpha 2 us, IB 25 GB/s with alpha 5 us, 1000 TFLOP/s at a flat 50%
// GEMM efficiency (compute linear in tokens), HBM 2000 GB/s.
inline Topology round_topology(int nodes, int gpus_per_node) {
  Topology t;
  t.name = "test-" + std::to_string(nodes) + "x" + std::to_string(gpus_per_node);
  t.nodes = nodes;
  t.gpus_per_node = gpus_per_node;
  t.scale_up = LinkSpec{"nvlink", 100, 100, 2, "test"};
  t.scale_out = LinkSpec{"ib", 25, 25, 5, "test"};
  t.gpu.peak_tflops_bf16 = 1000;
  t.gpu.peak_tflops_fp8 = 2000;
  t.gpu.hbm_bandwidth_gb_per_s = 2000;
  t.gemm_efficiency.tokens_per_expert = {1, 1000};
  t.gemm_efficiency.efficiency = {0.5, 0.5};
  return t;
}

// hidden 1024, expert FFN 512, fp8 dispatch without scales, bf16 combine and weights, 1M dense
// parameters per layer.
inline ModelSpec round_model(int experts, int top_k) {
  ModelSpec m;
  m.name = "test-model";
  m.num_experts = experts;
  m.top_k = top_k;
  m.hidden_size = 1024;
  m.expert_ffn_size = 512;
  m.moe_layers = 4;
  m.dispatch_bytes = 1;
  m.dispatch_scale_block = 0;
  m.combine_bytes = 2;
  m.weight_bytes = 2;
  m.dense_params_per_layer = 1000000;
  m.tokens_per_rank = 64;
  return m;
}

}  // namespace topoep
