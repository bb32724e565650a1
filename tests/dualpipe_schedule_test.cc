// DeepSeek-V3's DualPipe schedule and DualPipeV, DualPipe cut in half (sim/pipeline_schedule.h,
// run_dualpipe(), run_dualpipe_v()): the bubbles the DeepSeek-V3 report gives, a case worked
// by hand, each stage's operations and their dependencies as reported, and that more work never
// ends the step sooner.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sim/pipeline_schedule.h"

namespace topoep {
namespace {

std::vector<std::vector<StageWork>> uniform(int stages, int microbatches, StageWork w) {
  return std::vector<std::vector<StageWork>>(stages, std::vector<StageWork>(microbatches, w));
}

TEST(DualPipeSchedule, LeavesTheBubbleTheDeepSeekV3ReportGives) {
  // DeepSeek-V3 technical report, Table 2: DualPipe's bubble is (P/2 - 1)(F&B + B - 3W), F&B
  // a paired forward and backward (here F + B), on top of the M (F + B) each stage computes
  // (M/2 microbatches through each of its two chunks). B = 2F and W = F, as the report draws
  // it; no hand-over time.
  for (const int stages : {2, 4, 6, 8}) {
    for (const int microbatches : {2 * stages, 2 * stages + 2, 4 * stages, 40}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(microbatches) +
                   " microbatches");
      const Picoseconds f = 10, b = 20, w = 10;
      const PipelineTimes times = run_dualpipe(uniform(stages, microbatches, {f, b, w}), 0);
      const Picoseconds compute = microbatches * (f + b);
      EXPECT_EQ(times.makespan, compute + (stages / 2 - 1) * ((f + b) + b - 3 * w));
      for (const Picoseconds busy : times.busy) EXPECT_EQ(busy, compute);
    }
  }
}

TEST(DualPipeSchedule, HoldsTheActivationsTheDeepSeekV3ReportGives) {
  // DeepSeek-V3 technical report, Table 2: DualPipe holds P + 1 microbatches' activations of a
  // chunk (1F1B's stage), against 1F1B's P, on the busiest stage (peak_activations(), in
  // layer-microbatches: chunks of 3 layers here).
  for (const int stages : {2, 4, 6, 8}) {
    for (const int microbatches : {2 * stages, 2 * stages + 6}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(microbatches) +
                   " microbatches");
      const std::vector<int> layers(stages, 3);
      const std::vector<int> dual =
          peak_activations(run_dualpipe(uniform(stages, microbatches, {10, 20, 10}), 0), layers);
      EXPECT_EQ(*std::max_element(dual.begin(), dual.end()), 3 * (stages + 1));
      const std::vector<int> one =
          peak_activations(run_one_f_one_b(uniform(stages, microbatches, {10, 20}), 0), layers);
      EXPECT_EQ(*std::max_element(one.begin(), one.end()), 3 * stages);
      // DualPipeV holds what DualPipe over its 2P chunks would: 2P + 1 of them, on every stage.
      const std::vector<int> v =
          peak_activations(run_dualpipe_v(uniform(2 * stages, microbatches, {10, 20, 10}), 0),
                           std::vector<int>(2 * stages, 3));
      EXPECT_EQ(v, std::vector<int>(stages, 3 * (2 * stages + 1)));
    }
  }
}

TEST(DualPipeSchedule, IdlesLessThanOneFOneBAndLessStillWithWeightGradientsSplitOff) {
  // 8 stages, 16 microbatches, F = 10, B = 20: 1F1B idles (P - 1)(F + B) = 210 a step;
  // DualPipe less with nothing to split off, and with W = F the report's (P/2 - 1)(F&B + B -
  // 3W) = 60.
  const int stages = 8, microbatches = 16;
  const Picoseconds compute = microbatches * 30;
  const Picoseconds one_f_one_b =
      run_one_f_one_b(uniform(stages, microbatches, {10, 20}), 0).makespan - compute;
  const Picoseconds whole = run_dualpipe(uniform(stages, microbatches, {10, 20, 0}), 0).makespan;
  const Picoseconds split = run_dualpipe(uniform(stages, microbatches, {10, 20, 10}), 0).makespan;
  EXPECT_EQ(one_f_one_b, 210);
  EXPECT_LT(whole - compute, one_f_one_b);
  EXPECT_EQ(split - compute, 60);
}

TEST(DualPipeSchedule, TheMiddleStagesSetThePace) {
  // 4 stages, 8 microbatches, F = 100, B = 200, W = 100: 10% more work on the outer stages'
  // chunks (0 and 3, both on stages 0 and 3; 240 more a stage) lengthens the step by 100; on
  // the middle stages' (1 and 2) by 200.
  const auto step = [](int heavier) {
    std::vector<std::vector<StageWork>> work = uniform(4, 8, {100, 200, 100});
    for (const int chunk : {heavier, 3 - heavier}) {
      for (StageWork& w : work[chunk]) w = {110, 220, 110};
    }
    return run_dualpipe(work, 0).makespan;
  };
  EXPECT_EQ(run_dualpipe(uniform(4, 8, {100, 200, 100}), 0).makespan, 2600);
  EXPECT_EQ(step(0), 2700);
  EXPECT_EQ(step(1), 2800);
}

