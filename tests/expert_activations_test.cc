// The expert activations a GPU holds for its backward: the schedule walk (peak_gpu_tokens())
// against the layer-microbatch counts and a case worked by hand, and the replay's per-step
// figure against the records' own loads, one stage and pipelined.

#include "sim/expert_activations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/pipeline_schedule.h"
#include "sim/replay.h"
#include "tests/collected_steps.h"
#include "tests/sim_fixtures.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kPlanners = {"topoep", "eplb-microbatch", "static", "ideal"};

std::string temp_path(const std::string& name) {
  return (fs::path(::testing::TempDir()) / name).string();
}

// Work of `chunks` chunks x `microbatches`, uneven so that few operations tie.
std::vector<std::vector<StageWork>> uneven_work(int chunks, int microbatches) {
  std::vector<std::vector<StageWork>> work(chunks, std::vector<StageWork>(microbatches));
  for (int c = 0; c < chunks; ++c) {
    for (int m = 0; m < microbatches; ++m) {
      const Picoseconds f = 10 + 3 * c + (m % 3);
      work[c][m] = {f, 2 * f, f};
    }
  }
  return work;
}

TEST(ExpertActivations, EvenTokensHoldThePeakLayerMicrobatchesTimesALayersTokens) {
  const TokenCount per_layer = 7;
  const auto check = [&](const PipelineTimes& times, const std::vector<int>& chunk_layers) {
    const std::vector<int> layers = peak_activations(times, chunk_layers);
    const std::vector<TokenCount> tokens = peak_gpu_tokens(times, [&](int chunk, int) {
      return std::vector<TokenCount>(3, chunk_layers[chunk] * per_layer);
    });
    ASSERT_EQ(tokens.size(), layers.size());
    for (std::size_t s = 0; s < layers.size(); ++s) {
      EXPECT_EQ(tokens[s], layers[s] * per_layer) << "stage " << s;
    }
  };
  for (int stages = 1; stages <= 4; ++stages) {
    SCOPED_TRACE(std::to_string(stages) + " stages");
    const std::vector<int> one_chunk(stages, 2);
    check(run_one_f_one_b(uneven_work(stages, 8), 1), one_chunk);
    check(run_one_f_one_b(uneven_work(stages, 8), 1, {}, /*combined=*/true), one_chunk);
    const std::vector<int> two_chunks(2 * stages, 3);
    check(run_interleaved_one_f_one_b(uneven_work(2 * stages, 2 * stages), stages, 1), two_chunks);
    if (stages % 2 == 0) {
      check(run_dualpipe(uneven_work(stages, 2 * stages), 1), one_chunk);
    }
    if (stages >= 2) check(run_dualpipe_v(uneven_work(2 * stages, 2 * stages), 1), two_chunks);
  }
}

TEST(ExpertActivations, AHotGpuThatMovesBetweenMicrobatchesHoldsLessThanTheSumOfTheBusiest) {
  // Two stages of one chunk, two microbatches, two GPUs a stage. Stage 0 runs F0 F1 B0 B1 and
  // holds both microbatches at once; stage 1 runs F0 B0 F1 B1 and holds one at a time.
  const PipelineTimes times = run_one_f_one_b(uneven_work(2, 2), 1);
  const std::vector<TokenCount> peaks = peak_gpu_tokens(times, [](int chunk, int m) {
    // The hot GPU changes with the microbatch: 5 + 1 on each GPU, not 5 + 5.
    if (chunk == 0) return m == 0 ? std::vector<TokenCount>{5, 1} : std::vector<TokenCount>{1, 5};
    return m == 0 ? std::vector<TokenCount>{4, 2} : std::vector<TokenCount>{3, 9};
  });
  EXPECT_EQ(peaks, (std::vector<TokenCount>{6, 9}));
}

// Records with two planners: planner 0 processing `loads` (one row a record), planner 1 without
// loads (the ideal).
std::vector<RecordResult> records_with_loads(const std::vector<std::vector<TokenCount>>& loads) {
  std::vector<RecordResult> records(loads.size());
  for (std::size_t r = 0; r < loads.size(); ++r) {
    records[r].planners.resize(2);
    records[r].planners[0].loads = loads[r];
  }
  return records;
}

