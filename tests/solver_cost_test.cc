// The solver's cost parameters derived from topology and model presets, checked against the
// formulas in sim/solver_cost.h with the presets' published numbers.

#include "sim/solver_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/file_input_error.h"
#include "models/model_json.h"
#include "solver/input_error.h"
#include "solver/plan_encoding.h"
#include "solver/topoep_solver.h"
#include "topologies/topology_presets.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

TEST(ModelPresets, AllLoadAndRoundTrip) {
  const std::vector<std::string> expected = {"deepseek-v2-lite", "deepseek-v3", "mixtral-8x7b",
                                             "qwen3-30b-a3b"};
  EXPECT_EQ(model_preset_names(), expected);
  for (const std::string& name : model_preset_names()) {
    const ModelSpec model = load_model(name);
    EXPECT_EQ(model.name, name);
    EXPECT_EQ(model_to_json(parse_model(model_to_json(model).dump(), "x")), model_to_json(model));
  }
  const ModelSpec v3 = load_model("deepseek-v3");
  EXPECT_EQ(v3.num_experts, 256);
  EXPECT_EQ(v3.top_k, 8);
  EXPECT_EQ(v3.hidden_size, 7168);
  EXPECT_EQ(v3.expert_ffn_size, 2048);
  EXPECT_EQ(v3.expert_groups, 8);  // n_group, topk_group
  EXPECT_EQ(v3.expert_groups_per_token, 4);
  EXPECT_EQ(load_model("mixtral-8x7b").expert_groups, 0);
}

// The field a model document is rejected for ("" when it parses).
std::string rejected_field(const nlohmann::json& model) {
  try {
    parse_model(model.dump(), "m.json");
  } catch (const FileInputError& error) {
    return error.field();
  }
  return "";
}

TEST(ModelJson, RejectsBadFieldsByName) {
  nlohmann::json model = model_to_json(load_model("deepseek-v3"));
  model["top_k"] = 300;  // more than the experts
  EXPECT_EQ(rejected_field(model), "top_k");
  model = model_to_json(load_model("deepseek-v3"));
  model["hiden_size"] = 1;
  EXPECT_EQ(rejected_field(model), "hiden_size");
  model = model_to_json(load_model("deepseek-v3"));
  model["expert_groups"] = 7;  // does not divide 256
  EXPECT_EQ(rejected_field(model), "expert_groups");
  model["expert_groups"] = 8;
  model["expert_groups_per_token"] = 9;
  EXPECT_EQ(rejected_field(model), "expert_groups_per_token");
  model.erase("expert_groups_per_token");
  EXPECT_EQ(rejected_field(model), "expert_groups_per_token");  // the pair goes together
  // Grouped key-value heads divide the heads; MLA gives every head its keys and values.
  nlohmann::json mixtral = model_to_json(load_model("mixtral-8x7b"));
  mixtral["attention_kv_heads"] = 5;
  EXPECT_EQ(rejected_field(mixtral), "attention_kv_heads");
  model = model_to_json(load_model("deepseek-v3"));
  model["attention_kv_heads"] = 8;
  EXPECT_EQ(rejected_field(model), "attention_kv_heads");
  model.erase("attention_kv_heads");
  model["attention_rope_head_dim"] = 193;  // more than a head's query/key dimension
  EXPECT_EQ(rejected_field(model), "attention_rope_head_dim");
  model.erase("attention_kv_lora_rank");  // the latents go together
  EXPECT_EQ(rejected_field(model), "attention_kv_lora_rank");
  model = model_to_json(load_model("deepseek-v3"));
  model.erase("attention_heads");
  model.erase("attention_qk_head_dim");
  model.erase("attention_v_head_dim");
  model.erase("sequence_length");
  EXPECT_EQ(rejected_field(model), "attention_kv_lora_rank");  // latents need their heads
  mixtral.erase("attention_heads");
  mixtral.erase("attention_qk_head_dim");
  mixtral.erase("attention_v_head_dim");
  mixtral.erase("sequence_length");
  mixtral["attention_kv_heads"] = 8;
  EXPECT_EQ(rejected_field(mixtral), "attention_kv_heads");  // and grouped heads theirs
}

