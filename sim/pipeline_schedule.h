#pragma once
// A training step's microbatches through P pipeline stages, as Megatron-LM's 1F1B schedules
// run them (sim/README.md, "Pipeline stages"). Non-interleaved, stage s first runs
// min(P - s - 1, M) forwards, then alternates one forward and one backward until its forwards
// are done, then runs the backwards left. A forward on stage s > 0 waits for the same
// microbatch's forward on stage s - 1 and the hand-over of its activations; a backward on stage
// s < P - 1 waits for the same microbatch's backward on stage s + 1 and the hand-over of the
// activation gradients. The interleaved schedule below does the same chunk by chunk.
// Deterministic integers.

#include <functional>
#include <vector>

#include "solver/cost_params.h"

namespace topoep {

// One microbatch's work on one stage: its layers' forward and backward critical paths, in ps.
struct StageWork {
  Picoseconds forward = 0;
  Picoseconds backward = 0;
  // Of `backward`, the weight gradients' compute (at most `backward`): what a zero-bubble
  // split (DualPipe's) runs apart, after the input gradients have been sent on.
  Picoseconds weight_grad = 0;
  // All-to-all time the records hid behind a paired microbatch's compute
  // (LayerCost::a2a_hidden_forward and _backward), already left out of `forward` and
  // `backward`: an operation DualPipe or combined 1F1B runs unpaired takes it back.
  Picoseconds forward_hidden = 0;
  Picoseconds backward_hidden = 0;

