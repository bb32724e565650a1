#pragma once
// The human summary of a simulation: one row per planner, then TopoEP's speedup over each.

#include <ostream>

#include "sim/run_summary.h"

namespace topoep {

void print_simulation_table(const RunSummary& summary, std::ostream& out);

}  // namespace topoep
