// The memory one GPU holds (sim/gpu_memory.h): its model state by hand, the spare slots, the
// parameters each pipeline layout puts on a stage's GPUs, and the replay's per-stage figures.

#include "sim/gpu_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/cost_model.h"
#include "sim/replay.h"
#include "sim/run_summary.h"
#include "tests/collected_steps.h"
#include "tests/sim_fixtures.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

// round_model() with dense-only layers and untied embeddings, so that the first and last
// stages hold more than the others.
ModelSpec model_with_ends() {
  ModelSpec model = round_model(64, 8);
  model.dense_layers = 2;
  model.dense_ffn_size = 2048;
  model.vocab_size = 1000;
  return model;
}

CostModel cost_model(const SimOptions& options) {
  return CostModel(round_topology(2, 8), model_with_ends(), options, 64);
}

TEST(GpuMemory, ModelStateIsAWeightAndAGradientPerParameterHeldAndStatePerParameterOwned) {
  const ModelSpec model = round_model(64, 8);  // bf16 weights
  SimOptions options;
  options.dense_grad_bytes = 4;
  options.optimizer_state_bytes_per_param = 12;
  const StageParameters parameters{2, 100, 40};
  EXPECT_EQ(model_state_bytes(parameters, model, options), 100 * (2 + 4) + 40 * 12);
  // Without the data-parallel traffic the gradients are still held, as wide as the weights.
  options.dense_grad_bytes = 0;
  options.optimizer_state_bytes_per_param = 8;
  EXPECT_EQ(model_state_bytes(parameters, model, options), 100 * (2 + 2) + 40 * 8);
}

TEST(GpuMemory, EachSpareSlotHoldsAnExpertsWeightsAndGradientsOnEveryLayer) {
  const ModelSpec model = round_model(64, 8);
  const Bytes expert = 3LL * 1024 * 512 * 2;  // gate, up and down in bf16
  EXPECT_EQ(spare_slot_bytes(model, 1, 1), 2 * expert);
  EXPECT_EQ(spare_slot_bytes(model, 2, 3), 2 * 3 * 2 * expert);
  EXPECT_EQ(spare_slot_bytes(model, 0, 3), 0);
}

TEST(GpuMemory, StaticAndTheIdealReserveNoSlots) {
  EXPECT_FALSE(planner_reserves_slots("static"));
  EXPECT_FALSE(planner_reserves_slots("ideal"));
  for (const char* planner : {"topoep", "topoep-flat", "eplb", "eplb-microbatch", "shadowing"}) {
    EXPECT_TRUE(planner_reserves_slots(planner)) << planner;
  }
}

TEST(GpuMemory, OneStageHoldsEveryParameterOfItsLayersAndItsHomeExperts) {
  const ModelSpec model = model_with_ends();
  const CostModel cost = cost_model(SimOptions{});
  const double homes = 4 * model.expert_params();  // 64 experts on 16 GPUs
  const std::vector<StageParameters> one = cost.pipeline_parameters({4}, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].layers, 4);
  // Four MoE layers' attention and home experts, both dense-only layers, embedding and head.
  const double all = 4 * (1e6 + homes) + 2 * (1e6 + 3.0 * 1024 * 2048) + 2 * 1024.0 * 1000;
  EXPECT_DOUBLE_EQ(one[0].held, all);
  EXPECT_DOUBLE_EQ(one[0].owned, one[0].held);  // every GPU updates all it holds
}

TEST(GpuMemory, PipelineStagesShareTheParametersAndDualPipeHoldsTwoChunks) {
  const ModelSpec model = model_with_ends();
  const double homes = 4 * model.expert_params();
  SimOptions options;
  options.pipeline_stages = 2;
  const std::vector<StageParameters> two = cost_model(options).pipeline_parameters({2, 2}, 2);
  ASSERT_EQ(two.size(), 2u);
  // The first stage holds the dense-only layers and the embedding, the last the head.
  EXPECT_DOUBLE_EQ(two[0].held, 2 * (1e6 + homes) + 2 * (1e6 + 3.0 * 1024 * 2048) + 1024e3);
  EXPECT_DOUBLE_EQ(two[1].held, 2 * (1e6 + homes) + 1024e3);
  EXPECT_DOUBLE_EQ(two[0].held + two[1].held,
                   cost_model(SimOptions{}).pipeline_parameters({4}, 1)[0].held);
  // DualPipe: each stage's GPUs hold their chunk and its mirror's, so all four layers.
  options.pipeline_schedule = PipelineSchedule::kDualPipe;
  const std::vector<StageParameters> dual = cost_model(options).pipeline_parameters({2, 2}, 2);
  for (const StageParameters& stage : dual) {
    EXPECT_EQ(stage.layers, 4);
    EXPECT_DOUBLE_EQ(stage.held, cost_model(SimOptions{}).pipeline_parameters({4}, 1)[0].held);
  }
}