TEST(ModelJson, FilesWithoutSharedExpertsOrAttentionStillLoadAndCountOnlyDenseParams) {
  nlohmann::json model = model_to_json(load_model("deepseek-v3"));
  for (const char* key :
       {"shared_experts", "shared_expert_ffn_size", "attention_heads", "attention_qk_head_dim",
        "attention_v_head_dim", "sequence_length", "attention_q_lora_rank",
        "attention_kv_lora_rank", "attention_rope_head_dim"}) {
    model.erase(key);
  }
  const ModelSpec old = parse_model(model.dump(), "old.json");
  EXPECT_EQ(old.shared_experts, 0);
  EXPECT_DOUBLE_EQ(old.dense_flops_per_token(), 2.0 * 187105280);
  // A group is all or nothing: heads without their dimensions name the missing field.
  model["attention_heads"] = 128;
  EXPECT_EQ(rejected_field(model), "attention_qk_head_dim");
  // Nor need a file say how its attention groups keys and values: every head has its own.
  EXPECT_EQ(old.key_value_heads(), 0);
  EXPECT_FALSE(old.multi_latent_attention());
}

// A window of W tokens on some layers: query i attends to min(i, W) keys there, a mean of
// W - W^2 / (2 L); the attention term is charged at twice the mean context, averaged over the
// layers.
TEST(ModelJson, SlidingWindowLayersChargeTheirShorterContext) {
  nlohmann::json model = model_to_json(load_model("mixtral-8x7b"));  // 32 layers, L = 4096
  const ModelSpec full = parse_model(model.dump(), "m.json");
  EXPECT_EQ(full.attention_span(), 4096.0);
  EXPECT_FALSE(model_to_json(full).contains("attention_window"));  // written only where set
  model["attention_window"] = 1024;
  model["attention_window_layers"] = 16;
  const ModelSpec half = parse_model(model.dump(), "m.json");
  const double windowed = 2.0 * 1024 - 1024.0 * 1024 / 4096;  // 1792
  EXPECT_DOUBLE_EQ(half.attention_span(), (16 * windowed + 16 * 4096.0) / 32);
  const double per_span = 32.0 * (128 + 128);  // heads x (d_qk + d_v)
  EXPECT_DOUBLE_EQ(full.dense_flops_per_token() - half.dense_flops_per_token(),
                   per_span * (4096.0 - half.attention_span()));
  EXPECT_EQ(model_to_json(parse_model(model_to_json(half).dump(), "m.json")), model_to_json(half));
  // A window at least the sequence is full attention.
  model["attention_window"] = 4096;
  EXPECT_EQ(parse_model(model.dump(), "m.json").attention_span(), 4096.0);
  model["attention_window_layers"] = 33;  // more than the MoE layers
  EXPECT_EQ(rejected_field(model), "attention_window_layers");
  model.erase("attention_window_layers");
  EXPECT_EQ(rejected_field(model), "attention_window_layers");
}

// DeepSeek-V3 trained with its MTP module: 59 routed layers (58 MoE layers and the module's
// block) share the dense-only layers and the model's end, which gains the module's projection
// (2h -> h) and a second pass through the head.
TEST(ModelJson, AnMtpModuleAddsItsProjectionAndAHeadPassToTheRoutedLayersShares) {
  const ModelSpec v3 = load_model("deepseek-v3");
  EXPECT_EQ(v3.routed_layers(1), 59);
  EXPECT_DOUBLE_EQ(v3.dense_layers_per_moe_layer(1), 3.0 / 59);
  const double head = 2.0 * 7168 * 129280, projection = 4.0 * 7168 * 7168;
  EXPECT_DOUBLE_EQ(v3.head_end_flops_per_token(1.0, 0), head / 58);
  EXPECT_DOUBLE_EQ(v3.head_end_flops_per_token(1.0, 1), (2 * head + projection) / 59);
  // The projection is a GEMM (fp8 where the GEMMs are); the head stays bf16.
  EXPECT_DOUBLE_EQ(v3.head_end_flops_per_token(2.0, 1), (2 * head + projection / 2) / 59);
  EXPECT_DOUBLE_EQ(v3.outside_flops_per_token(1.0, 1),
                   3.0 / 59 * v3.dense_layer_flops_per_token() + (2 * head + projection) / 59);
  const double embeddings = 2.0 * 7168 * 129280;  // untied: the embedding and the head
  EXPECT_DOUBLE_EQ(v3.dense_and_shared_params(1), v3.moe_layer_dense_params() +
                                                      3.0 / 59 * v3.dense_only_layer_params() +
                                                      (embeddings + 2.0 * 7168 * 7168) / 59);
  // Without modules, the model's own shares.
  EXPECT_DOUBLE_EQ(v3.outside_flops_per_token(1.0, 0), v3.outside_flops_per_token());
}

