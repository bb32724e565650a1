#pragma once
// What a plan is predicted to cost under the shared cost model (solver/phase_times.h).

#include <cstdint>
#include <vector>

#include "solver/cost_params.h"
#include "solver/instance_tally.h"
#include "solver/phase_times.h"
#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/plan_tally.h"
#include "solver/topology_view.h"
#include "solver/weight_delivery.h"

namespace topoep {

struct PlanCost {
  // Per rank, [num_ranks]; token counters count dispatched token assignments.
  std::vector<TokenCount> loads;
  std::vector<TokenCount> nvlink_tokens_out, nvlink_tokens_in, ib_tokens_out, ib_tokens_in;
  std::vector<std::int32_t> weight_nvlink_out, weight_nvlink_in, weight_ib_out, weight_ib_in;
  // [4][num_ranks]: the new replicas' gradient chains (gradient counts, phase_times.h)
  std::vector<std::int32_t> gradient_counts;
  PhaseTimes times;
  // The new replicas' weight transfer on the busiest rank, before the overlap window hides
  // any of it (times.weight_exposed is what it leaves exposed).
  Picoseconds weight_transfer = 0;
  Bytes nvlink_dispatch_bytes = 0;  // summed over ranks
  Bytes ib_dispatch_bytes = 0;      // summed over ranks
  Bytes nvlink_weight_bytes = 0;    // new replicas moved inside nodes
  Bytes ib_weight_bytes = 0;        // new replicas moved between nodes
  int new_replicas = 0;

  // Max over mean GPU token load; 1.0 for an empty microbatch.
  double max_mean_load() const;
  RankCounters counters();
};

// With CostParams::instance_min_tokens the compute phase sums each rank's expert instances
// (tokens per (destination, expert), tallied in the same pass over the routes) at that minimum.
// `resident` ([num_ranks][slots_per_rank] or empty) lists replicas already in place from an
// earlier microbatch: keeping one is free, every other replica in the plan is new and moves
// its weights from the expert's home rank as `delivery` says; the new replicas' gradients are
// reduced along one chain per expert (solver/gradient_chains.h), this microbatch's alone (no
// owed holders). The plan must be valid (see plan_validator.h).
PlanCost predict_plan_cost(const TopologyView& topology, const Placement& placement,
                           const Plan& plan, const std::vector<ExpertId>& resident,
                           const CostParams& cost,
                           WeightDelivery delivery = WeightDelivery::kFromHome);

// The same, calling `visit(route)` for every route in plan order within the pass that sums the
// per-rank counters, for callers that need their own per-route tallies (the simulator's
// per-instance compute) without a second pass over the routes.
template <typename Visit>
PlanCost predict_plan_cost_visiting(const TopologyView& topology, const Placement& placement,
                                    const Plan& plan, const std::vector<ExpertId>& resident,
                                    const CostParams& cost, WeightDelivery delivery, Visit&& visit);

// Zeroes `tally`'s per-rank token counters ([num_ranks] each) and returns counters over them
// (no weight counters) for add_route_tokens() or static_traffic() to fill.
inline RankCounters zeroed_token_counters(int num_ranks, PlanTally* tally) {
  for (auto* v :
       {&tally->loads, &tally->nvlink_out, &tally->nvlink_in, &tally->ib_out, &tally->ib_in}) {
    v->assign(static_cast<std::size_t>(num_ranks), 0);
  }
  return RankCounters{tally->loads.data(),
                      tally->nvlink_out.data(),
                      tally->nvlink_in.data(),
                      tally->ib_out.data(),
                      tally->ib_in.data(),
                      nullptr,
                      nullptr,
                      nullptr,
                      nullptr};
}

// The same from the plan's sums (PlanTally: its per-rank token counters and instance tokens)
// instead of its routes, which it does not read: what a walk over the routes would give.
PlanCost plan_cost_from_tally(const TopologyView& topology, const Placement& placement,
                              const Plan& plan, const std::vector<ExpertId>& resident,
                              const CostParams& cost, const PlanTally& tally,
                              WeightDelivery delivery = WeightDelivery::kFromHome);

namespace plan_cost_detail {
PlanCost empty_plan_cost(int num_ranks);
std::vector<int> node_of_ranks(const TopologyView& topology);
// With an instance minimum (cost.instance_min_tokens > 0), the calling thread's tally for the
// plan's instances, empty and sized for it: the compute phase then waits for the largest sum of
// instance_compute_tokens() over a rank's instances, not for its tokens. Null without one.
InstanceTally* compute_tally(const Plan& plan, const CostParams& cost);
// Adds the new replicas' weights and gradient chains, the byte totals, and the phase times;
// drains `compute` (compute_tally()'s, filled with every route; null where it gave none) into
// the compute load.
void finish_plan_cost(const TopologyView& topology, const Placement& placement, const Plan& plan,
                      const std::vector<ExpertId>& resident, const CostParams& cost,
                      WeightDelivery delivery, InstanceTally* compute, PlanCost& result);
// The same with the compute phase's load given: the largest rank's compute load at the
// instance minimum, or -1 for the largest of result.loads.
void finish_plan_cost_at(const TopologyView& topology, const Placement& placement, const Plan& plan,
                         const std::vector<ExpertId>& resident, const CostParams& cost,
                         WeightDelivery delivery, TokenCount compute_load, PlanCost& result);

// Adds routes' tokens to the link counters. Consecutive routes between the same two ranks (a
// source's experts homed on one rank) are summed in a register first: adding each to the
// counters would chain every add through the same memory word. Integer sums, so the counters
// are the same. `node` ([R]) is every rank's node; flush() adds the last run.
class RouteRunCounter {
 public:
  RouteRunCounter(const RankCounters& counters, const int* node)
      : counters_(counters), node_(node) {}
  void add(RankId src, RankId dst, TokenCount tokens) {
    if (src != run_src_ || dst != run_dst_) {
      flush();
      run_src_ = src;
      run_dst_ = dst;
    }
    run_tokens_ += tokens;
  }
  void flush() {
    if (run_tokens_ > 0) {
      add_route_tokens(counters_, run_src_, run_dst_, node_[run_src_] == node_[run_dst_],
                       run_tokens_);
    }
    run_tokens_ = 0;
  }

