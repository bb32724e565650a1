#pragma once
// The rows of per_layer.csv (one per record and planner) and per_step.csv (one per step and
// planner). Times in µs with six decimals, exact from the integer picoseconds; bytes as
// integers. The harness writes measurements in the per-layer schema too.

#include <string>
#include <vector>

#include "sim/per_layer_schema.h"
#include "sim/replay.h"

namespace topoep {

std::string per_layer_csv_rows(const StepResult& step, const std::vector<std::string>& planners);

// rank_loads.csv: one row per record and planner (not the ideal), the tokens each rank
// processes: step, microbatch, layer, planner, rank_0 ... rank_{R-1}.
std::string rank_loads_csv_header(int num_ranks);
std::string rank_loads_csv_rows(const StepResult& step, const std::vector<std::string>& planners);

std::string per_step_csv_header();
std::string per_step_csv_rows(const StepResult& step, const std::vector<std::string>& planners);

}  // namespace topoep
