// The 1F1B schedules of a step's microbatches through pipeline stages (sim/pipeline_schedule.h),
// non-interleaved and interleaved: their closed forms, a case worked by hand, the longest path
// through their dependencies, and that no stage's work finishing later can make the step end
// sooner.

#include "sim/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace topoep {
namespace {

std::vector<std::vector<StageWork>> uniform(int stages, int microbatches, Picoseconds forward,
                                            Picoseconds backward) {
  return std::vector<std::vector<StageWork>>(
      stages, std::vector<StageWork>(microbatches, StageWork{forward, backward}));
}

TEST(PipelineSchedule, OneStageRunsItsMicrobatchesOneAfterTheOther) {
  const std::vector<std::vector<StageWork>> work = {{{3, 7}, {5, 11}, {2, 1}}};
  const PipelineTimes times = run_one_f_one_b(work, 1000);
  EXPECT_EQ(times.makespan, 3 + 7 + 5 + 11 + 2 + 1);
  EXPECT_EQ(times.busy, std::vector<Picoseconds>{29});
  EXPECT_EQ(times.mean_idle(), 0);
}

TEST(PipelineSchedule, EvenStagesTakeMicrobatchesPlusStagesLessOneSlots) {
  // (M + P - 1) x (forward + backward) without hand-over time, more or fewer microbatches than
  // stages alike.
  for (const int stages : {2, 4, 7}) {
    for (const int microbatches : {1, 2, 4, 9}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(microbatches) +
                   " microbatches");
      const PipelineTimes times = run_one_f_one_b(uniform(stages, microbatches, 10, 20), 0);
      EXPECT_EQ(times.makespan, (microbatches + stages - 1) * 30);
      for (const Picoseconds busy : times.busy) EXPECT_EQ(busy, microbatches * 30);
      EXPECT_EQ(times.mean_idle(), (stages - 1) * 30);
    }
  }
}

TEST(PipelineSchedule, HandOversDelayTheWarmUpAndTheDrain) {
  // Worked by hand: 2 stages, 2 microbatches, forward 1, backward 2, hand-over 1.
  // Stage 0: F0 [0, 1], F1 [1, 2], B0 [6, 8] (after stage 1's B0 at 5, +1), B1 [9, 11].
  // Stage 1: F0 [2, 3], B0 [3, 5], F1 [5, 6], B1 [6, 8].
  const PipelineTimes times = run_one_f_one_b(uniform(2, 2, 1, 2), 1);
  EXPECT_EQ(times.makespan, 11);
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{6, 6}));
  EXPECT_EQ(times.mean_idle(), 5);
}

// The schedule's end as the longest path through its dependency graph: each operation after
// the one before it on its stage, a forward after the stage before's and a backward after the
// stage after's, each plus the hand-over. Another algorithm than run_one_f_one_b()'s passes.
Picoseconds longest_path(const std::vector<std::vector<StageWork>>& work, Picoseconds handover,
                         const std::vector<StageEnds>& ends) {
  const int stages = static_cast<int>(work.size());
  const int microbatches = static_cast<int>(work.front().size());
  // Stage s's order: F for the warm-up, then F, B pairs, then the B left.
  std::vector<std::vector<std::pair<bool, int>>> order(stages);
  for (int s = 0; s < stages; ++s) {
    const int warmup = std::min(stages - s - 1, microbatches);
    for (int m = 0; m < warmup; ++m) order[s].push_back({true, m});
    for (int m = warmup; m < microbatches; ++m) {
      order[s].push_back({true, m});
      order[s].push_back({false, m - warmup});
    }
    for (int m = microbatches - warmup; m < microbatches; ++m) order[s].push_back({false, m});
  }
  std::map<std::tuple<int, bool, int>, Picoseconds> memo;
  std::function<Picoseconds(int, bool, int)> end = [&](int s, bool forward, int m) {
    const auto key = std::make_tuple(s, forward, m);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    const auto& ops = order[s];
    const std::size_t i = static_cast<std::size_t>(
        std::find(ops.begin(), ops.end(), std::make_pair(forward, m)) - ops.begin());
    Picoseconds start = i > 0 ? end(s, ops[i - 1].first, ops[i - 1].second) : ends[s].lead;
    if (forward && s > 0) start = std::max(start, end(s - 1, true, m) + handover);
    if (!forward && s + 1 < stages) start = std::max(start, end(s + 1, false, m) + handover);
    const StageWork& w = work[s][m];
    return memo[key] = start + (forward ? w.forward : w.backward);
  };
  Picoseconds last = 0;
  for (int s = 0; s < stages; ++s) {
    last = std::max(last, end(s, false, microbatches - 1) + ends[s].tail);
  }
  return last;
}