 private:
  RankCounters counters_;
  const int* node_;
  RankId run_src_ = -1, run_dst_ = -1;
  TokenCount run_tokens_ = 0;
};

// Adds every route's tokens to the link counters, calling visit(route) on each in plan order.
template <typename Visit>
void add_routes(const Plan& plan, const std::vector<int>& node, const RankCounters& counters,
                Visit&& visit) {
  RouteRunCounter runs(counters, node.data());
  for (const Route& route : plan.routes) {
    visit(route);
    runs.add(route.src, route.dst, route.tokens);
  }
  runs.flush();
}
}  // namespace plan_cost_detail

template <typename Visit>
PlanCost predict_plan_cost_visiting(const TopologyView& topology, const Placement& placement,
                                    const Plan& plan, const std::vector<ExpertId>& resident,
                                    const CostParams& cost, WeightDelivery delivery,
                                    Visit&& visit) {
  PlanCost result = plan_cost_detail::empty_plan_cost(plan.num_ranks);
  // Node of every rank looked up, not divided out: the pass runs over every route.
  const std::vector<int> node = plan_cost_detail::node_of_ranks(topology);
  InstanceTally* const compute = plan_cost_detail::compute_tally(plan, cost);
  if (compute != nullptr) {
    plan_cost_detail::add_routes(plan, node, result.counters(), [&](const Route& route) {
      visit(route);
      compute->add(route);
    });
  } else {
    plan_cost_detail::add_routes(plan, node, result.counters(), visit);
  }
  plan_cost_detail::finish_plan_cost(topology, placement, plan, resident, cost, delivery, compute,
                                     result);
  return result;
}

}  // namespace topoep
