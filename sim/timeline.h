#pragma once
// One simulated step as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: a process per planner, a track per rank, a slice per phase.
//
// The step runs as the simulator sums it: every microbatch's layers forward (dense compute,
// planner overhead, exposed replica weights, dispatch, expert compute, combine), then backward
// in reverse, then each layer's replica gradient reduction, then the optimizer. Phases are
// barriers: each starts when the slowest rank ended the previous one, so a rank's gap before
// the next slice is the time it waits for the straggler.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/replay.h"

namespace topoep {

// `step` must carry per-rank times (SimConfig::detail_step); the ideal has none and is left out.
nlohmann::json step_timeline(const StepResult& step, const std::vector<std::string>& planners,
                             const TopologyView& topology);

}  // namespace topoep
