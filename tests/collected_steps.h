#pragma once
// A replay observer that keeps every step, for tests that check the steps' figures.

#include <string>
#include <vector>

#include "sim/replay.h"

namespace topoep {

class Collect : public ReplayObserver {
 public:
  void on_start(const TraceMetadata&, const CostModel&) override {}
  void on_step(const StepResult& step) override { steps.push_back(step); }
  std::vector<StepResult> steps;
};

// Every step `config` replays `trace` into, on `threads` threads.
inline std::vector<StepResult> replayed_steps(const std::string& trace, SimConfig config,
                                              int threads) {
  config.threads = threads;
  Collect collect;
  replay_trace(trace, config, collect);
  return collect.steps;
}

}  // namespace topoep
