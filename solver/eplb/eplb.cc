#include "solver/eplb/eplb.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "solver/input_error.h"

namespace topoep {
namespace {

struct Packing {
  std::vector<int> pack;  // [items]
  std::vector<int> rank;  // [items]: position within the pack
};

// The items of `weight` in descending order as the reference's `weight.float().sort(-1,
// descending=True)` orders them on the CPU, ties included: PyTorch's CPU sort kernel runs
// std::sort over (value, index) pairs with a comparator on the value alone (NaN first), and
// std::sort, not being stable, leaves equal values in an order that depends on the algorithm.
// Calling the same routine on the same pairs reproduces it (checked against PyTorch 1.13 on
// 3,000 tie-heavy rows of 1 to 300 values, and by tests/eplb_conformance_test.cc); up to 16
// items std::sort is an insertion sort, so short rows come out as a stable sort would leave
// them. (PyTorch builds that sort floats with x86-simd-sort, from 2025, order ties by the CPU's
// vector width: no fixed order to reproduce. solver/README.md, "DeepSeek EPLB".)
std::vector<int> reference_descending_order(const std::vector<float>& weight) {
  struct Keyed {
    float value;
    int item;
  };
  std::vector<Keyed> keyed(weight.size());
  for (std::size_t i = 0; i < weight.size(); ++i) keyed[i] = {weight[i], static_cast<int>(i)};
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return (std::isnan(a.value) && !std::isnan(b.value)) || a.value > b.value;
  });
  std::vector<int> order(weight.size());
  for (std::size_t i = 0; i < weight.size(); ++i) order[i] = keyed[i].item;
  return order;
}

// The reference's balanced_packing for one row: items in reference_descending_order(), each
// into the lightest pack that still has room (lowest index on ties); items / packs per pack.
Packing balanced_packing(const std::vector<float>& weight, int num_packs) {
  const int num_items = static_cast<int>(weight.size());
  const int per_pack = num_items / num_packs;
  Packing result{std::vector<int>(num_items), std::vector<int>(num_items, 0)};
  if (per_pack == 1) {
    std::iota(result.pack.begin(), result.pack.end(), 0);
    return result;
  }
  const std::vector<int> order = reference_descending_order(weight);
  std::vector<float> pack_weight(num_packs, 0.0f);
  std::vector<int> pack_items(num_packs, 0);
  for (const int item : order) {
    int best = -1;
    for (int p = 0; p < num_packs; ++p) {
      if (pack_items[p] < per_pack && (best < 0 || pack_weight[p] < pack_weight[best])) best = p;
    }
    result.pack[item] = best;
    result.rank[item] = pack_items[best]++;
    pack_weight[best] += weight[item];
  }
  return result;
}

struct Replication {
  std::vector<int> physical_to_logical;  // [num_physical]
  std::vector<int> rank;                 // [num_physical]
  std::vector<int> count;                // [num_logical]
};

// The reference's replicate_experts for one row: each extra slot goes to the expert with the
// largest weight per copy (first index on ties).
Replication replicate_experts(const std::vector<float>& weight, int num_physical) {
  const int num_logical = static_cast<int>(weight.size());
  Replication result{std::vector<int>(num_physical), std::vector<int>(num_physical, 0),
                     std::vector<int>(num_logical, 1)};
  std::iota(result.physical_to_logical.begin(), result.physical_to_logical.begin() + num_logical,
            0);
  for (int p = num_logical; p < num_physical; ++p) {
    int best = 0;
    float best_value = weight[0] / static_cast<float>(result.count[0]);
    for (int e = 1; e < num_logical; ++e) {
      const float value = weight[e] / static_cast<float>(result.count[e]);
      if (value > best_value) {
        best = e;
        best_value = value;
      }
    }
    result.physical_to_logical[p] = best;
    result.rank[p] = result.count[best]++;
  }
  return result;
}

