// The simulator's cost model against closed forms worked by hand (sim/README.md).

#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost_model.h"
#include "sim/gradient_reduction.h"
#include "sim/ring_collective.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"
#include "solver/static_plan.h"
#include "tests/input_error_field.h"
#include "tests/sim_fixtures.h"

namespace topoep {
namespace {

RoutingCounts uniform_counts(int ranks, int experts, TokenCount per_pair) {
  return RoutingCounts(
      ranks, experts, std::vector<TokenCount>(static_cast<std::size_t>(ranks) * experts, per_pair));
}

PlannerContext context_for(const CostModel& model, int slots) {
  const Topology& t = model.topology();
  return PlannerContext{t.view(),
                        Placement::contiguous(model.model().num_experts, t.num_gpus(), slots),
                        model.solver_params()};
}

PlannerDecision static_decision(const PlannerContext& context, const RoutingCounts& counts) {
  return make_planner("static", context, PlannerOptions{})->plan(RecordId{}, counts);
}

TEST(SimCostModel, UniformRoutingMatchesTheLinkAndComputeFormulas) {
  // 2 nodes x 2 GPUs, 8 experts (2 per GPU), 10 tokens from every rank to every expert.
  const CostModel model(round_topology(2, 2), round_model(8, 2), SimOptions{}, 40);
  const RoutingCounts counts = uniform_counts(4, 8, 10);
  const LayerCost cost = model.price(static_decision(context_for(model, 0), counts), counts);
  // Each rank sends 20 tokens to its node peer (NVLink) and 40 to the other node (IB), and
  // receives as much: dispatch = max(2 us + 20,480 B / 100 GB/s, 5 us + 40,960 B / 25 GB/s).
  EXPECT_EQ(cost.dispatch, 5000000 + 1638400);
  EXPECT_EQ(cost.combine, 5000000 + 3276800);  // bf16: twice the bytes
  // Two experts of 40 tokens per GPU: 6 x 1024 x 512 x 40 FLOP at 500 TFLOP/s each.
  EXPECT_EQ(cost.compute, 2 * 251658);
  EXPECT_EQ(cost.compute_grad, 2 * cost.compute);
  EXPECT_EQ(cost.combine_grad, cost.combine);  // bf16 gradients travel both ways
  EXPECT_EQ(cost.dispatch_grad, cost.combine);
  EXPECT_EQ(cost.weight_exposed, 0);
  // Dense: 2 x 1e6 params x 40 tokens at 500 TFLOP/s.
  EXPECT_EQ(cost.dense_forward, 160000);
  EXPECT_EQ(cost.ib_dispatch_bytes, 4 * 40 * 1024);
  EXPECT_EQ(cost.nvlink_dispatch_bytes, 4 * 20 * 1024);
  EXPECT_DOUBLE_EQ(cost.max_mean_load, 1.0);
}

TEST(SimCostModel, EveryPlannerTiesWithStaticOnUniformRouting) {
  const CostModel model(round_topology(2, 2), round_model(8, 2), SimOptions{}, 40);
  const RoutingCounts counts = uniform_counts(4, 8, 10);
  for (const int slots : {0, 1}) {
    const PlannerContext context = context_for(model, slots);
    const Picoseconds reference = model.price(static_decision(context, counts), counts).moe();
    for (const std::string& name : planner_names()) {
      // EPLB with spare slots replicates even under uniform load (its own layout rule).
      if (slots > 0 && name.rfind("eplb", 0) == 0) continue;
      const PlannerDecision decision =
          make_planner(name, context, PlannerOptions{})->plan(RecordId{}, counts);
      EXPECT_EQ(model.price(decision, counts).moe(), reference) << name << " S=" << slots;
    }
  }
}

TEST(SimCostModel, OneHotExpertIsSpreadByTopoepAndNotByStatic) {
  // Every token goes to expert 0; compute dominates (100,000 tokens per rank).
  const CostModel model(round_topology(2, 2), round_model(8, 1), SimOptions{}, 100000);
  RoutingCounts counts(4, 8);
  for (RankId r = 0; r < 4; ++r) counts.set(r, 0, 100000);
  const PlannerContext context = context_for(model, 1);
  const LayerCost before = model.price(static_decision(context, counts), counts);
  const LayerCost after = model.price(
      make_planner("topoep", context, PlannerOptions{})->plan(RecordId{}, counts), counts);
  EXPECT_DOUBLE_EQ(before.max_mean_load, 4.0);
  EXPECT_LE(after.max_mean_load, 1.05);
  EXPECT_LT(after.compute, before.compute / 3);
  EXPECT_LE(after.ib_dispatch_bytes, before.ib_dispatch_bytes);
  EXPECT_LT(after.moe(), before.moe());
  EXPECT_GT(after.new_replicas, 0);
}

TEST(SimCostModel, UniformAllToAllAcrossNodesMeetsTheNicBoundTimesNOverNMinusOne) {
  for (const int nodes : {2, 4, 8}) {
    // One expert per GPU, 1000 tokens from every rank to every expert: a uniform all-to-all.
    const int ranks = 2 * nodes;
    const CostModel model(round_topology(nodes, 2), round_model(ranks, 1), SimOptions{}, 1000);
    const RoutingCounts counts = uniform_counts(ranks, ranks, 1000);
    const LayerCost cost = model.price(static_decision(context_for(model, 0), counts), counts);
    // Bytes each GPU's all-to-all buffer holds (itself included) over the time beyond alpha.
    const double buffer_bytes = ranks * 1000.0 * 1024;
    const double achieved_gb_per_s = buffer_bytes / ((cost.dispatch - 5000000) / 1e6) / 1000;
    EXPECT_NEAR(achieved_gb_per_s, 25.0 * nodes / (nodes - 1), 1e-6) << nodes << " nodes";
  }
}

TEST(SimCostModel, SmallInstancesPayForTheirWeightReadsOnTheEfficiencyCurve) {
  Topology topology = round_topology(1, 2);
  topology.gemm_efficiency.tokens_per_expert = {1, 100};
  topology.gemm_efficiency.efficiency = {0.01, 1.0};
  const CostModel model(topology, round_model(2, 1), SimOptions{}, 100);
  // Below the curve's knee the time stops falling with the tokens: 1 token costs what ~1.5 do.
  const double flop = 6.0 * 1024 * 512;
  EXPECT_EQ(model.instance_compute_ps(100), std::llround(flop * 100 / 1000));
  EXPECT_EQ(model.instance_compute_ps(1), std::llround(flop / (1000 * 0.01)));
  EXPECT_EQ(model.instance_compute_ps(0), 0);
}

// An instance at or past the first point of the curve's flat tail is priced at the tail's rate
// without searching the curve (CostModel's shortcut): the same picoseconds as the formula on
// gemm_efficiency_at(), for tails of every length, a curve with no tail but its last point, an
// equal value before a dip (not part of the tail) and a one-point curve.
TEST(SimCostModel, InstanceComputeIsTheCurveFormulaOnItsFlatTailToo) {
  const ModelSpec model = round_model(2, 1);
  const double flop = model.expert_flops_per_token();
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> curves = {
      {{1, 2, 4, 512, 1024, 16384}, {0.0022, 0.0044, 0.0088, 0.65, 0.65, 0.65}},
      {{1, 100, 1000}, {0.01, 0.5, 0.6}},
      {{1, 10, 100, 1000}, {0.6, 0.5, 0.55, 0.6}},
      {{1, 1000}, {0.5, 0.5}},
      {{300}, {0.7}},
      {{0.5, 3.5, 7000}, {0.1, 0.3, 0.3}},
  };
  for (const auto& [tokens, efficiency] : curves) {
    Topology topology = round_topology(1, 2);
    topology.gemm_efficiency.tokens_per_expert = tokens;
    topology.gemm_efficiency.efficiency = efficiency;
    const CostModel cost(topology, model, SimOptions{}, 100);
    for (TokenCount t = 1; t <= 20000; t += t < 1100 ? 1 : 37) {
      const double formula = flop * static_cast<double>(t) /
                             (topology.gpu.peak_tflops_bf16 *
                              gemm_efficiency_at(topology.gemm_efficiency, static_cast<double>(t)));
      ASSERT_EQ(cost.instance_compute_ps(t), std::llround(formula))
          << t << " tokens on the curve ending at " << tokens.back();
    }
  }
}

TEST(SimCostModel, ACurveWithoutPointsOrEfficienciesIsAnInputError) {
  Topology topology = round_topology(1, 2);
  topology.gemm_efficiency.tokens_per_expert.clear();
  topology.gemm_efficiency.efficiency.clear();
  EXPECT_EQ(testing::input_error_field(
                [&] { CostModel(topology, round_model(2, 1), SimOptions{}, 100); }),
            "grouped_gemm_efficiency");
  // An attention curve built in code is checked as its file would be.
  Topology attention = round_topology(1, 2);
  attention.attention_efficiency = {{1000, 2000}, {0.5}, {0.4, 0.5}, "test"};
  EXPECT_EQ(testing::input_error_field(
                [&] { CostModel(attention, round_model(2, 1), SimOptions{}, 100); }),
            "attention_efficiency");
  attention.attention_efficiency.forward = {0.5, 0};
  EXPECT_EQ(testing::input_error_field(
                [&] { CostModel(attention, round_model(2, 1), SimOptions{}, 100); }),
            "attention_efficiency");
}

void expect_same_cost(const LayerCost& a, const LayerCost& b) {
  EXPECT_EQ(a.dispatch, b.dispatch);
  EXPECT_EQ(a.compute, b.compute);
  EXPECT_EQ(a.combine, b.combine);
  EXPECT_EQ(a.weight_exposed, b.weight_exposed);
  EXPECT_EQ(a.combine_grad, b.combine_grad);
  EXPECT_EQ(a.compute_grad, b.compute_grad);
  EXPECT_EQ(a.dispatch_grad, b.dispatch_grad);
  EXPECT_EQ(a.overhead, b.overhead);
  EXPECT_EQ(a.dense_forward, b.dense_forward);
  EXPECT_EQ(a.outside_forward, b.outside_forward);
  EXPECT_EQ(a.compute_mean, b.compute_mean);
  EXPECT_EQ(a.max_mean_load, b.max_mean_load);
  EXPECT_EQ(a.nvlink_dispatch_bytes, b.nvlink_dispatch_bytes);
  EXPECT_EQ(a.ib_dispatch_bytes, b.ib_dispatch_bytes);
  EXPECT_EQ(a.nvlink_weight_bytes, b.nvlink_weight_bytes);
  EXPECT_EQ(a.ib_weight_bytes, b.ib_weight_bytes);
  EXPECT_EQ(a.new_replicas, b.new_replicas);
  EXPECT_EQ(a.loads, b.loads);
}

TEST(SimCostModel, PricingFromTheCountsEqualsPricingTheStaticRoutes) {
  // A curved GEMM efficiency (each instance priced at its own tokens), a weight-overlap window,
  // a placement that is not contiguous, zero counts, replicas idle (resident) and one new.
  Topology topology = round_topology(2, 4);
  topology.gemm_efficiency.tokens_per_expert = {1, 64, 4096};
  topology.gemm_efficiency.efficiency = {0.02, 0.3, 0.8};
  SimOptions options;
  options.weight_overlap_fraction = 0.5;
  ModelSpec with_dense_layers = round_model(16, 2);
  with_dense_layers.dense_layers = 3;
  with_dense_layers.dense_ffn_size = 1536;
  const CostModel model(topology, with_dense_layers, options, 300);
  PlannerDecision layout;
  layout.placement.num_ranks = 8;
  layout.placement.slots_per_rank = 2;
  for (ExpertId e = 0; e < 16; ++e) layout.placement.home_rank.push_back((e * 5 + 3) % 8);
  layout.plan = static_layout(layout.placement);
  layout.plan.replica_expert[0] = 6;   // rank 0, resident
  layout.plan.replica_expert[1] = 10;  // rank 0, new
  layout.plan.replica_expert[10] = 1;  // rank 5, resident
  layout.resident.assign(16, kNoExpert);
  layout.resident[0] = 6;
  layout.resident[10] = 1;
  layout.overhead.host_ps = 1234;
  for (const std::uint32_t seed : {1u, 7u, 42u}) {
    RoutingCounts counts(8, 16);
    std::uint32_t state = seed;
    for (RankId src = 0; src < 8; ++src) {
      for (ExpertId e = 0; e < 16; ++e) {
        state = state * 1664525u + 1013904223u;
        const TokenCount tokens = (state >> 8) % 97;
        counts.set(src, e, tokens < 20 ? 0 : tokens * (e == 3 ? 11 : 1));
      }
    }
    PlannerDecision routed = layout;
    route_all_home(counts, routed.placement, &routed.plan);
    SCOPED_TRACE(seed);
    expect_same_cost(model.price_all_home(layout, counts),
                     model.price(routed, counts, CostModel::Detail::kTimes));
  }
}

// The replay passes the busiest rank's tokens when the trace declares tokens_per_rank; the price
// must be the one found from the counts. The dense forward depends on it, and with it the
// weight-overlap window.
TEST(SimCostModel, PricingWithTheBusiestRankGivenEqualsFindingItInTheCounts) {
  SimOptions options;
  options.weight_overlap_fraction = 0.5;
  const CostModel model(round_topology(2, 2), round_model(8, 2), options, 40);
  const PlannerContext context = context_for(model, 1);
  RoutingCounts counts(4, 8);
  for (RankId src = 0; src < 4; ++src) {
    for (ExpertId e = 0; e < 8; ++e) counts.set(src, e, e == 2 ? 45 : 5);  // rows of 80
  }
  for (const char* name : {"static", "topoep"}) {
    SCOPED_TRACE(name);
    const PlannerDecision decision =
        make_planner(name, context, PlannerOptions{})->plan(RecordId{}, counts);
    const TokenCount busiest = busiest_rank_tokens(counts, model.model().top_k);
    EXPECT_EQ(busiest, 40);
    expect_same_cost(model.price(decision, counts, CostModel::Detail::kPerRank, busiest),
                     model.price(decision, counts, CostModel::Detail::kPerRank));
    EXPECT_NE(model.price(decision, counts, CostModel::Detail::kTimes, 4).dense_forward,
              model.price(decision, counts, CostModel::Detail::kTimes).dense_forward);
  }
}

TEST(SimCostModel, OptimizerTimeIsTheParametersHbmTraffic) {
  const CostModel model(round_topology(2, 2), round_model(8, 2), SimOptions{}, 40);
  // (1e6 dense + 2 experts x 3 x 1024 x 512) params x 28 B at 2000 GB/s, for 3 layers.
  const double bytes = 3 * (1e6 + 2 * 3 * 1024 * 512.0) * 28;
  EXPECT_EQ(model.optimizer_ps(3), std::llround(bytes / 2000 * 1000));
}

// round_model(8, 2) with two dense-only layers (FFN 2048) before its MoE layers and a
// vocabulary of 1,000 words, its embedding and head `tied` or not.
ModelSpec model_with_ends(bool tied) {
  ModelSpec m = round_model(8, 2);
  m.dense_layers = 2;
  m.dense_ffn_size = 2048;
  m.vocab_size = 1000;
  m.tied_embeddings = tied;
  return m;
}

// Pipeline stages: each stage updates its own layers' dense parameters, the first also the
// dense-only layers and the embedding, the last the output head; untied, the stages together
// update what one stage of every layer does, tied, one embedding more (the last stage's copy).
TEST(SimCostModel, AStagesOptimizerUpdatesTheDenseOnlyLayersAndEmbeddingsItHolds) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const ModelSpec m = model_with_ends(tied);
    const CostModel model(round_topology(2, 2), m, SimOptions{}, 40);
    EXPECT_EQ(model.stage_optimizer_ps(4, 4, true, true), model.optimizer_ps(4));
    // 4 trace layers of the model's 4: the first stage holds both dense-only layers
    // (1e6 + 3 x 1024 x 2048 each) and the embedding (1024 x 1000); the last the head.
    const double expert = 2 * 3 * 1024 * 512.0;
    const double dense_only = 2 * (1e6 + 3 * 1024 * 2048.0), embedding = 1024 * 1000.0;
    const auto ps = [](double params) { return std::llround(params * 28 / 2000 * 1000); };
    const Picoseconds first = model.stage_optimizer_ps(1, 4, true, false);
    const Picoseconds middle = model.stage_optimizer_ps(2, 4, false, false);
    const Picoseconds last = model.stage_optimizer_ps(1, 4, false, true);
    EXPECT_EQ(first, ps(1e6 + expert + dense_only + embedding));
    EXPECT_EQ(middle, ps(2 * (1e6 + expert)));
    EXPECT_EQ(last, ps(1e6 + expert + embedding));
    const Picoseconds copy = tied ? ps(embedding) : 0;
    EXPECT_NEAR(static_cast<double>(first + middle + last),
                static_cast<double>(model.optimizer_ps(4) + copy), 3.0);
    // Half the model's layers in the trace: the stages carry half of what lies outside them.
    EXPECT_EQ(model.stage_optimizer_ps(1, 2, true, false),
              ps(1e6 + expert + (dense_only + embedding) / 2));
  }
}

