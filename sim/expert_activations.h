#pragma once
// The expert activations a GPU holds for its backward over one step (sim/README.md, "Expert
// activations held"): each GPU's token assignments of a layer are held from the microbatch's
// forward through the layer until its backward through the layer's chunk ends, by the order the
// step's schedule ran. On top of them, for a moment as each layer's forward or backward runs,
// its token buffers ("Memory a GPU holds"). Deterministic integers.

#include <vector>

#include "models/model.h"
#include "sim/pipeline_schedule.h"
#include "sim/replay.h"
#include "sim/sim_options.h"

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

// Bytes of token buffers a GPU allocates per token assignment it processes in a MoE layer,
// at their most in the layer's forward and in its backward, beyond what the layer keeps for
// its backward (sim/README.md, "Memory a GPU holds"), at the activations' width
// (`combine_bytes`), as Megatron-LM's MoE layer with grouped GEMMs allocates them. Forward:
// the experts' output (h) and, under the `alltoall` dispatcher where the GPU runs more than one
// local expert (`local_experts`: its home experts and spare slots), that output's copy sorted
// back into the all-to-all's source order, both live as `combine_preprocess()` sorts it.
// Backward, the most of: the output gradient and its sorted copy (the same 2h or h), the down
// projection's input gradient beside the output gradient (h + f), the gated activation's
// input gradient beside its output's (3f), and the up projection's input gradient beside the
// activation's (2f + h). Under DeepEP the copies in the dispatcher's order hold a token once a
// GPU, not once an assignment, and are left out; so are the dispatch side's buffers (freed
// before the experts run) and DeepEP's fixed ones: a floor.
struct TokenBufferBytes {
  Bytes forward = 0;
  Bytes backward = 0;
};
TokenBufferBytes token_buffer_bytes(const ModelSpec& model, Dispatcher dispatcher,
                                    int local_experts);

// Each stage's most bytes one of its GPUs holds at once for its experts' tokens: the expert
// activations of peak_expert_tokens() at `kept_bytes` a token assignment, and on top of them,
// while a layer's forward or backward runs, its token buffers at `buffers` a token assignment
// the GPU processes in that layer (the chunk's layers after it not yet held in the forward,
// let go in the backward). The same arguments otherwise; at least peak_expert_tokens() x
// kept_bytes, stage by stage.
std::vector<Bytes> peak_expert_bytes(const std::vector<RecordResult>& records, int planner,
                                     int reference, int ranks, const std::vector<int>& chunk_first,
                                     const PipelineTimes& span, Bytes kept_bytes,
                                     const TokenBufferBytes& buffers);

}  // namespace topoep
