#include "sim/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>
#include <deque>
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

// What an operation computes of a microbatch's pass through a chunk.
enum class Pass {
  kForward,
  kBackward,    // input and weight gradients
  kInputGrad,   // a split backward's input gradients, its kWeightGrad later
  kWeightGrad,  // needs nothing from another stage
};

// One operation of a stage: a microbatch's forward or backward through one of its chunks.
struct Op {
  Pass pass = Pass::kForward;
  int chunk = 0;
  int microbatch = 0;
  // Starts with the next operation, as one of their summed length (DualPipe's and combined
  // 1F1B's overlapped forward and backward); both outputs leave as it ends.
  bool paired = false;
};

constexpr Pass kF = Pass::kForward;
constexpr Pass kB = Pass::kBackward;

// Stage `stage`'s operations in non-interleaved 1F1B order (its one chunk is `stage`).
// `combined`: the interleaved schedule's warm-up for one chunk plus one, and each later
// forward paired with the backward after it (Megatron-LM's combined 1F1B; run_one_f_one_b()
// says why).
std::vector<Op> one_f_one_b_order(int stage, int stages, int microbatches, bool combined) {
  const int warmup =
      std::min(combined ? 2 * (stages - stage - 1) + 1 : stages - stage - 1, microbatches);
  std::vector<Op> ops;
  for (int m = 0; m < warmup; ++m) ops.push_back({kF, stage, m});
  for (int m = warmup; m < microbatches; ++m) {
    ops.push_back({kF, stage, m, combined});
    ops.push_back({kB, stage, m - warmup});
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) ops.push_back({kB, stage, m});
  return ops;
}

