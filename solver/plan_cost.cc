#include "solver/plan_cost.h"

#include <algorithm>
#include <numeric>

#include "solver/gradient_chains.h"

namespace topoep {

double PlanCost::max_mean_load() const {
  const TokenCount total = std::accumulate(loads.begin(), loads.end(), TokenCount{0});
  if (total == 0) return 1.0;
  const TokenCount max_load = *std::max_element(loads.begin(), loads.end());
  return static_cast<double>(max_load) * static_cast<double>(loads.size()) /
         static_cast<double>(total);
}

RankCounters PlanCost::counters() {
  return RankCounters{
      loads.data(),        nvlink_tokens_out.data(), nvlink_tokens_in.data(), ib_tokens_out.data(),
      ib_tokens_in.data(), weight_nvlink_out.data(), weight_nvlink_in.data(), weight_ib_out.data(),
      weight_ib_in.data()};
}

namespace plan_cost_detail {
namespace {

// The largest per-rank sum of instance_compute_tokens() over the rank's expert instances:
// what the compute phase waits for once small instances cost their minimum. The instances are
// those for_each_instance(visit) visits as visit(rank, tokens).
template <typename ForEachInstance>
TokenCount largest_compute_load(ForEachInstance&& for_each_instance, int num_ranks,
                                const CostParams& cost) {
  std::vector<TokenCount> load(static_cast<std::size_t>(num_ranks), 0);
  for_each_instance([&](RankId rank, TokenCount tokens) {
    load[static_cast<std::size_t>(rank)] +=
        instance_compute_tokens(tokens, cost.instance_min_tokens);
  });
  TokenCount largest = 0;
  for (const TokenCount rank_load : load) largest = std::max(largest, rank_load);
  return largest;
}

// One copy of a replica's weights from `from` to `to`: over NVLink inside a node, else IB.
void add_weight_copy(const TopologyView& topology, RankId from, RankId to, const CostParams& cost,
                     PlanCost& result) {
  if (topology.same_node(from, to)) {
    ++result.weight_nvlink_out[from];
    ++result.weight_nvlink_in[to];
    result.nvlink_weight_bytes += cost.replica_weight_bytes;
  } else {
    ++result.weight_ib_out[from];
    ++result.weight_ib_in[to];
    result.ib_weight_bytes += cost.replica_weight_bytes;
  }
}

}  // namespace

PlanCost empty_plan_cost(int num_ranks) {
  PlanCost result;
  for (auto* tokens : {&result.loads, &result.nvlink_tokens_out, &result.nvlink_tokens_in,
                       &result.ib_tokens_out, &result.ib_tokens_in}) {
    tokens->assign(num_ranks, 0);
  }
  for (auto* count : {&result.weight_nvlink_out, &result.weight_nvlink_in, &result.weight_ib_out,
                      &result.weight_ib_in}) {
    count->assign(num_ranks, 0);
  }
  result.gradient_counts.assign(4 * static_cast<std::size_t>(num_ranks), 0);
  return result;
}

std::vector<int> node_of_ranks(const TopologyView& topology) {
  std::vector<int> node(static_cast<std::size_t>(topology.num_ranks()));
  for (RankId rank = 0; rank < topology.num_ranks(); ++rank) node[rank] = topology.node_of(rank);
  return node;
}

InstanceTally* compute_tally(const Plan& plan, const CostParams& cost) {
  if (cost.instance_min_tokens <= 0) return nullptr;
  thread_local InstanceTally tally;
  tally.reset(plan.num_ranks, plan.num_experts);
  return &tally;
}

void finish_plan_cost(const TopologyView& topology, const Placement& placement, const Plan& plan,
                      const std::vector<ExpertId>& resident, const CostParams& cost,
                      WeightDelivery delivery, InstanceTally* compute, PlanCost& result) {
  const TokenCount compute_load =
      compute == nullptr
          ? -1
          : largest_compute_load([&](auto visit) { compute->drain(visit); }, plan.num_ranks, cost);
  finish_plan_cost_at(topology, placement, plan, resident, cost, delivery, compute_load, result);
}

void finish_plan_cost_at(const TopologyView& topology, const Placement& placement, const Plan& plan,
                         const std::vector<ExpertId>& resident, const CostParams& cost,
                         WeightDelivery delivery, TokenCount compute_load, PlanCost& result) {
  const int num_ranks = plan.num_ranks;
  std::vector<ReplicaInstance> new_replicas;  // for their gradient chains
  for (RankId rank = 0; rank < num_ranks; ++rank) {
    for (int slot = 0; slot < plan.slots_per_rank; ++slot) {
      const ExpertId expert = plan.replica_at(rank, slot);
      if (expert == kNoExpert) continue;
      const auto resident_begin =
          resident.begin() + static_cast<std::ptrdiff_t>(rank) * plan.slots_per_rank;
      if (!resident.empty() && std::find(resident_begin, resident_begin + plan.slots_per_rank,
                                         expert) != resident_begin + plan.slots_per_rank) {
        continue;  // already in place: free to keep
      }
      ++result.new_replicas;
      const RankId home = placement.home_rank[expert];
      new_replicas.push_back({expert, home, rank});
      if (delivery == WeightDelivery::kFromHome) {
        add_weight_copy(topology, home, rank, cost, result);
      }
    }
  }
  GradientHops hops;
  for_each_replica_chain(new_replicas, [&](RankId home, const RankId* holders, int count) {
    add_gradient_chain(home, holders, count, topology, result.gradient_counts.data(), hops);
    if (delivery != WeightDelivery::kChainBroadcast) return;
    // The chain's hops run toward the home; the broadcast runs them the other way.
    walk_holder_chain(home, holders, count, topology, [&](RankId to, RankId from, bool) {
      add_weight_copy(topology, from, to, cost, result);
    });
  });
  for (RankId rank = 0; rank < num_ranks; ++rank) {
    result.nvlink_dispatch_bytes += result.nvlink_tokens_out[rank] * cost.dispatch_bytes_per_token;
    result.ib_dispatch_bytes += result.ib_tokens_out[rank] * cost.dispatch_bytes_per_token;
  }
  CounterMaxima maxima;
  token_maxima(result.counters(), num_ranks, maxima);
  weight_maxima(result.counters(), num_ranks, maxima);
  gradient_maxima(result.gradient_counts.data(), num_ranks, maxima);
  if (compute_load >= 0) maxima.load = compute_load;
  result.times = phase_times(maxima, cost);
  result.weight_transfer =
      link_phase_ps(maxima.weight_nvlink, 0, maxima.weight_ib, 0, cost.replica_weight_bytes, cost);
}

}  // namespace plan_cost_detail

PlanCost plan_cost_from_tally(const TopologyView& topology, const Placement& placement,
                              const Plan& plan, const std::vector<ExpertId>& resident,
                              const CostParams& cost, const PlanTally& tally,
                              WeightDelivery delivery) {
  PlanCost result = plan_cost_detail::empty_plan_cost(plan.num_ranks);
  result.loads = tally.loads;
  result.nvlink_tokens_out = tally.nvlink_out;
  result.nvlink_tokens_in = tally.nvlink_in;
  result.ib_tokens_out = tally.ib_out;
  result.ib_tokens_in = tally.ib_in;
  const TokenCount compute_load =  // -1 without an instance minimum: the loads'
      cost.instance_min_tokens <= 0 ? -1
                                    : plan_cost_detail::largest_compute_load(
                                          [&](auto visit) {
                                            for (const auto& [rank, tokens] : tally.instances)
                                              visit(rank, tokens);
                                          },
                                          plan.num_ranks, cost);
  plan_cost_detail::finish_plan_cost_at(topology, placement, plan, resident, cost, delivery,
                                        compute_load, result);
  return result;
}

PlanCost predict_plan_cost(const TopologyView& topology, const Placement& placement,
                           const Plan& plan, const std::vector<ExpertId>& resident,
                           const CostParams& cost, WeightDelivery delivery) {
  return predict_plan_cost_visiting(topology, placement, plan, resident, cost, delivery,
                                    [](const Route&) {});
}

}  // namespace topoep