// Under DualPipe stage s also holds chunk P - 1 - s, so the outer stages hold both ends: the
// dense-only layers, the embedding and the head, one matrix for both where tied.
TEST(SimCostModel, DualPipesOuterStagesUpdateBothEndsAndOneMatrixWhereTied) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const ModelSpec m = model_with_ends(tied);
    SimOptions options;
    options.pipeline_stages = 4;
    options.pipeline_schedule = PipelineSchedule::kDualPipe;
    const CostModel model(round_topology(2, 2), m, options, 40);
    const Picoseconds outer = model.stage_optimizer_ps(2, 4, true, true);
    EXPECT_GT(outer, model.stage_optimizer_ps(2, 4, false, false));
    EXPECT_EQ(model.pipeline_optimizer_ps({1, 1, 1, 1}, 4), outer);
    // Chunk 0's update and chunk 3's apart, less the head's copy where it is the embedding.
    const Picoseconds apart =
        model.stage_optimizer_ps(1, 4, true, false) + model.stage_optimizer_ps(1, 4, false, true);
    const double embedding = 1024 * 1000.0;
    const Picoseconds copy = tied ? std::llround(embedding * 28 / 2000 * 1000) : 0;
    EXPECT_NEAR(static_cast<double>(outer), static_cast<double>(apart - copy), 2.0);
  }
}

