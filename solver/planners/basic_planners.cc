// The static planner and the TopoEP planner behind the Planner interface.
#include "solver/planners/basic_planners.h"

#include <algorithm>
#include <cmath>

#include "solver/planners/host_planning.h"
#include "solver/static_plan.h"
#include "solver/static_tally.h"

namespace topoep {

Picoseconds topoep_solve_ps(const Placement& placement, const PlannerOptions& options) {
  return placement.slots_per_rank == 0 ? 0 : us_to_ps(options.topoep_solve_us);
}

PlannerDecision StaticPlanner::plan(const RecordId&, const RoutingCounts& counts) {
  PlannerDecision decision{context_.placement, static_layout(context_.placement), {}, {}, {}};
  // Its sums from one pass over the counts: the replay prices them instead of walking the
  // routes, which it then needs only to hash or check (pricing the routes was half a record).
  static_plan_tally(context_.topology, context_.placement, counts, &decision.tally);
  if (context_.routes) route_all_home(counts, context_.placement, &decision.plan);
  return decision;
}

TopoepPlanner::TopoepPlanner(const PlannerContext& context, const PlannerOptions& options)
    : problem_{context.topology,
               context.placement,
               context.cost,
               options.topoep_max_moves,
               static_cast<int>(std::lround(
                   topoep_ib_load_slack(options, context.node_deduplicated_dispatch) * 1000)),
               topoep_ib_opened_run(options, context.node_deduplicated_dispatch)},
      microbatches_per_step_(context.microbatches_per_step),
      routes_(context.routes),
      replica_uses_max_(std::max(1, options.topoep_replica_uses)),
      solver_(problem_, TopoepWorkspaceUse::kThread),
      solve_ps_(topoep_solve_ps(context.placement, options)) {
  check_topoep_problem(problem_);
}

PlannerDecision TopoepPlanner::plan(const RecordId& record, const RoutingCounts& counts) {
  // Replicas placed by earlier microbatches of the same step stay resident (free to keep); a
  // new step starts from the home layout.
  if (record.step != step_) {
    step_ = record.step;
    resident_.clear();
    owed_.clear();
  }
  // The replicas the last record ran with are now part of the step's gradient reduction.
  note_used(resident_);
  PlannerDecision decision;
  decision.placement = problem_.placement;
  decision.resident = resident_;
  check_topoep_record(problem_, counts, resident_, owed_);  // the problem: at construction
  // A new replica can serve this microbatch and the step's later ones, while it stays resident.
  const int left = std::max(1, microbatches_per_step_ - record.microbatch);
  solver_.solve(counts, resident_, &decision.plan, owed_, std::min(left, replica_uses_max_),
                routes_);
  // Before another layer's solve reuses the workspace.
  solver_.last_tally(&decision.tally);
  solver_.last_static_tally(&static_tally_);
  decision.overhead.host_ps = solve_ps_;  // on the GPU, in the layer's stream: no host sync
  last_resident_ = std::move(resident_);
  resident_ = decision.plan.replica_expert;
  return decision;
}

bool TopoepPlanner::static_fallback(PlannerDecision* out) const {
  // Every token home; the replicas the record started with stay, idle and free.
  *out = PlannerDecision{
      problem_.placement, static_layout(problem_.placement), last_resident_, {}, {}};
  out->overhead.host_ps = solve_ps_;  // the solve ran either way
  if (!last_resident_.empty()) out->plan.replica_expert = last_resident_;
  out->tally = static_tally_;
  return true;
}

void TopoepPlanner::ran_fallback(const PlannerDecision& fallback) {
  resident_ = fallback.plan.replica_expert;
}

void TopoepPlanner::note_used(const std::vector<ExpertId>& replicas) {
  // Gradients that cost nothing: the solver keeps no chains.
  if (problem_.cost.replica_gradient_bytes == 0) return;
  const int slots = problem_.placement.slots_per_rank;
  const std::size_t ranks = static_cast<std::size_t>(problem_.placement.num_ranks);
  for (std::size_t j = 0; j < replicas.size(); ++j) {
    const ExpertId expert = replicas[j];
    if (expert == kNoExpert) continue;
    if (owed_.empty()) owed_.assign(ranks * problem_.placement.num_experts(), 0);
    owed_[static_cast<std::size_t>(expert) * ranks + j / slots] = 1;
  }
}

}  // namespace topoep
