#pragma once
// `topoep simulate --check` (SimConfig::check_plans): every plan that runs, checked with the
// plan validator, and the loads the cost model priced it with against the loads its routes imply.

#include <string>

#include "sim/cost_model.h"
#include "solver/planners/planner.h"
#include "traces/trace_format.h"

namespace topoep {

// Throws std::runtime_error naming the planner, the record (step, microbatch, layer), the kind
// of violation and the slot, route or rank involved, at the first violation
// (find_plan_violation(), solver/plan_validator.h). A planner's bug, not the user's input: the
// CLI exits 1.
void check_priced_plan(const std::string& planner, const TraceRecord& record,
                       const PlannerDecision& decision, const LayerCost& cost);

}  // namespace topoep