// Two dense-only layers beside the four MoE layers (FFN 2048): each MoE layer carries half of
// one, forward and backward, on the busiest rank, whatever the plan; their weights join the
// optimizer's. So does a quarter of the output head.
TEST(SimCostModel, LayersOutsideTheMoeAddTheirShareToEveryPlannersPathAlike) {
  ModelSpec dense = round_model(8, 2);
  dense.dense_layers = 2;
  dense.dense_ffn_size = 2048;
  const CostModel without(round_topology(2, 2), round_model(8, 2), SimOptions{}, 40);
  const CostModel with(round_topology(2, 2), dense, SimOptions{}, 40);
  RoutingCounts counts = uniform_counts(4, 8, 10);
  counts.set(1, 3, 90);  // rank 1: 160 assignments, 80 tokens
  // Half of (2 x 1e6 + 6 x 1024 x 2048) FLOP a token, 80 tokens, at 500 TFLOP/s.
  const Picoseconds share = std::llround(0.5 * (2e6 + 6.0 * 1024 * 2048) * 80 / 500);
  for (const char* name : {"static", "topoep"}) {
    SCOPED_TRACE(name);
    const PlannerContext context = context_for(with, 1);
    const PlannerDecision decision =
        make_planner(name, context, PlannerOptions{})->plan(RecordId{}, counts);
    const LayerCost a = without.price(decision, counts);
    const LayerCost b = with.price(decision, counts);
    EXPECT_EQ(a.outside_forward, 0);
    EXPECT_EQ(b.outside_forward, share);
    EXPECT_EQ(b.dense_forward, a.dense_forward);  // the overlap window is the layer's own
    EXPECT_EQ(b.moe(), a.moe());
    EXPECT_EQ(b.critical_path() - a.critical_path(), 3 * share);
  }
  // An output head of 1,000 words adds a quarter of its 2 h V FLOPs a token to each layer.
  ModelSpec head = dense;
  head.vocab_size = 1000;
  const CostModel with_head(round_topology(2, 2), head, SimOptions{}, 40);
  const PlannerContext context = context_for(with_head, 0);
  const PlannerDecision decision =
      make_planner("static", context, PlannerOptions{})->plan(RecordId{}, counts);
  EXPECT_EQ(with_head.price(decision, counts).outside_forward,
            std::llround((0.5 * (2e6 + 6.0 * 1024 * 2048) + 0.25 * 2 * 1024 * 1000.0) * 80 / 500));
  const double extra_params = 0.5 * (1e6 + 3 * 1024 * 2048.0);
  EXPECT_EQ(with.optimizer_ps(3) - without.optimizer_ps(3),
            std::llround(3 * (1e6 + 2 * 3 * 1024 * 512.0 + extra_params) * 28 / 2000 * 1000) -
                std::llround(3 * (1e6 + 2 * 3 * 1024 * 512.0) * 28 / 2000 * 1000));
}

