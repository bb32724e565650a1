// The memory-bound kernels' HBM bytes against counts worked by hand (sim/memory_bound_kernels.h),
// and what they add to the cost model's prices when SimOptions::memory_bound_kernels is set.

#include "sim/memory_bound_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "models/model_json.h"
#include "sim/cost_model.h"
#include "solver/input_error.h"
#include "solver/static_plan.h"
#include "tests/input_error_field.h"
#include "tests/sim_fixtures.h"

namespace topoep {
namespace {

using testing::input_error_field;

// DeepSeek-V3: h 7168, expert f 2048, top-8 of 256, one shared expert of 2048, MLA (query rank
// 1536, key-value rank 512, RoPE 64 of 128 heads), 3 dense-only layers of f 18432, vocabulary
// 129,280; fp8 dispatch with a scale per 128 (7392 bytes a token), bf16 activations and
// gradients.
TEST(MemoryBoundKernels, DeepSeekV3sBytesAreTheKernelsReadsAndWrites) {
  const ModelSpec m = load_model("deepseek-v3");
  const MemoryBoundBytes bytes = memory_bound_bytes(m, SimOptions{});
  // Permute in (2 x 7392), out (2 x 7168 x 2), both gradients (4 x 7168 x 2), SwiGLU: reads
  // 2f and writes f (8192 + 4096), backward reads the kept 2f and f's gradient, writes 2f's
  // (8192 + 4096 + 8192).
  EXPECT_DOUBLE_EQ(bytes.expert_assignment, 14784 + 28672 + 57344 + 32768);
  // A norm of h: 2 x 14336 forward, 3 x 14336 backward (71,680); MLA's latent norms (15,360 and
  // 5,120) and RoPE over 129 x 64 elements read and written, with their gradients (66,048); two
  // residual adds (2 x 86,016); the router's 20 bytes an expert; the shared SwiGLU (32,768) and
  // its sum with the routed output (43,008); the source's top-8 copies before the dispatch and
  // their weighted sum after the combine: 28,672 + 8 x 7392 + 8 x 14336 + 28,672 + 16 x 14336.
  const double block = 71680 + (15360 + 5120 + 66048) + 2 * 86016 + 71680;
  const double source_permutation = 28672 + 8 * 7392 + 8 * 14336 + 28672 + 16 * 14336;
  EXPECT_DOUBLE_EQ(bytes.moe_layer, block + 5120 + 32768 + 43008 + source_permutation);
  // The same block and the dense FFN's SwiGLU of 18,432 (294,912).
  EXPECT_DOUBLE_EQ(bytes.dense_only_layer, block + 294912);
  // The final norm and the loss: logits read (2 V), fp32 softmax written and read (8 V), the
  // logits' gradient written (2 V).
  EXPECT_DOUBLE_EQ(bytes.head_pass, 71680 + 12.0 * 129280);
  EXPECT_DOUBLE_EQ(bytes.embedding, 2 * 14336 + 3 * 14336);
  // Two norms, the 2h concatenation and its gradient, the next token's embedding.
  EXPECT_DOUBLE_EQ(bytes.mtp_module, 2 * 71680 + 4 * 14336 * 2 + 71680);
}

TEST(MemoryBoundKernels, Fp8GemmInputsAndRecomputationChangeWhatTheExpertsMove) {
  ModelSpec m = load_model("deepseek-v3");
  m.fp8_gemms = true;
  SimOptions options;
  options.recompute_moe_activation = true;
  // SwiGLU writes its output in fp8 with a scale per 128 (2048 + 64), the backward reads its
  // kept input so (4096 + 128) and first runs the forward again from it (4224 + 2112).
  EXPECT_DOUBLE_EQ(memory_bound_bytes(m, options).expert_assignment,
                   14784 + 28672 + 57344 + (8192 + 2112 + 4224 + 12288 + 6336));
  // Recomputed norms run their forward again in the backward: each norm of n elements adds its
  // 2n x 2 forward bytes (its output a GEMM's input in fp8: n + n / 32).
  const double without = memory_bound_bytes(m, SimOptions{}).moe_layer;
  options.recompute_layernorm = true;
  const auto forward = [](double n, bool fp8_output) {
    return 2 * n + (fp8_output ? n + n / 32 : 2 * n);
  };
  EXPECT_DOUBLE_EQ(
      memory_bound_bytes(m, options).moe_layer - without,
      forward(7168, true) + forward(1536, true) + forward(512, true) + forward(7168, false));
}

TEST(MemoryBoundKernels, DeepEpReadsAndReducesTheSourcesTokensItself) {
  const ModelSpec m = load_model("deepseek-v3");
  SimOptions deepep;
  deepep.dispatcher = Dispatcher::kDeepEP;
  const MemoryBoundBytes per_assignment = memory_bound_bytes(m, SimOptions{});
  const MemoryBoundBytes fused = memory_bound_bytes(m, deepep);
  EXPECT_DOUBLE_EQ(per_assignment.moe_layer - fused.moe_layer,
                   28672 + 8 * 7392 + 8 * 14336 + 28672 + 16 * 14336);
  EXPECT_DOUBLE_EQ(fused.expert_assignment, per_assignment.expert_assignment);
}

TEST(MemoryBoundKernels, AModelWithoutAVocabularyHasNoEnds) {
  const MemoryBoundBytes bytes = memory_bound_bytes(round_model(8, 2), SimOptions{});
  EXPECT_EQ(bytes.embedding, 0);
  EXPECT_EQ(bytes.head_pass, 0);
  EXPECT_EQ(bytes.mtp_module, 0);
  EXPECT_EQ(bytes.dense_only_layer, 0);
  // h 1024, f 512, 1-byte dispatch without scales: 2 x 1024 + 2 x 2048 + 4 x 2048 + SwiGLU
  // (2048 + 1024 + 2048 + 3072).
  EXPECT_DOUBLE_EQ(bytes.expert_assignment, 2048 + 4096 + 8192 + 8192);
  // Two norms of 10,240, two residual adds of 12,288, no attention heads, the router's 8
  // experts, the source's 2 copies: 4096 + 2 x 1024 + 2 x 2048 + 4096 + 4 x 2048.
  EXPECT_DOUBLE_EQ(bytes.moe_layer, 2 * 10240 + 2 * 12288 + 160 + 4096 + 2048 + 4096 + 4096 + 8192);
}

// round_model(8, 2) on 2 x 2 GPUs at 2000 GB/s of HBM: a third of a byte's forward and
// backward is 1/6 ps of forward.
TEST(MemoryBoundKernels, TheyLengthenTheExpertsAndTheDenseForwardAtTheHbmBandwidth) {
  SimOptions options;
  options.memory_bound_kernels = true;
  const CostModel off(round_topology(2, 2), round_model(8, 2), SimOptions{}, 40);
  const CostModel on(round_topology(2, 2), round_model(8, 2), options, 40);
  // 40 tokens at an expert: 251,658.24 ps of GEMMs and 40 x 22,528 / 6.
  EXPECT_EQ(off.instance_compute_ps(40), 251658);
  EXPECT_EQ(on.instance_compute_ps(40), std::llround(251658.24 + 40 * 22528 / 6.0));
  EXPECT_EQ(on.instance_compute_ps(0), 0);
  // 40 tokens of dense forward: 160,000 ps of GEMMs and 40 x 67,744 / 6.
  EXPECT_EQ(off.dense_forward_ps(40), 160000);
  EXPECT_EQ(on.dense_forward_ps(40), std::llround(160000 + 40 * 67744 / 6.0));
  // The planners weigh an assignment's kernels with its GEMMs (6291.456 + 3754.67 ps), and the
  // dense part's in the weights' window.
  EXPECT_EQ(off.solver_params().compute_ps_per_token, 6291);
  EXPECT_EQ(on.solver_params().compute_ps_per_token, 6291 + 3755);
  EXPECT_EQ(on.solver_params().weight_overlap_ps,
            off.solver_params().weight_overlap_ps + std::llround(40 * 67744 / 6.0));
  // A record's step grows by as much on every rank: the busiest's experts and its dense part.
  const RoutingCounts counts(4, 8, std::vector<TokenCount>(32, 10));
  const PlannerContext context{on.topology().view(), Placement::contiguous(8, 4, 0),
                               on.solver_params()};
  const PlannerDecision decision =
      make_planner("static", context, PlannerOptions{})->plan(RecordId{}, counts);
  const LayerCost priced_on = on.price(decision, counts);
  const LayerCost priced_off = off.price(decision, counts);
  EXPECT_EQ(priced_on.compute, 2 * on.instance_compute_ps(40));
  EXPECT_EQ(priced_on.dense_forward, on.dense_forward_ps(40));
  EXPECT_EQ(priced_on.dispatch, priced_off.dispatch);
}

TEST(MemoryBoundKernels, TheModelsEndsSplitBetweenTheFirstAndLastStagesByTime) {
  ModelSpec m = round_model(8, 2);
  m.vocab_size = 1000;
  m.dense_layers = 1;
  m.dense_ffn_size = 2048;
  SimOptions options;
  options.memory_bound_kernels = true;
  const CostModel on(round_topology(2, 2), m, options, 40);
  const CostModel off(round_topology(2, 2), m, SimOptions{}, 40);
  const MemoryBoundBytes bytes = memory_bound_bytes(m, options);
  // Each of the 4 routed layers carries a quarter of the dense-only layer, the embedding and the
  // head pass.
  const double kernels =
      (bytes.dense_only_layer + bytes.embedding + bytes.head_pass) / 4 * 40 / 6.0;
  const double head_kernels = bytes.head_pass / 4 * 40 / 6.0;
  const Picoseconds outside = on.outside_forward_ps(40);
  EXPECT_EQ(outside, std::llround(static_cast<double>(off.outside_forward_ps(40)) + kernels));
  // The head's part: its FLOPs' time and its kernels' (2 x 1024 x 1000 / 4 FLOP a token at
  // 500 FLOP/ps).
  const double head_flops_ps = 2.0 * 1024 * 1000 / 4 * 40 / 500;
  EXPECT_NEAR(static_cast<double>(on.outside_head_part(outside)), head_flops_ps + head_kernels,
              1.0);
  EXPECT_EQ(off.outside_head_part(off.outside_forward_ps(40)), std::llround(head_flops_ps));
}

TEST(MemoryBoundKernels, AGpuWithoutHbmBandwidthCannotPriceThem) {
  Topology t = round_topology(2, 2);
  t.gpu.hbm_bandwidth_gb_per_s = 0;
  SimOptions options;
  options.memory_bound_kernels = true;
  EXPECT_EQ(input_error_field([&] { CostModel(t, round_model(8, 2), options, 40); }),
            "hbm_bandwidth_gb_per_s");
  EXPECT_NO_THROW(CostModel(t, round_model(8, 2), SimOptions{}, 40));
}

}  // namespace
}  // namespace topoep
