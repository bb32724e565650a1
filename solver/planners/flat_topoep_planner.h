#pragma once
// topoep-flat: the TopoEP solver blind to the link hierarchy, the ablation of its topology
// awareness. It plans as if all R GPUs shared one NVLink domain (one node, every transfer at
// the scale-up link's cost), with everything else as the topoep planner has it: the same
// search, spare slots, resident replicas, solve time on the GPU. Its plans are priced on the
// real cluster: the replay walks their routes (the solver's own sums count no IB) and the
// gradient reduction of their replicas runs along the real chains.
//
// So `topoep` against `topoep-flat` isolates what weighing NVLink against IB buys, and
// `topoep-flat` against `eplb-microbatch`, roughly, what TopoEP's search on the GPU buys over
// EPLB's on the host, both every microbatch (EPLB's hierarchical policy still keeps its
// replicas inside nodes).

#include "solver/planners/basic_planners.h"

namespace topoep {

class FlatTopoepPlanner : public Planner {
 public:
  FlatTopoepPlanner(const PlannerContext& context, const PlannerOptions& options);
  std::string name() const override { return "topoep-flat"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;
  bool static_fallback(PlannerDecision* out) const override;
  void ran_fallback(const PlannerDecision& fallback) override { inner_.ran_fallback(fallback); }

 private:
  TopoepPlanner inner_;  // on the flat view of the cluster
};

// The context a hierarchy-blind planner sees: one node of all the GPUs, both link classes at
// the scale-up link's cost, routes written (its sums would be the flat view's).
PlannerContext flat_context(const PlannerContext& context);

}  // namespace topoep