TEST(SimCostModel, AnMtpModulesProjectionAndHeadPassRideTheLastStagesShare) {
  ModelSpec head = round_model(8, 2);
  head.dense_layers = 2;
  head.dense_ffn_size = 2048;
  head.vocab_size = 1000;
  SimOptions mtp;
  mtp.mtp_layers = 1;
  const CostModel with(round_topology(2, 2), head, mtp, 40);
  RoutingCounts counts = uniform_counts(4, 8, 10);
  counts.set(1, 3, 90);  // rank 1: 80 tokens
  const PlannerContext context = context_for(with, 0);
  const PlannerDecision decision =
      make_planner("static", context, PlannerOptions{})->plan(RecordId{}, counts);
  const LayerCost c = with.price(decision, counts);
  // 5 routed layers: each carries 2/5 of a dense-only layer, and 1/5 of two head passes and the
  // projection (4 h^2); at 500 TFLOP/s.
  const double end = (2 * 2 * 1024 * 1000.0 + 4.0 * 1024 * 1024) / 5;
  EXPECT_EQ(c.outside_forward, std::llround((0.4 * (2e6 + 6.0 * 1024 * 2048) + end) * 80 / 500));
  const Picoseconds head_part = with.outside_head_part(c.outside_forward);
  EXPECT_EQ(head_part, std::llround(static_cast<double>(c.outside_forward) * end /
                                    (0.4 * (2e6 + 6.0 * 1024 * 2048) + end)));
  // The MoE layer itself is priced as without the module.
  const CostModel without(round_topology(2, 2), head, SimOptions{}, 40);
  EXPECT_EQ(without.price(decision, counts).moe(), c.moe());
  EXPECT_EQ(without.price(decision, counts).dense_forward, c.dense_forward);
}

// The attention core runs at the topology's FlashAttention efficiency (here 0.25 of the
// peak forward, 0.2 backward, against the GEMMs' 0.5), its backward at 2.5 x its forward's
// FLOPs; it holds no weights, so a zero-bubble split's weight gradients leave it out. The
// dense-only layers' cores are carried alike.
TEST(SimCostModel, TheAttentionCoreRunsAtItsOwnRateAndItsBackwardAtTwoAndAHalfItsFlops) {
  Topology topology = round_topology(2, 2);
  topology.attention_efficiency = {{1000}, {0.25}, {0.2}, "test"};
  ModelSpec model = round_model(8, 2);
  model.attention_heads = 4;
  model.attention_qk_head_dim = 64;
  model.attention_v_head_dim = 64;
  model.sequence_length = 1000;  // the core: 4 x 128 x 1000 = 512,000 FLOP a token
  model.dense_layers = 2;        // half a dense-only layer a MoE layer
  model.dense_ffn_size = 2048;
  const CostModel with(topology, model, SimOptions{}, 40);
  RoutingCounts counts = uniform_counts(4, 8, 10);
  counts.set(1, 3, 90);  // rank 1: 80 tokens
  const PlannerDecision decision = static_decision(context_for(with, 0), counts);
  const LayerCost c = with.price(decision, counts);
  // 2e6 FLOP at 500 FLOP/ps and 512,000 at 250: 4,000 + 2,048 ps a token, 80 tokens.
  EXPECT_EQ(c.dense_forward, (4000 + 2048) * 80);
  // 2.5 x 512,000 at 200 FLOP/ps, less twice the forward's 2,048 ps: 2,304 ps a token.
  EXPECT_EQ(c.dense_backward_extra, 2304 * 80);
  EXPECT_EQ(c.dense_backward(), 2 * c.dense_forward + 2304 * 80);
  const double dense_only_gemms = 0.5 * (2e6 + 6.0 * 1024 * 2048) / 500;
  EXPECT_EQ(c.outside_forward, std::llround((dense_only_gemms + 0.5 * 2048) * 80));
  EXPECT_EQ(c.outside_backward_extra, 1152 * 80);
  EXPECT_EQ(c.outside_backward(), 2 * c.outside_forward + 1152 * 80);
  const CostModel::PipelineShares shares = with.pipeline_shares(c);
  EXPECT_EQ(shares.head_forward, 0);
  EXPECT_EQ(shares.dense_only_backward, c.outside_backward());
  EXPECT_EQ(shares.weight_grad, 4000 * 80 + c.compute_grad / 2);
  EXPECT_EQ(shares.dense_only_weight_grad, c.outside_forward - 1024 * 80);
  EXPECT_EQ(shares.backward + shares.dense_only_backward, c.critical_path() - c.forward_path());
  // The backward's link-idle time for the syncs is the whole dense backward's.
  EXPECT_EQ(with.backward_sync_work(c).attention, c.dense_backward());
  EXPECT_EQ(with.backward_sync_work(c).outside, c.outside_backward());
}

TEST(GradientReduction, ChainsCrossEachNodeBoundaryOnce) {
  const TopologyView topology{2, 4};  // ranks 0-3 node 0, 4-7 node 1
  CostParams cost;
  cost.scale_up = LinkCost{100000, 2000000};
  cost.scale_out = LinkCost{25000, 5000000};
  // Expert 3 homed on rank 0 with replicas on 1, 5 and 6: 6 -> 5 (NVLink), 5 -> 1 (IB),
  // 1 -> 0 (NVLink). Listed twice: duplicates count once.
  const std::vector<ReplicaInstance> replicas = {{3, 0, 5}, {3, 0, 1}, {3, 0, 6}, {3, 0, 1}};
  const GradientReduction reduction = reduce_replica_gradients(replicas, topology, 1000000, cost);
  EXPECT_EQ(reduction.ib_bytes, 1000000);
  EXPECT_EQ(reduction.nvlink_bytes, 2000000);
  // The busiest rank sends or receives one gradient per class: IB dominates.
  EXPECT_EQ(reduction.time_ps, transfer_ps(1000000, cost.scale_out));
  EXPECT_EQ(reduce_replica_gradients({}, topology, 1000000, cost).time_ps, 0);
}

