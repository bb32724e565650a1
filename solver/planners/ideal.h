#pragma once
// The force-balanced bound every planner is reported against: compute at the mean load (no
// straggler), communication no worse than the best planner achieved on the same input, and no
// planning overhead. By construction no planner's predicted time is below it.

#include <vector>

#include "solver/phase_times.h"
#include "solver/routing_counts.h"

namespace topoep {

// `planners`: the phase times of the plans compared on this input (at least one).
PhaseTimes ideal_phase_times(const RoutingCounts& counts, const CostParams& cost,
                             const std::vector<PhaseTimes>& planners);

}  // namespace topoep
