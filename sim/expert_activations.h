#pragma once
// The expert activations a GPU holds for its backward over one step (sim/README.md, "Expert
// activations held"): each GPU's token assignments of a layer are held from the microbatch's
// forward through the layer until its backward through the layer's chunk ends, by the order the
// step's schedule ran. Deterministic integers.

#include <vector>

#include "sim/pipeline_schedule.h"
#include "sim/replay.h"

namespace topoep {

// Each pipeline stage's most token assignments one of its GPUs holds at once under planner
// `planner` over `records` (one step's, in (microbatch, layer) order, `chunk_first.back()`
// layers a microbatch, each LayerCost with its `ranks` loads). `chunk_first`: the first layer
// of each pipeline chunk and the layer count last; `span`: the order the step's schedule ran
// those chunks in (pipeline_schedule.h; one stage's too: schedule_order()). A planner without
// loads (the ideal) holds the mean of `reference`'s loads on every GPU, rounded down: a bound
// on every planner's; nothing where `reference` is -1.
std::vector<TokenCount> peak_expert_tokens(const std::vector<RecordResult>& records, int planner,
                                           int reference, int ranks,
                                           const std::vector<int>& chunk_first,
                                           const PipelineTimes& span);

}  // namespace topoep