// The step-end syncs run on one stream while the backward leaves the links idle, first ready
// first served: a layer's replica gradients and experts' sync when its MoE backward ends, its
// dense sync when its attention backward ends. What is left when the backward ends is exposed,
// each remainder on its own layer.
TEST(BackwardSync, SyncsRunInTheIdleTimeTheLayersBelowLeaveAndTheRestIsExposed) {
  // Two layers; the backward runs layer 1, then layer 0 (times in ps).
  std::vector<LayerSyncWork> layers(2);
  layers[1] = {/*expert_compute_idle=*/100,
               /*attention_idle=*/50,
               /*outside_idle=*/10,
               /*replica_reduction=*/30,
               /*expert_sync=*/40,
               /*dense_sync=*/60};
  layers[0] = {100, 50, 10, 0, 40, 60};
  // Layer 1: its compute's 100 precede its syncs; its attention's 50 run its replicas (30) and
  // 20 of its experts' 40, its outside share 10 more. Layer 0: its compute's 100 finish layer
  // 1's experts (10) and dense sync (60), 30 going unused; its attention runs its experts (40),
  // its outside share 10 of its dense sync's 60: 50 exposed, on layer 0's dense field.
  std::vector<LayerSyncExposed> exposed = expose_backward_syncs(layers);
  EXPECT_EQ(exposed[1].replica_reduction + exposed[1].expert_sync + exposed[1].dense_sync, 0);
  EXPECT_EQ(exposed[0].expert_sync, 0);
  EXPECT_EQ(exposed[0].dense_sync, 50);
  // Less idle time below layer 1: its own syncs are still waiting when the backward ends.
  layers[0].expert_compute_idle = 20;
  exposed = expose_backward_syncs(layers);
  // Layer 0's compute finishes layer 1's experts (10) and 10 of its dense sync; the other 50
  // take layer 0's attention ahead of layer 0's experts, which get 10 in its outside share.
  EXPECT_EQ(exposed[1].expert_sync, 0);
  EXPECT_EQ(exposed[1].dense_sync, 0);
  EXPECT_EQ(exposed[0].expert_sync, 30);
  EXPECT_EQ(exposed[0].dense_sync, 60);
  // No idle time at all: every sync whole, on its own layer.
  for (LayerSyncWork& layer : layers) {
    layer.expert_compute_idle = layer.attention_idle = layer.outside_idle = 0;
  }
  exposed = expose_backward_syncs(layers);
  EXPECT_EQ(exposed[1].replica_reduction, 30);
  EXPECT_EQ(exposed[1].expert_sync, 40);
  EXPECT_EQ(exposed[1].dense_sync, 60);
  EXPECT_EQ(exposed[0].dense_sync, 60);
  EXPECT_TRUE(expose_backward_syncs({}).empty());
}

// Groups routed apart: a sync between the groups (the experts', the dense gradients') is a
// collective, starting on every group's stream when the last group reaches it; a group's replica
// gradients are its own. Each wait lands on the sync waited for.
TEST(BackwardSync, ASyncBetweenGroupsStartsWhenTheLastGroupReachesIt) {
  // One layer. Group a: the combine's gradient 10, expert compute [10, 110] (all idle), the
  // dispatch's gradient to 120, attention [120, 170], outside share [170, 190]: its backward
  // ends at 190. Group b, starting 100 later, has no replica gradients.
  LayerSyncWork layer;
  layer.expert_compute_idle = layer.compute_grad = 100;
  layer.attention_idle = layer.attention = 50;
  layer.outside_idle = layer.outside = 20;
  layer.combine_grad = layer.dispatch_grad = 10;
  layer.replica_reduction = 30;
  layer.expert_sync = 40;
  layer.dense_sync = 60;
  GroupBackward a{0, {layer}};
  layer.replica_reduction = 0;
  GroupBackward b{100, {layer}};
  // Alone, a runs its replicas (30) and 20 of the experts' sync in its attention, the other 20
  // in its outside share; its dense sync (60) is all exposed.
  const std::vector<LayerSyncExposed> alone = expose_backward_syncs(a.layers);
  EXPECT_EQ(alone[0].replica_reduction + alone[0].expert_sync, 0);
  EXPECT_EQ(alone[0].dense_sync, 60);
  EXPECT_EQ(expose_group_backward_syncs({a}).front()[0].dense_sync, 60);
  // Together: a reaches the experts' sync at 150, b at 220 (its attention begins), after a's
  // backward has ended: a waits 30 past its end, then runs the 40 (70 exposed); b runs it in 40
  // of its attention. The dense sync: a is ready at 260, b at 270 (its outside share): a waits
  // 10 more and runs the 60 (70); b runs 20 of it in its outside share, 40 past its end at 290.
  // Both end at 330, as a collective ends.
  const std::vector<std::vector<LayerSyncExposed>> both = expose_group_backward_syncs({a, b});
  EXPECT_EQ(both[0][0].replica_reduction, 0);
  EXPECT_EQ(both[0][0].expert_sync, 70);
  EXPECT_EQ(both[0][0].dense_sync, 70);
  EXPECT_EQ(both[1][0].expert_sync, 0);
  EXPECT_EQ(both[1][0].dense_sync, 40);
  EXPECT_EQ(190 + both[0][0].expert_sync + both[0][0].dense_sync, 290 + both[1][0].dense_sync);
  // Groups alike: each as it runs alone.
  const std::vector<std::vector<LayerSyncExposed>> alike = expose_group_backward_syncs({a, a});
  for (const std::vector<LayerSyncExposed>& group : alike) {
    EXPECT_EQ(group[0].dense_sync, 60);
    EXPECT_EQ(group[0].expert_sync, 0);
  }
}

