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
      solve_ps_(static_cast<Picoseconds>(std::llround(options.topoep_solve_us * 1e6))),
      judge_(options.judge) {}

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
  if (judge_ != nullptr) {
    // The fallback keeps the resident replicas (idle, free) and sends every token home.
    PlannerDecision fallback{decision.placement, static_plan(counts, problem_.placement),
                             decision.resident, decision.overhead};
    if (!resident_.empty()) fallback.plan.replica_expert = resident_;
    if (judge_->price(fallback, counts) < judge_->price(decision, counts)) {
      decision = std::move(fallback);
    }
  }
  resident_ = decision.plan.replica_expert;
  return decision;
}

}  // namespace topoep