std::vector<int> inverse(const std::vector<int>& permutation) {
  std::vector<int> result(permutation.size());
  for (std::size_t i = 0; i < permutation.size(); ++i) result[permutation[i]] = static_cast<int>(i);
  return result;
}

// One layer of the hierarchical policy; writes [num_replicas] and [num_experts] rows.
void rebalance_layer(const float* weight, int num_experts, int num_replicas, int num_groups,
                     int num_nodes, int num_gpus, int* physical_to_logical, int* replica_rank,
                     int* logical_count) {
  const int group_size = num_experts / num_groups;
  const int groups_per_node = num_groups / num_nodes;
  const int replicas_per_gpu = num_replicas / num_gpus;
  const int experts_per_node = num_experts / num_nodes;
  const int replicas_per_node = num_replicas / num_nodes;

  // 1. Pack groups onto nodes; renumber experts node by node ("mlog").
  std::vector<float> group_tokens(num_groups, 0.0f);
  for (int e = 0; e < num_experts; ++e) group_tokens[e / group_size] += weight[e];
  const Packing groups = balanced_packing(group_tokens, num_nodes);
  std::vector<int> log_to_mlog(num_experts);
  for (int e = 0; e < num_experts; ++e) {
    const int g = e / group_size;
    log_to_mlog[e] =
        (groups.pack[g] * groups_per_node + groups.rank[g]) * group_size + e % group_size;
  }
  const std::vector<int> mlog_to_log = inverse(log_to_mlog);

  std::vector<int> mlog_count(num_experts);
  for (int node = 0; node < num_nodes; ++node) {
    // 2. Replicate inside the node.
    std::vector<float> mlog_tokens(experts_per_node);
    for (int j = 0; j < experts_per_node; ++j)
      mlog_tokens[j] = weight[mlog_to_log[node * experts_per_node + j]];
    const Replication replicas = replicate_experts(mlog_tokens, replicas_per_node);
    // 3. Pack the node's physical replicas onto its GPUs.
    std::vector<float> physical_tokens(replicas_per_node);
    for (int p = 0; p < replicas_per_node; ++p) {
      const int m = replicas.physical_to_logical[p];
      physical_tokens[p] = mlog_tokens[m] / static_cast<float>(replicas.count[m]);
    }
    const Packing gpus = balanced_packing(physical_tokens, num_gpus / num_nodes);
    std::vector<int> phy_to_pphy(replicas_per_node);
    for (int p = 0; p < replicas_per_node; ++p) {
      phy_to_pphy[p] = gpus.pack[p] * replicas_per_gpu + gpus.rank[p];
    }
    const std::vector<int> pphy_to_phy = inverse(phy_to_pphy);
    for (int q = 0; q < replicas_per_node; ++q) {
      const int p = pphy_to_phy[q];
      const int mlog = replicas.physical_to_logical[p] + node * experts_per_node;
      physical_to_logical[node * replicas_per_node + q] = mlog_to_log[mlog];
      replica_rank[node * replicas_per_node + q] = replicas.rank[p];
    }
    for (int j = 0; j < experts_per_node; ++j)
      mlog_count[node * experts_per_node + j] = replicas.count[j];
  }
  for (int e = 0; e < num_experts; ++e) logical_count[e] = mlog_count[log_to_mlog[e]];
}