// The idle time a layer offers is gradient_overlap_fraction of its expert backward compute, of
// its attention backward (2x the dense forward) and of its share outside the MoE layers; the
// planners still weigh the whole reduction (sim/solver_cost.h).
TEST(SimCostModel, BackwardSyncWorkScalesTheLayersIdleComputeByTheOverlapFraction) {
  SimOptions options;
  options.gradient_overlap_fraction = 0.25;
  const CostModel model(round_topology(1, 2), round_model(2, 1), options, 10);
  LayerCost cost;
  cost.compute_grad = 800000;
  cost.dense_forward = 1000000;
  cost.outside_forward = 40000;
  cost.replica_reduction = 300000;
  const LayerSyncWork work = model.backward_sync_work(cost);
  EXPECT_EQ(work.expert_compute_idle, 200000);
  EXPECT_EQ(work.attention_idle, 500000);
  EXPECT_EQ(work.outside_idle, 20000);
  EXPECT_EQ(work.replica_reduction, 300000);
  EXPECT_EQ(work.dense_sync, model.dense_gradient_sync().time_ps);
  EXPECT_EQ(work.expert_sync, 0);  // one data-parallel group
  EXPECT_EQ(model.solver_params().gradient_overlap_ps, 0);
  options.gradient_overlap_fraction = 0;
  const CostModel charged(round_topology(1, 2), round_model(2, 1), options, 10);
  const LayerSyncWork whole = charged.backward_sync_work(cost);
  EXPECT_EQ(whole.expert_compute_idle + whole.attention_idle + whole.outside_idle, 0);
}

// With a2a_overlap_fraction f, microbatch m of M: a forward (m > 0) hides the paired
// backward's two transfers behind its compute less its weights' share of the links, a backward
// (m < M - 1) the paired forward's dispatch and combine behind its compute, each f x the
// smaller of the two, the partner's transfers taken to be the record's own; the phases stay
// whole and the MoE time leaves the hidden parts out.
TEST(SimCostModel, AllToAllsHideBehindThePairedMicrobatchsComputeUpToTheFraction) {
  SimOptions options;
  options.a2a_overlap_fraction = 0.5;
  const CostModel model(round_topology(1, 2), round_model(2, 1), options, 10);
  LayerCost cost;
  cost.dense_forward = 1000000;
  cost.compute = 3000000;
  cost.compute_grad = 6000000;
  cost.dispatch = 4000000;
  cost.combine = 5000000;
  cost.combine_grad = cost.dispatch_grad = 2500000;
  cost.weight_exposed = 700000;
  cost.weight_window_used = 1000000;  // the whole attention window
  const Picoseconds whole = cost.moe();

  model.overlap_all_to_alls(1, 3, cost);
  // Forward: min(5 us of transfers, 1 + 3 - 1 us of link-idle compute), half of it.
  EXPECT_EQ(cost.a2a_hidden_forward, 1500000);
  // Backward: min(9 us of transfers, 2 x 1 + 6 us of compute) = 8 us, half of it.
  EXPECT_EQ(cost.a2a_hidden_backward, 4000000);
  EXPECT_EQ(cost.moe(), whole - 5500000);
  EXPECT_EQ(cost.dispatch + cost.combine + cost.combine_grad + cost.dispatch_grad, 14000000);

  model.overlap_all_to_alls(0, 2, cost);  // the step's first forward has no partner
  EXPECT_EQ(cost.a2a_hidden_forward, 0);
  EXPECT_EQ(cost.a2a_hidden_backward, 4000000);
  model.overlap_all_to_alls(1, 2, cost);  // nor has its last backward
  EXPECT_EQ(cost.a2a_hidden_forward, 1500000);
  EXPECT_EQ(cost.a2a_hidden_backward, 0);
  model.overlap_all_to_alls(0, 1, cost);  // one microbatch: nothing to pair with
  EXPECT_EQ(cost.moe(), whole);

  options.a2a_overlap_fraction = 1;
  const CostModel full(round_topology(1, 2), round_model(2, 1), options, 10);
  full.overlap_all_to_alls(1, 3, cost);
  EXPECT_EQ(cost.a2a_hidden_forward, 3000000);  // all the link-idle forward covers
  EXPECT_EQ(cost.a2a_hidden_backward, 8000000);
  options.a2a_overlap_fraction = 0;
  const CostModel none(round_topology(1, 2), round_model(2, 1), options, 10);
  none.overlap_all_to_alls(1, 3, cost);
  EXPECT_EQ(cost.moe(), whole);
}

// With the all-to-alls behind compute, the weights' window the planners decide with is what the
// paired backward's transfers leave of the forward's link-idle time (on uniform routing),
// blended with the whole window by the fraction: none where the transfers outlast the
// forward's compute, all of it where they fit beside it.
TEST(SimCostModel, PlannersWeightWindowIsWhatThePairedTransfersLeaveOfIt) {
  const auto window = [](const Topology& topology, double fraction) {
    SimOptions options;
    options.a2a_overlap_fraction = fraction;
    return CostModel(topology, round_model(8, 2), options, 1000).solver_params().weight_overlap_ps;
  };
  const Topology slow_ib = round_topology(2, 2);  // ~170 us of transfers, ~17 us of compute
  const Picoseconds whole = window(slow_ib, 0);
  EXPECT_GT(whole, 0);
  EXPECT_EQ(window(slow_ib, 1), 0);
  EXPECT_NEAR(window(slow_ib, 0.5), whole / 2, 1);
  Topology fast = round_topology(2, 2);
  fast.scale_up = fast.scale_out = LinkSpec{"fast", 1e6, 1e6, 0, "test"};
  EXPECT_EQ(window(fast, 1), window(fast, 0));
}