TEST(DualPipeSchedule, HandOversDelayTheMicrobatchesCrossingThePipeline) {
  // Worked by hand: 2 stages, 4 microbatches (0 and 1 enter at stage 0, 2 and 3 at stage 1),
  // forward 1, backward 2 of which 1 weight gradients, hand-over 1. Stage 0 holds chunk 0 of
  // microbatches 0, 1 and chunk 1 of 2, 3; stage 1 the other way round.
  // Stage 0: F c0 m0 [0, 1]; F c1 m2 [2, 3]; F c0 m1 [3, 4]; B c1 m2 [4, 6]; the pair
  //   F c1 m3 + B c0 m0 from 7 (stage 1's B c1 m0 ends at 6, + 1) to 10; B c1 m3 [10, 12];
  //   B c0 m1's input gradients [13, 14] (stage 1's B c1 m1 ends at 12, + 1); its weights
  //   [14, 15].
  // Stage 1 mirrors it: its last input gradients wait for stage 0's B c1 m3 (12, + 1).
  const PipelineTimes times = run_dualpipe(uniform(2, 4, {1, 2, 1}), 1);
  EXPECT_EQ(times.makespan, 15);
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{12, 12}));
  std::vector<std::tuple<int, int, bool, bool, Picoseconds, Picoseconds>> stage0;
  for (const PipelineOp& op : times.ops) {
    if (op.stage == 0) {
      stage0.emplace_back(op.chunk, op.microbatch, op.forward, op.weight_grad, op.start, op.end);
    }
  }
  using Op = std::tuple<int, int, bool, bool, Picoseconds, Picoseconds>;
  EXPECT_EQ(stage0, (std::vector<Op>{{0, 0, true, false, 0, 1},
                                     {1, 2, true, false, 2, 3},
                                     {0, 1, true, false, 3, 4},
                                     {1, 2, false, false, 4, 6},
                                     {1, 3, true, false, 7, 8},
                                     {0, 0, false, false, 8, 10},
                                     {1, 3, false, false, 10, 12},
                                     {0, 1, false, false, 13, 14},
                                     {0, 1, false, true, 14, 15}}));
}

TEST(DualPipeSchedule, OnlyPairsHideAllToAlls) {
  // The hand-worked case above with all-to-all time the records hid (10 a forward, 20 a
  // backward): each stage runs one pair, the rest of its 3 forwards and 3 backwards (one of
  // them split: its input gradients) take theirs back. 1F1B, not combined, keeps the records'
  // hiding.
  StageWork w{1, 2, 1};
  w.forward_hidden = 10;
  w.backward_hidden = 20;
  const PipelineTimes times = run_dualpipe(uniform(2, 4, w), 1);
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{12 + 3 * 10 + 3 * 20, 12 + 3 * 10 + 3 * 20}));
  int pairs = 0;
  for (const PipelineOp& op : times.ops) {
    const PipelineOp* next = &op + 1;
    if (op.forward && next != times.ops.data() + times.ops.size() && next->stage == op.stage &&
        !next->forward && next->start == op.end && op.end - op.start == 1) {
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, 2);
  EXPECT_EQ(run_one_f_one_b(uniform(2, 4, w), 1).busy,
            run_one_f_one_b(uniform(2, 4, {1, 2, 1}), 1).busy);
}

// A random case: every chunk and microbatch its own work, ends per chunk, a hand-over.
struct DualPipeCase {
  std::vector<std::vector<StageWork>> work;
  std::vector<StageEnds> ends;
  Picoseconds handover = 0;
};

DualPipeCase random_case(std::mt19937_64& random, int chunks, int microbatches, int ends) {
  DualPipeCase c;
  c.work.assign(chunks, std::vector<StageWork>(microbatches));
  for (auto& row : c.work) {
    for (StageWork& w : row) {
      w.forward = static_cast<Picoseconds>(random() % 100);
      w.backward = static_cast<Picoseconds>(random() % 200);
      w.weight_grad = static_cast<Picoseconds>(random() % 120);  // above backward at times
    }
  }
  for (int s = 0; s < ends; ++s) {
    c.ends.push_back(
        {static_cast<Picoseconds>(random() % 50), static_cast<Picoseconds>(random() % 50)});
  }
  c.handover = static_cast<Picoseconds>(random() % 30);
  return c;
}

