#pragma once
// What planning on the host adds to a record's critical path, for the planners that plan there
// (EPLB, and shadowing's policy, which FasterMoE runs on the CPU after gathering the counts).

#include "solver/cost_params.h"
#include "solver/planners/planner.h"
#include "solver/topology_view.h"

namespace topoep {

// `us` microseconds in picoseconds, rounded to the nearest.
Picoseconds us_to_ps(double us);

// The loads' device-to-host copy and stream synchronisation (options.host_roundtrip_us), the
// CPU's planning time (`cpu_us`), and a cross-rank exchange of the E expert loads: a tree of
// 2 log2 R scale-out steps, each alpha plus E x 8 bytes.
Picoseconds host_planning_ps(const PlannerOptions& options, double cpu_us,
                             const TopologyView& topology, int num_experts, const CostParams& cost);

}  // namespace topoep