// DeepSeek-V3's 3 dense layers of 61: attention as a MoE layer's and an FFN of 18,432. Each of
// the 58 MoE layers carries 3 / 58 of one, in FLOPs and in optimizer parameters.
TEST(ModelJson, DenseOnlyLayersAreCountedAsEachMoeLayersShare) {
  const ModelSpec v3 = load_model("deepseek-v3");
  EXPECT_EQ(v3.dense_layers, 3);
  EXPECT_EQ(v3.dense_ffn_size, 18432);
  EXPECT_DOUBLE_EQ(v3.dense_layers_per_moe_layer(), 3.0 / 58);
  const double attention = 2.0 * 187105280 + 128.0 * (192 + 128) * 4096;
  EXPECT_DOUBLE_EQ(v3.dense_layer_flops_per_token(), attention + 6.0 * 7168 * 18432);
  nlohmann::json model = model_to_json(v3);
  model.erase("dense_layers");
  model.erase("dense_ffn_size");
  const ModelSpec without = parse_model(model.dump(), "m.json");  // older files: none
  EXPECT_EQ(without.dense_layers, 0);
  EXPECT_FALSE(model_to_json(without).contains("dense_layers"));  // written only where set
  EXPECT_DOUBLE_EQ(v3.dense_and_shared_params() - without.dense_and_shared_params(),
                   3.0 / 58 * (187105280 + 3.0 * 7168 * 18432));
  // Layers without an FFN size, a size without layers, or a size alone are named.
  model["dense_layers"] = 3;
  EXPECT_EQ(rejected_field(model), "dense_ffn_size");
  model["dense_ffn_size"] = 0;
  EXPECT_EQ(rejected_field(model), "dense_ffn_size");
  model["dense_layers"] = 0;
  model["dense_ffn_size"] = 18432;
  EXPECT_EQ(rejected_field(model), "dense_ffn_size");
  model.erase("dense_layers");
  EXPECT_EQ(rejected_field(model), "dense_layers");
  model["dense_layers"] = 5000;
  EXPECT_EQ(rejected_field(model), "dense_layers");
}

// The output head's 2 h V FLOPs a token, once per model: each of DeepSeek-V3's 58 MoE layers
// carries 1 / 58 of it, and of the embedding's and head's parameters (one matrix where tied).
TEST(ModelJson, TheOutputHeadIsCountedAsEachMoeLayersShare) {
  const ModelSpec v3 = load_model("deepseek-v3");
  EXPECT_EQ(v3.vocab_size, 129280);
  EXPECT_FALSE(v3.tied_embeddings);
  EXPECT_DOUBLE_EQ(v3.head_flops_per_token(), 2.0 * 7168 * 129280);
  EXPECT_DOUBLE_EQ(v3.outside_flops_per_token(),
                   3.0 / 58 * v3.dense_layer_flops_per_token() + 2.0 * 7168 * 129280 / 58);
  nlohmann::json model = model_to_json(v3);
  model.erase("vocab_size");
  const ModelSpec without = parse_model(model.dump(), "m.json");  // older files: not counted
  EXPECT_EQ(without.vocab_size, 0);
  EXPECT_FALSE(model_to_json(without).contains("vocab_size"));
  EXPECT_NEAR(v3.dense_and_shared_params() - without.dense_and_shared_params(),
              2.0 * 7168 * 129280 / 58, 1e-3);
  model["vocab_size"] = 129280;
  model["tied_embeddings"] = true;
  const ModelSpec tied = parse_model(model.dump(), "m.json");
  EXPECT_TRUE(tied.tied_embeddings);
  EXPECT_NEAR(tied.dense_and_shared_params() - without.dense_and_shared_params(),
              7168.0 * 129280 / 58, 1e-3);  // a difference of sums: a few ulps apart
  EXPECT_EQ(model_to_json(parse_model(model_to_json(tied).dump(), "m.json")), model_to_json(tied));
  model["tied_embeddings"] = 1;
  EXPECT_EQ(rejected_field(model), "tied_embeddings");
  model.erase("vocab_size");
  model["tied_embeddings"] = true;
  EXPECT_EQ(rejected_field(model), "vocab_size");  // tied to what
  model["vocab_size"] = 0;
  EXPECT_EQ(rejected_field(model), "vocab_size");
}

TEST(GemmEfficiency, InterpolatesLinearlyAndClampsAtTheEnds) {
  GemmEfficiencyCurve curve;
  curve.tokens_per_expert = {10, 20};
  curve.efficiency = {0.2, 0.6};
  EXPECT_DOUBLE_EQ(gemm_efficiency_at(curve, 5), 0.2);
  EXPECT_DOUBLE_EQ(gemm_efficiency_at(curve, 15), 0.4);
  EXPECT_DOUBLE_EQ(gemm_efficiency_at(curve, 40), 0.6);
}

