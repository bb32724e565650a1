#include "sim/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace topoep {

Picoseconds PipelineTimes::mean_idle() const {
  if (busy.empty()) return 0;
  const Picoseconds total = std::accumulate(busy.begin(), busy.end(), Picoseconds{0});
  const Picoseconds stages = static_cast<Picoseconds>(busy.size());
  return makespan - (total + stages - 1) / stages;
}

namespace {

struct Op {
  bool forward = true;
  int microbatch = 0;
};

// Stage `stage`'s operations in 1F1B order.
std::vector<Op> one_f_one_b_order(int stage, int stages, int microbatches) {
  const int warmup = std::min(stages - stage - 1, microbatches);
  std::vector<Op> ops;
  for (int m = 0; m < warmup; ++m) ops.push_back({true, m});
  for (int m = warmup; m < microbatches; ++m) {
    ops.push_back({true, m});
    ops.push_back({false, m - warmup});
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) ops.push_back({false, m});
  return ops;
}

}  // namespace

PipelineTimes run_one_f_one_b(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                              const std::vector<StageEnds>& ends) {
  const int stages = static_cast<int>(work.size());
  PipelineTimes times;
  times.busy.assign(work.size(), 0);
  if (stages == 0 || work.front().empty()) return times;
  const int microbatches = static_cast<int>(work.front().size());
  constexpr Picoseconds kNotYet = -1;
  // When each (stage, microbatch) forward and backward ends.
  std::vector<std::vector<Picoseconds>> forward_end(
      work.size(), std::vector<Picoseconds>(microbatches, kNotYet));
  std::vector<std::vector<Picoseconds>> backward_end = forward_end;
  std::vector<std::vector<Op>> order(work.size());
  for (int s = 0; s < stages; ++s) order[s] = one_f_one_b_order(s, stages, microbatches);
  std::vector<std::size_t> next(work.size(), 0);
  std::vector<Picoseconds> free_at(work.size(), 0);
  if (!ends.empty()) {
    for (int s = 0; s < stages; ++s) {
      free_at[s] = ends[s].lead;
      times.busy[s] += ends[s].lead + ends[s].tail;
    }
  }
  // Each pass runs, stage by stage, every operation whose input has arrived; 1F1B never waits
  // in a cycle, so every pass makes progress until all are done.
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < order[s].size()) {
        const Op op = order[s][next[s]];
        Picoseconds ready = 0;
        if (op.forward && s > 0) {
          const Picoseconds before = forward_end[s - 1][op.microbatch];
          if (before == kNotYet) break;
          ready = before + handover;
        } else if (!op.forward && s + 1 < stages) {
          const Picoseconds after = backward_end[s + 1][op.microbatch];
          if (after == kNotYet) break;
          ready = after + handover;
        }
        const StageWork& w = work[s][op.microbatch];
        const Picoseconds length = op.forward ? w.forward : w.backward;
        const Picoseconds end = std::max(free_at[s], ready) + length;
        (op.forward ? forward_end : backward_end)[s][op.microbatch] = end;
        free_at[s] = end;
        times.busy[s] += length;
        ++next[s];
        progressed = true;
      }
    }
  }
  for (int s = 0; s < stages; ++s) {
    times.makespan = std::max(times.makespan, free_at[s] + (ends.empty() ? 0 : ends[s].tail));
  }
  return times;
}

std::vector<int> stage_first_layers(int layers, int stages) {
  std::vector<int> first(static_cast<std::size_t>(stages) + 1, 0);
  for (int s = 0; s < stages; ++s) {
    first[s + 1] = first[s] + layers / stages + (s < layers % stages ? 1 : 0);
  }
  return first;
}

std::vector<int> stage_first_layers(int layers, int stages,
                                    const std::vector<int>& layers_per_stage) {
  if (layers_per_stage.empty()) return stage_first_layers(layers, stages);
  std::vector<int> first(layers_per_stage.size() + 1, 0);
  std::partial_sum(layers_per_stage.begin(), layers_per_stage.end(), first.begin() + 1);
  return first;
}

std::vector<int> stage_layer_counts(int layers, int stages,
                                    const std::vector<int>& layers_per_stage) {
  const std::vector<int> first = stage_first_layers(layers, stages, layers_per_stage);
  std::vector<int> counts(first.size() - 1);
  // first[0] is 0, so the first difference is the first stage's count.
  std::adjacent_difference(first.begin() + 1, first.end(), counts.begin());
  return counts;
}

}  // namespace topoep
