#pragma once
// FasterMoE-style shadowing: each microbatch, broadcast the hottest experts to every rank (a
// shadow takes one spare slot everywhere), hottest first, while the predicted layer time keeps
// falling; a shadowed expert's tokens are processed on their source rank. At most S shadows.
// The broadcast is charged as replica weight traffic along the expert's chain, as FasterMoE
// broadcasts a shadow with NCCL (WeightDelivery::kChainBroadcast: every rank receives one copy
// and sends at most one); the gradient reduction back to the home rank, along the same chain,
// belongs to the backward pass (the simulator's).

#include "solver/planners/planner.h"

namespace topoep {

class ShadowingPlanner : public Planner {
 public:
  explicit ShadowingPlanner(const PlannerContext& context) : context_(context) {}
  std::string name() const override { return "shadowing"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;

 private:
  PlannerContext context_;
};

}  // namespace topoep