// 1 to 6 stages of 1 to 9 microbatches, forwards under 100 ps and backwards under 200.
std::vector<std::vector<StageWork>> random_work(std::mt19937_64& random) {
  const int stages = 1 + static_cast<int>(random() % 6);
  const int microbatches = 1 + static_cast<int>(random() % 9);
  std::vector<std::vector<StageWork>> work(stages, std::vector<StageWork>(microbatches));
  for (auto& row : work) {
    for (StageWork& w : row) {
      w = {static_cast<Picoseconds>(random() % 100), static_cast<Picoseconds>(random() % 200)};
    }
  }
  return work;
}

TEST(PipelineSchedule, EndsWhereTheLongestPathThroughItsDependenciesEnds) {
  std::mt19937_64 random(5);
  for (int round = 0; round < 300; ++round) {
    const std::vector<std::vector<StageWork>> work = random_work(random);
    const Picoseconds handover = static_cast<Picoseconds>(random() % 30);
    std::vector<StageEnds> ends(work.size());
    for (StageEnds& e : ends) {
      e = {static_cast<Picoseconds>(random() % 150), static_cast<Picoseconds>(random() % 150)};
    }
    EXPECT_EQ(run_one_f_one_b(work, handover, ends).makespan, longest_path(work, handover, ends))
        << "round " << round;
  }
  // With hand-overs a microbatch's round trip, P (F + B) + 2 (P - 1) x the hand-over, outlasts
  // the P microbatches stage 0 holds in flight: the steady state slows, beyond
  // (M + P - 1)(F + B) + 2 (P - 1) x the hand-over (348 here).
  EXPECT_EQ(run_one_f_one_b(uniform(4, 8, 10, 20), 3).makespan, 378);
}

TEST(PipelineSchedule, TheSlowestStageSetsThePace) {
  // Stage 1 twice as slow as its neighbours: the step is its 16 microbatches (960), stage 0's
  // first forward before them and last backward after them, and one forward's wait.
  std::vector<std::vector<StageWork>> work = uniform(3, 16, 10, 20);
  for (StageWork& w : work[1]) w = {20, 40};
  const PipelineTimes times = run_one_f_one_b(work, 0);
  EXPECT_EQ(times.makespan, 1000);
  EXPECT_EQ(times.makespan, longest_path(work, 0, std::vector<StageEnds>(3)));
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{480, 960, 480}));
}

TEST(PipelineSchedule, LeadsHideWhileAStageWaitsAndTailsHoldUpNoOtherStage) {
  // 3 stages, 4 microbatches, forward 10, backward 20: stage 1 waits 10 for its first
  // microbatch and stage 2 waits 20, so leads up to that hide; stages 2, 1 and 0 end their last
  // backwards at 140, 160 and 180, so tails up to 40 and 20 hide on stages 2 and 1. Stage 0's
  // lead and tail show whole.
  const std::vector<std::vector<StageWork>> work = uniform(3, 4, 10, 20);
  const Picoseconds plain = run_one_f_one_b(work, 0).makespan;
  EXPECT_EQ(plain, 6 * 30);
  EXPECT_EQ(run_one_f_one_b(work, 0, {{0, 0}, {10, 20}, {20, 40}}).makespan, plain);
  EXPECT_EQ(run_one_f_one_b(work, 0, {{0, 0}, {0, 0}, {0, 41}}).makespan, plain + 1);
  EXPECT_EQ(run_one_f_one_b(work, 0, {{0, 0}, {11, 0}, {0, 0}}).makespan, plain + 1);
  EXPECT_EQ(run_one_f_one_b(work, 0, {{7, 0}, {0, 0}, {0, 0}}).makespan, plain + 7);
  EXPECT_EQ(run_one_f_one_b(work, 0, {{0, 5}, {0, 0}, {0, 0}}).makespan, plain + 5);
  const PipelineTimes times = run_one_f_one_b(work, 0, {{1, 2}, {3, 4}, {5, 6}});
  EXPECT_EQ(times.busy, (std::vector<Picoseconds>{123, 127, 131}));
}