TEST(GemmEfficiency, AgreesWithTheCurveAtAndBetweenEveryPoint) {
  GemmEfficiencyCurve curve;
  curve.tokens_per_expert = {2, 8, 32, 128, 512, 2048};
  curve.efficiency = {0.05, 0.15, 0.35, 0.6, 0.8, 0.9};
  const auto& x = curve.tokens_per_expert;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_DOUBLE_EQ(gemm_efficiency_at(curve, x[i]), curve.efficiency[i]) << x[i];
    if (i + 1 < x.size()) {
      const double mid = (x[i] + x[i + 1]) / 2;
      EXPECT_DOUBLE_EQ(gemm_efficiency_at(curve, mid),
                       (curve.efficiency[i] + curve.efficiency[i + 1]) / 2)
          << mid;
    }
  }
}

TEST(PicosecondsInRange, RoundsHalvesAwayFromZeroAsLlroundDoes) {
  const double two52 = 4503599627370496.0;
  for (const double ps : {0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 2.4999999999999996, 1e6 + 0.5,
                          two52 - 0.5, two52 + 1, 2 * two52 + 2, 2305843009213693951.0 / 2}) {
    EXPECT_EQ(picoseconds_in_range(ps, "t"), std::llround(ps)) << ps;
  }
  std::uint64_t state = 12345;
  for (int i = 0; i < 100000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double ps = std::ldexp(static_cast<double>(state >> 11), -static_cast<int>(state % 60));
    EXPECT_EQ(picoseconds_in_range(ps, "t"), std::llround(ps)) << ps;
  }
  EXPECT_THROW(picoseconds_in_range(-0.5, "t"), InputError);
  EXPECT_THROW(picoseconds_in_range(2305843009213693952.0, "t"), InputError);
  EXPECT_THROW(picoseconds_in_range(std::nan(""), "t"), InputError);
}

TEST(SolverCost, InstanceMinimumFitsTheCurve) {
  GemmEfficiencyCurve roofline;  // 0.6 x min(1, t / 200)
  roofline.tokens_per_expert = {1, 10, 100, 200, 1000};
  roofline.efficiency = {0.003, 0.03, 0.3, 0.6, 0.6};
  EXPECT_NEAR(curve_instance_min_tokens(roofline), 200, 1e-9);
  GemmEfficiencyCurve flat;
  flat.tokens_per_expert = {1, 1000};
  flat.efficiency = {0.5, 0.5};
  EXPECT_EQ(curve_instance_min_tokens(flat), 0);
  // Efficiency 0.65 t / (t + 100): an instance takes t + 100 tokens' time at the best point's
  // rate (approached, 0.65 x 1000 / 1100). No minimum fits it exactly; the chosen one errs by
  // no more than any other candidate, far less than linear compute (0) does at t = 1.
  GemmEfficiencyCurve smooth;
  smooth.tokens_per_expert = {1, 10, 100, 1000};
  for (const double t : smooth.tokens_per_expert) smooth.efficiency.push_back(0.65 * t / (t + 100));
  const double minimum = curve_instance_min_tokens(smooth);
  EXPECT_GT(minimum, 10);
  EXPECT_LT(minimum, 200);
}

// The minimum as the first version chose it: every candidate's error over every point (P^3).
double instance_min_tokens_by_full_scan(const GemmEfficiencyCurve& curve) {
  const double best = *std::max_element(curve.efficiency.begin(), curve.efficiency.end());
  const std::vector<double>& tokens = curve.tokens_per_expert;
  std::vector<double> time(tokens.size()), flat_error(tokens.size());
  for (std::size_t i = 0; i < time.size(); ++i) {
    time[i] = tokens[i] * best / curve.efficiency[i];
    flat_error[i] = (time[i] - tokens[i]) / time[i];
  }
  auto worst_error = [&](double minimum) {
    double worst = 0;
    for (std::size_t i = 0; i < time.size(); ++i) {
      worst = std::max(worst, std::abs(std::max(tokens[i], minimum) - time[i]) / time[i]);
    }
    return worst;
  };
  std::vector<double> candidates{0};
  for (std::size_t i = 0; i < time.size(); ++i) {
    candidates.push_back(tokens[i]);
    candidates.push_back(time[i]);
    for (std::size_t j = 0; j < time.size(); ++j) {
      candidates.push_back(2 * time[i] * time[j] / (time[i] + time[j]));
      candidates.push_back(time[i] * (1 - flat_error[j]));
      candidates.push_back(time[i] * (1 + flat_error[j]));
    }
  }
  double chosen = 0, chosen_error = worst_error(0);
  for (const double candidate : candidates) {
    const double error = worst_error(candidate);
    if (error < chosen_error || (error == chosen_error && candidate < chosen)) {
      chosen = candidate;
      chosen_error = error;
    }
  }
  return chosen;
}

