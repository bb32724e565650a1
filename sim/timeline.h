#pragma once
// One simulated step as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: a process per planner, a track per rank, a slice per phase.
//
// The step runs as the simulator sums it: every microbatch's layers forward (dense compute,
// planner overhead, exposed replica weights, dispatch, expert compute, combine), then backward
// in reverse, then each layer's replica gradient reduction, then the optimizer. Phases are
// barriers: each starts when the slowest rank ended the previous one, so a rank's gap before
// the next slice is the time it waits for the straggler.
//
// With pipeline stages the step is drawn as its schedule ran it instead (StepTotals::schedule):
// a track per stage, a slice per microbatch's forward or backward through a chunk (args: the
// microbatch and chunk), each stage's lead and tail, then the optimizer; per-rank phases are
// not drawn.

#include <functional>
#include <string>
#include <vector>

#include "sim/replay.h"

namespace topoep {

// Writes the step's trace-event JSON document (one line, object keys sorted) through `write`,
// a piece at a time, so that memory does not grow with the step (a DOM of every slice took
// about 2 KB per slice: 350 MB for one step of 58 layers x 2 microbatches on 32 GPUs).
// `step` must carry per-rank times (SimConfig::detail_step); the ideal has none and is left out.
void write_step_timeline(const StepResult& step, const std::vector<std::string>& planners,
                         const TopologyView& topology,
                         const std::function<void(const std::string&)>& write);

// The document write_step_timeline() writes when there is no step to draw: no events.
std::string empty_timeline();

}  // namespace topoep
