#pragma once
// A whole simulation as the CLI runs it: replay a trace, summarise, and write the outputs
// (summary.json, per_layer.csv, per_step.csv in a directory; a Chrome trace of one step).
// Outputs appear whole or not at all: each is written beside its target and renamed into place
// only after the whole replay succeeded.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "sim/run_summary.h"

namespace topoep {

struct SimulationRequest {
  std::string trace;  // trace directory
  SimConfig config;
  std::string out_dir;      // empty: no files
  bool rank_loads = false;  // also rank_loads.csv in out_dir (per-rank tokens of every record)
  std::string timeline;     // Chrome trace JSON path; empty: none
  int timeline_step = 0;
  // With pipeline stages, the layout advice's cap on the activations its layout's busiest
  // stage holds, in layer-microbatches (pipeline_layout.h); 0: what the run's layout holds.
  int advice_max_activations = 0;
  // And a cap on what its layout's busiest GPU would hold, in decimal GB
  // (pipeline_layout_memory()); 0: none.
  double advice_max_gb = 0;
};

// With pipeline stages: a planner's --pipeline-layers (each chunk's) whose predicted step is
// the shortest found within the activations cap (pipeline_layout.h; empty where no layout
// was), and the mean step predicted for the run's layout and for that one, in ps.
struct PipelineLayoutAdvice {
  std::vector<int> layers;
  Picoseconds predicted_now = 0;
  Picoseconds predicted_advised = 0;  // 0 where `layers` is empty
  // The busiest stage's activations, in layer-microbatches: the cap, the run's layout's and
  // the advised one's (0 where `layers` is empty).
  int max_activations = 0;
  int activations_now = 0;
  int activations_advised = 0;
  // What the busiest GPU would hold, in bytes (pipeline_layout_memory(), its expert
  // activations at the rate the run's layout held them), under the run's layout and the
  // advised one (0 where `layers` is empty); the cap in GB (0: none).
  Bytes memory_now = 0;
  Bytes memory_advised = 0;
  double max_gb = 0;
};

struct SimulationResult {
  TraceMetadata metadata;
  nlohmann::json run;  // what summary.json records about the run
  RunSummary summary;
  std::int64_t records = 0;
  // out_dir held an earlier run's rank_loads.csv that this run (without rank_loads) removed
  bool removed_stale_rank_loads = false;
  std::optional<ExplainedRecord> explained;  // SimConfig::explain's record, when one is asked
  // Per planner (SimConfig order), with pipeline stages; empty otherwise and for the ideal.
  std::vector<std::optional<PipelineLayoutAdvice>> pipeline_advice;
};

// Throws FileInputError (trace, outputs) or InputError (configuration) before writing anything.
SimulationResult run_simulation(const SimulationRequest& request);

}  // namespace topoep