// NCCL's ring over R GPUs, one ring per GPU of a node: each GPU sends passes x (R - 1) / R of
// the buffer (an all-reduce two passes, a reduce-scatter or all-gather one), 1/G of it over its
// own NIC when the ring spans nodes; the classes pipeline, and of the passes x (R - 1) steps the
// passes x (N - 1) that cross nodes pay IB's latency, the others NVLink's.
TEST(RingCollective, EachGpuSendsItsPassesOfTheBufferLessItsShareWithAnIbShareOfOneOverG) {
  CostParams cost;
  cost.scale_up = LinkCost{100000, 2000000};  // 100 GB/s, 2 us
  cost.scale_out = LinkCost{25000, 5000000};  // 25 GB/s, 5 us
  const auto all_reduce = [&](TopologyView topology, Bytes bytes) {
    return ring_collective(RingCollective::kAllReduce, topology, bytes, cost);
  };
  // One node of 4: 2 x 3/4 x 4 MB = 6 MB over NVLink, 6 steps of 2 us.
  const RingTraffic one_node = all_reduce(TopologyView{1, 4}, 4000000);
  EXPECT_EQ(one_node.nvlink_bytes_per_gpu, 6000000);
  EXPECT_EQ(one_node.ib_bytes_per_gpu, 0);
  EXPECT_EQ(one_node.time_ps, 6 * 2000000LL + 60000000LL);
  // Two nodes of 4: 2 x 7/8 x 4 MB = 7 MB, a quarter over IB (70 us), the rest NVLink
  // (52.5 us); of 14 steps, 2 cross nodes (5 us each) and 12 do not (2 us).
  const RingTraffic two_nodes = all_reduce(TopologyView{2, 4}, 4000000);
  EXPECT_EQ(two_nodes.ib_bytes_per_gpu, 1750000);
  EXPECT_EQ(two_nodes.nvlink_bytes_per_gpu, 5250000);
  EXPECT_EQ(two_nodes.time_ps, 2 * 5000000LL + 12 * 2000000LL + 70000000LL);
  // One pass: half the bytes and the steps (7/8 x 4 MB = 3.5 MB; 1 step across nodes, 6 not).
  for (const RingCollective half : {RingCollective::kReduceScatter, RingCollective::kAllGather}) {
    const RingTraffic one_pass = ring_collective(half, TopologyView{2, 4}, 4000000, cost);
    EXPECT_EQ(one_pass.ib_bytes_per_gpu, 875000);
    EXPECT_EQ(one_pass.nvlink_bytes_per_gpu, 2625000);
    EXPECT_EQ(one_pass.time_ps, 5000000LL + 6 * 2000000LL + 35000000LL);
  }
  // One GPU a node: all of it over IB, both steps across nodes.
  const RingTraffic ib_only = all_reduce(TopologyView{2, 1}, 4000000);
  EXPECT_EQ(ib_only.ib_bytes_per_gpu, 4000000);
  EXPECT_EQ(ib_only.nvlink_bytes_per_gpu, 0);
  EXPECT_EQ(ib_only.time_ps, 2 * 5000000LL + 160000000LL);
  // Whole bytes, rounded up: 2 x 3/4 x 7 = 10.5.
  EXPECT_EQ(all_reduce(TopologyView{1, 4}, 7).nvlink_bytes_per_gpu, 11);
  // Nothing to reduce: one GPU, or no bytes.
  EXPECT_EQ(all_reduce(TopologyView{1, 1}, 4000000).time_ps, 0);
  EXPECT_EQ(all_reduce(TopologyView{2, 4}, 0).time_ps, 0);
}

// The dense gradients' all-reduce as NCCL's ring runs it, at the gradients' width; 0 bytes
// leaves it out.
TEST(SimCostModel, DenseAllReduceCarriesTheGradientsAtTheirWidth) {
  // 1M dense parameters in bf16 over 2 GPUs of one node: 2 MB at 100 GB/s and 2 steps of 2 us.
  const CostModel model(round_topology(1, 2), round_model(2, 1), SimOptions{}, 10);
  EXPECT_EQ(model.dense_gradient_sync().nvlink_bytes_per_gpu, 2000000);
  EXPECT_EQ(model.dense_gradient_sync().time_ps, 24000000);
  EXPECT_EQ(model.dense_param_gather().time_ps, 0);  // every GPU updates every parameter
  // fp32 gradients: twice the bytes.
  SimOptions fp32;
  fp32.dense_grad_bytes = 4;
  const CostModel wide(round_topology(1, 2), round_model(2, 1), fp32, 10);
  EXPECT_EQ(wide.dense_gradient_sync().time_ps, 44000000);
  // Left out: nothing to sync.
  SimOptions none;
  none.dense_grad_bytes = 0;
  const CostModel left_out(round_topology(1, 2), round_model(2, 1), none, 10);
  EXPECT_EQ(left_out.dense_gradient_sync().time_ps, 0);
  EXPECT_EQ(left_out.backward_sync_work(LayerCost{}).dense_sync, 0);
}

// The distributed optimizer (ZeRO-1) reduce-scatters the gradients (one pass round the ring),
// keeps 1/R of the dense parameters' optimizer state on each GPU, and all-gathers the updated
// parameters on the step's first microbatch, one layer ahead: in the link-idle forward of the
// layer before, after that layer's new replicas' weights.
TEST(SimCostModel, DistributedOptimizerHalvesTheGradientSyncAndGathersTheParametersAtStepStart) {
  SimOptions options;
  options.dense_sync = DenseSync::kDistributedOptimizer;
  options.weight_overlap_fraction = 0.1;
  const CostModel all_reduce(round_topology(2, 2), round_model(8, 1), SimOptions{}, 100000);
  const CostModel distributed(round_topology(2, 2), round_model(8, 1), options, 100000);
  // 2 MB of bf16 gradients over 2 x 2 GPUs: 3/4 of it sent, half over IB (30 us) and half over
  // NVLink (7.5 us); 1 step across nodes (5 us) and 2 inside (2 us each).
  for (const RingTraffic& half :
       {distributed.dense_gradient_sync(), distributed.dense_param_gather()}) {
    EXPECT_EQ(half.ib_bytes_per_gpu, 750000);
    EXPECT_EQ(half.time_ps, 5000000 + 2 * 2000000 + 30000000);
  }
  EXPECT_EQ(all_reduce.dense_gradient_sync().ib_bytes_per_gpu, 1500000);
  // The optimizer: a quarter of the 1e6 dense parameters, the GPU's two experts whole.
  EXPECT_EQ(distributed.optimizer_ps(1),
            std::llround((0.25e6 + 2 * 3 * 1024 * 512.0) * 28 / 2000 * 1000));
  // A hot expert spread by TopoEP: its new replicas' weights outlast the 10% window and take
  // all of it (they are needed before the next layer's parameters: earliest deadline first).
  RoutingCounts counts(4, 8);
  for (RankId r = 0; r < 4; ++r) counts.set(r, 0, 100000);
  const PlannerDecision decision =
      make_planner("topoep", context_for(distributed, 1), PlannerOptions{})
          ->plan(RecordId{}, counts);
  const LayerCost spread = distributed.price(decision, counts, CostModel::Detail::kTimes);
  const Picoseconds window = std::llround(0.1 * static_cast<double>(spread.dense_forward));
  const Picoseconds gather = distributed.dense_param_gather().time_ps;
  ASSERT_GT(spread.weight_exposed, 0);
  EXPECT_EQ(spread.weight_window_used, window);
  // The next layer's all-gather (39 us), started as this layer's forward starts, has the rest of
  // its link-idle forward: 10% of the expert compute and of its share outside the MoE layers.
  const Picoseconds idle = distributed.forward_idle_ps(spread);
  EXPECT_EQ(idle, std::llround(0.1 * static_cast<double>(spread.compute + spread.outside_forward)));
  EXPECT_EQ(distributed.exposed_param_gather_ps(idle), std::max<Picoseconds>(0, gather - idle));
  EXPECT_EQ(distributed.exposed_param_gather_ps(gather / 2), gather - gather / 2);
  // The first layer's gather has no forward before it.
  EXPECT_EQ(distributed.exposed_param_gather_ps(0), gather);
  // Static moves no weights: the whole window is left to the gather.
  const LayerCost home =
      distributed.price(make_planner("static", context_for(distributed, 1), PlannerOptions{})
                            ->plan(RecordId{}, counts),
                        counts, CostModel::Detail::kTimes);
  EXPECT_EQ(home.weight_window_used, 0);
  EXPECT_EQ(distributed.forward_idle_ps(home),
            window + std::llround(0.1 * static_cast<double>(home.compute + home.outside_forward)));
}

