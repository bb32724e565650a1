#pragma once
// Runs a sweep's points through the simulator and keeps its results table.
//
// Results: one row per (point, planner), as JSON lines and CSV, in point order then the grid's
// planner order, whatever the thread count. While running, each finished point's rows are
// appended whole to BASE.partial.jsonl and synced to disk; at the end BASE.jsonl and BASE.csv
// are written and renamed into place and the partial file is removed. A killed sweep thus loses
// at most the points in flight, and --resume skips every point already in the partial or final
// file. BASE is "results", or "results-shard-I-of-N" for a shard.

#include <string>
#include <vector>

#include "sim/sweep_grid.h"

namespace topoep {

struct SweepOptions {
  std::string out_dir = "sweep-results";
  int threads = 1;
  int shard = 0;  // this process runs the points with index % shards == shard
  int shards = 1;
  bool resume = false;
  bool check_plans = false;  // SimConfig::check_plans at every point (`topoep sweep --check`)
};

struct SweepReport {
  int points_in_shard = 0;
  int points_skipped = 0;  // already in the output (--resume)
  int points_run = 0;
  // Points of the shard whose trace ends before EPLB's first replan (at step
  // eplb_period_steps): their eplb row ran the home layout throughout, as static does.
  int eplb_home_points = 0;
  // Points of the shard where TopoEP's step is longer than static's (both in the grid's
  // planners), and the lowest speedup_vs_static among them with its point's index (-1: none).
  int topoep_behind_static_points = 0;
  double topoep_worst_vs_static = 0;
  int topoep_worst_point = -1;
  // Where the grid runs TopoEP and the ideal: the points with both, the geometric mean of
  // TopoEP's percent_of_ideal over them, and the least with its point's index (-1: none).
  int topoep_ideal_points = 0;
  double topoep_mean_percent_of_ideal = 0;
  double topoep_least_percent_of_ideal = 0;
  int topoep_least_ideal_point = -1;
  std::string jsonl_path, csv_path;
};

// Parses "I/N" (0 <= I < N); throws InputError naming "--shard".
void parse_shard(const std::string& text, SweepOptions* options);

// Throws FileInputError for outputs that exist without --resume or cannot be written; a
// point's simulation error stops the sweep with the point named (finished points stay in the
// partial file).
SweepReport run_sweep(const SweepGrid& grid, const SweepOptions& options);

// Joins the shard files in `out_dir` into results.jsonl and results.csv after checking that
// every point of `grid` appears exactly once and nothing else does. Returns the rows written.
int merge_sweep(const SweepGrid& grid, const std::string& out_dir);

}  // namespace topoep
