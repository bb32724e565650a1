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

}  // namespace topoep
