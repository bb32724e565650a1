#include "sim/deepep_dispatch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "solver/phase_times.h"

namespace topoep {

TokenCount expected_distinct_tokens(TokenCount source_tokens, double miss) {
  const double reached = static_cast<double>(source_tokens) * (1.0 - miss);
  return std::min<TokenCount>(source_tokens, std::llround(std::max(0.0, reached)));
}

std::vector<TokenCount> tokens_per_source(const RoutingCounts& counts, int top_k) {
  std::vector<TokenCount> tokens(static_cast<std::size_t>(counts.num_ranks()), 0);
  for (RankId src = 0; src < counts.num_ranks(); ++src) {
    TokenCount row = 0;
    for (ExpertId e = 0; e < counts.num_experts(); ++e) row += counts.at(src, e);
    tokens[src] = (row + top_k - 1) / top_k;
  }
  return tokens;
}

DeepepTraffic::DeepepTraffic(const TopologyView& topology, std::vector<TokenCount> source_tokens)
    : topology_(topology),
      source_tokens_(std::move(source_tokens)),
      nvlink_out_(static_cast<std::size_t>(topology.num_ranks()), 0),
      nvlink_in_(nvlink_out_.size(), 0),
      ib_out_(nvlink_out_.size(), 0),
      ib_in_(nvlink_out_.size(), 0),
      miss_(nvlink_out_.size(), 1.0),
      fed_(nvlink_out_.size(), 0) {}

void DeepepTraffic::start_source(RankId src) {
  finish_source();
  if (src <= last_source_) {
    throw std::logic_error("DeepepTraffic: source " + std::to_string(src) + " after source " +
                           std::to_string(last_source_) + ": sources must come in order");
  }
  source_ = src;
  // A multiply per instance, not a division: the replay counts every route of every record.
  const TokenCount total = source_tokens_[src];
  inverse_tokens_ = total > 0 ? 1.0 / static_cast<double>(total) : 1.0;
}

void DeepepTraffic::finish_source() {
  if (source_ < 0) return;
  const RankId src = source_;
  const TokenCount total = source_tokens_[src];
  const int gpus = topology_.gpus_per_node;
  const int src_node = topology_.node_of(src);
  // Ascending GPUs, so that each node's GPUs are contiguous and its product has one order.
  std::sort(destinations_.begin(), destinations_.end());
  for (std::size_t i = 0; i < destinations_.size();) {
    const int node = topology_.node_of(destinations_[i]);
    std::size_t end = i;
    while (end < destinations_.size() && topology_.node_of(destinations_[end]) == node) ++end;
    // The GPU that receives this source's tokens over IB and forwards them: DeepEP pairs GPUs
    // of equal local index across nodes. Inside the source's node, the source itself.
    const RankId relay = node == src_node ? src : node * gpus + (src - src_node * gpus);
    if (node != src_node) {
      double node_miss = 1.0;
      for (std::size_t j = i; j < end; ++j) node_miss *= miss_[destinations_[j]];
      const TokenCount sent = expected_distinct_tokens(total, node_miss);
      ib_out_[src] += sent;
      ib_in_[relay] += sent;
    }
    for (std::size_t j = i; j < end; ++j) {
      const RankId dst = destinations_[j];
      if (dst == relay) continue;
      const TokenCount forwarded = expected_distinct_tokens(total, miss_[dst]);
      nvlink_out_[relay] += forwarded;
      nvlink_in_[dst] += forwarded;
    }
    i = end;
  }
  for (const RankId dst : destinations_) {
    miss_[dst] = 1.0;
    fed_[dst] = 0;
  }
  destinations_.clear();
  last_source_ = source_;
  source_ = -1;
}

TokenCount DeepepTraffic::nvlink_sent() {
  finish_source();
  TokenCount sum = 0;
  for (const TokenCount tokens : nvlink_out_) sum += tokens;
  return sum;
}

TokenCount DeepepTraffic::ib_sent() {
  finish_source();
  TokenCount sum = 0;
  for (const TokenCount tokens : ib_out_) sum += tokens;
  return sum;
}

void DeepepTraffic::apply(const CostParams& params, PlanCost& cost) {
  finish_source();
  cost.nvlink_tokens_out = nvlink_out_;
  cost.nvlink_tokens_in = nvlink_in_;
  cost.ib_tokens_out = ib_out_;
  cost.ib_tokens_in = ib_in_;
  cost.nvlink_dispatch_bytes = cost.ib_dispatch_bytes = 0;
  for (std::size_t rank = 0; rank < ib_out_.size(); ++rank) {
    cost.nvlink_dispatch_bytes += nvlink_out_[rank] * params.dispatch_bytes_per_token;
    cost.ib_dispatch_bytes += ib_out_[rank] * params.dispatch_bytes_per_token;
  }
  CounterMaxima maxima;
  token_maxima(cost.counters(), static_cast<int>(ib_out_.size()), maxima);
  const TokenLinkTimes links = token_link_times(maxima.nvlink, maxima.ib, params);
  PhaseTimes& t = cost.times;
  t.dispatch = links.dispatch;
  t.combine = links.combine;
  t.backward_transfer = links.backward_transfer;
  t.total = t.dispatch + t.compute + t.combine + t.weight_exposed + t.gradient +
            t.backward_compute + t.backward_transfer;
}

}  // namespace topoep
