#pragma once
// The human summary of a simulation: one row per planner, then TopoEP's speedup over each,
// the memory each planner's busiest GPU holds at its peak, and notes on planners
// whose rows need one.

#include <ostream>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "sim/run_summary.h"
#include "solver/planners/planner.h"

namespace topoep {

void print_simulation_table(const RunSummary& summary, std::ostream& out);

// What the busiest GPU of each planner holds at its peak (PlannerRunSummary::busiest_memory()),
// by part, in GB, as `config` (the replay's) counts it (sim/gpu_memory.h); and a note naming
// the planners under which it exceeds the GPU's memory (GpuSpec::hbm_capacity_gb, decimal GB)
// before what is not counted.
void print_gpu_memory(const RunSummary& summary, const SimConfig& config, std::ostream& out);

// What a reader of the table could not tell from it: where TopoEP's step is longer than
// static's, what its plans saved per step against what its solves, its new replicas'
// gradients and the data-parallel syncs they displaced cost; TopoEP's GPU solve time is a
// parameter, not a measurement (with spare slots, `slots` > 0, where a solve runs); EPLB as
// deployed on a trace of `steps` steps that ends before its first replan ran the home layout
// throughout, so it ties with static; and a balancing planner that moved no replica weights over
// the whole run made no replica, so it ran the static plan on every record (its row is static's
// plus its planning overhead, if any: TopoEP's solve, shadowing's policy), and why: the costs, for
// the planners that weigh them; for EPLB, whose layouts do not, one GPU a node under its
// hierarchical policy, which keeps every copy of an expert on its home GPU (eplb_policy()).
// `config` is the replay's.
void print_planner_notes(const RunSummary& summary, int steps, const SimConfig& config,
                         std::ostream& out);

}  // namespace topoep
