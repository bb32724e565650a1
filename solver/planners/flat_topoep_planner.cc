#include "solver/planners/flat_topoep_planner.h"

namespace topoep {

PlannerContext flat_context(const PlannerContext& context) {
  PlannerContext flat = context;
  flat.topology = TopologyView{1, context.topology.num_ranks()};
  flat.cost.scale_out = flat.cost.scale_up;
  flat.routes = true;
  return flat;
}

FlatTopoepPlanner::FlatTopoepPlanner(const PlannerContext& context, const PlannerOptions& options)
    : inner_(flat_context(context), options) {}

PlannerDecision FlatTopoepPlanner::plan(const RecordId& record, const RoutingCounts& counts) {
  PlannerDecision decision = inner_.plan(record, counts);
  // The solver summed its links on one node: no IB. An empty tally has the caller price the
  // routes on the real cluster.
  decision.tally = PlanTally{};
  return decision;
}

bool FlatTopoepPlanner::static_fallback(PlannerDecision* out) const {
  if (!inner_.static_fallback(out)) return false;
  out->tally = PlanTally{};  // priced from the counts on the real cluster
  return true;
}

}  // namespace topoep
