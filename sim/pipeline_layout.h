#pragma once
// Which contiguous split of the MoE layers over pipeline stages makes a planner's step
// shortest, predicted from a run's own records: the advice `simulate` gives for
// --pipeline-layers (sim/README.md, "Pipeline stages"). Deterministic integers.

#include <functional>
#include <vector>

#include "sim/cost_model.h"
#include "sim/gpu_memory.h"
#include "sim/pipeline_schedule.h"
#include "sim/replay.h"

namespace topoep {

// One planner's work over a run as pipeline stages run it, summed over the steps, per
// microbatch: each MoE layer's forward and backward without its share outside the MoE layers,
// and that share, the dense-only layers' part (run in the first chunk, on the first stage) and
// the output head's (in the last), as the replay's stages take them (replay.cc, step_span()):
// the step-end syncs a layer's last backward left exposed apart, after its stage's last
// operation.
struct LayerWorkProfile {
  int steps = 0;
  std::vector<std::vector<StageWork>> layers;  // [microbatch][layer]
  std::vector<StageWork> first_stage_extra;    // [microbatch]
  std::vector<StageWork> last_stage_extra;     // [microbatch]
  std::vector<Picoseconds> syncs;              // [layer]

  // Adds planner `p`'s records of `step`; `cost` splits their outside share.
  void add(const StepResult& step, int p, const CostModel& cost);
  // The mean step's work of each chunk of `layers_per_chunk` (contiguous, first to last,
  // summing to the layers; with one chunk a stage, the stages), [chunk][microbatch].
  std::vector<std::vector<StageWork>> chunk_work(const std::vector<int>& layers_per_chunk) const;
  // The mean step's exposed syncs of each stage's chunks as its tail ([options.pipeline_stages],
  // chunk c on stage options.chunk_stage(c); under DualPipe, per chunk, its schedule pairing
  // the mirrors).
  std::vector<StageEnds> stage_ends(const std::vector<int>& layers_per_chunk,
                                    const SimOptions& options) const;
};

// The step `layers_per_chunk` (chunk c on stage c mod `stages`) predicts for the profile's
// mean step: its span by the schedule cost.options() names ((interleaved) 1F1B or DualPipe)
// with `cost`'s hand-over, each stage's exposed syncs after its last operation, plus the
// slowest stage's optimizer (CostModel::pipeline_optimizer_ps()). The parameter gathers and
// gradient syncs stay as large as the run's layout exposed them, on the layers it did.
Picoseconds predicted_pipeline_step(const LayerWorkProfile& profile,
                                    const std::vector<int>& layers_per_chunk, int stages,
                                    const CostModel& cost);

// Up to this many layouts (C(layers - 1, chunks - 1)) the advice tries every one.
constexpr long long kExhaustiveStageLayouts = 100000;

// The layers of each chunk (`start.size()` of them over `stages` stages), each at least one,
// whose predicted step is the shortest: of every layout where there are at most
// `exhaustive_limit` (ties: the first in lexicographic order), else the shortest found by
// descents from `start`, from the even split and from the split that evens the chunks' total
// work (ties: in that order). Each round of a descent takes the best move of one chunk boundary
// by one or two layers, until none shortens the step (ties: the first found; boundaries in
// order, nearer moves first, earlier before later); then, up to 64 chunks, kicks: one boundary
// moved by 3 or 4 layers and a descent from there, kept where it ends shorter, until no kick
// helps. A local search: not always the optimum. `max_activations` above 0: only layouts whose
// busiest stage holds at most that many layer-microbatches of activations
// (pipeline_layout_activations()); `excess`, where given: only layouts it puts at 0, the
// others ranked by it, less first, so that a search started over the cap (a memory cap, in
// bytes over it: pipeline_layout_memory()) descends toward it. Empty where none is found.
using LayoutExcess = std::function<Bytes(const std::vector<int>& layers_per_chunk)>;
std::vector<int> advised_stage_layers(const LayerWorkProfile& profile,
                                      const std::vector<int>& start, int stages,
                                      const CostModel& cost,
                                      long long exhaustive_limit = kExhaustiveStageLayouts,
                                      int max_activations = 0,
                                      const LayoutExcess& excess = nullptr);

// The most layer-microbatches of activations a stage holds at once under `layers_per_chunk`
// over `stages` stages, by the schedule cost.options() names, `microbatches` a step
// (pipeline_peak_activations()).
int pipeline_layout_activations(const std::vector<int>& layers_per_chunk, int stages,
                                const CostModel& cost, int microbatches);

// What a GPU of each stage would hold under `layers_per_chunk` over `stages` stages, in bytes
// (sim/gpu_memory.h): its model state, `slots` spare slots and dense activations exactly, its
// expert activations estimated as its peak layer-microbatches (pipeline_peak_activations())
// times `bytes_per_layer_microbatch`, and `token_buffers` on top (the most a run's stage added:
// a layer's, whatever the layout).
std::vector<Bytes> pipeline_layout_memory(const std::vector<int>& layers_per_chunk, int stages,
                                          const CostModel& cost, int microbatches, int slots,
                                          Bytes bytes_per_layer_microbatch,
                                          Bytes token_buffers = 0);

// The estimate's rate from a run: the most expert activation bytes one GPU of a stage held per
// layer-microbatch the stage held (`stages`: PlannerRunSummary::stage_memory; `peaks`: the
// run's layout's pipeline_peak_activations()), rounded up. So the estimate gives the run's own
// layout at least what it held.
Bytes activation_bytes_per_layer_microbatch(const std::vector<StageMemory>& stages,
                                            const std::vector<int>& peaks);

}  // namespace topoep
