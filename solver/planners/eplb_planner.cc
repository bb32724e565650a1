#include "solver/planners/eplb_planner.h"

#include <algorithm>

#include "solver/eplb/eplb.h"
#include "solver/phase_times.h"
#include "solver/planners/host_planning.h"
#include "solver/planners/instance_layout.h"

namespace topoep {

EplbPolicy eplb_policy(int eplb_groups, int num_nodes, int model_expert_groups, int num_experts) {
  // DeepSeek's EPLB packs groups onto nodes where they divide evenly (hierarchical) and
  // balances globally otherwise; one group (a model without them) is global on many nodes.
  int groups = eplb_groups;
  if (groups == kEplbGroupsPerNode) groups = num_nodes;
  if (groups == kEplbGroupsOfModel) groups = model_expert_groups;
  if (groups < 1 || num_experts % groups != 0) groups = 1;
  return {groups, groups % num_nodes == 0};
}

EplbPlanner::EplbPlanner(const PlannerContext& context, const PlannerOptions& options,
                         bool every_microbatch)
    : context_(context), options_(options), every_microbatch_(every_microbatch) {
  instances_.resize(context.placement.num_experts());
  for (ExpertId e = 0; e < context.placement.num_experts(); ++e) {
    instances_[e] = {context.placement.home_rank[e]};
  }
  current_step_loads_.assign(context.placement.num_experts(), 0.0);
}

PlannerOverhead EplbPlanner::relayout(const std::vector<double>& loads) {
  const TopologyView& topology = context_.topology;
  const int E = context_.placement.num_experts(), R = topology.num_ranks();
  // The GPUs' memory holds the fullest rank's home experts and S spare slots.
  const int per_gpu = context_.placement.most_homed() + context_.placement.slots_per_rank;
  const int groups =
      eplb_policy(options_.eplb_groups, topology.num_nodes, context_.expert_groups, E).groups;
  EplbWeights weights{1, E, std::vector<float>(loads.begin(), loads.end())};
  const EplbResult layout =
      rebalance_experts(weights, EplbParams{per_gpu * R, groups, topology.num_nodes, R});

  std::vector<std::vector<RankId>> next(E);
  for (int p = 0; p < per_gpu * R; ++p) {
    const RankId rank = p / per_gpu;
    std::vector<RankId>& ranks = next[layout.physical_to_logical[p]];
    // Copies of one expert on one GPU (a known EPLB behaviour) act as one instance.
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
  PlannerOverhead overhead;
  // Per rank, weights sent and received inside the node and across nodes.
  std::vector<std::int32_t> nvlink_out(R, 0), nvlink_in(R, 0), ib_out(R, 0), ib_in(R, 0);
  for (ExpertId e = 0; e < E; ++e) {
    for (const RankId rank : next[e]) {
      const auto& before = instances_[e];
      if (std::find(before.begin(), before.end(), rank) != before.end()) continue;
      // The weights come from an old instance: the first inside the node if there is one, else
      // the first (the home).
      const auto local = std::find_if(before.begin(), before.end(),
                                      [&](RankId r) { return topology.same_node(r, rank); });
      if (local != before.end()) {
        ++nvlink_out[*local];
        ++nvlink_in[rank];
        overhead.migration_nvlink_bytes += context_.cost.replica_weight_bytes;
      } else {
        ++ib_out[before.front()];
        ++ib_in[rank];
        overhead.migration_ib_bytes += context_.cost.replica_weight_bytes;
      }
    }
  }
  for (RankId rank = 0; rank < R; ++rank) {
    overhead.migration_ps =
        std::max(overhead.migration_ps,
                 link_phase_ps(nvlink_out[rank], nvlink_in[rank], ib_out[rank], ib_in[rank],
                               context_.cost.replica_weight_bytes, context_.cost));
  }
  instances_ = std::move(next);
  // Device->host copy and sync, the CPU solve, and a cross-rank sum of the loads.
  overhead.host_ps =
      host_planning_ps(options_, options_.eplb_cpu_us_per_layer, topology, E, context_.cost);
  return overhead;
}

PlannerDecision EplbPlanner::plan(const RecordId& record, const RoutingCounts& counts) {
  const std::vector<TokenCount> totals = counts.expert_totals();
  PlannerOverhead overhead;
  if (every_microbatch_) {
    overhead = relayout(std::vector<double>(totals.begin(), totals.end()));
  } else {
    if (record.step != last_step_) {
      if (last_step_ >= 0) {
        window_.push_back(current_step_loads_);
        while (static_cast<int>(window_.size()) > options_.eplb_window_steps) window_.pop_front();
        std::fill(current_step_loads_.begin(), current_step_loads_.end(), 0.0);
      }
      last_step_ = record.step;
      // Replan at the start of every K-th step once there is history to plan from.
      if (!window_.empty() && record.step % options_.eplb_period_steps == 0) {
        std::vector<double> loads(totals.size(), 0.0);
        for (const auto& step_loads : window_) {
          for (std::size_t e = 0; e < loads.size(); ++e) loads[e] += step_loads[e];
        }
        overhead = relayout(loads);
      }
    }
    const std::vector<TokenCount>& loads = all_groups_loads_.empty() ? totals : all_groups_loads_;
    for (std::size_t e = 0; e < loads.size(); ++e)
      current_step_loads_[e] += static_cast<double>(loads[e]);
  }
  all_groups_loads_.clear();
  // With its sums, tallied in the pass that splits the tokens: the replay prices those, and
  // reads the routes only to hash or check them.
  PlanTally tally;
  LayoutPlan layout = plan_layout(InstanceLayout{instances_}, counts, context_.topology,
                                  context_.placement.slots_per_rank, &tally, context_.routes);
  PlannerDecision decision{std::move(layout.placement), std::move(layout.plan), {}, overhead, {}};
  // The layout's replicas are already in place: their weights moved in `overhead`.
  decision.resident = decision.plan.replica_expert;
  decision.tally = std::move(tally);
  return decision;
}

}  // namespace topoep
