#include "solver/planners/balance_topoep_planner.h"

namespace topoep {

CostParams compute_only_cost(const CostParams& cost) {
  CostParams free = cost;
  free.dispatch_bytes_per_token = 0;
  free.combine_bytes_per_token = 0;
  free.backward_bytes_per_token = 0;
  free.replica_weight_bytes = 0;
  free.replica_gradient_bytes = 0;
  return free;
}

namespace {

PlannerContext compute_only_context(const PlannerContext& context) {
  PlannerContext free = context;
  free.cost = compute_only_cost(context.cost);
  return free;
}

}  // namespace

BalanceTopoepPlanner::BalanceTopoepPlanner(const PlannerContext& context,
                                           const PlannerOptions& options)
    : inner_(compute_only_context(context), options) {}

}  // namespace topoep
