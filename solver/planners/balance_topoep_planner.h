#pragma once
// topoep-balance: the TopoEP solver weighing compute alone, the ablation of its cost model. To
// it every token transfer, replica weight and gradient is free (zero bytes), so it levels the
// GPUs' expert loads as a load-only greedy does (DESIGN.md's naive per-microbatch greedy,
// placing replicas wherever they level the load), with everything else as the topoep planner
// has it: the same search, spare slots, resident replicas and solve time on the GPU. Its plans
// are priced on the real cluster, their tokens, weights and gradients at their real cost.
//
// So `topoep` against `topoep-balance` isolates what weighing the links and weights buys over
// balancing alone, as `topoep-flat` does for the link hierarchy.

#include "solver/planners/basic_planners.h"

namespace topoep {

class BalanceTopoepPlanner : public Planner {
 public:
  BalanceTopoepPlanner(const PlannerContext& context, const PlannerOptions& options);
  std::string name() const override { return "topoep-balance"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override {
    return inner_.plan(record, counts);
  }
  bool static_fallback(PlannerDecision* out) const override { return inner_.static_fallback(out); }
  void ran_fallback(const PlannerDecision& fallback) override { inner_.ran_fallback(fallback); }
  bool last_kept_moves(KeptMoves* out) const override { return inner_.last_kept_moves(out); }

 private:
  TopoepPlanner inner_;  // with compute the only cost
};

// The cost a balance-only planner decides with: `cost` with every byte a plan moves free (token
// dispatch, combine and their gradients, replica weights and gradients). The solver's sums
// count tokens, not times, so they stay the real cluster's.
CostParams compute_only_cost(const CostParams& cost);

}  // namespace topoep
