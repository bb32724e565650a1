#pragma once
// The expert activations a GPU holds for its backward over one step (sim/README.md, "Expert
// activations held"): each GPU's token assignments of a layer are held from the microbatch's
// forward through the layer until its backward through the layer's chunk ends, by the order the
// step's schedule ran. On top of them, for a moment as each layer's forward runs, its token
// buffers ("Memory a GPU holds"). Deterministic integers.

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

// Bytes of token buffers a GPU allocates, at their most in a MoE layer's forward, per token
// assignment it processes there, beyond what the layer keeps for its backward: the experts'
// output (hidden_size at combine_bytes) and, under the `alltoall` dispatcher where the GPU
// runs more than one local expert (`local_experts`: its home experts and spare slots), that
// output's copy sorted back into the all-to-all's source order, both live at once (Megatron-LM's
// MoELayer: `combine_preprocess()` sorts GroupedMLP's output by `sort_chunks_by_idxs()` while
// it is still referenced). Under DeepEP the copy back holds each token once per GPU, not per
// assignment, and is left out, as are the dispatch side's buffers (the source's permuted
// tokens, the all-to-all's receive buffer before its sort: they are freed before the experts
// run, and the layer's peak is theirs only on GPUs processing fewer assignments than they
// send) and the backward's: a floor.
Bytes token_buffer_bytes_per_assignment(const ModelSpec& model, Dispatcher dispatcher,
                                        int local_experts);

// Each stage's most bytes one of its GPUs holds at once for its experts' tokens: the expert
// activations of peak_expert_tokens() at `kept_bytes` a token assignment, and on top of them,
// while a layer's forward runs, its token buffers at `buffer_bytes` a token assignment the GPU
// processes in that layer (with the layers after it in the chunk not yet held). The same
// arguments otherwise; at least peak_expert_tokens() x kept_bytes, stage by stage.
std::vector<Bytes> peak_expert_bytes(const std::vector<RecordResult>& records, int planner,
                                     int reference, int ranks, const std::vector<int>& chunk_first,
                                     const PipelineTimes& span, Bytes kept_bytes,
                                     Bytes buffer_bytes);

}  // namespace topoep
