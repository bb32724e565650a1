#pragma once
// FasterMoE-style shadowing: each microbatch, broadcast the hottest experts to every rank (a
// shadow takes one spare slot everywhere), hottest first, while the predicted layer time keeps
// falling; a shadowed expert's tokens are processed on their source rank. At most S shadows.
// The broadcast is charged as replica weight traffic along the expert's chain, as FasterMoE
// broadcasts a shadow with NCCL (WeightDelivery::kChainBroadcast: every rank receives one copy
// and sends at most one); the gradient reduction back to the home rank, along the same chain,
// belongs to the backward pass (the simulator's). Its overhead: FasterMoE's policy gathers the
// counts across ranks and copies them to the host before deciding (host_planning_ps(); its CPU
// time, a sort of the E loads, is not charged), on every record where there is a spare slot.

#include "solver/planners/planner.h"

namespace topoep {

class ShadowingPlanner : public Planner {
 public:
  ShadowingPlanner(const PlannerContext& context, const PlannerOptions& options);
  std::string name() const override { return "shadowing"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;

 private:
  PlannerContext context_;
  Picoseconds policy_ps_;  // the shadowing policy's host round trip, per record
};

}  // namespace topoep
