#include "sim/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

namespace topoep {

Picoseconds PipelineTimes::mean_idle() const {
  if (busy.empty()) return 0;
  const Picoseconds total = std::accumulate(busy.begin(), busy.end(), Picoseconds{0});
  const Picoseconds stages = static_cast<Picoseconds>(busy.size());
  return makespan - (total + stages - 1) / stages;
}

namespace {

// One operation of a stage: a microbatch's forward or backward through one of its chunks.
struct Op {
  bool forward = true;
  int chunk = 0;
  int microbatch = 0;
};

// Stage `stage`'s operations in non-interleaved 1F1B order (its one chunk is `stage`).
std::vector<Op> one_f_one_b_order(int stage, int stages, int microbatches) {
  const int warmup = std::min(stages - stage - 1, microbatches);
  std::vector<Op> ops;
  for (int m = 0; m < warmup; ++m) ops.push_back({true, stage, m});
  for (int m = warmup; m < microbatches; ++m) {
    ops.push_back({true, stage, m});
    ops.push_back({false, stage, m - warmup});
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) ops.push_back({false, stage, m});
  return ops;
}

// Stage `stage`'s operations in Megatron-LM's interleaved 1F1B order over its `chunks` chunks:
// its k-th forward takes microbatch group k / (P x chunks) (P microbatches a group) through its
// chunk (k mod (P x chunks)) / P; backwards visit each group's chunks last to first. After a
// warm-up of 2 (P - stage - 1) + (chunks - 1) P forwards (all of them where M = P), one forward
// and one backward alternate. Needs M divisible by P.
std::vector<Op> interleaved_order(int stage, int stages, int chunks, int microbatches) {
  const int total = microbatches * chunks;
  const int warmup = microbatches == stages
                         ? total
                         : std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  const auto op = [&](int k, bool forward) {
    const int in_group = k % (stages * chunks);
    const int local = in_group / stages;
    const int chunk = (forward ? local : chunks - 1 - local) * stages + stage;
    return Op{forward, chunk, k / (stages * chunks) * stages + in_group % stages};
  };
  std::vector<Op> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back(op(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(op(warmup + k, true));
    ops.push_back(op(k, false));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(op(k, false));
  return ops;
}

// Runs each stage's `order`, every operation once its input has arrived: a forward through
// chunk c > 0 after the same microbatch's forward through chunk c - 1, a backward through chunk
// c < C - 1 after that through chunk c + 1, each plus the hand-over.
PipelineTimes run_orders(const std::vector<std::vector<StageWork>>& work,
                         const std::vector<std::vector<Op>>& order, Picoseconds handover,
                         const std::vector<StageEnds>& ends) {
  const int stages = static_cast<int>(order.size());
  const int chunks = static_cast<int>(work.size());
  PipelineTimes times;
  times.busy.assign(order.size(), 0);
  if (chunks == 0 || work.front().empty()) return times;
  const int microbatches = static_cast<int>(work.front().size());
  constexpr Picoseconds kNotYet = -1;
  // When each (chunk, microbatch) forward and backward ends.
  std::vector<std::vector<Picoseconds>> forward_end(
      work.size(), std::vector<Picoseconds>(microbatches, kNotYet));
  std::vector<std::vector<Picoseconds>> backward_end = forward_end;
  std::vector<std::size_t> next(order.size(), 0);
  // Stage by stage, each in its order: where each stage's operations begin in times.ops.
  std::vector<std::size_t> first_op(order.size() + 1, 0);
  for (int s = 0; s < stages; ++s) first_op[s + 1] = first_op[s] + order[s].size();
  times.ops.resize(first_op.back());
  std::vector<Picoseconds> free_at(order.size(), 0);
  if (!ends.empty()) {
    for (int s = 0; s < stages; ++s) {
      free_at[s] = ends[s].lead;
      times.busy[s] += ends[s].lead + ends[s].tail;
    }
  }
  // Each pass runs, stage by stage, every operation whose input has arrived. Megatron-LM's
  // orders never wait in a cycle, so every pass makes progress until all are done.
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < order[s].size()) {
        const Op op = order[s][next[s]];
        Picoseconds ready = 0;
        if (op.forward && op.chunk > 0) {
          const Picoseconds before = forward_end[op.chunk - 1][op.microbatch];
          if (before == kNotYet) break;
          ready = before + handover;
        } else if (!op.forward && op.chunk + 1 < chunks) {
          const Picoseconds after = backward_end[op.chunk + 1][op.microbatch];
          if (after == kNotYet) break;
          ready = after + handover;
        }
        const StageWork& w = work[op.chunk][op.microbatch];
        const Picoseconds length = op.forward ? w.forward : w.backward;
        const Picoseconds start = std::max(free_at[s], ready);
        const Picoseconds end = start + length;
        times.ops[first_op[s] + next[s]] = {s, op.chunk, op.microbatch, op.forward, start, end};
        (op.forward ? forward_end : backward_end)[op.chunk][op.microbatch] = end;
        free_at[s] = end;
        times.busy[s] += length;
        ++next[s];
        progressed = true;
      }
    }
  }
  times.ends = ends;
  for (int s = 0; s < stages; ++s) {
    if (next[s] < order[s].size()) throw std::logic_error("pipeline schedule waits in a cycle");
    times.makespan = std::max(times.makespan, free_at[s] + (ends.empty() ? 0 : ends[s].tail));
  }
  return times;
}

}  // namespace

PipelineTimes run_one_f_one_b(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                              const std::vector<StageEnds>& ends) {
  const int stages = static_cast<int>(work.size());
  const int microbatches = work.empty() ? 0 : static_cast<int>(work.front().size());
  std::vector<std::vector<Op>> order(work.size());
  for (int s = 0; s < stages; ++s) order[s] = one_f_one_b_order(s, stages, microbatches);
  return run_orders(work, order, handover, ends);
}

PipelineTimes run_interleaved_one_f_one_b(const std::vector<std::vector<StageWork>>& work,
                                          int stages, Picoseconds handover,
                                          const std::vector<StageEnds>& ends) {
  if (stages < 1 || work.size() % static_cast<std::size_t>(stages) != 0) {
    throw std::invalid_argument("interleaved 1F1B: " + std::to_string(work.size()) +
                                " chunks do not divide over " + std::to_string(stages) + " stages");
  }
  const int chunks = static_cast<int>(work.size()) / stages;
  if (chunks == 1) return run_one_f_one_b(work, handover, ends);
  const int microbatches = work.empty() ? 0 : static_cast<int>(work.front().size());
  if (microbatches % stages != 0) {
    throw std::invalid_argument("interleaved 1F1B: " + std::to_string(microbatches) +
                                " microbatches are not a multiple of " + std::to_string(stages) +
                                " stages");
  }
  std::vector<std::vector<Op>> order(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) order[s] = interleaved_order(s, stages, chunks, microbatches);
  return run_orders(work, order, handover, ends);
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