  StageWork& operator+=(const StageWork& other) {
    forward += other.forward;
    backward += other.backward;
    weight_grad += other.weight_grad;
    forward_hidden += other.forward_hidden;
    backward_hidden += other.backward_hidden;
    return *this;
  }
};

// What a stage waits for around its operations, in ps: `lead` from the step's start before its
// first operation (the parameter all-gathers its first layer needs, which run as the optimizer
// ends, while the stage waits for its first microbatch anyway), `tail` after its last (the
// gradient syncs its backward left exposed, which delay no other stage).
struct StageEnds {
  Picoseconds lead = 0;
  Picoseconds tail = 0;
};

// One operation as the schedule ran it: a microbatch's forward or backward through a chunk
// (with one chunk a stage, the chunk is the stage), on `stage`, over [start, end) in ps.
// Under DualPipe a backward may be split: its input gradients (a backward op) and, later, its
// weight gradients (`weight_grad`).
struct PipelineOp {
  int stage = 0;
  int chunk = 0;
  int microbatch = 0;
  bool forward = true;
  Picoseconds start = 0;
  Picoseconds end = 0;
  bool weight_grad = false;  // a split backward's weight gradients (`forward` is false)
};

struct PipelineTimes {
  Picoseconds makespan = 0;       // when the last stage ends, its tail included
  std::vector<Picoseconds> busy;  // per stage: its forwards, backwards, lead and tail
  Picoseconds mean_idle() const;  // makespan less the stages' mean busy time, rounded down
  // Every operation, stage by stage in the order each ran them; each stage's lead runs over
  // [0, lead) and its tail from its last operation's end.
  std::vector<PipelineOp> ops;
  std::vector<StageEnds> ends;  // as given (none where none was)
  // Of the all-to-all time the work's records hid (StageWork::forward_hidden, backward_hidden),
  // what the operations the schedule ran unpaired took back: forwards', backwards'. 0 where
  // every operation keeps its records' hiding (1F1B not combined).
  Picoseconds unhidden_forward = 0;
  Picoseconds unhidden_backward = 0;
};

// `work[stage][microbatch]`, every stage with the same microbatches; `handover`: the time one
// microbatch's activations (forward) or their gradients (backward) take from one stage to the
// next; `ends`: each stage's lead and tail (none where empty). One stage: the lead, the
// microbatches one after the other, forward then backward, then the tail.
//
// `combined`: Megatron-LM's combined 1F1B (--overlap-moe-expert-parallel-comm), where a
// forward and a backward of two microbatches run as one operation of their summed length, each
// one's all-to-alls behind the other's compute, and both outputs leave as the pair ends. Each
// stage runs the interleaved schedule's warm-up for one chunk, 2 (P - s - 1), plus one forward
// (as Megatron-LM adds), then pairs each forward with the backward after it. The extra forward
// keeps a pair's backward from waiting for its own forward (on the last stage it would); the
// doubled warm-up keeps neighbouring stages from taking turns (with 1F1B's P - s - 1 + 1, a
// stage's pair would wait for its neighbour's last pair, and every stage would idle half the
// steady state). Only pairs hide all-to-alls: the warm-up forwards and the drain backwards take
// back what their records hid (StageWork::forward_hidden, backward_hidden). One stage: its
// first forward and last backward alone, the rest in pairs. Megatron-LM runs combined 1F1B
// across stages only interleaved (V > 1). Without `combined` every operation keeps its
// records' hiding.
PipelineTimes run_one_f_one_b(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                              const std::vector<StageEnds>& ends = {}, bool combined = false);

// Megatron-LM's interleaved 1F1B schedule (virtual pipeline stages): the layers split into
// C = V x `stages` contiguous chunks, `work[chunk][microbatch]`, chunk c on stage c mod `stages`,
// so that each stage holds V chunks spread along the model and a microbatch crosses every
// stage V times, with a hand-over at every chunk boundary. Each stage runs its forwards
// microbatch group by group (P microbatches a group; chunk by chunk within a group) after a
// longer warm-up, which cuts the fill and drain to about 1/V of 1F1B's. `ends` and `busy` are per
// stage. V = 1 is run_one_f_one_b(). `combined` as there: one more warm-up forward (as
// Megatron-LM's interleaved schedule adds under --overlap-moe-expert-parallel-comm), then
// pairs. Throws std::invalid_argument where the chunks are not a multiple of the stages or,
// with V > 1, the microbatches not a multiple of the stages (as Megatron-LM requires).
PipelineTimes run_interleaved_one_f_one_b(const std::vector<std::vector<StageWork>>& work,
                                          int stages, Picoseconds handover,
                                          const std::vector<StageEnds>& ends = {},
                                          bool combined = false);

// DeepSeek-V3's DualPipe (its public dualpipe.py): `stages` P even, `work[chunk][microbatch]`
// with P chunks of the layers; the first M/2 microbatches run chunk 0 to P - 1 on stages 0 to
// P - 1, the rest on stages P - 1 to 0, so stage s holds chunks s and P - 1 - s. Each stage
// runs its nearer end's forwards first, then both directions' forwards in turn, then pairs a
// forward of one direction with a backward of the other (one operation of their summed
// length: the records' all-to-all overlap says what their pairing hides; an unpaired forward
// or backward takes back what its records hid), and in the drain
// splits backwards to run their weight gradients (StageWork::weight_grad) where it would wait.
// A pair's outputs leave when the pair ends. `ends` are per chunk: a stage waits for both of
// its chunks' leads before its first operation and runs both tails after its last (upper
// bounds: the second chunk's gathers could hide behind the first's forwards). `busy` and
// PipelineTimes::ends are per stage. Throws std::invalid_argument where P is odd, the chunks
// are not P or the microbatches are odd or fewer than 2P (as DualPipe asserts).
PipelineTimes run_dualpipe(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                           const std::vector<StageEnds>& ends = {});

// DualPipeV (DualPipe cut in half, after DeepSeek's dualpipev.py): `work[chunk]
// [microbatch]` with 2P chunks laid out as a V, stage s holding chunk s (on the way down) and
// chunk 2P - 1 - s (on the way back up); every microbatch runs chunks 0 to 2P - 1, with no
// hand-over at the turn (chunks P - 1 and P share stage P - 1). The order is DualPipe's eight
// steps with stage s's near chunk s and far chunk 2P - 1 - s, pairs and split backwards as in
// run_dualpipe(). One copy of the parameters. `ends` and `busy` are per stage. Throws
// std::invalid_argument where the chunks are odd or fewer than 4, or the microbatches fewer
// than 2P (as dualpipev.py asserts).
PipelineTimes run_dualpipe_v(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                             const std::vector<StageEnds>& ends = {});

// Each stage's most activations held at once, in layer-microbatches, by the order the schedule
// ran (`times.ops`): a microbatch's forward through chunk c holds `chunk_layers[c]` from its
// start until that microbatch's backward through the chunk ends (its input gradients, where
// split: the deferred weight gradients keep less, and the DeepSeek-V3 report counts them so).
// A pair's forward is counted before its backward ends. Depends on the orders alone, not on
// how long the operations took.
std::vector<int> peak_activations(const PipelineTimes& times, const std::vector<int>& chunk_layers);

// Each stage's most token assignments one of its GPUs holds activations for at once, by the
// same order and rule as peak_activations(): `tokens(chunk, microbatch)` gives, for each GPU of
// the chunk's stage ([GPUs], the same count for every call), the token assignments its expert
// instances process over the chunk's layers in that microbatch. A GPU holds a forward's from
// its start until that microbatch's backward through the chunk ends. `at_forward_end(chunk)`,
// where given, is what every GPU holds besides for a moment as a forward through the chunk
// ends (the loss's transient logits on the model's last chunk). `during(chunk, microbatch,
// forward)`, where given, is for each GPU the most it holds besides, for a moment while that
// forward (or backward) runs, beyond what it holds once the forward ends (as the backward
// begins): the token buffers of the chunk's layers (sim/expert_activations.h), another moment
// than at_forward_end's. The units are the caller's (token assignments, bytes). Deterministic
// integers.
using MomentHeld = std::function<std::vector<TokenCount>(int chunk, int microbatch, bool forward)>;
std::vector<TokenCount> peak_gpu_tokens(
    const PipelineTimes& times,
    const std::function<std::vector<TokenCount>(int chunk, int microbatch)>& tokens,
    const std::function<TokenCount(int chunk)>& at_forward_end = {}, const MomentHeld& during = {});

// The first layer of each of `stages` contiguous stages over `layers` layers, and `layers` last
// ([stages + 1]): the first layers % stages stages hold one layer more. stages in [1, layers].
std::vector<int> stage_first_layers(int layers, int stages);
// The same from the layers of each stage (SimOptions::pipeline_layers, summing to `layers`), or
// where that is empty the even split over `stages`.
std::vector<int> stage_first_layers(int layers, int stages,
                                    const std::vector<int>& layers_per_stage);
// The layers each stage holds, first to last, by the same split ([stages]).
std::vector<int> stage_layer_counts(int layers, int stages,
                                    const std::vector<int>& layers_per_stage);

}  // namespace topoep
