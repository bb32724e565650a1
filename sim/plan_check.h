#pragma once
// `--check` (topoep simulate, sweep and solve; SimConfig::check_plans): a plan that runs,
// checked with the plan validator, and what it was priced with (per-GPU loads, dispatch bytes
// by link class) against a count of its routes made here, apart from the cost model's.

#include <string>
#include <vector>

#include "sim/deepep_dispatch.h"
#include "sim/sim_options.h"
#include "solver/cost_params.h"
#include "solver/planners/planner.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"

namespace topoep {

// A plan and the figures it was priced with.
struct PricedPlan {
  const RoutingCounts& counts;
  const PlannerDecision& decision;
  const std::vector<TokenCount>& loads;  // [num_ranks] tokens each GPU processes
  Bytes nvlink_dispatch_bytes = 0;       // summed over GPUs
  Bytes ib_dispatch_bytes = 0;
};

// Throws std::runtime_error "plan check: <where>: <what is wrong>" at the first violation:
// of the plan's invariants (find_plan_violation(), solver/plan_validator.h: its kind and the
// slot, route or rank involved), of the loads, then of the dispatch bytes, which must equal the
// routes' tokens between GPUs of one node (NVLink) and of two nodes (IB) times
// `dispatch_bytes_per_token`; with the DeepEP dispatcher, the tokens DeepEP sends for those
// routes (sim/deepep_dispatch.h, each source's tokens its assignments over `top_k`, its picks
// limited to `groups` where the model's are). `where` names
// the plan, e.g. "planner 'topoep', step 2 microbatch 1 layer 3". A planner's or the cost model's
// bug, not the user's input: the CLI exits 1.
void check_priced_plan(const std::string& where, const PricedPlan& priced,
                       const TopologyView& topology, Bytes dispatch_bytes_per_token,
                       Dispatcher dispatcher = Dispatcher::kPerAssignment, int top_k = 1,
                       ExpertGroups groups = {});

}  // namespace topoep
