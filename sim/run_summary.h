#pragma once
// A replay's figures per planner over the whole run, accumulated step by step.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/replay.h"

namespace topoep {

struct PlannerRunSummary {
  std::string planner;
  int steps = 0;
  std::int64_t records = 0;
  std::int64_t tokens = 0;
  // Sums over the run, picoseconds.
  Picoseconds step_time = 0, moe = 0, moe_forward = 0, overhead = 0, dense = 0, outside = 0,
              grad_reduce = 0, dense_grad_reduce = 0, dense_param_gather = 0, expert_grad_sync = 0,
              expert_param_gather = 0, optimizer = 0;
  Picoseconds dispatch = 0, compute = 0, combine = 0, weight_exposed = 0, combine_grad = 0,
              compute_grad = 0, dispatch_grad = 0;
  // The all-to-all time behind another microbatch's compute (SimOptions::a2a_overlap_fraction):
  // moe = the seven phases above less it. With pipeline stages, what the schedule's pairs hid
  // (StepTotals::a2a_unhidden).
  Picoseconds a2a_hidden = 0;
  // With pipeline stages: what of the step a stage waits on average (StepTotals).
  Picoseconds pipeline_idle = 0;
  Bytes nvlink_dispatch_bytes = 0, ib_dispatch_bytes = 0, nvlink_weight_bytes = 0,
        ib_weight_bytes = 0, grad_reduce_nvlink_bytes = 0, grad_reduce_ib_bytes = 0,
        dense_sync_nvlink_bytes = 0, dense_sync_ib_bytes = 0, expert_sync_ib_bytes = 0;
  std::vector<double> max_mean_loads;  // one per record
  // The most of any step (StepTotals::peak_expert_tokens).
  TokenCount peak_expert_tokens = 0;
  // What one GPU of each stage holds (StepTotals::stage_memory), its expert activations the
  // most of any step.
  std::vector<StageMemory> stage_memory;

  double step_time_us() const;  // mean over steps
  double tokens_per_s() const;  // all tokens over all step time
  double median_max_mean_load() const;
  Bytes peak_expert_activation_bytes() const;  // the most of any stage
  // The stage whose GPU holds the most in all (the first of equals), and that GPU's memory.
  int busiest_memory_stage() const;
  StageMemory busiest_memory() const;
};

class RunSummary {
 public:
  explicit RunSummary(std::vector<std::string> planners);
  void add(const StepResult& step);

  const std::vector<PlannerRunSummary>& planners() const { return planners_; }
  // Index of `name`, or -1.
  int index_of(const std::string& name) const;
  // other's step time over this one's: above 1 when `planner` is faster.
  double speedup(int planner, int other) const;
  // The ideal's step time over this planner's, in percent; 0 without the ideal.
  double percent_of_ideal(int planner) const;

  // summary.json: the run's configuration and every planner's figures (times in µs).
  nlohmann::json to_json(const nlohmann::json& run) const;

 private:
  std::vector<PlannerRunSummary> planners_;
};

// Exact decimal microseconds of an integer picosecond time, e.g. "12.345678".
std::string format_us(Picoseconds ps);

}  // namespace topoep