TEST(PipelineSchedule, MoreWorkAnywhereNeverEndsTheStepSooner) {
  std::mt19937_64 random(11);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::vector<StageWork>> work = random_work(random);
    const Picoseconds handover = static_cast<Picoseconds>(random() % 20);
    const PipelineTimes before = run_one_f_one_b(work, handover);
    StageWork& grown = work[random() % work.size()][random() % work.front().size()];
    (random() % 2 ? grown.forward : grown.backward) += 1 + static_cast<Picoseconds>(random() % 50);
    EXPECT_GE(run_one_f_one_b(work, handover).makespan, before.makespan) << "round " << round;
    EXPECT_GE(run_one_f_one_b(work, handover + 5).makespan, before.makespan);
  }
}

// Megatron-LM's interleaved order for `stage`, built another way than pipeline_schedule.cc's:
// the stage's forwards as a list (microbatch groups of P, chunks first to last within a group,
// microbatches within a chunk), its backwards as the same with the chunks reversed, then merged
// as warm-up forwards, forward-backward pairs and the backwards left. {forward, chunk, mb}.
std::vector<std::tuple<bool, int, int>> interleaved_reference_order(int stage, int stages,
                                                                    int chunks, int microbatches) {
  std::vector<std::tuple<bool, int, int>> forwards, backwards;
  for (int group = 0; group < microbatches / stages; ++group) {
    for (int v = 0; v < chunks; ++v) {
      for (int i = 0; i < stages; ++i) {
        forwards.emplace_back(true, v * stages + stage, group * stages + i);
        backwards.emplace_back(false, (chunks - 1 - v) * stages + stage, group * stages + i);
      }
    }
  }
  const int total = static_cast<int>(forwards.size());
  const int warmup = microbatches == stages
                         ? total
                         : std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  std::vector<std::tuple<bool, int, int>> order(forwards.begin(), forwards.begin() + warmup);
  for (int k = 0; k + warmup < total; ++k) {
    order.push_back(forwards[warmup + k]);
    order.push_back(backwards[k]);
  }
  order.insert(order.end(), backwards.begin() + (total - warmup), backwards.end());
  return order;
}

// The interleaved schedule's end as the longest path through its dependencies (each operation
// after the one before it on its stage; a chunk's forward after the chunk before's, a backward
// after the chunk after's, each plus the hand-over), by memoised recursion.
Picoseconds interleaved_longest_path(const std::vector<std::vector<StageWork>>& work, int stages,
                                     Picoseconds handover, const std::vector<StageEnds>& ends) {
  const int chunks_total = static_cast<int>(work.size());
  const int microbatches = static_cast<int>(work.front().size());
  std::vector<std::vector<std::tuple<bool, int, int>>> order(stages);
  for (int s = 0; s < stages; ++s) {
    order[s] = interleaved_reference_order(s, stages, chunks_total / stages, microbatches);
  }
  std::map<std::tuple<bool, int, int>, Picoseconds> memo;
  std::function<Picoseconds(bool, int, int)> end = [&](bool forward, int chunk, int m) {
    const auto key = std::make_tuple(forward, chunk, m);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    const int s = chunk % stages;
    const auto& ops = order[s];
    const std::size_t i =
        static_cast<std::size_t>(std::find(ops.begin(), ops.end(), key) - ops.begin());
    Picoseconds start = ends[s].lead;
    if (i > 0)
      start = end(std::get<0>(ops[i - 1]), std::get<1>(ops[i - 1]), std::get<2>(ops[i - 1]));
    if (forward && chunk > 0) start = std::max(start, end(true, chunk - 1, m) + handover);
    if (!forward && chunk + 1 < chunks_total) {
      start = std::max(start, end(false, chunk + 1, m) + handover);
    }
    const StageWork& w = work[chunk][m];
    return memo[key] = start + (forward ? w.forward : w.backward);
  };
  Picoseconds last = 0;
  for (int s = 0; s < stages; ++s) {
    const auto& [forward, chunk, m] = order[s].back();
    last = std::max(last, end(forward, chunk, m) + ends[s].tail);
  }
  return last;
}

