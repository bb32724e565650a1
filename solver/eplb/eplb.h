#pragma once
// DeepSeek's expert-parallel load balancer (EPLB), reimplemented to give the same output as the
// public reference `rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus)`,
// ties included: its descending sort leaves equal weights in the order of PyTorch's CPU sort
// (std::sort over (value, index) pairs, not stable above 16 items), argmax takes the first
// index, and each item goes to the lightest pack with the lowest index. (PyTorch builds that
// sort with x86-simd-sort order ties by the CPU: solver/README.md, "DeepSeek EPLB".)
//
// Known behaviours kept from the reference: several replicas of one expert may land on one GPU;
// every expert keeps at least one physical slot; arithmetic is float32 like `weight.float()`.

#include <vector>

namespace topoep {

// Row-major [layers][experts] loads (any non-negative numbers).
struct EplbWeights {
  int num_layers = 0;
  int num_experts = 0;
  std::vector<float> values;
};

struct EplbParams {
  int num_replicas = 0;  // physical expert slots in total (all GPUs)
  int num_groups = 0;    // expert groups (group-limited routing)
  int num_nodes = 0;
  int num_gpus = 0;
};

struct EplbResult {
  bool hierarchical = false;  // false: the global policy (one group, one node)
  int num_layers = 0;
  int num_experts = 0;
  int num_replicas = 0;
  int max_count = 0;                     // the largest logcnt: log2phy's last dimension
  std::vector<int> physical_to_logical;  // [layers][num_replicas] (the reference's phy2log)
  std::vector<int> replica_rank;         // [layers][num_replicas]: which copy of its expert
  std::vector<int> logical_count;        // [layers][experts] (logcnt)
  std::vector<int> logical_to_physical;  // [layers][experts][max_count], -1 padded (log2phy)
};

// The hierarchical policy when num_groups % num_nodes == 0 (pack groups onto nodes, replicate
// inside each node, pack replicas onto the node's GPUs), else the global policy. Physical slot
// p lives on GPU p / (num_replicas / num_gpus). Throws InputError naming the parameter when the
// reference's preconditions fail: for the hierarchical policy experts divisible by groups and
// GPUs by nodes; always replicas divisible by GPUs, replicas at least the experts, positive
// sizes, replicas and GPUs at most 2^20, weights finite and non-negative.
EplbResult rebalance_experts(const EplbWeights& weights, const EplbParams& params);

}  // namespace topoep