TEST(GpuMemory, TheDistributedOptimizerSharesTheStateNotTheParameters) {
  const ModelSpec model = model_with_ends();
  const double homes = 4 * model.expert_params();
  SimOptions options;
  options.dense_sync = DenseSync::kDistributedOptimizer;
  options.data_parallel = 2;
  const StageParameters stage = cost_model(options).pipeline_parameters({4}, 1)[0];
  EXPECT_DOUBLE_EQ(stage.held, cost_model(SimOptions{}).pipeline_parameters({4}, 1)[0].held);
  // Each GPU of the 2 x 16 updates 1/32 of the dense parameters and half its home experts.
  const double dense = stage.held - 4 * homes;
  EXPECT_DOUBLE_EQ(stage.owned, dense / 32 + 4 * homes / 2);
}

std::string skewed_trace() {
  static const std::string path =
      write_skewed_trace((fs::path(::testing::TempDir()) / "gpu_memory_trace").string(), 5);
  return path;
}

TEST(GpuMemory, TheReplayGivesEachStagesModelStateSlotsAndExpertActivations) {
  const std::vector<std::string> planners = {"topoep", "eplb-microbatch", "static", "ideal"};
  SimConfig config;
  config.topology = round_topology(2, 8);
  config.model = model_with_ends();
  config.planners = planners;
  config.slots_per_rank = 2;
  config.options.pipeline_stages = 2;
  const std::vector<StepResult> steps = replayed_steps(skewed_trace(), config, 1);
  ASSERT_EQ(steps.size(), 2u);
  const std::vector<StageParameters> parameters =
      CostModel(config.topology, config.model, config.options, 512).pipeline_parameters({2, 2}, 2);
  RunSummary summary(planners);
  for (const StepResult& step : steps) {
    summary.add(step);
    for (std::size_t p = 0; p < planners.size(); ++p) {
      SCOPED_TRACE(planners[p] + " step " + std::to_string(step.step));
      const std::vector<StageMemory>& stages = step.planners[p].stage_memory;
      ASSERT_EQ(stages.size(), 2u);
      const bool slots = planners[p] != "static" && planners[p] != "ideal";
      for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(stages[s].model_state,
                  model_state_bytes(parameters[s], config.model, config.options));
        EXPECT_EQ(stages[s].spare_slots, slots ? spare_slot_bytes(config.model, 2, 2) : 0);
        EXPECT_GT(stages[s].expert_activations, 0);
      }
      EXPECT_EQ(step.planners[p].peak_expert_activation_bytes(),
                std::max(stages[0].expert_activations, stages[1].expert_activations));
    }
  }
  // The run keeps each stage's most expert activations of any step, and names the stage whose
  // GPU holds the most in all: the first, which holds the dense-only layers and two
  // microbatches' activations under 1F1B.
  for (std::size_t p = 0; p < planners.size(); ++p) {
    const PlannerRunSummary& run = summary.planners()[p];
    ASSERT_EQ(run.stage_memory.size(), 2u);
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(run.stage_memory[s].expert_activations,
                std::max(steps[0].planners[p].stage_memory[s].expert_activations,
                         steps[1].planners[p].stage_memory[s].expert_activations));
    }
    EXPECT_EQ(run.busiest_memory_stage(), 0) << planners[p];
    EXPECT_EQ(run.busiest_memory().total(),
              std::max(run.stage_memory[0].total(), run.stage_memory[1].total()));
  }
}

}  // namespace
}  // namespace topoep