TEST(InterleavedSchedule, EvenChunksCutTheFillAndDrainByTheChunksAStageHolds) {
  // (M V + P - 1) x (forward + backward) of one chunk without hand-over time: the same work as
  // 1F1B's M (F + B) of a whole stage, with 1F1B's fill and drain of P - 1 slots a V-th as long.
  for (const int stages : {2, 3, 4}) {
    for (const int chunks : {2, 3, 5}) {
      for (const int microbatches : {stages, 2 * stages, 4 * stages}) {
        SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(chunks) +
                     " chunks a stage, " + std::to_string(microbatches) + " microbatches");
        const PipelineTimes times =
            run_interleaved_one_f_one_b(uniform(stages * chunks, microbatches, 10, 20), stages, 0);
        EXPECT_EQ(times.makespan, (microbatches * chunks + stages - 1) * 30);
        for (const Picoseconds busy : times.busy) EXPECT_EQ(busy, microbatches * chunks * 30);
        EXPECT_EQ(times.mean_idle(), (stages - 1) * 30);
        const PipelineTimes plain =
            run_one_f_one_b(uniform(stages, microbatches, 10 * chunks, 20 * chunks), 0);
        EXPECT_EQ(plain.mean_idle(), chunks * times.mean_idle());
      }
    }
  }
}

// An interleaved case: 2 to 5 stages of 1 to 4 chunks each, a multiple of the stages of
// microbatches (up to 3 groups), forwards under 100 ps and backwards under 200, and each
// stage's lead and tail under 150.
struct InterleavedCase {
  int stages = 0;
  std::vector<std::vector<StageWork>> work;  // [chunk][microbatch]
  std::vector<StageEnds> ends;
};
InterleavedCase random_interleaved(std::mt19937_64& random) {
  InterleavedCase c;
  c.stages = 2 + static_cast<int>(random() % 4);
  const int chunks = 1 + static_cast<int>(random() % 4);
  const int microbatches = c.stages * (1 + static_cast<int>(random() % 3));
  c.work.assign(c.stages * chunks, std::vector<StageWork>(microbatches));
  for (auto& row : c.work) {
    for (StageWork& w : row) {
      w = {static_cast<Picoseconds>(random() % 100), static_cast<Picoseconds>(random() % 200)};
    }
  }
  c.ends.resize(c.stages);
  for (StageEnds& e : c.ends) {
    e = {static_cast<Picoseconds>(random() % 150), static_cast<Picoseconds>(random() % 150)};
  }
  return c;
}

TEST(InterleavedSchedule, EndsWhereTheLongestPathThroughItsDependenciesEnds) {
  std::mt19937_64 random(17);
  for (int round = 0; round < 300; ++round) {
    const InterleavedCase c = random_interleaved(random);
    const Picoseconds handover = static_cast<Picoseconds>(random() % 30);
    const bool one_chunk = static_cast<int>(c.work.size()) == c.stages;
    const Picoseconds reference =
        one_chunk ? longest_path(c.work, handover, c.ends)
                  : interleaved_longest_path(c.work, c.stages, handover, c.ends);
    EXPECT_EQ(run_interleaved_one_f_one_b(c.work, c.stages, handover, c.ends).makespan, reference)
        << "round " << round << ": " << c.stages << " stages, " << c.work.size() << " chunks, "
        << c.work.front().size() << " microbatches";
  }
}

// The operations the schedule reports (for the timeline): per stage, every microbatch's
// forward and backward through each of its chunks once, one at a time, each as long as its
// work, the first after the lead; the latest end plus its stage's tail is the makespan.
TEST(InterleavedSchedule, ReportsEveryOperationOneAtATimeOnItsStage) {
  std::mt19937_64 random(29);
  for (int round = 0; round < 100; ++round) {
    const InterleavedCase c = random_interleaved(random);
    const PipelineTimes times = run_interleaved_one_f_one_b(c.work, c.stages, 9, c.ends);
    ASSERT_EQ(times.ops.size(), 2 * c.work.size() * c.work.front().size());
    std::vector<Picoseconds> free_at(c.stages);
    for (int s = 0; s < c.stages; ++s) free_at[s] = c.ends[s].lead;
    std::set<std::tuple<int, int, bool>> seen;
    Picoseconds makespan = 0;
    for (const PipelineOp& op : times.ops) {
      EXPECT_EQ(op.chunk % c.stages, op.stage);
      EXPECT_TRUE(seen.insert({op.chunk, op.microbatch, op.forward}).second);
      const StageWork& w = c.work[op.chunk][op.microbatch];
      EXPECT_EQ(op.end - op.start, op.forward ? w.forward : w.backward);
      EXPECT_GE(op.start, free_at[op.stage]) << "round " << round;
      free_at[op.stage] = op.end;
      makespan = std::max(makespan, op.end + c.ends[op.stage].tail);
    }
    EXPECT_EQ(times.makespan, makespan) << "round " << round;
  }
}

