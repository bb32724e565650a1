#pragma once
// The static plan's sums (plan_tally.h) straight from the counts, without its routes: what the
// static planner hands the simulator, and what the simulator prices a planner's static
// fallback from. Host only.

#include "solver/placement.h"
#include "solver/plan_tally.h"
#include "solver/routing_counts.h"
#include "solver/static_traffic.h"
#include "solver/topology_view.h"

namespace topoep {

// Fills `tally` with the sums of static_plan(counts, placement)'s routes: every expert's tokens
// at its home rank, one instance per expert with tokens (ascending expert). One pass over the
// counts (static_traffic()); integer sums, so equal to a walk over the routes. Returns that
// pass's traffic (the busiest source row among it). Throws InputError if counts, placement
// and topology disagree on ranks or experts.
StaticTraffic static_plan_tally(const TopologyView& topology, const Placement& placement,
                                const RoutingCounts& counts, PlanTally* tally);

}  // namespace topoep