// DualPipe: 2 to 8 stages (even), 2P to 2P + 8 microbatches (even), ends per chunk.
DualPipeCase random_dualpipe(std::mt19937_64& random) {
  const int stages = 2 * (1 + static_cast<int>(random() % 4));
  const int microbatches = 2 * stages + 2 * static_cast<int>(random() % 5);
  return random_case(random, stages, microbatches, stages);
}

// DualPipeV: 2 to 5 stages, 2P to 2P + 4 microbatches, ends per stage.
DualPipeCase random_dualpipe_v(std::mt19937_64& random) {
  const int stages = 2 + static_cast<int>(random() % 4);
  const int microbatches = 2 * stages + static_cast<int>(random() % 5);
  return random_case(random, 2 * stages, microbatches, stages);
}

// What a bidirectional schedule reports, checked against its rules: each stage runs every
// microbatch through each of its chunks (`stage_of`) forward once and backward once (whole,
// or its input gradients then later its weight gradients), one operation at a time after its
// lead, each as long as its work (weight gradients capped at the backward); a forward after
// the chunk before's plus the hand-over (none across the `local` boundary, on one stage), a
// backward after its own forward and after the chunk after's backward plus the hand-over. The
// latest end plus the stage's tail is the makespan. `ends` per stage.
void check_reported_operations(const PipelineTimes& times, const DualPipeCase& c,
                               const std::function<int(int chunk, int microbatch)>& stage_of,
                               const std::vector<StageEnds>& ends, int local) {
  const int chunks = static_cast<int>(c.work.size());
  const int microbatches = static_cast<int>(c.work.front().size());
  const auto crossing = [&](int boundary) { return boundary == local ? 0 : c.handover; };
  std::map<std::tuple<int, int, int>, const PipelineOp*> seen;  // (chunk, mb, pass)
  std::vector<Picoseconds> free_at(ends.size()), busy(ends.size());
  for (std::size_t s = 0; s < ends.size(); ++s) {
    free_at[s] = ends[s].lead;
    busy[s] = ends[s].lead + ends[s].tail;
  }
  const auto pass_of = [](const PipelineOp& op) { return op.forward ? 0 : op.weight_grad ? 2 : 1; };
  for (const PipelineOp& op : times.ops) {
    EXPECT_TRUE(seen.insert({{op.chunk, op.microbatch, pass_of(op)}, &op}).second);
  }
  Picoseconds makespan = 0;
  // Stage by stage, each in the order it ran them.
  for (const PipelineOp& op : times.ops) {
    EXPECT_EQ(op.stage, stage_of(op.chunk, op.microbatch));
    const StageWork& w = c.work[op.chunk][op.microbatch];
    const Picoseconds weights = std::min(w.weight_grad, w.backward);
    EXPECT_GE(op.start, free_at[op.stage]);
    free_at[op.stage] = op.end;
    busy[op.stage] += op.end - op.start;
    const PipelineOp* own = nullptr;
    if (op.forward) {
      EXPECT_EQ(op.end - op.start, w.forward);
      if (op.chunk > 0) {
        const PipelineOp* before = seen.at({op.chunk - 1, op.microbatch, 0});
        EXPECT_GE(op.start, before->end + crossing(op.chunk - 1));
      }
    } else if (op.weight_grad) {
      EXPECT_EQ(op.end - op.start, weights);
      own = seen.at({op.chunk, op.microbatch, 1});
      EXPECT_EQ(own->end - own->start, w.backward - weights);
    } else {
      EXPECT_TRUE(op.end - op.start == w.backward || op.end - op.start == w.backward - weights);
      own = seen.at({op.chunk, op.microbatch, 0});
      if (op.chunk + 1 < chunks) {
        const PipelineOp* after = seen.at({op.chunk + 1, op.microbatch, 1});
        EXPECT_GE(op.start, after->end + crossing(op.chunk));
      }
    }
    if (own != nullptr) {
      EXPECT_GE(op.start, own->end);
    }
    makespan = std::max(makespan, op.end + ends[op.stage].tail);
  }
  for (int chunk = 0; chunk < chunks; ++chunk) {
    for (int m = 0; m < microbatches; ++m) {
      EXPECT_EQ(seen.count({chunk, m, 0}), 1u);
      EXPECT_EQ(seen.count({chunk, m, 1}), 1u);
    }
  }
  EXPECT_EQ(times.makespan, makespan);
  EXPECT_EQ(times.busy, busy);
}

