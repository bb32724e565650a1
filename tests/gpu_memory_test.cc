// The memory one GPU holds (sim/gpu_memory.h): its model state by hand, the spare slots, the
// parameters each pipeline layout puts on a stage's GPUs, the dense activations a layer keeps
// and a schedule holds, and the replay's per-stage figures.

#include "sim/gpu_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "models/model_json.h"
#include "sim/cost_model.h"
#include "sim/deepep_buffers.h"
#include "sim/replay.h"
#include "sim/run_summary.h"
#include "solver/input_error.h"
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

TEST(GpuMemory, MtpModulesPutTheirProjectionAndAnEmbeddingOnTheLastStage) {
  const ModelSpec model = model_with_ends();
  const double homes = 4 * model.expert_params();
  SimOptions options;
  options.pipeline_stages = 2;
  options.mtp_layers = 1;
  // The trace's 4 layers stand for 5 routed layers (4 MoE layers and the module's block): each
  // carries a fifth of the dense-only layers, embedding, head and projection (2 x 1024^2).
  const std::vector<StageParameters> two = cost_model(options).pipeline_parameters({2, 2}, 2);
  ASSERT_EQ(two.size(), 2u);
  const double embedding = 1024e3, projection = 2.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(two[0].held,
                   2 * (1e6 + homes) + (2 * (1e6 + 3.0 * 1024 * 2048) + embedding) * 4 / 5);
  // The last stage: the head, the projection, and an embedding of its own for the module.
  EXPECT_DOUBLE_EQ(two[1].held, 2 * (1e6 + homes) + (embedding + projection + embedding) * 4 / 5);
  // Tied, the head is that embedding.
  ModelSpec tied = model;
  tied.tied_embeddings = true;
  const CostModel tied_cost(round_topology(2, 8), tied, options, 64);
  EXPECT_DOUBLE_EQ(tied_cost.pipeline_parameters({2, 2}, 2)[1].held,
                   2 * (1e6 + homes) + (embedding + projection) * 4 / 5);
}

TEST(GpuMemory, MtpModulesNeedTheOutputHeadAndAtMost64) {
  SimOptions options;
  options.mtp_layers = 1;
  ModelSpec headless = model_with_ends();
  headless.vocab_size = 0;
  try {
    CostModel(round_topology(2, 8), headless, options, 64);
    FAIL() << "a model without a head took an MTP module";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "mtp_layers");
    EXPECT_NE(std::string(e.what()).find("vocab_size is 0"), std::string::npos) << e.what();
  }
  options.mtp_layers = 65;
  EXPECT_THROW(cost_model(options), InputError);
  options.mtp_layers = -1;
  EXPECT_THROW(cost_model(options), InputError);
}

