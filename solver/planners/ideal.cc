#include "solver/planners/ideal.h"

#include <algorithm>

#include "solver/input_error.h"

namespace topoep {

PhaseTimes ideal_phase_times(const RoutingCounts& counts, const CostParams& cost,
                             const std::vector<PhaseTimes>& planners) {
  if (planners.empty()) throw InputError("planners", "needs at least one planner to compare");
  PhaseTimes ideal = planners.front();
  for (const PhaseTimes& times : planners) {
    ideal.dispatch = std::min(ideal.dispatch, times.dispatch);
    ideal.combine = std::min(ideal.combine, times.combine);
    ideal.weight_exposed = std::min(ideal.weight_exposed, times.weight_exposed);
    ideal.backward_transfer = std::min(ideal.backward_transfer, times.backward_transfer);
  }
  const TokenCount mean = (counts.total() + counts.num_ranks() - 1) / counts.num_ranks();
  ideal.compute = mean * cost.compute_ps_per_token;
  ideal.gradient = 0;  // the ideal moves no weights
  ideal.backward_compute = ideal.compute * cost.backward_compute_factor;
  ideal.total = ideal.dispatch + ideal.compute + ideal.combine + ideal.weight_exposed +
                ideal.backward_compute + ideal.backward_transfer;
  return ideal;
}

}  // namespace topoep
