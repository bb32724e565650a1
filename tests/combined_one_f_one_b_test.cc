// Megatron-LM's combined 1F1B (sim/pipeline_schedule.h, run_one_f_one_b() and
// run_interleaved_one_f_one_b() with `combined`): one more warm-up forward, then each forward
// paired with a backward as one operation; only the pairs hide all-to-alls. Cases worked by
// hand, each stage's warm-up and pairs, every operation started as soon as its inputs have
// arrived, and that more work never ends the step sooner.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sim/pipeline_schedule.h"

namespace topoep {
namespace {

// Forward 1 and backward 2 when paired; an unpaired one takes back the 10 and 20 its records
// hid. Lengths tell the two apart.
constexpr StageWork kHiding{1, 2, 0, 10, 20};

std::vector<std::vector<StageWork>> uniform(int chunks, int microbatches, StageWork w) {
  return std::vector<std::vector<StageWork>>(chunks, std::vector<StageWork>(microbatches, w));
}

Picoseconds length(const PipelineOp& op) { return op.end - op.start; }

TEST(CombinedOneFOneB, OneStageRunsItsFirstForwardAndLastBackwardAloneTheRestInPairs) {
  // F0 alone (11), (F1, B0) and (F2, B1) paired (3 each), B2 alone (22), as Megatron-LM's
  // combined schedule without pipelining runs them.
  const PipelineTimes times = run_one_f_one_b(uniform(1, 3, kHiding), 0, {}, /*combined=*/true);
  EXPECT_EQ(times.makespan, 11 + 3 + 3 + 22);
  EXPECT_EQ(times.unhidden_forward, 10);
  EXPECT_EQ(times.unhidden_backward, 20);
  std::vector<std::tuple<bool, int, Picoseconds>> ran;  // forward, microbatch, length
  for (const PipelineOp& op : times.ops) ran.emplace_back(op.forward, op.microbatch, length(op));
  EXPECT_EQ(ran, (std::vector<std::tuple<bool, int, Picoseconds>>{{true, 0, 11},
                                                                  {true, 1, 1},
                                                                  {false, 0, 2},
                                                                  {true, 2, 1},
                                                                  {false, 1, 2},
                                                                  {false, 2, 22}}));
  // Without `combined` every operation keeps what its records hid.
  const PipelineTimes apart = run_one_f_one_b(uniform(1, 3, kHiding), 0);
  EXPECT_EQ(apart.makespan, 3 * (1 + 2));
  EXPECT_EQ(apart.unhidden_forward + apart.unhidden_backward, 0);
}

TEST(CombinedOneFOneB, TwoStagesWorkedByHand) {
  // 2 stages, 4 microbatches, hand-over 1. Stage 0 warms up with F0, F1, F2; stage 1 with F0.
  // Stage 0: F0 [0, 11], F1 [11, 22], F2 [22, 33].
  // Stage 1: F0 [12, 23]; (F1, B0) from 23 (F1 arrived at 23, B0 needs its own F0): to 26.
  // Stage 0: (F3, B0) from 33: to 36.
  // Stage 1: (F2, B1) from 34: to 37; (F3, B2) from 37: to 40; B3 alone [40, 62].
  // Stage 0: B1 alone [38, 60], B2 [60, 82], B3 [82, 104] (stage 1's B3 at 62, + 1).
  const PipelineTimes times = run_one_f_one_b(uniform(2, 4, kHiding), 1, {}, /*combined=*/true);
  EXPECT_EQ(times.makespan, 104);
  EXPECT_EQ(times.unhidden_forward, 4 * 10);  // stage 0's 3 warm-up forwards, stage 1's 1
  EXPECT_EQ(times.unhidden_backward, 4 * 20);
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{3 * 11 + 3 + 3 * 22, 11 + 3 * 3 + 22}));
}

TEST(CombinedOneFOneB, NeighbouringStagesDoNotTakeTurns) {
  // Forward 10 and backward 20 whatever the pairing, no hand-over: after the warm-up each
  // stage runs its pairs back to back, one 30 ps slot each, so the step takes 1F1B's
  // (M + P - 1) slots. (With 1F1B's warm-up plus one, neighbouring stages would take turns.)
  for (const int stages : {2, 3, 4}) {
    for (const int microbatches : {2 * stages, 4 * stages, 16}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(microbatches) +
                   " microbatches");
      const PipelineTimes times =
          run_one_f_one_b(uniform(stages, microbatches, {10, 20}), 0, {}, /*combined=*/true);
      EXPECT_EQ(times.makespan, (microbatches + stages - 1) * 30);
      for (const Picoseconds busy : times.busy) EXPECT_EQ(busy, microbatches * 30);
    }
  }
}