// DualPipe: stage s holds chunk s of the first half's microbatches and chunk P - 1 - s of the
// second half's, and waits for both chunks' leads and runs both tails.
TEST(DualPipeSchedule, RunsEveryMicrobatchOnceThroughEachChunkInDependencyOrder) {
  std::mt19937_64 random(41);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const DualPipeCase c = random_dualpipe(random);
    const int stages = static_cast<int>(c.work.size());
    const int half = static_cast<int>(c.work.front().size()) / 2;
    std::vector<StageEnds> ends(stages);
    for (int s = 0; s < stages; ++s) {
      const StageEnds& mirror = c.ends[stages - 1 - s];
      ends[s] = {c.ends[s].lead + mirror.lead, c.ends[s].tail + mirror.tail};
    }
    check_reported_operations(
        run_dualpipe(c.work, c.handover, c.ends), c,
        [&](int chunk, int m) { return m < half ? chunk : stages - 1 - chunk; }, ends, -1);
  }
}

// DualPipeV: stage s holds chunks s and 2P - 1 - s; the turn (chunks P - 1 and P, both on
// stage P - 1) has no hand-over.
TEST(DualPipeVSchedule, RunsEveryMicrobatchDownAndBackUpTheVInDependencyOrder) {
  std::mt19937_64 random(47);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const DualPipeCase c = random_dualpipe_v(random);
    const int stages = static_cast<int>(c.ends.size());
    check_reported_operations(
        run_dualpipe_v(c.work, c.handover, c.ends), c,
        [&](int chunk, int) { return chunk < stages ? chunk : 2 * stages - 1 - chunk; }, c.ends,
        stages - 1);
  }
}

TEST(DualPipeVSchedule, LeavesDualPipesBubbleForTwiceTheStages) {
  // DualPipe cut in half: on P stages of 2 chunks, (P - 1)(F&B + B - 3W) a step in chunk
  // units (DualPipe's on 2P stages), on top of the 2M (F + B) each stage computes.
  for (const int stages : {2, 3, 4, 8}) {
    for (const int microbatches : {2 * stages, 2 * stages + 1, 4 * stages}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(microbatches) +
                   " microbatches");
      const Picoseconds f = 10, b = 20, w = 10;
      const PipelineTimes times = run_dualpipe_v(uniform(2 * stages, microbatches, {f, b, w}), 0);
      const Picoseconds compute = 2 * microbatches * (f + b);
      EXPECT_EQ(times.makespan, compute + (stages - 1) * ((f + b) + b - 3 * w));
      for (const Picoseconds busy : times.busy) EXPECT_EQ(busy, compute);
    }
  }
}

TEST(DualPipeSchedule, MoreWorkAnywhereNeverEndsTheStepSooner) {
  std::mt19937_64 random(43);
  for (int round = 0; round < 300; ++round) {
    const bool cut = round % 2 == 1;  // DualPipeV every other round
    DualPipeCase c = cut ? random_dualpipe_v(random) : random_dualpipe(random);
    const auto run = [&](const DualPipeCase& x, Picoseconds handover) {
      return cut ? run_dualpipe_v(x.work, handover, x.ends)
                 : run_dualpipe(x.work, handover, x.ends);
    };
    const PipelineTimes before = run(c, c.handover);
    StageWork& grown = c.work[random() % c.work.size()][random() % c.work.front().size()];
    const Picoseconds more = 1 + static_cast<Picoseconds>(random() % 50);
    switch (random() % 3) {
      case 0:
        grown.forward += more;
        break;
      case 1:
        grown.backward += more;
        break;  // the input gradients' part grows
      default:
        c.ends[random() % c.ends.size()].lead += more;
    }
    EXPECT_GE(run(c, c.handover).makespan, before.makespan) << "round " << round;
    EXPECT_GE(run(c, c.handover + 5).makespan, before.makespan);
  }
}

TEST(DualPipeSchedule, RefusesOddStagesAndTooFewOrOddMicrobatches) {
  // DualPipe asserts an even rank count and an even number of microbatches, at least 2P.
  EXPECT_THROW(run_dualpipe(uniform(3, 8, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe(uniform(4, 6, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe(uniform(4, 9, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe(uniform(4, 8, {1, 2, 1}), 0, std::vector<StageEnds>(3)),
               std::invalid_argument);
  EXPECT_NO_THROW(run_dualpipe(uniform(4, 8, {1, 2, 1}), 0));
}

TEST(DualPipeVSchedule, RefusesOddChunksOneStageAndTooFewMicrobatches) {
  // dualpipev.py asserts at least 2P microbatches; each stage holds two chunks.
  EXPECT_THROW(run_dualpipe_v(uniform(5, 8, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe_v(uniform(2, 8, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe_v(uniform(6, 5, {1, 2, 1}), 0), std::invalid_argument);
  EXPECT_THROW(run_dualpipe_v(uniform(6, 6, {1, 2, 1}), 0, std::vector<StageEnds>(6)),
               std::invalid_argument);
  EXPECT_NO_THROW(run_dualpipe_v(uniform(6, 6, {1, 2, 1}), 0, std::vector<StageEnds>(3)));
}

}  // namespace
}  // namespace topoep