// D copies of the expert-parallel group train data-parallel: the dense sync spans all D x R
// GPUs, and each GPU syncs its home experts' gradients with its D - 1 peers (one a group, each
// on its own node) over IB.
TEST(SimCostModel, DataParallelGroupsSyncTheHomeExpertsOverIb) {
  SimOptions options;
  options.data_parallel = 2;
  // Two GPUs of one node, two experts each: 2 x 3 x 1024 x 512 parameters, 6,291,456 bf16 bytes.
  const CostModel model(round_topology(1, 2), round_model(4, 1), options, 10);
  // Between the two groups: 2 x 1/2 of it over IB (251.65824 us at 25 GB/s), 2 steps of 5 us.
  const RingTraffic& experts = model.expert_gradient_sync();
  EXPECT_EQ(experts.ib_bytes_per_gpu, 6291456);
  EXPECT_EQ(experts.nvlink_bytes_per_gpu, 0);
  EXPECT_EQ(experts.time_ps, 2 * 5000000LL + 251658240LL);
  EXPECT_EQ(model.expert_param_gather().time_ps, 0);
  // The dense all-reduce runs round both groups' 4 GPUs on 2 nodes: 3 MB sent, half over IB
  // (60 us), half over NVLink (15 us); 2 of its 6 steps cross nodes.
  EXPECT_EQ(model.dense_gradient_sync().ib_bytes_per_gpu, 1500000);
  EXPECT_EQ(model.dense_gradient_sync().time_ps, 2 * 5000000LL + 4 * 2000000LL + 60000000LL);
  // The stream runs it after the layer's replica gradients (sim/backward_sync.h).
  EXPECT_EQ(model.backward_sync_work(LayerCost{}).expert_sync, experts.time_ps);
  // One group has no peers: nothing to sync, every earlier figure as it was.
  const CostModel one_group(round_topology(1, 2), round_model(4, 1), SimOptions{}, 10);
  EXPECT_EQ(one_group.expert_gradient_sync().time_ps, 0);
  EXPECT_EQ(one_group.dense_gradient_sync().time_ps, 24000000);
  // Without gradient bytes the data-parallel traffic is left out, the experts' too.
  options.dense_grad_bytes = 0;
  EXPECT_EQ(CostModel(round_topology(1, 2), round_model(4, 1), options, 10)
                .expert_gradient_sync()
                .time_ps,
            0);
}

// With the distributed optimizer each group keeps 1/D of its home experts' optimizer state:
// the experts' gradients are reduce-scattered between the groups and the updated experts
// all-gathered on the step's first microbatch, after the dense parameters, in the link-idle
// forward of the layer before.
TEST(SimCostModel, DistributedOptimizerShardsTheHomeExpertsAcrossDataParallelGroups) {
  SimOptions options;
  options.data_parallel = 2;
  options.dense_sync = DenseSync::kDistributedOptimizer;
  const CostModel model(round_topology(1, 2), round_model(4, 1), options, 10);
  // One pass: half the bytes (125.82912 us over IB) and one step of 5 us, each way.
  for (const RingTraffic& half : {model.expert_gradient_sync(), model.expert_param_gather()}) {
    EXPECT_EQ(half.ib_bytes_per_gpu, 3145728);
    EXPECT_EQ(half.time_ps, 5000000LL + 125829120LL);
  }
  // The dense all-gather round 4 GPUs: 0.75 MB over IB (30 us) and NVLink (7.5 us), 1 step
  // across nodes and 2 inside.
  const Picoseconds dense_gather = 5000000LL + 2 * 2000000LL + 30000000LL;
  EXPECT_EQ(model.dense_param_gather().time_ps, dense_gather);
  // 200 us of link-idle forward before the layer: both gathers hide.
  EXPECT_EQ(model.exposed_param_gather_ps(200000000), 0);
  EXPECT_EQ(model.exposed_expert_gather_ps(200000000), 0);
  // 100 us: the dense gather leaves 61 us, 69.82912 us of the experts' shows.
  EXPECT_EQ(model.exposed_param_gather_ps(100000000), 0);
  EXPECT_EQ(model.exposed_expert_gather_ps(100000000), 130829120 - (100000000 - dense_gather));
  // 20 us: 19 us of the dense gather shows, and all of the experts'.
  EXPECT_EQ(model.exposed_param_gather_ps(20000000), dense_gather - 20000000);
  EXPECT_EQ(model.exposed_expert_gather_ps(20000000), 130829120);
  // The optimizer: 1/(2 x 2) of the 1e6 dense parameters, half of the GPU's two experts.
  EXPECT_EQ(model.optimizer_ps(1), std::llround((0.25e6 + 3 * 1024 * 512.0) * 28 / 2000 * 1000));
}

TEST(SimCostModel, RejectsOptionsOutOfRange) {
  SimOptions options;
  options.weight_overlap_fraction = 1.5;
  EXPECT_THROW(CostModel(round_topology(1, 2), round_model(2, 1), options, 10), InputError);
  options.weight_overlap_fraction = 1;
  options.gradient_overlap_fraction = -0.1;
  EXPECT_THROW(CostModel(round_topology(1, 2), round_model(2, 1), options, 10), InputError);
  EXPECT_THROW(CostModel(round_topology(1, 2), round_model(2, 1), SimOptions{}, 0), InputError);
  options.gradient_overlap_fraction = 1;
  const auto refused_field = [&] {
    return testing::input_error_field(
        [&] { CostModel(round_topology(1, 2), round_model(2, 1), options, 10); });
  };
  for (const double fraction : {-0.1, 1.5}) {
    options.a2a_overlap_fraction = fraction;
    EXPECT_EQ(refused_field(), "a2a_overlap_fraction") << fraction;
  }
  options.a2a_overlap_fraction = 0;
  for (const int bytes : {-1, 9}) {
    options.dense_grad_bytes = bytes;
    EXPECT_EQ(refused_field(), "dense_grad_bytes") << bytes;
  }
  options.dense_grad_bytes = 2;
  for (const int groups : {0, kMaxDataParallel + 1}) {
    options.data_parallel = groups;
    EXPECT_EQ(refused_field(), "data_parallel") << groups;
  }
  // More GPUs than a rank id holds.
  options.data_parallel = kMaxDataParallel;
  EXPECT_EQ(testing::input_error_field(
                [&] { CostModel(round_topology(64, 1024), round_model(65536, 1), options, 10); }),
            "data_parallel");
}

}  // namespace
}  // namespace topoep
