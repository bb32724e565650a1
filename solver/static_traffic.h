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

// Source `src`'s out counters in the static plan from its row ([E]) and the row's sum `sent`:
// over IB all but its tokens for experts homed in its node, over NVLink those less what it
// keeps. Returns its IB tokens.
TOPOEP_HOST_DEVICE inline TokenCount static_source_counters(RankId src, const TokenCount* row,
                                                            TokenCount sent, int gpus_per_node,
                                                            const std::int32_t* home_begin,
                                                            const ExpertId* home_experts,
                                                            const RankCounters& c) {
  const int node = src / gpus_per_node;
  TokenCount in_node = 0, kept = 0;  // to experts homed in src's node; on src itself
  for (std::int32_t i = home_begin[node * gpus_per_node];
       i < home_begin[(node + 1) * gpus_per_node]; ++i) {
    in_node += row[home_experts[i]];
  }
  for (std::int32_t i = home_begin[src]; i < home_begin[src + 1]; ++i) {
    kept += row[home_experts[i]];
  }
  c.nvlink_out[src] = in_node - kept;
  c.ib_out[src] = sent - in_node;
  return sent - in_node;
}

// Rank r's load and in counters in the static plan, from the experts' node sums ([N][E]) and
// totals ([E]): over IB all its experts' tokens but those from its node, over NVLink those
// less its own.
TOPOEP_HOST_DEVICE inline void static_rank_counters(
    RankId r, const TokenCount* counts, int num_experts, int gpus_per_node,
    const std::int32_t* home_begin, const ExpertId* home_experts, const TokenCount* node_tokens,
    const TokenCount* expert_totals, const RankCounters& c) {
  const TokenCount* const row = counts + static_cast<std::int64_t>(r) * num_experts;
  const TokenCount* const node_sums =
      node_tokens + static_cast<std::int64_t>(r / gpus_per_node) * num_experts;
  TokenCount load = 0, in_node = 0, own = 0;  // from everywhere; from r's node; from r
  for (std::int32_t i = home_begin[r]; i < home_begin[r + 1]; ++i) {
    const ExpertId e = home_experts[i];
    load += expert_totals[e];
    in_node += node_sums[e];
    own += row[e];
  }
  c.load[r] = load;
  c.nvlink_in[r] = in_node - own;
  c.ib_in[r] = load - in_node;
}

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
    traffic.ib_tokens += static_source_counters(src, row, sent, G, home_begin, home_experts, c);
    if (sent > traffic.busiest_row) traffic.busiest_row = sent;
  }
  TokenCount* __restrict__ const totals = expert_totals;
  for (ExpertId e = 0; e < E; ++e) totals[e] = 0;
  for (int n = 0; n < N; ++n) {
    const TokenCount* __restrict__ const node_sums = node_tokens + static_cast<std::int64_t>(n) * E;
    for (ExpertId e = 0; e < E; ++e) totals[e] += node_sums[e];
  }
  for (RankId r = 0; r < R; ++r) {
    static_rank_counters(r, counts, E, G, home_begin, home_experts, node_tokens, totals, c);
  }
  return traffic;
}

// The same counters, node sums and totals as static_traffic(), the passes split among
// `threads` (block_threads.h; every one of them calls this): experts by column (one thread
// sums a column, so a GPU warp reads 32 neighbouring counts at a time), sources by row, then
// ranks; it ends with a sync(). The returned totals are not computed here: a caller that needs
// the IB total sums c.ib_out afterwards. Integer sums, so the values equal static_traffic()'s.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void static_traffic_split(
    const Threads& threads, const TokenCount* counts, int num_ranks, int num_experts,
    int gpus_per_node, const std::int32_t* home_begin, const ExpertId* home_experts,
    TokenCount* node_tokens, TokenCount* expert_totals, const RankCounters& c) {
  const int R = num_ranks, E = num_experts, G = gpus_per_node, N = num_ranks / gpus_per_node;
  const int first = threads.index(), stride = threads.count();
  for (ExpertId e = first; e < E; e += stride) {
    TokenCount total = 0;
    for (int n = 0; n < N; ++n) {
      TokenCount sum = 0;
      for (RankId src = n * G; src < (n + 1) * G; ++src) {
        sum += counts[static_cast<std::int64_t>(src) * E + e];
      }
      node_tokens[static_cast<std::int64_t>(n) * E + e] = sum;
      total += sum;
    }
    expert_totals[e] = total;
  }
  for (RankId src = first; src < R; src += stride) {
    const TokenCount* const row = counts + static_cast<std::int64_t>(src) * E;
    TokenCount sent = 0;
    for (ExpertId e = 0; e < E; ++e) sent += row[e];
    static_source_counters(src, row, sent, G, home_begin, home_experts, c);
  }
  threads.sync();  // the ranks' sums read every column's
  for (RankId r = first; r < R; r += stride) {
    static_rank_counters(r, counts, E, G, home_begin, home_experts, node_tokens, expert_totals, c);
  }
  threads.sync();
}

}  // namespace topoep