// Seeded curves of 1 to 40 points: rooflines, smooth saturating curves, dips and plateaus
// (equal efficiencies make equal errors, where the tie rule decides).
GemmEfficiencyCurve random_curve(std::uint64_t& state) {
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  GemmEfficiencyCurve curve;
  const int points = 1 + static_cast<int>(next() % 40);
  const int shape = static_cast<int>(next() % 3);
  const double knee = 1.0 + static_cast<double>(next() % 2000);
  double t = 0;
  for (int i = 0; i < points; ++i) {
    t += shape == 0 ? 1.0 + static_cast<double>(next() % 64) : std::ldexp(1.0, i % 20) + t;
    double efficiency = 0;
    if (shape == 0) {
      efficiency = 0.65 * std::min(1.0, t / knee);
    } else if (shape == 1) {
      efficiency = 0.65 * t / (t + knee);
    } else {
      efficiency = static_cast<double>(1 + next() % 8) / 10;  // dips and repeats
    }
    curve.tokens_per_expert.push_back(t);
    curve.efficiency.push_back(efficiency);
  }
  return curve;
}

TEST(SolverCost, InstanceMinimumIsTheOneEveryCandidatesFullScanChooses) {
  std::uint64_t state = 2026;
  for (int i = 0; i < 3000; ++i) {
    const GemmEfficiencyCurve curve = random_curve(state);
    // Bit for bit: the simulator's plans follow the minimum.
    EXPECT_EQ(curve_instance_min_tokens(curve), instance_min_tokens_by_full_scan(curve))
        << "curve " << i << " of " << curve.tokens_per_expert.size() << " points";
  }
}

TEST(SolverCost, InstanceMinimumOfALongCalibratedRooflineIsItsKnee) {
  // 2,000 measured points (a full scan of every candidate would take minutes), knee at 300.
  GemmEfficiencyCurve roofline;
  for (int i = 1; i <= 2000; ++i) {
    roofline.tokens_per_expert.push_back(i * 8);
    roofline.efficiency.push_back(0.6 * std::min(1.0, i * 8 / 300.0));
  }
  EXPECT_NEAR(curve_instance_min_tokens(roofline), 300, 1e-9);
}

TEST(GemmEfficiency, SearchesALongCurveAsItCountsAShortOne) {
  GemmEfficiencyCurve curve;
  for (int i = 1; i <= 500; ++i) {
    curve.tokens_per_expert.push_back(i * 3.0);
    curve.efficiency.push_back(0.9 * i / (i + 40.0));
  }
  const auto& x = curve.tokens_per_expert;
  const auto& y = curve.efficiency;
  for (double t = 0; t <= 1600; t += 0.75) {
    double expected = y.back();
    if (t <= x.front()) {
      expected = y.front();
    } else if (t < x.back()) {
      std::size_t i = 0;
      for (const double point : x) i += point <= t ? 1 : 0;
      expected = y[i - 1] + (t - x[i - 1]) / (x[i] - x[i - 1]) * (y[i] - y[i - 1]);
    }
    EXPECT_EQ(gemm_efficiency_at(curve, t), expected) << t;
  }
}

