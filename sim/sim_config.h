#pragma once
// What a replay is asked to run (SimConfig: cluster, model, options, planners, outputs), and the
// checks of it against a trace's metadata, made before any record is read.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/progress.h"
#include "models/model.h"
#include "sim/sim_options.h"
#include "solver/placement.h"
#include "solver/planners/planner.h"
#include "topologies/topology.h"
#include "traces/trace_format.h"

namespace topoep {

// One record of a trace.
struct RecordKey {
  int step = 0;
  int microbatch = 0;
  int layer = 0;
  int group = 0;  // the data-parallel group's, where the groups route apart (routing_groups())
};

struct SimConfig {
  Topology topology;
  ModelSpec model;
  SimOptions options;
  PlannerOptions planner_options;
  // Planner names in report order: planner_names() and "ideal" (which needs another planner).
  std::vector<std::string> planners;
  int slots_per_rank = 1;
  // Where the GPUs do not divide the experts: kEven refuses the trace, kUneven homes one more on
  // the first E mod R GPUs (solver/placement.h; `topoep simulate --uneven-homes`).
  HomeLayout homes = HomeLayout::kEven;
  int threads = 1;
  int detail_step = -1;  // this step's costs carry per-rank times (the timeline); -1: none
  // Hash every plan (per_layer.csv's plan_hash column). Hashing reads the whole encoded plan,
  // as much work per record as pricing it: a sweep, which reports totals only, turns it off.
  bool plan_hashes = true;
  // Check every plan a planner runs with the plan validator (solver/plan_validator.h), and the
  // loads and dispatch bytes the cost model priced it with against a count of its routes
  // (sim/plan_check.h); the replay stops at the first violation with a std::runtime_error
  // naming the planner, the record and what is wrong.
  // It costs about what pricing the plan does (`topoep simulate --check`, sim/README.md).
  bool check_plans = false;
  // The record whose TopoEP moves the replay keeps (StepResult::explained; `topoep simulate
  // --explain`); step -1: none.
  RecordKey explain{-1, 0, 0};
  // Whether the replay draws the records done on a terminal: `topoep simulate` and the demo
  // ask; a sweep's points, replayed side by side under the sweep's own bar, do not.
  ProgressDisplay progress = ProgressDisplay::kNone;
};

// Checks the names (InputError "planners") and SimConfig against the trace's metadata:
// ranks = the topology's GPUs (or D times them: routing_groups()), experts and top-k = the
// model's (InputError naming the field).
void check_sim_config(const SimConfig& config, const TraceMetadata& metadata);

// How many data-parallel groups the trace routes apart. A trace of the topology's GPUs as ranks
// stands for every group (1: they route alike); with SimOptions::data_parallel D > 1, a trace of
// D times them holds each group's own routing, ranks g R to (g + 1) R - 1 group g's (D), as a
// recorder on every GPU of the cluster writes it. Each planner's step then waits for its
// slowest group, and reports that group's records.
int routing_groups(const SimConfig& config, const TraceMetadata& metadata);

// The model's experts and top-k against the trace's: InputError "model.num_experts" or
// "model.top_k" naming the model (and its file) and both values. Part of check_sim_config();
// the harness checks its model with it too.
void check_model_fits_trace(const ModelSpec& model, const TraceMetadata& metadata);

// `options` under the names summary.json's run.sim_options and a sweep's columns both give
// them: one list for both (pipeline_layers apart, which each writes its own way).
nlohmann::json sim_options_json(const SimOptions& options);

}  // namespace topoep
