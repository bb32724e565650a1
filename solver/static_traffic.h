#pragma once
// The static plan's traffic (every token at its expert's home rank), from one pass over the
// counts. Shared by the solver's starting state (host and GPU) and the simulator's pricing of
// the static fallback.

#include <cstdint>

#include "solver/host_device.h"
#include "solver/phase_times.h"
#include "solver/types.h"

namespace topoep {

struct StaticTraffic {
  TokenCount ib_tokens = 0;    // token assignments that cross nodes
  TokenCount busiest_row = 0;  // the most token assignments any source rank routes
};

// Sets the token counters of `c` ([R] each: load, NVLink and IB out and in) to the static
// plan's, `node_tokens` ([N][E], node-major) to each expert's tokens by source node and
// `expert_totals` ([E]) to each expert's tokens. `home_begin` and `home_experts` group the
// experts by home rank (group_experts_by_home()); ranks are node-major, `gpus_per_node` to a
// node. Counts are [R][E], row-major.
//
// The counters follow from the node sums, not route by route: a source sends over IB all its
// tokens but those for experts homed in its node (over NVLink those, less what it keeps), and
// a rank receives over IB all its experts' tokens but those from its node (over NVLink those,
// less its own). Integer sums: the same values as adding every route, in any order.
TOPOEP_HOST_DEVICE inline StaticTraffic static_traffic(
    const TokenCount* counts, int num_ranks, int num_experts, int gpus_per_node,
    const std::int32_t* home_begin, const ExpertId* home_experts, TokenCount* node_tokens,
    TokenCount* expert_totals, const RankCounters& c) {
  const int R = num_ranks, E = num_experts, G = gpus_per_node, N = num_ranks / gpus_per_node;
  StaticTraffic traffic;
  for (RankId src = 0; src < R; ++src) {
    // Restrict: otherwise the node sums might alias the counts, and the adds would not
    // vectorise (one add through memory per count).
    const TokenCount* __restrict__ const row = counts + static_cast<std::int64_t>(src) * E;
    const int node = src / G;
    TokenCount* __restrict__ const node_sums = node_tokens + static_cast<std::int64_t>(node) * E;
    if (src % G == 0) {  // the node's first source
      for (ExpertId e = 0; e < E; ++e) node_sums[e] = 0;
    }
    TokenCount sent = 0;
    for (ExpertId e = 0; e < E; ++e) {
      node_sums[e] += row[e];
      sent += row[e];
    }
    TokenCount in_node = 0, kept = 0;  // to experts homed in src's node; on src itself
    for (std::int32_t i = home_begin[node * G]; i < home_begin[(node + 1) * G]; ++i) {
      in_node += row[home_experts[i]];
    }
    for (std::int32_t i = home_begin[src]; i < home_begin[src + 1]; ++i) {
      kept += row[home_experts[i]];
    }
    c.nvlink_out[src] = in_node - kept;
    c.ib_out[src] = sent - in_node;
    traffic.ib_tokens += sent - in_node;
    if (sent > traffic.busiest_row) traffic.busiest_row = sent;
  }
  TokenCount* __restrict__ const totals = expert_totals;
  for (ExpertId e = 0; e < E; ++e) totals[e] = 0;
  for (int n = 0; n < N; ++n) {
    const TokenCount* __restrict__ const node_sums = node_tokens + static_cast<std::int64_t>(n) * E;
    for (ExpertId e = 0; e < E; ++e) totals[e] += node_sums[e];
  }
  for (RankId r = 0; r < R; ++r) {
    const TokenCount* const row = counts + static_cast<std::int64_t>(r) * E;
    const TokenCount* const node_sums = node_tokens + static_cast<std::int64_t>(r / G) * E;
    TokenCount load = 0, in_node = 0, own = 0;  // from everywhere; from r's node; from r
    for (std::int32_t i = home_begin[r]; i < home_begin[r + 1]; ++i) {
      const ExpertId e = home_experts[i];
      load += totals[e];
      in_node += node_sums[e];
      own += row[e];
    }
    c.load[r] = load;
    c.nvlink_in[r] = in_node - own;
    c.ib_in[r] = load - in_node;
  }
  return traffic;
}

}  // namespace topoep
