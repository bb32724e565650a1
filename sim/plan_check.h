#pragma once
// `--check` (topoep simulate, sweep and solve; SimConfig::check_plans): a plan that runs,
// checked with the plan validator, and the per-GPU loads it was priced with against the loads
// its routes imply.

#include <string>
#include <vector>

#include "solver/planners/planner.h"
#include "solver/routing_counts.h"

namespace topoep {

// Throws std::runtime_error "plan check: <where>: <kind>: <the slot, route or rank involved>"
// at the first violation (find_plan_violation(), solver/plan_validator.h); `where` names the
// plan, e.g. "planner 'topoep', step 2 microbatch 1 layer 3". `loads` is [num_ranks] tokens. A
// planner's bug, not the user's input: the CLI exits 1.
void check_priced_plan(const std::string& where, const RoutingCounts& counts,
                       const PlannerDecision& decision, const std::vector<TokenCount>& loads);

}  // namespace topoep