TEST(InterleavedSchedule, OneChunkAStageIsTheNonInterleavedSchedule) {
  std::mt19937_64 random(23);
  for (int round = 0; round < 50; ++round) {
    const std::vector<std::vector<StageWork>> work = random_work(random);
    const int stages = static_cast<int>(work.size());
    const PipelineTimes a = run_interleaved_one_f_one_b(work, stages, 7);
    const PipelineTimes b = run_one_f_one_b(work, 7);
    EXPECT_EQ(a.makespan, b.makespan);
    EXPECT_EQ(a.busy, b.busy);
  }
}

TEST(PipelineSchedule, StageSHoldsTheActivationsOfPLessSMicrobatches) {
  // 1F1B: stage s holds its warm-up's P - s - 1 forwards and the one before each backward, at
  // most the step's M; chunks of 2, 3 and 4 layers count as such.
  for (const int microbatches : {1, 2, 5, 9}) {
    const PipelineTimes times = run_one_f_one_b(uniform(3, microbatches, 10, 20), 0);
    EXPECT_EQ(
        peak_activations(times, {2, 3, 4}),
        (std::vector<int>{2 * std::min(3, microbatches), 3 * std::min(2, microbatches), 4 * 1}))
        << microbatches << " microbatches";
  }
}

TEST(InterleavedSchedule, HoldsItsWarmUpAndOneMoreChunkForward) {
  // Stage s holds its warm-up's 2 (P - s - 1) + (V - 1) P chunk forwards and the one before
  // its first backward (every forward where M = P); one layer a chunk.
  for (const int stages : {2, 3, 4}) {
    for (const int chunks : {2, 3}) {
      for (const int microbatches : {stages, 2 * stages, 4 * stages}) {
        SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(chunks) +
                     " chunks a stage, " + std::to_string(microbatches) + " microbatches");
        const PipelineTimes times =
            run_interleaved_one_f_one_b(uniform(stages * chunks, microbatches, 10, 20), stages, 0);
        const std::vector<int> peak = peak_activations(times, std::vector<int>(stages * chunks, 1));
        for (int s = 0; s < stages; ++s) {
          const int total = microbatches * chunks;
          const int warmup =
              microbatches == stages ? total : 2 * (stages - s - 1) + (chunks - 1) * stages;
          EXPECT_EQ(peak[s], std::min(warmup + 1, total)) << "stage " << s;
        }
      }
    }
  }
}

TEST(InterleavedSchedule, RefusesChunksOrMicrobatchesThatDoNotDivideOverTheStages) {
  // 5 chunks over 2 stages; 6 microbatches over 4 stages (Megatron-LM asserts the same).
  EXPECT_THROW(run_interleaved_one_f_one_b(uniform(5, 4, 1, 2), 2, 0), std::invalid_argument);
  EXPECT_THROW(run_interleaved_one_f_one_b(uniform(8, 6, 1, 2), 4, 0), std::invalid_argument);
  EXPECT_NO_THROW(run_interleaved_one_f_one_b(uniform(8, 8, 1, 2), 4, 0));
}

TEST(PipelineSchedule, StagesSplitTheLayersContiguouslyTheFirstOnesHoldingTheRest) {
  EXPECT_EQ(stage_first_layers(58, 4), (std::vector<int>{0, 15, 30, 44, 58}));
  EXPECT_EQ(stage_first_layers(8, 8), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(stage_first_layers(5, 1), (std::vector<int>{0, 5}));
  EXPECT_EQ(stage_layer_counts(58, 4, {}), (std::vector<int>{15, 15, 14, 14}));
  EXPECT_EQ(stage_layer_counts(58, 4, {14, 15, 15, 14}), (std::vector<int>{14, 15, 15, 14}));
  EXPECT_EQ(stage_first_layers(58, 4, {14, 15, 15, 14}), (std::vector<int>{0, 14, 29, 44, 58}));
  EXPECT_EQ(stage_layer_counts(5, 1, {}), (std::vector<int>{5}));
}

}  // namespace
}  // namespace topoep