// Stage `stage`'s operations in Megatron-LM's interleaved 1F1B order over its `chunks` chunks:
// its k-th forward takes microbatch group k / (P x chunks) (P microbatches a group) through its
// chunk (k mod (P x chunks)) / P; backwards visit each group's chunks last to first. After a
// warm-up of 2 (P - stage - 1) + (chunks - 1) P forwards (all of them where M = P), one forward
// and one backward alternate; `combined` as for one_f_one_b_order(). Needs M divisible by P.
std::vector<Op> interleaved_order(int stage, int stages, int chunks, int microbatches,
                                  bool combined) {
  const int total = microbatches * chunks;
  const int apart = microbatches == stages
                        ? total
                        : std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  const int warmup = std::min(apart + (combined ? 1 : 0), total);
  const auto op = [&](int k, bool forward) {
    const int in_group = k % (stages * chunks);
    const int local = in_group / stages;
    const int chunk = (forward ? local : chunks - 1 - local) * stages + stage;
    return Op{forward ? kF : kB, chunk, k / (stages * chunks) * stages + in_group % stages};
  };
  std::vector<Op> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back(op(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(op(warmup + k, true));
    ops.back().paired = combined;
    ops.push_back(op(k, false));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(op(k, false));
  return ops;
}

// Runs each stage's `order`, every operation once its input has arrived: a forward through
// chunk c > 0 after the same microbatch's forward through chunk c - 1, a backward through chunk
// c < C - 1 after that through chunk c + 1, each plus the hand-over, and after its own forward.
// `ends`: each stage's. With `pairs_hide`, only paired operations hide all-to-all time: every
// other takes back what its records hid (StageWork::forward_hidden, backward_hidden). Chunks
// `local` and `local` + 1 run on one stage: no hand-over between them (DualPipeV's turn).
PipelineTimes run_orders(const std::vector<std::vector<StageWork>>& work,
                         const std::vector<std::vector<Op>>& order, Picoseconds handover,
                         const std::vector<StageEnds>& ends, bool pairs_hide = false,
                         int local = -1) {
  const int stages = static_cast<int>(order.size());
  const int chunks = static_cast<int>(work.size());
  PipelineTimes times;
  times.busy.assign(order.size(), 0);
  if (chunks == 0 || work.front().empty()) return times;
  const int microbatches = static_cast<int>(work.front().size());
  constexpr Picoseconds kNotYet = -1;
  // When each (chunk, microbatch) forward and backward (its input gradients) ends.
  std::vector<std::vector<Picoseconds>> forward_end(
      work.size(), std::vector<Picoseconds>(microbatches, kNotYet));
  std::vector<std::vector<Picoseconds>> backward_end = forward_end;
  // When `op` may start as far as its inputs go, or kNotYet.
  // The hand-over from chunk c to c + 1 (forward) or back (backward).
  const auto crossing = [&](int c) { return c == local ? Picoseconds{0} : handover; };
  const auto ready_at = [&](const Op& op) -> Picoseconds {
    if (op.pass == Pass::kWeightGrad) return 0;
    if (op.pass == Pass::kForward) {
      if (op.chunk == 0) return 0;
      const Picoseconds before = forward_end[op.chunk - 1][op.microbatch];
      return before == kNotYet ? kNotYet : before + crossing(op.chunk - 1);
    }
    const Picoseconds own = forward_end[op.chunk][op.microbatch];
    if (own == kNotYet || op.chunk + 1 == chunks) return own;
    const Picoseconds after = backward_end[op.chunk + 1][op.microbatch];
    return after == kNotYet ? kNotYet : std::max(own, after + crossing(op.chunk));
  };
  const auto length_of = [&](const Op& op, bool in_pair) {
    const StageWork& w = work[op.chunk][op.microbatch];
    const Picoseconds weights = std::clamp<Picoseconds>(w.weight_grad, 0, w.backward);
    const bool unhidden = pairs_hide && !in_pair;
    const Picoseconds forward = w.forward + (unhidden ? w.forward_hidden : 0);
    const Picoseconds backward = w.backward + (unhidden ? w.backward_hidden : 0);
    switch (op.pass) {
      case Pass::kForward:
        return forward;
      case Pass::kBackward:
        return backward;
      case Pass::kInputGrad:
        return backward - weights;
      case Pass::kWeightGrad:
        return weights;
    }
    return Picoseconds{0};
  };
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
  // Each pass runs, stage by stage, every operation (or pair) whose inputs have arrived. The
  // schedules' orders never wait in a cycle, so every pass makes progress until all are done.
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < order[s].size()) {
        const std::size_t count = order[s][next[s]].paired ? 2 : 1;
        if (next[s] + count > order[s].size())
          throw std::logic_error("pipeline pair without a partner");
        Picoseconds start = free_at[s];
        bool waiting = false;
        for (std::size_t i = 0; i < count; ++i) {
          const Picoseconds ready = ready_at(order[s][next[s] + i]);
          waiting = waiting || ready == kNotYet;
          start = std::max(start, ready);
        }
        if (waiting) break;
        Picoseconds end = start;
        for (std::size_t i = 0; i < count; ++i) {
          const Op& op = order[s][next[s] + i];
          const Picoseconds length = length_of(op, count == 2);
          if (pairs_hide && count == 1) {
            const StageWork& w = work[op.chunk][op.microbatch];
            if (op.pass == Pass::kForward) times.unhidden_forward += w.forward_hidden;
            if (op.pass == Pass::kBackward || op.pass == Pass::kInputGrad) {
              times.unhidden_backward += w.backward_hidden;
            }
          }
          times.ops[first_op[s] + next[s] + i] = {s,
                                                  op.chunk,
                                                  op.microbatch,
                                                  op.pass == Pass::kForward,
                                                  end,
                                                  end + length,
                                                  op.pass == Pass::kWeightGrad};
          end += length;
          times.busy[s] += length;
        }
        for (std::size_t i = 0; i < count; ++i) {
          const Op& op = order[s][next[s] + i];
          if (op.pass == Pass::kWeightGrad) continue;
          (op.pass == Pass::kForward ? forward_end : backward_end)[op.chunk][op.microbatch] = end;
        }
        free_at[s] = end;
        next[s] += count;
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

// One stage's place in a bidirectional schedule (DualPipe's or DualPipeV's): it runs its
// `near` chunk's microbatches first (those entering at its end of the pipeline) and its `far`
// chunk's second; `h` counts the stages between it and that end, `half` is how many stages
// one direction's chunks span before the middle (P/2 for DualPipe, P for DualPipeV). Each
// chunk's microbatches run in order from `first`, `per_chunk` of them.
struct BidirectionalPlace {
  int h = 0, half = 1;
  int near = 0, far = 0;              // chunks
  int near_first = 0, far_first = 0;  // microbatches
  int per_chunk = 0;
};

// The stage's operations in dualpipe.py's eight steps (DualPipeV's are the same, cut in half).
std::vector<Op> bidirectional_order(const BidirectionalPlace& place) {
  const int h = place.h, half = place.half;
  const bool middle = h == half - 1;
  int forwards[2] = {0, 0}, backwards[2] = {0, 0};
  std::deque<Op> deferred;  // split backwards' weight gradients, first in first out
  std::vector<Op> ops;
  // 0: the near chunk, 1: the far one.
  const int chunk_of[2] = {place.near, place.far};
  const int first_of[2] = {place.near_first, place.far_first};
  const int near = 0, far = 1;
  const auto forward = [&](int which, bool paired = false) {
    Op op{kF, chunk_of[which], first_of[which] + forwards[which]++};
    op.paired = paired;
    ops.push_back(op);
  };
  const auto backward = [&](int which, bool split = false) {
    Op op{kB, chunk_of[which], first_of[which] + backwards[which]++};
    if (split) {
      op.pass = Pass::kInputGrad;
      Op later = op;
      later.pass = Pass::kWeightGrad;
      deferred.push_back(later);
    }
    ops.push_back(op);
  };
  const auto weights = [&] {
    ops.push_back(deferred.front());
    deferred.pop_front();
  };
  // 1: the near end's forwards fill the pipeline towards the middle.
  for (int i = 0; i < 2 * (half - h - 1); ++i) forward(near);
  // 2: both directions' forwards in turn.
  for (int i = 0; i <= h; ++i) {
    forward(near);
    forward(far);
  }
  // 3: the far direction's first backwards, each split so that its input gradients leave
  // before its weight gradients run.
  for (int i = 0; i < half - h - 1; ++i) {
    backward(far, true);
    weights();
    forward(far);
  }
  // 4: the steady state, a forward of each direction paired with a backward of the other.
  // The middle stages run their first pair apart, so that the forward need not wait for the
  // backward's gradients (dualpipe.py: "to further reduce bubble size").
  for (int i = 0; i < place.per_chunk - 2 * half + h + 1; ++i) {
    forward(near, /*paired=*/!(i == 0 && middle));
    backward(far);
    forward(far, true);
    backward(near);
  }
  // 5: the far direction's forwards run out.
  for (int i = 0; i < half - h - 1; ++i) {
    backward(far);
    forward(far, true);
    backward(near);
  }
  // 6: backwards of both directions in turn; from the middle of these on, split.
  bool split = false;
  for (int i = 0; i <= h; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    backward(far, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    backward(near, split);
  }
  // 7 and 8: the deferred weight gradients fill what the drain would leave idle.
  for (int i = 0; i < half - h - 1; ++i) {
    weights();
    backward(near, true);
  }
  while (!deferred.empty()) weights();
  return ops;
}

}  // namespace

PipelineTimes run_one_f_one_b(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                              const std::vector<StageEnds>& ends, bool combined) {
  const int stages = static_cast<int>(work.size());
  const int microbatches = work.empty() ? 0 : static_cast<int>(work.front().size());
  std::vector<std::vector<Op>> order(work.size());
  for (int s = 0; s < stages; ++s) order[s] = one_f_one_b_order(s, stages, microbatches, combined);
  return run_orders(work, order, handover, ends, /*pairs_hide=*/combined);
}

PipelineTimes run_interleaved_one_f_one_b(const std::vector<std::vector<StageWork>>& work,
                                          int stages, Picoseconds handover,
                                          const std::vector<StageEnds>& ends, bool combined) {
  if (stages < 1 || work.size() % static_cast<std::size_t>(stages) != 0) {
    throw std::invalid_argument("interleaved 1F1B: " + std::to_string(work.size()) +
                                " chunks do not divide over " + std::to_string(stages) + " stages");
  }
  const int chunks = static_cast<int>(work.size()) / stages;
  if (chunks == 1) return run_one_f_one_b(work, handover, ends, combined);
  const int microbatches = work.empty() ? 0 : static_cast<int>(work.front().size());
  if (microbatches % stages != 0) {
    throw std::invalid_argument("interleaved 1F1B: " + std::to_string(microbatches) +
                                " microbatches are not a multiple of " + std::to_string(stages) +
                                " stages");
  }
  std::vector<std::vector<Op>> order(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    order[s] = interleaved_order(s, stages, chunks, microbatches, combined);
  }
  return run_orders(work, order, handover, ends, /*pairs_hide=*/combined);
}

PipelineTimes run_dualpipe(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                           const std::vector<StageEnds>& ends) {
  const int stages = static_cast<int>(work.size());
  if (stages < 2 || stages % 2 != 0) {
    throw std::invalid_argument("DualPipe: needs an even number of stages, at least 2 (got " +
                                std::to_string(stages) + ")");
  }
  const int microbatches = static_cast<int>(work.front().size());
  if (microbatches % 2 != 0 || microbatches < 2 * stages) {
    throw std::invalid_argument("DualPipe: " + std::to_string(microbatches) +
                                " microbatches; it needs an even number, at least twice the " +
                                std::to_string(stages) + " stages");
  }
  if (!ends.empty() && static_cast<int>(ends.size()) != stages) {
    throw std::invalid_argument("DualPipe: ends for " + std::to_string(ends.size()) +
                                " chunks, not " + std::to_string(stages));
  }
  // Stage s runs chunk s of direction 0 (microbatches [0, M/2)) and chunk P - 1 - s of
  // direction 1 (the rest); its near direction enters at its end of the pipeline.
  std::vector<std::vector<Op>> order(static_cast<std::size_t>(stages));
  const int half = microbatches / 2;
  for (int s = 0; s < stages; ++s) {
    const bool first_half = s < stages / 2;
    BidirectionalPlace place;
    place.h = std::min(s, stages - 1 - s);
    place.half = stages / 2;
    place.near = first_half ? s : stages - 1 - s;
    place.far = first_half ? stages - 1 - s : s;
    place.near_first = first_half ? 0 : half;
    place.far_first = first_half ? half : 0;
    place.per_chunk = half;
    order[s] = bidirectional_order(place);
  }
  // Stage s holds chunks s and P - 1 - s: both leads before its first operation, both tails
  // after its last.
  std::vector<StageEnds> stage_ends;
  if (!ends.empty()) {
    stage_ends.resize(ends.size());
    for (int s = 0; s < stages; ++s) {
      const StageEnds& mirror = ends[stages - 1 - s];
      stage_ends[s] = {ends[s].lead + mirror.lead, ends[s].tail + mirror.tail};
    }
  }
  return run_orders(work, order, handover, stage_ends, /*pairs_hide=*/true);
}

PipelineTimes run_dualpipe_v(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                             const std::vector<StageEnds>& ends) {
  if (work.size() < 4 || work.size() % 2 != 0) {
    throw std::invalid_argument("DualPipeV: needs 2 chunks a stage, at least 2 stages (got " +
                                std::to_string(work.size()) + " chunks)");
  }
  const int stages = static_cast<int>(work.size()) / 2;
  const int microbatches = static_cast<int>(work.front().size());
  if (microbatches < 2 * stages) {
    throw std::invalid_argument("DualPipeV: " + std::to_string(microbatches) +
                                " microbatches; it needs at least twice the " +
                                std::to_string(stages) + " stages");
  }
  if (!ends.empty() && static_cast<int>(ends.size()) != stages) {
    throw std::invalid_argument("DualPipeV: ends for " + std::to_string(ends.size()) +
                                " stages, not " + std::to_string(stages));
  }
  // Stage s runs chunk s on the way down (its near chunk: the microbatches enter at stage 0)
  // and chunk 2P - 1 - s on the way back up.
  std::vector<std::vector<Op>> order(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    BidirectionalPlace place;
    place.h = s;
    place.half = stages;
    place.near = s;
    place.far = 2 * stages - 1 - s;
    place.per_chunk = microbatches;
    order[s] = bidirectional_order(place);
  }
  return run_orders(work, order, handover, ends, /*pairs_hide=*/true, /*local=*/stages - 1);
}

std::vector<int> peak_activations(const PipelineTimes& times,
                                  const std::vector<int>& chunk_layers) {
  // The count is the tokens' walk with one "GPU" holding each chunk's layers.
  const std::vector<TokenCount> peaks = peak_gpu_tokens(times, [&](int chunk, int) {
    return std::vector<TokenCount>{chunk_layers.at(static_cast<std::size_t>(chunk))};
  });
  return std::vector<int>(peaks.begin(), peaks.end());
}

std::vector<TokenCount> peak_gpu_tokens(
    const PipelineTimes& times,
    const std::function<std::vector<TokenCount>(int chunk, int microbatch)>& tokens,
    const std::function<TokenCount(int chunk)>& at_forward_end, const MomentHeld& during) {
  std::vector<std::vector<TokenCount>> held(times.busy.size());
  std::vector<TokenCount> peak(times.busy.size(), 0);
  for (const PipelineOp& op : times.ops) {
    if (op.weight_grad) continue;
    const std::vector<TokenCount> chunk = tokens(op.chunk, op.microbatch);
    const TokenCount moment = op.forward && at_forward_end ? at_forward_end(op.chunk) : 0;
    // Empty where no moment is given: nothing besides.
    const std::vector<TokenCount> extra =
        during ? during(op.chunk, op.microbatch, op.forward) : std::vector<TokenCount>{};
    std::vector<TokenCount>& gpus = held[op.stage];
    gpus.resize(chunk.size(), 0);
    for (std::size_t g = 0; g < chunk.size(); ++g) {
      const TokenCount besides = extra.empty() ? 0 : extra.at(g);
      // A backward's moments come before it lets its chunk's activations go.
      if (!op.forward) peak[op.stage] = std::max(peak[op.stage], gpus[g] + besides);
      gpus[g] += op.forward ? chunk[g] : -chunk[g];
      if (op.forward) {
        peak[op.stage] = std::max(peak[op.stage], gpus[g] + std::max(moment, besides));
      }
    }
  }
  return peak;
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
