#include "solver/planners/host_planning.h"

#include <algorithm>
#include <cmath>

#include "solver/phase_times.h"

namespace topoep {

Picoseconds us_to_ps(double us) { return static_cast<Picoseconds>(std::llround(us * 1e6)); }

Picoseconds host_planning_ps(const PlannerOptions& options, double cpu_us,
                             const TopologyView& topology, int num_experts,
                             const CostParams& cost) {
  const int steps = 2 * static_cast<int>(std::ceil(std::log2(std::max(2, topology.num_ranks()))));
  return us_to_ps(options.host_roundtrip_us + cpu_us) +
         steps * transfer_ps(static_cast<Bytes>(num_experts) * 8, cost.scale_out);
}

}  // namespace topoep
