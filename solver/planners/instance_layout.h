#pragma once
// Turns "which ranks hold an instance of each expert" into a Placement and a Plan, with the
// token split the baselines use: a source's tokens go to an instance on its own GPU if there is
// one, else split evenly over the instances in its node, else evenly over all instances.

#include <vector>

#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/plan_tally.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"

namespace topoep {

struct InstanceLayout {
  // [experts]: the ranks holding the expert, first the home, then the rest ascending; every
  // rank in [0, R) of the topology, none listed twice for one expert.
  std::vector<std::vector<RankId>> instances;
};

struct LayoutPlan {
  Placement placement;  // homes from the layout; S = the most non-home instances on a rank
  Plan plan;
};

// Even split: c tokens over k instances give c / k each and one more to the first c % k in
// ascending rank order. Deterministic.
LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank);

// The same plan with its sums (plan_tally.h) into `tally`, tallied in the pass that splits the
// tokens: a caller that prices the tally need not walk the routes again. The routes are written
// only when `write_routes` (plan.routes is left empty otherwise).
LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank, PlanTally* tally,
                       bool write_routes);

}  // namespace topoep
