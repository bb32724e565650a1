#pragma once
// The plan that balances nothing: no replicas, every token processed on its expert's home rank.
// It is the "static" baseline and the reference every other plan must never be worse than.

#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/routing_counts.h"

namespace topoep {

// Deterministic: routes in canonical order, one per (src, expert) with a positive count.
// Throws InputError if counts and placement disagree on ranks or experts.
Plan static_plan(const RoutingCounts& counts, const Placement& placement);

// The static plan's shape and empty replica slots, with no routes yet (see route_all_home()).
Plan static_layout(const Placement& placement);

// Replaces plan->routes with the static routing: every (src, expert) with a positive count to
// the expert's home rank, in canonical order. Replica slots are left as they are (replicas kept
// idle). Throws InputError if counts and placement disagree on ranks or experts.
void route_all_home(const RoutingCounts& counts, const Placement& placement, Plan* plan);

}  // namespace topoep