// The forwards a stage runs before its first pair: Megatron-LM's interleaved warm-up (at
// least one chunk) plus one, all of them where the interleaved schedule has one microbatch
// group.
int combined_warmup(int stage, int stages, int chunks, int microbatches) {
  const int total = chunks * microbatches;
  if (chunks > 1 && microbatches == stages) return total;
  return std::min(2 * (stages - stage - 1) + (chunks - 1) * stages + 1, total);
}

TEST(CombinedOneFOneB, WarmsUpOneForwardMoreThenPairsEveryForwardWithABackward) {
  for (const int stages : {1, 2, 3, 5}) {
    for (const int chunks : {1, 2, 3}) {
      if (stages == 1 && chunks > 1) continue;
      for (const int groups : {1, 2, 3}) {
        const int microbatches = stages * groups + (chunks == 1 ? 1 : 0);
        SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(chunks) +
                     " chunks a stage, " + std::to_string(microbatches) + " microbatches");
        const PipelineTimes times = run_interleaved_one_f_one_b(
            uniform(stages * chunks, microbatches, kHiding), stages, 3, {}, /*combined=*/true);
        std::vector<std::vector<const PipelineOp*>> per_stage(stages);
        for (const PipelineOp& op : times.ops) per_stage[op.stage].push_back(&op);
        for (int s = 0; s < stages; ++s) {
          const int total = chunks * microbatches;
          const int warmup = combined_warmup(s, stages, chunks, microbatches);
          const std::vector<const PipelineOp*>& ops = per_stage[s];
          ASSERT_EQ(ops.size(), 2u * total);
          for (int i = 0; i < warmup; ++i) {
            EXPECT_TRUE(ops[i]->forward && length(*ops[i]) == 11) << "stage " << s << " op " << i;
          }
          for (int k = 0; k < total - warmup; ++k) {
            const PipelineOp& f = *ops[warmup + 2 * k];
            const PipelineOp& b = *ops[warmup + 2 * k + 1];
            EXPECT_TRUE(f.forward && length(f) == 1) << "stage " << s << " pair " << k;
            EXPECT_TRUE(!b.forward && length(b) == 2 && b.start == f.end) << "stage " << s;
          }
          for (int i = 2 * total - warmup; i < 2 * total; ++i) {
            EXPECT_TRUE(!ops[i]->forward && length(*ops[i]) == 22) << "stage " << s << " op " << i;
          }
          // It holds the warm-up's activations and, in a pair, one forward's more: about twice
          // 1F1B's at V = 1 (2 (P - s) against P - s microbatches).
          const std::vector<int> peak =
              peak_activations(times, std::vector<int>(stages * chunks, 1));
          EXPECT_EQ(peak[s], std::min(warmup + 1, total)) << "stage " << s;
        }
      }
    }
  }
}

// A random case: 1 to 5 stages of 1 to 3 chunks, a multiple of the stages of microbatches
// (any count with one chunk), each operation its own work and hidden time (at least 1, so that
// a paired operation's length tells it from an unpaired one), ends and a hand-over.
struct CombinedCase {
  int stages = 0;
  std::vector<std::vector<StageWork>> work;  // [chunk][microbatch]
  std::vector<StageEnds> ends;
  Picoseconds handover = 0;
};

CombinedCase random_case(std::mt19937_64& random) {
  CombinedCase c;
  c.stages = 1 + static_cast<int>(random() % 5);
  const int chunks = c.stages == 1 ? 1 : 1 + static_cast<int>(random() % 3);
  const int microbatches = chunks == 1 ? 1 + static_cast<int>(random() % 9)
                                       : c.stages * (1 + static_cast<int>(random() % 3));
  c.work.assign(c.stages * chunks, std::vector<StageWork>(microbatches));
  for (auto& row : c.work) {
    for (StageWork& w : row) {
      w.forward = static_cast<Picoseconds>(random() % 100);
      w.backward = static_cast<Picoseconds>(random() % 200);
      w.forward_hidden = 1 + static_cast<Picoseconds>(random() % 40);
      w.backward_hidden = 1 + static_cast<Picoseconds>(random() % 40);
    }
  }
  for (int s = 0; s < c.stages; ++s) {
    c.ends.push_back(
        {static_cast<Picoseconds>(random() % 150), static_cast<Picoseconds>(random() % 150)});
  }
  c.handover = static_cast<Picoseconds>(random() % 30);
  return c;
}

PipelineTimes run_combined(const CombinedCase& c) {
  return run_interleaved_one_f_one_b(c.work, c.stages, c.handover, c.ends, /*combined=*/true);
}

