#pragma once
// Streams a trace through a set of planners and the cost model, one microbatch at a time.
//
// Records are read in trace order; the records of one microbatch (its layers) are held in
// memory, planned and priced on `threads` threads (one task per layer and planner, and per
// data-parallel group where the trace routes them apart: a planner instance serves one layer
// of one group and sees its records in microbatch order), then dropped. A step's results are
// handed to the observer at its end, in (microbatch, layer) order. Memory is one microbatch of
// counts (twice, split by group, where the groups route apart) and the reader's chunk, plus the
// step's results of every group (per record and planner, per-rank loads: no counts). Results
// are identical for any thread count.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/gpu_memory.h"
#include "sim/pipeline_schedule.h"
#include "sim/sim_config.h"
#include "solver/topoep_solver.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"

namespace topoep {

// One record, one LayerCost per planner in SimConfig order (the ideal included).
struct RecordResult {
  int step = 0;
  int microbatch = 0;
  int layer = 0;
  std::vector<LayerCost> planners;
};

// A planner's totals over one step. Critical path = the records' critical paths + optimizer;
// with pipeline stages, their 1F1B schedule's span + optimizer. The phases are summed over the
// records, every stage's.
struct StepTotals {
  Picoseconds step_time = 0;
  Picoseconds moe = 0;  // MoE layers' straggler time, forward and backward
  Picoseconds moe_forward = 0;
  Picoseconds overhead = 0;
  Picoseconds dense = 0;        // forward and backward
  Picoseconds outside = 0;      // of `dense`: the share of the dense-only layers and output head
  Picoseconds grad_reduce = 0;  // replica gradients, exposed
  Picoseconds dense_grad_reduce = 0;    // the dense gradients' sync, exposed
  Picoseconds dense_param_gather = 0;   // the dense parameters' all-gather, exposed
  Picoseconds expert_grad_sync = 0;     // the expert gradients' sync across groups, exposed
  Picoseconds expert_param_gather = 0;  // the expert parameters' all-gather across groups
  Picoseconds optimizer = 0;
  // With pipeline stages: the step (before the optimizer) less the stages' mean busy time,
  // what of it a stage waits on average (warm-up and drain, hand-overs, slower stages).
  Picoseconds pipeline_idle = 0;
  // With pipeline stages whose schedule pairs operations (DualPipe, combined 1F1B): the
  // all-to-all time the records hid that the unpaired operations took back, included in `moe`
  // (and `moe_forward`, for forwards). RunSummary's a2a_hidden leaves it out.
  Picoseconds a2a_unhidden = 0;
  Bytes nvlink_dispatch_bytes = 0, ib_dispatch_bytes = 0;
  Bytes nvlink_weight_bytes = 0, ib_weight_bytes = 0;
  double max_mean_load_mean = 0;
  double tokens_per_s = 0;
  // With pipeline stages, on SimConfig::detail_step only: the schedule as it ran (its
  // operations' times, each stage's lead and tail), for the timeline. Empty otherwise.
  PipelineTimes schedule;
  // The most token assignments one GPU holds expert activations for at once (from a forward
  // through a layer until the microbatch's backward through it ends), over the step's records
  // and the order its schedule ran them in (one stage: each microbatch's forward, then its
  // backward; with the all-to-alls behind compute, in the pairs of its combined schedule):
  // sim/expert_activations.h. The ideal's GPUs hold the mean
  // (rounded down): a bound. Its bytes: times ModelSpec::expert_activation_bytes_per_token()
  // (SimOptions::recompute_moe_activation).
  TokenCount peak_expert_tokens = 0;
  // What one GPU of each stage holds (one entry on one stage; sim/gpu_memory.h): its model
  // state and spare slots, the same every step, and those expert activations in bytes.
  std::vector<StageMemory> stage_memory;
  // The most expert activations of any stage, in bytes.
  Bytes peak_expert_activation_bytes() const;
};

// What the TopoEP planner did on SimConfig::explain's record: the moves its plan keeps, as it
// planned them (replicas resident from the step's earlier microbatches free, their gradients
// owed), and whether the simulator ran the static fallback instead (a plan its finer model
// prices slower than leaving every token at home).
struct ExplainedRecord {
  RecordKey record;
  KeptMoves kept;
  bool overruled = false;
};

struct StepResult {
  int step = 0;
  // Tokens the step trains on: every microbatch, every rank, every data-parallel group.
  std::int64_t tokens = 0;
  std::vector<RecordResult> records;         // (microbatch, layer) order
  std::vector<StepTotals> planners;          // SimConfig order
  std::optional<ExplainedRecord> explained;  // in SimConfig::explain's step
};

class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  virtual void on_start(const TraceMetadata& metadata, const CostModel& cost) = 0;
  virtual void on_step(const StepResult& step) = 0;
};

// A step's span through the pipeline stages by the schedule `options` names: `work[chunk]
// [microbatch]` over options.pipeline_chunks() chunks, `ends` per stage (under DualPipe, where
// stage s holds chunks s and P - 1 - s, per chunk: pipeline_schedule.h).
PipelineTimes run_pipeline_schedule(const SimOptions& options,
                                    const std::vector<std::vector<StageWork>>& work,
                                    Picoseconds handover, const std::vector<StageEnds>& ends = {});

// The order `options`' schedule runs `chunks` chunks of `microbatches` microbatches in (its
// operations on unit work: the order does not depend on the work).
PipelineTimes schedule_order(const SimOptions& options, int chunks, int microbatches);

// Each stage's most activations held at once (peak_activations()), in layer-microbatches,
// under the schedule `options` names with `chunk_layers[c]` layers in chunk c and
// `microbatches` a step: the same for every planner and step.
std::vector<int> pipeline_peak_activations(const SimOptions& options,
                                           const std::vector<int>& chunk_layers, int microbatches);

// Adds one record (`cost`, one MoE layer and microbatch) to a pipeline's work, as every
// schedule takes it: its own forward and backward, less the `gathers` and `syncs` that run as
// its stage's lead and tail, to `own`; its share outside the MoE layers where those layers
// are, the dense-only layers' (the model's first) to `first` (the first chunk's) and the
// head's to `last` (the last chunk's). Each part's backward is twice its forward, its weight
// gradients as long as its forward (CostModel::PipelineShares).
void add_record_work(const CostModel& model, const LayerCost& cost, Picoseconds gathers,
                     Picoseconds syncs, StageWork& own, StageWork& first, StageWork& last);

// Replays the trace at `path`. Throws FileInputError for a bad trace, InputError for a config
// that does not fit it. Returns the number of records replayed.
std::int64_t replay_trace(const std::string& path, const SimConfig& config,
                          ReplayObserver& observer);
// The same from a reader that has read no record yet.
std::int64_t replay_trace(TraceReader& reader, const SimConfig& config, ReplayObserver& observer);

}  // namespace topoep