TEST(ExpertActivations, OneStageHoldsEachMicrobatchsLayersTheIdealTheirMeanRoundedDown) {
  // Two microbatches of two layers on two GPUs; planner 0 with loads, planner 1 without (the
  // ideal), from planner 0's.
  const std::vector<RecordResult> records = records_with_loads({{5, 1}, {1, 4}, {2, 2}, {6, 1}});
  // Each microbatch forward, then backward.
  const PipelineTimes one_stage = schedule_order(SimOptions{}, 1, 2);
  // Microbatch 0 holds {6, 5}, microbatch 1 {8, 3}.
  using Peaks = std::vector<TokenCount>;
  EXPECT_EQ(peak_expert_tokens(records, 0, 0, 2, {0, 2}, one_stage), Peaks{8});
  // The mean, rounded down, a layer: 3 + 2, then 2 + 3.
  EXPECT_EQ(peak_expert_tokens(records, 1, 0, 2, {0, 2}, one_stage), Peaks{5});
  EXPECT_EQ(peak_expert_tokens(records, 1, -1, 2, {0, 2}, one_stage), Peaks{0});
}

TEST(ExpertActivations, AnEarlyLayersBuffersCountBeforeTheLayersAfterItAreHeld) {
  // One microbatch of two layers on two GPUs, 10 bytes kept and 8 of forward buffers an
  // assignment. GPU 0 processes 9 assignments in layer 0 and 1 in layer 1: as layer 0's forward
  // runs it holds 90 kept and 72 of buffers (162), more than the 100 + 8 as layer 1's runs.
  const std::vector<RecordResult> records = records_with_loads({{9, 1}, {1, 1}});
  const PipelineTimes one_stage = schedule_order(SimOptions{}, 1, 1);
  using Peaks = std::vector<Bytes>;
  EXPECT_EQ(peak_expert_bytes(records, 0, 0, 2, {0, 2}, one_stage, 10, {8, 0}), Peaks{162});
  // Without buffers, what peak_expert_tokens() holds at 10 bytes an assignment.
  EXPECT_EQ(peak_expert_bytes(records, 0, 0, 2, {0, 2}, one_stage, 10, {0, 0}), Peaks{100});
  EXPECT_EQ(peak_expert_tokens(records, 0, 0, 2, {0, 2}, one_stage), std::vector<TokenCount>{10});
  // The ideal holds the mean a layer (5, then 1) on both GPUs: 60, then 5 x 8 - 10 on top.
  EXPECT_EQ(peak_expert_bytes(records, 1, 0, 2, {0, 2}, one_stage, 10, {8, 0}), Peaks{90});
  // The backward runs layer 1 first and lets its activations go before layer 0's runs: 30 bytes
  // of buffers an assignment make 100 + 9 x 30 - 10 on GPU 0 then, more than 100 + 1 x 30.
  EXPECT_EQ(peak_expert_bytes(records, 0, 0, 2, {0, 2}, one_stage, 10, {8, 30}), Peaks{360});
}

TEST(ExpertActivations, TokenBuffersFollowTheLayersWidthsAndTheDispatcher) {
  ModelSpec model;  // DeepSeek-V3's expert: h 7168, f 2048, bf16 activations
  model.hidden_size = 7168;
  model.expert_ffn_size = 2048;
  model.combine_bytes = 2;
  // The output and its copy sorted back; in the backward the output gradient and its copy.
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 8).forward, 28672);
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 8).backward, 28672);
  // One local expert: Megatron-LM sorts nothing back; the up projection's input gradient
  // beside the gated activation's (2f + h) is then the backward's most.
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 1).forward, 14336);
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 1).backward, 22528);
  // DeepEP's copies hold a token once a GPU: left out.
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kDeepEP, 8).forward, 14336);
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kDeepEP, 8).backward, 22528);
  // Mixtral's wide experts (h 4096, f 14336): the gated activation's gradients, 3f.
  model.hidden_size = 4096;
  model.expert_ffn_size = 14336;
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 1).forward, 8192);
  EXPECT_EQ(token_buffer_bytes(model, Dispatcher::kPerAssignment, 1).backward, 86016);
}

// 2 nodes x 8 GPUs, 64 experts, top-8, 4 layers, 4 microbatches, 2 steps.
std::string skewed_trace() {
  static const std::string path = write_skewed_trace(temp_path("expert_activations_trace"), 11);
  return path;
}

SimConfig config_with(int stages) {
  SimConfig config;
  config.topology = round_topology(2, 8);
  config.model = round_model(64, 8);
  config.planners = kPlanners;
  config.options.pipeline_stages = stages;
  return config;
}

std::vector<StepResult> replayed(const std::string& trace, const SimConfig& config) {
  return replayed_steps(trace, config, 1);
}

