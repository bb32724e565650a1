// The static planner and the TopoEP planner behind the Planner interface.
#include "solver/planners/basic_planners.h"

#include <cmath>

#include "solver/static_plan.h"

namespace topoep {

PlannerDecision StaticPlanner::plan(const RecordId&, const RoutingCounts& counts) {
  return PlannerDecision{context_.placement, static_plan(counts, context_.placement), {}, {}};
}

TopoepPlanner::TopoepPlanner(const PlannerContext& context, const PlannerOptions& options)
    : problem_{context.topology, context.placement, context.cost, 0},
      solver_(problem_),
      solve_ps_(static_cast<Picoseconds>(std::llround(options.topoep_solve_us * 1e6))) {}

PlannerDecision TopoepPlanner::plan(const RecordId& record, const RoutingCounts& counts) {
  // Replicas placed by earlier microbatches of the same step stay resident (free to keep); a
  // new step starts from the home layout.
  if (record.step != step_) {
    step_ = record.step;
    resident_.clear();
  }
  PlannerDecision decision;
  decision.placement = problem_.placement;
  decision.resident = resident_;
  check_topoep_inputs(problem_, counts, resident_);
  solver_.solve(counts, resident_, &decision.plan);
  decision.overhead.host_ps = solve_ps_;  // on the GPU, in the layer's stream: no host sync
  last_resident_ = std::move(resident_);
  resident_ = decision.plan.replica_expert;
  return decision;
}

bool TopoepPlanner::static_fallback(PlannerDecision* out) const {
  // Every token home; the replicas the record started with stay, idle and free.
  *out = PlannerDecision{problem_.placement, static_layout(problem_.placement), last_resident_, {}};
  out->overhead.host_ps = solve_ps_;  // the solve ran either way
  if (!last_resident_.empty()) out->plan.replica_expert = last_resident_;
  return true;
}

void TopoepPlanner::ran_fallback(const PlannerDecision& fallback) {
  resident_ = fallback.plan.replica_expert;
}

}  // namespace topoep