// Checks what the schedule reports against its rules, by another algorithm than the
// schedule's own passes: every microbatch runs forward and backward once through each chunk,
// on stage chunk mod P; an operation is paired when it runs its hidden-free length (a forward
// and the backward right after it, starting as the forward ends), unpaired when it takes its
// hidden time back. An operation or pair starts at the latest of its stage's previous end (its
// lead first) and its inputs: a forward the chunk before's forward output plus the hand-over, a
// backward its own forward's output and the chunk after's backward output plus the hand-over.
// A pair's outputs leave as it ends. The makespan is the latest end plus its stage's tail.
void check_combined(const CombinedCase& c, const PipelineTimes& times) {
  const int chunks = static_cast<int>(c.work.size());
  const int microbatches = static_cast<int>(c.work.front().size());
  std::map<std::tuple<bool, int, int>, Picoseconds> output;  // (forward, chunk, mb): leaves at
  std::vector<bool> paired(times.ops.size(), false);
  for (std::size_t i = 0; i < times.ops.size(); ++i) {
    const PipelineOp& op = times.ops[i];
    EXPECT_EQ(op.stage, op.chunk % c.stages);
    const StageWork& w = c.work[op.chunk][op.microbatch];
    const Picoseconds alone =
        op.forward ? w.forward + w.forward_hidden : w.backward + w.backward_hidden;
    const Picoseconds in_pair = op.forward ? w.forward : w.backward;
    ASSERT_TRUE(length(op) == alone || length(op) == in_pair);
    paired[i] = length(op) == in_pair;
    if (paired[i] && !op.forward) {
      ASSERT_TRUE(i > 0 && paired[i - 1] && times.ops[i - 1].forward &&
                  times.ops[i - 1].stage == op.stage && times.ops[i - 1].end == op.start);
    }
    const Picoseconds leaves = paired[i] && op.forward ? times.ops[i + 1].end : op.end;
    EXPECT_TRUE(output.insert({{op.forward, op.chunk, op.microbatch}, leaves}).second);
  }
  ASSERT_EQ(output.size(), 2u * chunks * microbatches);
  const auto ready = [&](const PipelineOp& op) {
    if (op.forward) {
      return op.chunk == 0 ? 0 : output.at({true, op.chunk - 1, op.microbatch}) + c.handover;
    }
    Picoseconds at = output.at({true, op.chunk, op.microbatch});
    if (op.chunk + 1 < chunks) {
      at = std::max(at, output.at({false, op.chunk + 1, op.microbatch}) + c.handover);
    }
    return at;
  };
  std::vector<Picoseconds> free_at(c.stages);
  for (int s = 0; s < c.stages; ++s) free_at[s] = c.ends[s].lead;
  Picoseconds makespan = 0;
  for (std::size_t i = 0; i < times.ops.size(); ++i) {
    const PipelineOp& op = times.ops[i];
    if (paired[i] && !op.forward) continue;  // checked with its forward
    Picoseconds start = std::max(free_at[op.stage], ready(op));
    if (paired[i]) start = std::max(start, ready(times.ops[i + 1]));
    EXPECT_EQ(op.start, start) << "op " << i;
    free_at[op.stage] = paired[i] ? times.ops[i + 1].end : op.end;
    makespan = std::max(makespan, free_at[op.stage] + c.ends[op.stage].tail);
  }
  EXPECT_EQ(times.makespan, makespan);
}

TEST(CombinedOneFOneB, StartsEveryOperationAndPairAsSoonAsItsInputsHaveArrived) {
  std::mt19937_64 random(53);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const CombinedCase c = random_case(random);
    check_combined(c, run_combined(c));
  }
}

TEST(CombinedOneFOneB, MoreWorkAnywhereNeverEndsTheStepSooner) {
  std::mt19937_64 random(59);
  for (int round = 0; round < 300; ++round) {
    CombinedCase c = random_case(random);
    const Picoseconds before = run_combined(c).makespan;
    StageWork& grown = c.work[random() % c.work.size()][random() % c.work.front().size()];
    const Picoseconds more = 1 + static_cast<Picoseconds>(random() % 50);
    switch (random() % 4) {
      case 0:
        grown.forward += more;
        break;
      case 1:
        grown.backward += more;
        break;
      case 2:
        grown.forward_hidden += more;
        break;
      default:
        grown.backward_hidden += more;
        break;
    }
    EXPECT_GE(run_combined(c).makespan, before) << "round " << round;
    c.handover += 5;
    EXPECT_GE(run_combined(c).makespan, before) << "round " << round;
  }
}

}  // namespace
}  // namespace topoep