TEST(ExpertActivations, OneStageHoldsOneMicrobatchsLayersAndTheIdealTheMean) {
  const SimConfig config = config_with(1);
  const std::vector<StepResult> steps = replayed(skewed_trace(), config);
  ASSERT_EQ(steps.size(), 2u);
  const Bytes per_token = (1024 + 3 * 512) * 2;  // round_model(): h 1024, f 512, bf16
  EXPECT_EQ(config.model.expert_activation_bytes_per_token(), per_token);
  // Recomputing the gated activation drops its output, f elements.
  EXPECT_EQ(config.model.expert_activation_bytes_per_token(true), (1024 + 2 * 512) * 2);
  for (const StepResult& step : steps) {
    for (std::size_t p = 0; p < kPlanners.size(); ++p) {
      SCOPED_TRACE(kPlanners[p] + " step " + std::to_string(step.step));
      TokenCount want = 0, ideal = 0;
      for (int m = 0; m < 4; ++m) {
        std::vector<TokenCount> held(16, 0);
        TokenCount mean = 0;
        for (int layer = 0; layer < 4; ++layer) {
          const RecordResult& record = step.records[m * 4 + layer];
          const std::vector<TokenCount>& loads = record.planners[2].loads;  // static's
          TokenCount total = 0;
          for (const TokenCount t : loads) total += t;
          mean += total / 16;
          if (kPlanners[p] == "ideal") continue;
          const std::vector<TokenCount>& own = record.planners[p].loads;
          for (int g = 0; g < 16; ++g) held[g] += own[g];
        }
        want = std::max(want, *std::max_element(held.begin(), held.end()));
        ideal = std::max(ideal, mean);
      }
      const StepTotals& totals = step.planners[p];
      EXPECT_EQ(totals.peak_expert_tokens, kPlanners[p] == "ideal" ? ideal : want);
      EXPECT_EQ(totals.peak_expert_activation_bytes(), totals.peak_expert_tokens * per_token);
      EXPECT_LE(step.planners[3].peak_expert_tokens, totals.peak_expert_tokens);  // the ideal
    }
    // TopoEP levels the skewed loads: its busiest GPU holds less than static's.
    EXPECT_LT(step.planners[0].peak_expert_tokens, step.planners[2].peak_expert_tokens);
  }
}

TEST(ExpertActivations, PipelineStagesHoldTheirPeakLayerMicrobatchesOfEvenRouting) {
  // Each GPU processes 16 x 4 x 8 token assignments a layer.
  const std::string trace =
      write_uniform_trace(temp_path("expert_activations_uniform"), 8, /*layers=*/4, 4);
  const TokenCount per_layer = 16 * 4 * 8;
  // One stage, whose microbatches pair up with the all-to-alls behind compute (two held at
  // once), and 2 and 4 stages by 1F1B, then combined.
  for (const double overlap : {0.0, 1.0}) {
    for (const int stages : {1, 2, 4}) {
      SCOPED_TRACE(std::to_string(stages) + " stages, overlap " + std::to_string(overlap));
      SimConfig config = config_with(stages);
      config.options.a2a_overlap_fraction = overlap;
      const std::vector<StepResult> steps = replayed(trace, config);
      ASSERT_EQ(steps.size(), 1u);
      const std::vector<int> layers = pipeline_peak_activations(
          config.options, std::vector<int>(stages, 4 / stages), /*microbatches=*/4);
      const TokenCount want = *std::max_element(layers.begin(), layers.end()) * per_layer;
      if (stages == 1) {
        EXPECT_EQ(want, (overlap > 0 ? 2 : 1) * 4 * per_layer);
      }
      // Even routing: no planner moves a token, and every GPU holds the same; stage by stage,
      // its layer-microbatches' tokens.
      const Bytes per_token = config.model.expert_activation_bytes_per_token();
      for (std::size_t p = 0; p < kPlanners.size(); ++p) {
        const StepTotals& totals = steps[0].planners[p];
        EXPECT_EQ(totals.peak_expert_tokens, want) << kPlanners[p];
        ASSERT_EQ(totals.stage_memory.size(), layers.size());
        for (std::size_t s = 0; s < layers.size(); ++s) {
          EXPECT_EQ(totals.stage_memory[s].expert_activations, layers[s] * per_layer * per_token)
              << kPlanners[p] << " stage " << s;
        }
      }
    }
  }
}

TEST(ExpertActivations, PipelinedPeaksBoundEveryPlannerByTheIdealAndTopoepHoldsLessThanStatic) {
  for (const int stages : {2, 4}) {
    SCOPED_TRACE(std::to_string(stages) + " stages");
    const std::vector<StepResult> steps = replayed(skewed_trace(), config_with(stages));
    for (const StepResult& step : steps) {
      for (std::size_t p = 0; p < kPlanners.size(); ++p) {
        EXPECT_LE(step.planners[3].peak_expert_tokens, step.planners[p].peak_expert_tokens)
            << kPlanners[p];
      }
      EXPECT_LT(step.planners[0].peak_expert_tokens, step.planners[2].peak_expert_tokens);
    }
  }
}

}  // namespace
}  // namespace topoep