TEST(SolverCost, DeepSeekV3OnH800FollowsTheFormulas) {
  const Topology h800 = load_topology("h800-4x8");
  const ModelSpec v3 = load_model("deepseek-v3");
  const SolverCostDerivation d = derive_solver_cost(h800, v3, 4096, true);
  // At the curve's best efficiency, 0.65: compute = 6 x 7168 x 2048 / (989.4 x 0.65) =
  // 136,960 ps. The H800 curve is a roofline with its knee at 0.0022 -> 0.65 (1 -> 295.45
  // tokens): an instance costs at least 295 tokens' compute.
  EXPECT_DOUBLE_EQ(d.gemm_efficiency, 0.65);
  EXPECT_EQ(d.params.compute_ps_per_token, 136960);
  EXPECT_EQ(d.params.instance_min_tokens, 295);
  // fp8 hidden + one fp32 scale per 128: 7168 + 56 x 4; combine bf16: 2 x 7168.
  EXPECT_EQ(d.params.dispatch_bytes_per_token, 7392);
  EXPECT_EQ(d.params.combine_bytes_per_token, 14336);
  // bf16 gate, up and down projections: 3 x 7168 x 2048 x 2 bytes.
  EXPECT_EQ(d.params.replica_weight_bytes, 88080384);
  // Their gradients, reduced back once per step, at the same size; the backward weighed too:
  // 2x the forward compute, activation gradients at bf16.
  EXPECT_EQ(d.params.replica_gradient_bytes, 88080384);
  EXPECT_EQ(d.params.backward_compute_factor, 2);
  EXPECT_EQ(d.params.backward_bytes_per_token, 14336);
  // 160 and 48.5 GB/s; 3.4 and 9.6 us.
  EXPECT_EQ(d.params.scale_up.bytes_per_us, 160000);
  EXPECT_EQ(d.params.scale_out.bytes_per_us, 48500);
  EXPECT_EQ(d.params.scale_up.alpha_ps, 3400000);
  EXPECT_EQ(d.params.scale_out.alpha_ps, 9600000);
  // Dense window, per token: 2 x 187,105,280 dense params + one shared expert 6 x 7168 x 2048
  // at 989.4 TFLOP/s x 0.65, and the attention core 128 heads x (192 + 128) x 4096 at the
  // H800's FlashAttention forward efficiency at 4,096 tokens, 0.5852; x 4096 tokens (about
  // 4.13 ms).
  const double gemms = 2.0 * 187105280 + 6.0 * 7168 * 2048, core = 128.0 * (192 + 128) * 4096;
  EXPECT_NEAR(d.dense_time_us, (gemms / (989.4 * 0.65) + core / (989.4 * 0.5852)) * 4096 / 1e6,
              1e-6);
  EXPECT_EQ(derive_solver_cost(h800, v3, 4096, false).params.replica_weight_bytes, 0);
}

// FP8 GEMMs (DeepSeek-V3's training) run the experts', the attention projections', the shared
// expert's and the dense-only layers' GEMMs at the fp8 peak; the attention core and the output
// head stay at the bf16 rate.
TEST(SolverCost, Fp8GemmsRunAtTheFp8PeakAndLeaveTheAttentionCoreAndHeadInBf16) {
  const Topology h800 = load_topology("h800-4x8");  // 989.4 and 1978.9 TFLOP/s
  ModelSpec v3 = load_model("deepseek-v3");
  const SolverCostDerivation bf16 = derive_solver_cost(h800, v3, 4096, true);
  v3.fp8_gemms = true;
  const double speedup = 1978.9 / 989.4;
  EXPECT_DOUBLE_EQ(gemm_speedup(h800, v3), speedup);
  const SolverCostDerivation fp8 = derive_solver_cost(h800, v3, 4096, true);
  // 6 x 7168 x 2048 FLOP at 1978.9 TFLOP/s x 0.65: half the bf16 figure (136,960 ps).
  EXPECT_EQ(fp8.params.compute_ps_per_token, std::llround(6.0 * 7168 * 2048 / (1978.9 * 0.65)));
  EXPECT_EQ(fp8.params.compute_ps_per_token, 68477);
  const double gemms = 2.0 * 187105280 + 6.0 * 7168 * 2048, core = 128.0 * (192 + 128) * 4096;
  EXPECT_DOUBLE_EQ(v3.dense_flops_per_token(speedup), gemms / speedup + core);
  EXPECT_NEAR(fp8.dense_time_us,
              (gemms / speedup / (989.4 * 0.65) + core / (989.4 * 0.5852)) * 4096 / 1e6, 1e-6);
  EXPECT_LT(fp8.dense_time_us, bf16.dense_time_us);
  // The dense-only layers' GEMMs speed up, the head does not.
  EXPECT_DOUBLE_EQ(v3.outside_flops_per_token(speedup),
                   3.0 / 58 * v3.dense_layer_flops_per_token(speedup) + 2.0 * 7168 * 129280 / 58);
  EXPECT_DOUBLE_EQ(v3.dense_layer_flops_per_token(speedup),
                   (2.0 * 187105280 + 6.0 * 7168 * 18432) / speedup + core);
  // A GPU without an fp8 peak refuses them, naming the model's field.
  try {
    derive_solver_cost(load_topology("a100-8x8"), v3, 4096, true);
    FAIL() << "an A100 ran fp8 GEMMs";
  } catch (const InputError& error) {
    EXPECT_EQ(error.field(), "gemm_precision");
  }
  // Model files say it as "gemm_precision", written only where fp8.
  nlohmann::json file = model_to_json(v3);
  EXPECT_EQ(file["gemm_precision"], "fp8");
  EXPECT_TRUE(parse_model(file.dump(), "fp8.json").fp8_gemms);
  EXPECT_FALSE(model_to_json(load_model("deepseek-v3")).contains("gemm_precision"));
  file["gemm_precision"] = "bf16";
  EXPECT_FALSE(parse_model(file.dump(), "bf16.json").fp8_gemms);
  file["gemm_precision"] = "fp4";
  EXPECT_EQ(rejected_field(file), "gemm_precision");
}