TEST(GpuMemory, MtpModulesKeepAnotherHeadPassAndTheirNormsOnTheLastChunk) {
  SimOptions options;
  options.pipeline_stages = 2;
  options.mtp_layers = 1;
  const CostModel cost = cost_model(options);
  const ModelSpec& m = cost.model();
  const Bytes layer = 64 * m.moe_layer_dense_activation_bytes_per_token(false, false);
  const double dense_only = 2 * 64.0 * m.dense_layer_activation_bytes_per_token(false, false);
  // Per token: two head passes (the final norm's input and output, the fp32 softmax) and the
  // module's two norms' inputs and outputs (4 x 1024 bf16), and for the moment a loss runs its
  // bf16 logits and their fp32 copy, once (the losses run one after the other): a fifth of it
  // per layer as above.
  const double end = 64.0 * (2 * (2 * 1024 * 2 + 1000 * 4) + 4 * 1024 * 2 + 1000 * 6);
  const std::vector<Bytes> held =
      dense_activation_bytes(cost, {2, 2}, schedule_order(options, 2, 4));
  EXPECT_EQ(held, (std::vector<Bytes>{2 * (2 * layer + std::llround(dense_only * 4 / 5)),
                                      2 * layer + std::llround(end * 4 / 5)}));
  EXPECT_EQ(m.mtp_activation_bytes_per_token(true), 2 * 1024 * 2);
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

TEST(GpuMemory, AttentionKeepsItsInputQueryKeysValuesAndOutputForTheBackward) {
  ModelSpec m = round_model(64, 8);  // hidden 1024
  m.attention_heads = 8;
  m.attention_qk_head_dim = m.attention_v_head_dim = 64;
  m.attention_kv_heads = 2;
  // The input and its normed form (1024 each), the query (8 x 64), keys and values (2 x 64
  // each), the output (8 x 64), at 2 bytes; the softmax statistics, 4 bytes a head.
  EXPECT_EQ(m.attention_activation_bytes_per_token(false, false),
            (1024 + 1024 + 512 + 256 + 512) * 2 + 8 * 4);
  EXPECT_EQ(m.attention_activation_bytes_per_token(true, false),
            (1024 + 512 + 256 + 512) * 2 + 8 * 4);
  // Up-projections are MLA's: grouped-query attention keeps its query, keys and values.
  EXPECT_EQ(m.attention_activation_bytes_per_token(false, true),
            m.attention_activation_bytes_per_token(false, false));
  EXPECT_EQ(m.up_projection_flops_per_token(), 0.0);
  // Without grouping, keys and values span every head.
  m.attention_kv_heads = 0;
  EXPECT_EQ(m.attention_activation_bytes_per_token(false, false),
            (1024 + 1024 + 512 + 1024 + 512) * 2 + 8 * 4);
}

TEST(GpuMemory, DeepSeekV3KeepsItsLatentsAndCanRecomputeItsUpProjections) {
  const ModelSpec m = load_model("deepseek-v3");
  // The input and its normed form (2 x 7168), the query latent and its normed form (2 x 1536),
  // the key-value latent with its RoPE key (576) and its normed form (512), the query and keys
  // (2 x 128 x 192), the values and the output (2 x 128 x 128): 100,416 bf16 elements; the
  // softmax statistics, 128 fp32.
  EXPECT_EQ(m.attention_activation_bytes_per_token(false, false), 100416 * 2 + 128 * 4);
  // Norms and up-projections recomputed: the input, both latents and the output, 25,664.
  EXPECT_EQ(m.attention_activation_bytes_per_token(true, true), 25664 * 2 + 128 * 4);
  // A MoE layer adds the norm before the experts (its input and output), 256 fp32 router
  // probabilities and the shared expert's gated activation's input and output (3 x 2048).
  EXPECT_EQ(m.moe_layer_dense_activation_bytes_per_token(false, false),
            100416 * 2 + 512 + (2 * 7168 + 6144) * 2 + 256 * 4);
  EXPECT_EQ(m.moe_layer_dense_activation_bytes_per_token(true, true),
            25664 * 2 + 512 + (7168 + 6144) * 2 + 256 * 4);
  // A dense-only layer: the same attention and an FFN of 18,432 instead.
  EXPECT_EQ(m.dense_layer_activation_bytes_per_token(false, false),
            100416 * 2 + 512 + (2 * 7168 + 3 * 18432) * 2);
  // With fp8 GEMMs every GEMM's input (and the gated activation's) is kept in fp8 with an fp32
  // scale per 128: the experts' h, 2f and f; the attention's normed input, normed latents and
  // output; the shared expert's 2 f_s and f_s. The rest stays bf16.
  ModelSpec fp8 = m;
  fp8.fp8_gemms = true;
  const auto fp8_bytes = [](std::int64_t n) { return n + 4 * ((n + 127) / 128); };
  EXPECT_EQ(fp8.expert_activation_bytes_per_token(),
            fp8_bytes(7168) + fp8_bytes(4096) + fp8_bytes(2048));  // 13,728
  EXPECT_EQ(fp8.expert_activation_bytes_per_token(true), fp8_bytes(7168) + fp8_bytes(4096));
  const std::int64_t attention = 7168 * 2 + fp8_bytes(7168) + 1536 * 2 + fp8_bytes(1536) + 576 * 2 +
                                 fp8_bytes(512) + (24576 + 24576 + 16384) * 2 + fp8_bytes(16384) +
                                 128 * 4;
  EXPECT_EQ(fp8.attention_activation_bytes_per_token(false, false), attention);  // 176,544
  EXPECT_EQ(fp8.moe_layer_dense_activation_bytes_per_token(false, false),
            attention + 2 * 7168 * 2 + fp8_bytes(4096) + fp8_bytes(2048) + 256 * 4);
  EXPECT_EQ(fp8.moe_layer_dense_activation_bytes_per_token(true, true),
            7168 * 2 + 1536 * 2 + 576 * 2 + fp8_bytes(16384) + 128 * 4 + 7168 * 2 +
                fp8_bytes(4096) + fp8_bytes(2048) + 256 * 4);  // 57,664
  EXPECT_EQ(fp8.dense_layer_activation_bytes_per_token(false, false),
            attention + 7168 * 2 + fp8_bytes(7168) + fp8_bytes(36864) + fp8_bytes(18432));
  // The output head and loss: the final norm's input and output (2 x 7168, bf16 even with fp8
  // GEMMs: the head stays bf16) and the fp32 softmax over 129,280 tokens of vocabulary.
  EXPECT_EQ(m.head_activation_bytes_per_token(false), 2 * 7168 * 2 + 129280 * 4);
  EXPECT_EQ(fp8.head_activation_bytes_per_token(false), 2 * 7168 * 2 + 129280 * 4);
  EXPECT_EQ(m.head_activation_bytes_per_token(true), 7168 * 2 + 129280 * 4);
  ModelSpec headless = m;
  headless.vocab_size = 0;
  EXPECT_EQ(headless.head_activation_bytes_per_token(false), 0);
  // What recomputing the up-projections runs again: 1536 -> 128 x 192 and 512 -> 128 x
  // (128 + 128), 2 FLOP a multiply-add.
  EXPECT_EQ(m.up_projection_flops_per_token(), 2.0 * (1536.0 * 128 * 192 + 512.0 * 128 * 256));
}

TEST(GpuMemory, DenseActivationsAreHeldPerMicrobatchInFlightTheModelsEndsOnItsEndChunks) {
  SimOptions options;
  options.pipeline_stages = 2;
  const CostModel cost = cost_model(options);  // 64 tokens a GPU
  const ModelSpec& m = cost.model();
  const Bytes layer = 64 * m.moe_layer_dense_activation_bytes_per_token(false, false);
  // model_with_ends(): 2 dense-only layers beside 4 MoE layers, all 4 in the chunks below.
  const Bytes dense_only = 2 * 64 * m.dense_layer_activation_bytes_per_token(false, false);
  // The head and loss on the last chunk: the final norm's input and output and the fp32
  // softmax over 1,000 tokens of vocabulary, and while the loss runs the logits in bf16 and
  // their fp32 copy.
  const Bytes head = 64 * (2 * 1024 * 2 + 1000 * 4);
  const Bytes loss = 64 * 1000 * (2 + 4);
  // 1F1B on 2 stages, 4 microbatches: the first stage holds 2 microbatches at its peak, the
  // last 1, and the loss's logits as that one's forward ends.
  const std::vector<Bytes> held =
      dense_activation_bytes(cost, {2, 2}, schedule_order(options, 2, 4));
  EXPECT_EQ(held, (std::vector<Bytes>{2 * (2 * layer + dense_only), 2 * layer + head + loss}));
  // One stage: one microbatch's every layer at a time.
  const SimOptions one;
  EXPECT_EQ(dense_activation_bytes(cost_model(one), {4}, schedule_order(one, 1, 4)),
            (std::vector<Bytes>{4 * layer + dense_only + head + loss}));
  // Recomputing the norms keeps neither normed input, on any layer, nor the final norm's.
  SimOptions norms = options;
  norms.recompute_layernorm = true;
  const Bytes saved = 64 * 2 * m.hidden_size * m.combine_bytes;
  EXPECT_EQ(dense_activation_bytes(cost_model(norms), {2, 2}, schedule_order(norms, 2, 4)),
            (std::vector<Bytes>{held[0] - 2 * (2 + 2) * saved, held[1] - 2 * saved - saved / 2}));
}

TEST(GpuMemory, DeepepsFixedBuffersSitOnEveryStageUnderItsDispatcherOnly) {
  SimOptions options;
  options.pipeline_stages = 2;
  const PipelineTimes order = schedule_order(options, 2, 4);
  for (const StageMemory& stage : resident_stage_memory(cost_model(options), {2, 2}, 2, 1, order))
    EXPECT_EQ(stage.deepep_buffers, 0);
  options.dispatcher = Dispatcher::kDeepEP;
  const CostModel cost = cost_model(options);  // 16 GPUs: a config DeepEP recommends
  const Bytes buffers = deepep_buffer_bytes(16, cost.model().hidden_size).value();
  EXPECT_EQ(dispatcher_buffer_bytes(cost), buffers);
  for (const StageMemory& stage : resident_stage_memory(cost, {2, 2}, 2, 1, order)) {
    EXPECT_EQ(stage.deepep_buffers, buffers);
    EXPECT_EQ(stage.total(),
              stage.model_state + stage.spare_slots + stage.dense_activations + buffers);
  }
}

TEST(GpuMemory, TheLossesLogitsCountOnlyAsTheLastChunksForwardEnds) {
  // Interleaved 1F1B, 2 stages x 2 chunks, 4 microbatches: the last chunk (3) runs on stage 1
  // beside chunk 1. The logits count on top of what the stage holds as a forward through chunk
  // 3 ends, not on top of whatever it holds at its peak.
  SimOptions options;
  options.pipeline_stages = 2;
  options.virtual_stages = 2;
  const CostModel cost = cost_model(options);
  const ModelSpec& m = cost.model();
  const PipelineTimes order = schedule_order(options, 2, 4);
  const Bytes loss = 64 * 1000 * 6;
  const Bytes head = 64 * (2 * 1024 * 2 + 1000 * 4);
  const Bytes layer = 64 * m.moe_layer_dense_activation_bytes_per_token(false, false);
  const Bytes dense_only = 2 * 64 * m.dense_layer_activation_bytes_per_token(false, false);
  // Each stage walked by hand: its ops in order, with and without the logits' moments.
  std::vector<Bytes> peak(2, 0), peak_without(2, 0), now(2, 0);
  for (const PipelineOp& op : order.ops) {
    if (op.weight_grad) continue;
    const Bytes bytes = layer + (op.chunk == 0 ? dense_only : 0) + (op.chunk == 3 ? head : 0);
    now[op.stage] += op.forward ? bytes : -bytes;
    const Bytes moment = op.forward && op.chunk == 3 ? loss : 0;
    peak[op.stage] = std::max(peak[op.stage], now[op.stage] + moment);
    peak_without[op.stage] = std::max(peak_without[op.stage], now[op.stage]);
  }
  EXPECT_EQ(dense_activation_bytes(cost, {1, 1, 1, 1}, order), peak);
  EXPECT_EQ(peak[0], peak_without[0]);  // stage 0 runs no loss
  // Stage 1 holds most while more of chunk 1's microbatches are in flight: the logits, which
  // exist only as a loss runs, fit under that peak (on 1F1B's last stage they add to it:
  // DenseActivationsAreHeldPerMicrobatchInFlightTheModelsEndsOnItsEndChunks).
  EXPECT_EQ(peak[1], peak_without[1]);
}

TEST(GpuMemory, TheHeadsActivationsAreTheTracesShareOfItOnEveryStageHoldingTheLastChunk) {
  // A trace of 2 of model_with_ends()'s 4 MoE layers carries half the dense-only layers and
  // half the head.
  const SimOptions one;
  const CostModel cost = cost_model(one);
  const ModelSpec& m = cost.model();
  const Bytes layer = 64 * m.moe_layer_dense_activation_bytes_per_token(false, false);
  const Bytes dense_only = 64 * m.dense_layer_activation_bytes_per_token(false, false);
  const Bytes head = 64 * (2 * 1024 * 2 + 1000 * 4 + 1000 * 6) / 2;
  EXPECT_EQ(dense_activation_bytes(cost, {2}, schedule_order(one, 1, 4)),
            (std::vector<Bytes>{2 * layer + dense_only + head}));
  // DualPipe on 2 stages: each stage holds chunk 1, the model's last (stage 0 as its mirror's),
  // and so some of the head's activations; a model without a vocabulary counts none.
  SimOptions dualpipe;
  dualpipe.pipeline_stages = 2;
  dualpipe.pipeline_schedule = PipelineSchedule::kDualPipe;
  ModelSpec headless = model_with_ends();
  headless.vocab_size = 0;
  const CostModel without(round_topology(2, 8), headless, dualpipe, 64);
  const PipelineTimes order = schedule_order(dualpipe, 2, 4);
  const std::vector<Bytes> with_head = dense_activation_bytes(cost_model(dualpipe), {1, 1}, order);
  const std::vector<Bytes> no_head = dense_activation_bytes(without, {1, 1}, order);
  ASSERT_EQ(with_head.size(), 2u);
  ASSERT_EQ(no_head.size(), 2u);
  for (std::size_t s = 0; s < 2; ++s) EXPECT_GT(with_head[s], no_head[s]);
}

TEST(GpuMemory, RecomputingUpProjectionsNeedsMlaAndLengthensEveryDenseBackward) {
  SimOptions options;
  options.recompute_mla_up_proj = true;
  try {
    cost_model(options);
    FAIL() << "a model without MLA took recompute_mla_up_proj";
  } catch (const InputError& error) {
    EXPECT_EQ(error.field(), "recompute_mla_up_proj");
  }
  ModelSpec mla = model_with_ends();
  mla.attention_heads = 8;
  mla.attention_qk_head_dim = 48;
  mla.attention_v_head_dim = 32;
  mla.attention_q_lora_rank = 256;
  mla.attention_kv_lora_rank = 128;
  mla.attention_rope_head_dim = 16;
  const Topology topology = round_topology(2, 8);
  const CostModel kept(topology, mla, SimOptions{}, 64);
  const CostModel recomputed(topology, mla, options, 64);
  EXPECT_EQ(kept.dense_recompute_ps(64), 0);
  // The up-projections' FLOPs, and the dense-only layers' share (2 of them over 4 MoE layers),
  // at the dense forward's rate.
  const double ratio = mla.up_projection_flops_per_token() * 1.5 / mla.dense_flops_per_token();
  EXPECT_NEAR(static_cast<double>(recomputed.dense_recompute_ps(6400)),
              ratio * static_cast<double>(recomputed.dense_forward_ps(6400)), 2.0);

  // A replay charges it on every record's critical path, on no planner's choices.
  const std::string trace = write_uniform_trace(
      (fs::path(::testing::TempDir()) / "gpu_memory_uniform").string(), 3, 2, 2);
  SimConfig config;
  config.topology = topology;
  config.model = mla;
  config.planners = {"topoep", "static"};
  const StepResult before = replayed_steps(trace, config, 1).at(0);
  config.options = options;
  const StepResult after = replayed_steps(trace, config, 1).at(0);
  ASSERT_EQ(before.records.size(), after.records.size());
  for (std::size_t r = 0; r < before.records.size(); ++r) {
    for (int p = 0; p < 2; ++p) {
      const LayerCost& a = before.records[r].planners[p];
      const LayerCost& b = after.records[r].planners[p];
      EXPECT_GT(b.dense_recompute, 0);
      EXPECT_EQ(b.critical_path(), a.critical_path() + b.dense_recompute);
      EXPECT_EQ(b.plan_hash, a.plan_hash);
    }
  }
  // The recomputed outputs are not held.
  EXPECT_LT(after.planners[0].stage_memory[0].dense_activations,
            before.planners[0].stage_memory[0].dense_activations);
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
  const CostModel cost(config.topology, config.model, config.options, 512);
  const std::vector<StageParameters> parameters = cost.pipeline_parameters({2, 2}, 2);
  // The same under every planner: the schedule's, 4 microbatches a step.
  const std::vector<Bytes> dense =
      dense_activation_bytes(cost, {2, 2}, schedule_order(config.options, 2, 4));
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
        EXPECT_EQ(stages[s].dense_activations, dense[s]);
        // The experts' token buffers add something as some layer runs.
        EXPECT_GT(stages[s].token_buffers, 0);
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
      const StageMemory& first = steps[0].planners[p].stage_memory[s];
      const StageMemory& second = steps[1].planners[p].stage_memory[s];
      EXPECT_EQ(run.stage_memory[s].expert_activations,
                std::max(first.expert_activations, second.expert_activations));
      // The buffers are what they add to that: the stage's total is its most of any step.
      EXPECT_EQ(run.stage_memory[s].total(), std::max(first.total(), second.total()));
    }
    EXPECT_EQ(run.busiest_memory_stage(), 0) << planners[p];
    EXPECT_EQ(run.busiest_memory().total(),
              std::max(run.stage_memory[0].total(), run.stage_memory[1].total()));
  }
}

}  // namespace
}  // namespace topoep
