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

DeepepTraffic::DeepepTraffic(const TopologyView& topology, const RoutingCounts& counts, int top_k,
                             ExpertGroups groups)
    : DeepepTraffic(topology, tokens_per_source(counts, top_k)) {
  if (!groups.limited()) return;
  const int experts = counts.num_experts();
  if (experts % groups.groups != 0) {
    throw std::logic_error("DeepepTraffic: " + std::to_string(groups.groups) +
                           " expert groups do not divide the counts' " + std::to_string(experts) +
                           " experts");
  }
  groups_ = groups.groups;
  experts_per_group_ = experts / groups_;
  const int ranks = counts.num_ranks();
  group_tokens_.assign(static_cast<std::size_t>(ranks) * groups_, 0.0);
  for (RankId src = 0; src < ranks; ++src) {
    double* tokens = &group_tokens_[static_cast<std::size_t>(src) * groups_];
    for (int g = 0; g < groups_; ++g) {
      TokenCount sum = 0;
      for (ExpertId e = g * experts_per_group_; e < (g + 1) * experts_per_group_; ++e) {
        sum += counts.at(src, e);
      }
      tokens[g] = static_cast<double>(sum);
    }
    // Assignments to tokens: a choosing token puts k / M of its picks in the group.
    for (int g = 0; g < groups_; ++g) {
      tokens[g] =
          std::min(static_cast<double>(source_tokens_[src]), tokens[g] * groups.per_token / top_k);
    }
  }
  chosen_.assign(groups_, 0.0);
  pick_scale_.assign(groups_, 0.0);
  none_picked_.assign(groups_, 1.0);
  group_miss_.assign(static_cast<std::size_t>(topology.num_ranks()) * groups_, 1.0);
  node_miss_.assign(groups_, 1.0);
}

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

namespace {

// The fixed point s = 1 - PRODUCT over `ratios` b_i of (1 - min(1, b_i s)) in (0, 1]: the root of
// the concave h(s) = 1 - s - PRODUCT, by Newton's method from right of it (where h <= 0, so that
// the steps fall monotonically onto the root): from f(1) = 1 - PRODUCT (1 - b_i), at or right
// of the root as f increases, until a step moves it by less than 1e-10 of itself, 8 steps at
// most. Where some b_i >= 1 a token that chose the group picks that instance for certain:
// s = 1.
double pick_scale(const double* ratios, std::size_t count) {
  double none = 1.0;
  for (std::size_t i = 0; i < count; ++i) none *= 1.0 - std::min(1.0, ratios[i]);
  double scale = 1.0 - none;
  if (none == 0.0) return scale;
  for (int step = 0; step < 8; ++step) {
    double slope = 0.0;
    none = 1.0;
    for (std::size_t i = 0; i < count; ++i) {
      const double left = 1.0 - ratios[i] * scale;
      none *= left;
      slope += ratios[i] / left;
    }
    // h(s) = 1 - s - none, h'(s) = -1 + none x SUM b_i / (1 - b_i s).
    const double h = 1.0 - scale - none, derivative = -1.0 + none * slope;
    if (derivative >= 0.0) break;  // at or left of the hump: no Newton step is safe
    const double next = scale - h / derivative;
    if (!(next < scale)) break;
    const bool converged = scale - next < 1e-10 * scale;
    scale = next;
    if (converged) break;
  }
  return scale;
}

}  // namespace

void DeepepTraffic::price_groups() {
  const double total = static_cast<double>(source_tokens_[source_]);
  const double* tokens = &group_tokens_[static_cast<std::size_t>(source_) * groups_];
  // The instances' ratios c_i / T_g, group by group, each group's in route order.
  group_begin_.assign(static_cast<std::size_t>(groups_) + 1, 0);
  for (const Instance& i : instances_) ++group_begin_[static_cast<std::size_t>(i.group) + 1];
  for (int g = 0; g < groups_; ++g) group_begin_[g + 1] += group_begin_[g];
  ratios_.resize(instances_.size());
  group_next_.assign(group_begin_.begin(), group_begin_.end() - 1);
  for (const Instance& i : instances_) {
    ratios_[group_next_[i.group]++] = static_cast<double>(i.tokens) / tokens[i.group];
  }
  for (int g = 0; g < groups_; ++g) {
    const std::size_t first = group_begin_[g], count = group_begin_[g + 1] - first;
    if (count == 0) continue;
    const double scale = pick_scale(&ratios_[first], count);
    double none = 1.0;
    for (std::size_t i = first; i < first + count; ++i) {
      none *= 1.0 - std::min(1.0, ratios_[i] * scale);
    }
    chosen_[g] = tokens[g] / total;
    pick_scale_[g] = scale / tokens[g];
    none_picked_[g] = none;
  }
  for (const Instance& i : instances_) {
    if (i.dst == source_) continue;
    group_miss_[static_cast<std::size_t>(i.dst) * groups_ + i.group] *=
        1.0 - std::min(1.0, static_cast<double>(i.tokens) * pick_scale_[i.group]);
  }
  instances_.clear();
}

double DeepepTraffic::miss_over_groups(const double* product) const {
  double miss = 1.0;
  for (int g = 0; g < groups_; ++g) {
    if (product[g] >= 1.0) continue;  // no instance of g here (or none it could pick)
    // Given that a token picks at least one of g's instances, it misses these.
    const double picked = 1.0 - none_picked_[g];
    const double conditional =
        picked > 1e-12 ? std::max(0.0, (product[g] - none_picked_[g]) / picked) : product[g];
    miss *= 1.0 - chosen_[g] + chosen_[g] * conditional;
  }
  return miss;
}

double DeepepTraffic::miss_of(RankId dst) const {
  if (groups_ == 1) return miss_[dst];
  return miss_over_groups(&group_miss_[static_cast<std::size_t>(dst) * groups_]);
}

void DeepepTraffic::finish_source() {
  if (source_ < 0) return;
  if (groups_ > 1) price_groups();
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
      if (groups_ == 1) {
        for (std::size_t j = i; j < end; ++j) node_miss *= miss_[destinations_[j]];
      } else {
        std::fill(node_miss_.begin(), node_miss_.end(), 1.0);
        for (std::size_t j = i; j < end; ++j) {
          const double* product =
              &group_miss_[static_cast<std::size_t>(destinations_[j]) * groups_];
          for (int g = 0; g < groups_; ++g) node_miss_[g] *= product[g];
        }
        node_miss = miss_over_groups(node_miss_.data());
      }
      const TokenCount sent = expected_distinct_tokens(total, node_miss);
      ib_out_[src] += sent;
      ib_in_[relay] += sent;
    }
    for (std::size_t j = i; j < end; ++j) {
      const RankId dst = destinations_[j];
      if (dst == relay) continue;
      const TokenCount forwarded = expected_distinct_tokens(total, miss_of(dst));
      nvlink_out_[relay] += forwarded;
      nvlink_in_[dst] += forwarded;
    }
    i = end;
  }
  for (const RankId dst : destinations_) {
    miss_[dst] = 1.0;
    if (groups_ > 1) {
      std::fill_n(group_miss_.begin() + static_cast<std::ptrdiff_t>(dst) * groups_, groups_, 1.0);
    }
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