// The attention core runs at FlashAttention's efficiency, not the GEMMs': on the H800 at
// DeepSeek-V3's 4,096 tokens 0.5852 of the bf16 peak forward and 0.5478 backward, the
// backward at 2.5 x the forward's FLOPs (the scores recomputed, then dV, dP, dQ and dK). The
// dense-only layers' attention cores are carried the same way; the output head has none.
TEST(DenseTimes, TheAttentionCoreRunsAtItsOwnEfficiencyAndItsBackwardAtTwoAndAHalfItsFlops) {
  const Topology h800 = load_topology("h800-4x8");
  const ModelSpec v3 = load_model("deepseek-v3");
  const AttentionEfficiency attention = attention_efficiency_at(h800, v3);
  EXPECT_DOUBLE_EQ(attention.forward, 0.5852);
  EXPECT_DOUBLE_EQ(attention.backward, 0.5478);
  const DenseTimesPerToken times = dense_times_per_token(h800, v3);
  const double gemm_rate = 989.4 * 0.65, forward_rate = 989.4 * 0.5852;
  const double backward_rate = 989.4 * 0.5478;
  const double core = 128.0 * (192 + 128) * 4096;
  EXPECT_DOUBLE_EQ(v3.attention_core_flops_per_token(), core);
  const double gemms = 2.0 * 187105280 + 6.0 * 7168 * 2048;
  EXPECT_NEAR(times.layer_forward, gemms / gemm_rate + core / forward_rate, 1e-6);
  const double extra = 2.5 * core / backward_rate - 2 * core / forward_rate;
  EXPECT_NEAR(times.layer_backward_extra, extra, 1e-6);
  // About 48% more attention-core backward than twice its forward at the GEMMs' rate.
  EXPECT_NEAR((2 * core / forward_rate + extra) / (2 * core / gemm_rate), 1.48, 0.01);
  // 3 dense-only layers over 58 MoE layers, each with the same attention; the head 2 h V / 58.
  const double dense_only = 3.0 / 58, head = 2.0 * 7168 * 129280 / 58;
  EXPECT_NEAR(times.head_forward, head / gemm_rate, 1e-6);
  EXPECT_NEAR(times.outside_forward,
              (v3.outside_flops_per_token() - dense_only * core) / gemm_rate +
                  dense_only * core / forward_rate,
              1e-6);
  EXPECT_NEAR(times.outside_backward_extra, dense_only * extra, 1e-6);
  EXPECT_NEAR(outside_forward_time_ps(h800, v3, 4096), times.outside_forward * 4096, 1e-3);
}

// Between the curve's points the efficiencies are interpolated, beyond them the end values
// hold; a GPU without a curve (the A100 preset) runs the core at the GEMM curve's best in both
// passes, so that only the backward's FLOPs are added.
TEST(DenseTimes, AttentionEfficiencyFollowsTheSequenceLengthOrTheGemmCurveWithoutOne) {
  const Topology h800 = load_topology("h800-4x8");
  ModelSpec v3 = load_model("deepseek-v3");
  v3.sequence_length = 3072;  // halfway between 2,048 and 4,096
  EXPECT_DOUBLE_EQ(attention_efficiency_at(h800, v3).forward, (0.5266 + 0.5852) / 2);
  EXPECT_DOUBLE_EQ(attention_efficiency_at(h800, v3).backward, (0.5064 + 0.5478) / 2);
  v3.sequence_length = 65536;
  EXPECT_DOUBLE_EQ(attention_efficiency_at(h800, v3).forward, 0.6226);
  v3.sequence_length = 128;
  EXPECT_DOUBLE_EQ(attention_efficiency_at(h800, v3).backward, 0.3194);

  const Topology a100 = load_topology("a100-8x8");
  ASSERT_TRUE(a100.attention_efficiency.empty());
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  EXPECT_DOUBLE_EQ(attention_efficiency_at(a100, mixtral).forward, 0.65);
  EXPECT_DOUBLE_EQ(attention_efficiency_at(a100, mixtral).backward, 0.65);
  const DenseTimesPerToken times = dense_times_per_token(a100, mixtral);
  const double rate = 312.0 * 0.65;
  EXPECT_NEAR(times.layer_forward, mixtral.dense_flops_per_token() / rate, 1e-6);
  EXPECT_NEAR(times.layer_backward_extra, 0.5 * mixtral.attention_core_flops_per_token() / rate,
              1e-6);
}

