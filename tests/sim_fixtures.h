#pragma once
// Small clusters, models and traces with round numbers, so the simulator's outputs can be
// checked against formulas worked by hand.

#include <cstdint>
#include <filesystem>
#include <string>

#include "models/model.h"
#include "solver/routing_counts.h"
#include "topologies/topology.h"
#include "traces/synthetic_trace.h"
#include "traces/trace_writer.h"

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

// Writes to `path` (replacing it) one step of `layers` x `microbatches` records on 16 GPUs,
// 8 a node, 64 experts, top-8, every source sending `per_cell` tokens to every expert (a GPU
// homing 4 processes 16 x 4 x per_cell a layer). tokens_per_rank is left undeclared, so rows
// may sum to anything.
inline std::string write_uniform_trace(const std::string& path, TokenCount per_cell, int layers = 1,
                                       int microbatches = 1) {
  std::filesystem::remove_all(path);
  TraceMetadata m;
  m.model = "test";
  m.source = "synthetic";
  m.num_experts = 64;
  m.top_k = 8;
  m.num_ranks = 16;
  m.gpus_per_node = 8;
  m.num_layers = layers;
  m.microbatches = microbatches;
  m.steps = 1;
  m.tokens_per_rank = 0;
  TraceWriter writer(path, m);
  RoutingCounts counts(16, 64);
  for (RankId src = 0; src < 16; ++src) {
    for (ExpertId e = 0; e < 64; ++e) counts.set(src, e, per_cell);
  }
  for (int record = 0; record < layers * microbatches; ++record) writer.add(counts);
  writer.finish();
  return path;
}

// Writes to `path` (replacing it) a seeded synthetic trace with skewed routing on 16 GPUs,
// 8 a node: 64 experts, top-8, 4 layers, 2 steps of 4 microbatches, 512 tokens a GPU.
inline std::string write_skewed_trace(const std::string& path, std::uint64_t seed) {
  std::filesystem::remove_all(path);
  SyntheticTraceSpec spec;
  spec.num_ranks = 16;
  spec.num_experts = 64;
  spec.num_layers = 4;
  spec.steps = 2;
  spec.microbatches = 4;
  spec.tokens_per_rank = 512;
  spec.seed = seed;
  write_synthetic_trace(spec, path);
  return path;
}

}  // namespace topoep
