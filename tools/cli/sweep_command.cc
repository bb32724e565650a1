#include "tools/cli/sweep_command.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include "common/parallel_tasks.h"
#include "common/text_list.h"
#include "sim/sweep.h"
#include "solver/input_error.h"

namespace topoep {
namespace {

struct SweepCommandOptions {
  std::string grid;
  std::string shard = "0/1";
  SweepOptions sweep;
};

void run_sweep_command(const SweepCommandOptions& options) {
  if (options.grid.empty()) throw InputError("--grid", "is required");
  SweepOptions sweep = options.sweep;
  parse_shard(options.shard, &sweep);
  const SweepGrid grid = load_sweep_grid(options.grid);  // every point checked before any runs
  const SweepReport report = run_sweep(grid, sweep);
  std::cout << "Sweep of " << grid.points.size() << " points x " << grid.planners.size()
            << " planners";
  if (sweep.shards > 1) std::cout << ", shard " << sweep.shard << "/" << sweep.shards;
  std::cout << ": ran " << report.points_run << " points, " << report.points_skipped
            << " already done.\nWrote " << report.jsonl_path << " and " << report.csv_path << "\n";
  if (sweep.check_plans) std::cout << "--check: every plan of the points run was valid\n";
  if (report.eplb_home_points > 0) {
    std::cout << "\nNote: in " << report.eplb_home_points << " of the " << report.points_in_shard
              << " points the trace ends before eplb's first replan (at step "
                 "eplb_period_steps, 10 unless the grid sets it), so eplb ran the home layout "
                 "throughout there, as static does.\nA grid's eplb_period_steps below its "
                 "traces' steps lets it replan within them.\n";
  }
  if (report.topoep_behind_static_points > 0) {
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.3fx", report.topoep_worst_vs_static);
    std::cout << "\n"
              << wrapped("Note: TopoEP's step is longer than static's on " +
                         std::to_string(report.topoep_behind_static_points) + " of the " +
                         std::to_string(report.points_in_shard) + " points (the slowest " + worst +
                         ", point " + std::to_string(report.topoep_worst_point) +
                         "); topoep simulate on such a point says what its plans saved against "
                         "what they cost (sim/README.md, \"Against the paper\").");
  }
  if (report.topoep_ideal_points > 0) {
    char mean[32], least[32];
    std::snprintf(mean, sizeof mean, "%.1f%%", report.topoep_mean_percent_of_ideal);
    std::snprintf(least, sizeof least, "%.1f%%", report.topoep_least_percent_of_ideal);
    std::cout << "\n"
              << wrapped("TopoEP's step reaches " + std::string(mean) +
                         " of the ideal's (geometric mean of percent_of_ideal over the " +
                         std::to_string(report.topoep_ideal_points) + " points that ran both), " +
                         least + " at the least (point " +
                         std::to_string(report.topoep_least_ideal_point) +
                         "). The ideal balances every GPU and pays no replica weights, gradients "
                         "or solves: a bound, not a plan (sim/README.md, \"The ideal\").");
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  CLI::App* sweep = app.add_subcommand(
      "sweep", "Run a grid of topology, replication and cost parameters through the simulator");
  auto o = std::make_shared<SweepCommandOptions>();
  o->sweep.threads = hardware_threads();
  sweep->add_option("--grid", o->grid, "Grid file (JSON; see sim/README.md)");
  sweep->add_option("--out", o->sweep.out_dir, "Results directory")->capture_default_str();
  sweep
      ->add_option("--threads", o->sweep.threads,
                   "Points run in parallel (results do not depend on it)")
      ->capture_default_str();
  sweep->add_option("--shard", o->shard, "Run the points with index % N == I (I/N)")
      ->capture_default_str();
  sweep->add_flag("--resume", o->sweep.resume, "Skip points already in the results");
  sweep->add_flag("--check", o->sweep.check_plans,
                  "Validate every plan of every point (topoep simulate --check)");
  sweep->require_subcommand(0, 1);

  CLI::App* merge = sweep->add_subcommand("merge", "Join shard results, checking none is missing");
  auto grid = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("sweep-results");
  merge->add_option("--grid", *grid, "The grid the shards ran")->required();
  merge->add_option("--out", *out, "The directory holding the shard files")->capture_default_str();
  merge->callback([grid, out] {
    const int rows = merge_sweep(load_sweep_grid(*grid), *out);
    std::cout << "Merged " << rows << " rows into " << *out << "/results.jsonl and results.csv\n";
  });
  sweep->callback([o, merge] {
    if (merge->parsed()) return;
    run_sweep_command(*o);
  });
}

}  // namespace topoep
