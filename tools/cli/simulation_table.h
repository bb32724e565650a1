#pragma once
// The human summary of a simulation: one row per planner, then TopoEP's speedup over each,
// and notes on planners whose rows need one.

#include <ostream>
#include <string>
#include <vector>

#include "sim/run_summary.h"
#include "solver/planners/planner.h"

namespace topoep {

void print_simulation_table(const RunSummary& summary, std::ostream& out);

// What a reader of the table could not tell from it: TopoEP's GPU solve time is a parameter,
// not a measurement (with spare slots, `slots` > 0, where a solve runs); EPLB as deployed on a
// trace that ends before its first replan ran the home layout throughout, so it ties with
// static.
void print_planner_notes(const std::vector<std::string>& planners, int steps, int slots,
                         const PlannerOptions& options, std::ostream& out);

}  // namespace topoep