void check_params(const EplbWeights& weights, const EplbParams& p) {
  auto require = [](bool ok, const char* field, const std::string& message) {
    if (!ok) throw InputError(field, message);
  };
  require(weights.num_layers >= 1, "weight", "needs at least one layer");
  require(weights.num_experts >= 1, "weight", "needs at least one expert");
  require(
      weights.values.size() == static_cast<std::size_t>(weights.num_layers) * weights.num_experts,
      "weight",
      "has " + std::to_string(weights.values.size()) + " values, expected layers x experts");
  for (std::size_t i = 0; i < weights.values.size(); ++i) {
    require(std::isfinite(weights.values[i]) && weights.values[i] >= 0, "weight",
            "entry [" + std::to_string(i / weights.num_experts) + "][" +
                std::to_string(i % weights.num_experts) + "] must be finite and non-negative");
  }
  require(p.num_groups >= 1, "num_groups", "must be at least 1");
  require(p.num_nodes >= 1, "num_nodes", "must be at least 1");
  require(p.num_gpus >= 1, "num_gpus", "must be at least 1");
  // Beyond any cluster (a topology file's GPU limit): each replica beyond the experts is one
  // pass over the experts, so 10^9 replicas ran for minutes instead of failing.
  constexpr int kMaxReplicas = 1 << 20;
  require(
      p.num_replicas <= kMaxReplicas, "num_replicas",
      std::to_string(p.num_replicas) + " replicas are more than " + std::to_string(kMaxReplicas));
  require(p.num_gpus <= kMaxReplicas, "num_gpus",
          std::to_string(p.num_gpus) + " GPUs are more than " + std::to_string(kMaxReplicas));
  // The global policy is the hierarchical one with one group and one node, so these two only
  // bind when nodes divide groups (as in the reference).
  if (p.num_groups % p.num_nodes == 0) {
    require(weights.num_experts % p.num_groups == 0, "num_groups",
            std::to_string(p.num_groups) + " groups do not divide " +
                std::to_string(weights.num_experts) + " experts");
    require(p.num_gpus % p.num_nodes == 0, "num_gpus",
            std::to_string(p.num_nodes) + " nodes do not divide " + std::to_string(p.num_gpus) +
                " GPUs");
  }
  require(p.num_replicas >= weights.num_experts, "num_replicas",
          std::to_string(p.num_replicas) + " replicas are fewer than the " +
              std::to_string(weights.num_experts) + " experts");
  require(p.num_replicas % p.num_gpus == 0, "num_replicas",
          std::to_string(p.num_gpus) + " GPUs do not divide " + std::to_string(p.num_replicas) +
              " replicas");
}

}  // namespace

EplbResult rebalance_experts(const EplbWeights& weights, const EplbParams& params) {
  check_params(weights, params);
  EplbResult result;
  result.hierarchical = params.num_groups % params.num_nodes == 0;
  const int groups = result.hierarchical ? params.num_groups : 1;
  const int nodes = result.hierarchical ? params.num_nodes : 1;
  const int L = weights.num_layers, E = weights.num_experts, P = params.num_replicas;
  result.num_layers = L;
  result.num_experts = E;
  result.num_replicas = P;
  result.physical_to_logical.resize(static_cast<std::size_t>(L) * P);
  result.replica_rank.resize(static_cast<std::size_t>(L) * P);
  result.logical_count.resize(static_cast<std::size_t>(L) * E);
  for (int layer = 0; layer < L; ++layer) {
    rebalance_layer(weights.values.data() + static_cast<std::size_t>(layer) * E, E, P, groups,
                    nodes, params.num_gpus,
                    result.physical_to_logical.data() + static_cast<std::size_t>(layer) * P,
                    result.replica_rank.data() + static_cast<std::size_t>(layer) * P,
                    result.logical_count.data() + static_cast<std::size_t>(layer) * E);
  }
  result.max_count = *std::max_element(result.logical_count.begin(), result.logical_count.end());
  result.logical_to_physical.assign(static_cast<std::size_t>(L) * E * result.max_count, -1);
  for (int layer = 0; layer < L; ++layer) {
    for (int p = 0; p < P; ++p) {
      const std::size_t at = static_cast<std::size_t>(layer) * P + p;
      const std::size_t cell =
          (static_cast<std::size_t>(layer) * E + result.physical_to_logical[at]) *
              result.max_count +
          result.replica_rank[at];
      result.logical_to_physical[cell] = p;
    }
  }
  return result;
}

}  // namespace topoep