// Mixtral-8x7B (one expert per GPU) on one 8-GPU H800 node at 1,024 tokens per GPU: a
// replica's weights take longer to cross NVLink than one move's compute relief is worth, so no
// replica pays for itself alone; several together do, also through the dispatch and combine
// they shorten, while their weights cross in parallel. The solver's opened run finds them
// (solver/README.md, step 6); before it, the plan was the static one.
TEST(TopoepAtPresetCosts, ReplicatesWhereOnlyTheReplicasTogetherPayForTheirWeights) {
  Topology topology = load_topology("h800-4x8");
  topology.nodes = 1;
  const ModelSpec model = load_model("mixtral-8x7b");
  TopoepProblem problem;
  problem.topology = topology.view();
  problem.placement = Placement::contiguous(8, 8, 1);
  problem.cost = derive_solver_cost(topology, model, 1024, true).params;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SyntheticRoutingSpec spec;
    spec.num_ranks = 8;
    spec.num_experts = 8;
    spec.top_k = 2;
    spec.tokens_per_rank = 1024;
    spec.seed = seed;
    const LayerPlan plan = solve_topoep(problem, generate_routing(spec));
    const long replicas =
        std::count_if(plan.plan.replica_expert.begin(), plan.plan.replica_expert.end(),
                      [](ExpertId e) { return e != kNoExpert; });
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_GE(replicas, 2);
    EXPECT_LT(plan.cost.times.total,
              plan.static_cost.times.total - plan.static_cost.times.total / 10);
  }
}

// DeepSeek-V2-Lite's 64 experts on GB200 NVL72's 2 x 72 GPUs, homed one a GPU from GPU 0: all
// on node 0, so node 1's 72 GPUs compute nothing and send every token over IB. A replica there
// starts the IB weight and gradient phases, which no single move's relief pays for: the first
// run replicates inside node 0 only (or not at all), and its plan keeps the busiest GPU at about
// twice the mean. The IB-opened second run (solver/README.md, step 6) prices each GPU's first
// replica over IB as paid and fills node 1; its plan is kept because it is predicted faster:
// by more than a quarter where the routing is uniform, less where one Zipf-hot expert's home
// stays the straggler.
TEST(TopoepAtPresetCosts, ReplicatesAcrossNodesWhereOnlyManyReplicasThereTogetherPay) {
  const Topology topology = load_topology("gb200-nvl72-2x72");
  const ModelSpec model = load_model("deepseek-v2-lite");
  TopoepProblem problem;
  problem.topology = topology.view();
  problem.placement = Placement::contiguous(64, 144, 1, HomeLayout::kUneven);
  problem.cost = derive_solver_cost(topology, model, 1024, true).params;
  TopoepProblem without = problem;
  without.ib_opened_run = false;
  auto replicas_on_node_1 = [](const Plan& plan) {
    return std::count_if(plan.replica_expert.begin() + 72 * plan.slots_per_rank,
                         plan.replica_expert.end(), [](ExpertId e) { return e != kNoExpert; });
  };
  for (const RoutingSkew skew : {RoutingSkew::kUniform, RoutingSkew::kZipf}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      SyntheticRoutingSpec spec;
      spec.num_ranks = 144;
      spec.num_experts = 64;
      spec.top_k = 6;
      spec.tokens_per_rank = 1024;
      spec.skew = skew;
      spec.seed = seed;
      const RoutingCounts counts = generate_routing(spec);
      SCOPED_TRACE((skew == RoutingSkew::kUniform ? "uniform, seed " : "Zipf, seed ") +
                   std::to_string(seed));
      const LayerPlan first = solve_topoep(without, counts);
      EXPECT_EQ(replicas_on_node_1(first.plan), 0);
      TopoepHostSolver solver(problem);
      Plan plan;
      solver.solve(counts, {}, &plan);
      EXPECT_EQ(solver.last_kept_moves().run, KeptMoves::Run::kOpenedIb);
      EXPECT_GE(replicas_on_node_1(plan), 32);
      const LayerPlan opened = solve_topoep(problem, counts);
      EXPECT_EQ(plan_hash(opened.plan), plan_hash(plan));
      EXPECT_LT(opened.cost.times.total, first.cost.times.total);
      if (skew == RoutingSkew::kUniform) {
        EXPECT_LT(opened.cost.times.total, first.cost.times.total * 3 / 4);
      }
    }
  }
}

}  // namespace
}  // namespace topoep
