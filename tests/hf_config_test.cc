// models/hf_config.h: model files from Hugging Face config.json files.

#include "models/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/file_input_error.h"
#include "models/model_json.h"

namespace topoep {
namespace {

// The fields of each preset's published config.json that the mapping reads (the rest of each
// file is ignored), with the preset built by hand from it (models/presets/).
struct PublishedConfig {
  const char* preset;
  bool fp8_dispatch;
  const char* config;
};

const PublishedConfig kPublished[] = {
    {"deepseek-v3", true, R"({
      "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
      "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
      "num_experts_per_tok": 8, "num_hidden_layers": 61, "first_k_dense_replace": 3,
      "moe_layer_freq": 1, "num_attention_heads": 128, "num_key_value_heads": 128,
      "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
      "v_head_dim": 128, "vocab_size": 129280, "n_group": 8, "topk_group": 4})"},
    {"deepseek-v2-lite", true, R"({
      "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
      "moe_intermediate_size": 1408,
      "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "num_hidden_layers": 27, "first_k_dense_replace": 1, "moe_layer_freq": 1,
      "num_attention_heads": 16, "q_lora_rank": null, "kv_lora_rank": 512,
      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
      "tie_word_embeddings": false})"},
    {"mixtral-8x7b", false, R"({
      "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
      "num_local_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
      "tie_word_embeddings": false})"},
    {"qwen3-30b-a3b", true, R"({
      "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
      "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
      "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
      "head_dim": 128, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
      "tie_word_embeddings": false})"},
};

ModelSpec from(const std::string& config, bool fp8 = false) {
  HfRunChoices choices;
  choices.name = "test";
  choices.fp8_dispatch = fp8;
  return model_from_hf_config(nlohmann::json::parse(config), "config.json", choices);
}

std::string field_of_error(const std::string& config) {
  try {
    from(config);
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), "config.json");
    return error.field();
  }
  return "no error";
}

TEST(HfConfig, ReproducesEveryPresetFromItsPublishedConfig) {
  for (const PublishedConfig& published : kPublished) {
    nlohmann::json derived = model_to_json(from(published.config, published.fp8_dispatch));
    nlohmann::json preset = model_to_json(load_model(published.preset));
    for (const char* key : {"name", "source"}) {
      derived.erase(key);
      preset.erase(key);
    }
    EXPECT_EQ(derived, preset) << published.preset;
  }
}

// Qwen2-MoE: one shared expert of its own size, and biases on q, k and v.
TEST(HfConfig, ReadsQwen2MoesSharedExpertAndAttentionBiases) {
  const ModelSpec m = from(R"({
      "model_type": "qwen2_moe", "hidden_size": 2048, "moe_intermediate_size": 1408,
      "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
      "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16})");
  EXPECT_EQ(m.num_experts, 60);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.shared_expert_ffn_size, 5632);
  EXPECT_EQ(m.attention_qk_head_dim, 128);  // hidden / heads
  EXPECT_EQ(m.dense_params_per_layer, 4LL * 2048 * 2048 + 3 * 2048);
  EXPECT_EQ(m.dispatch_bytes, 2);  // bf16 unless asked
  EXPECT_EQ(m.dispatch_scale_block, 0);
}

// OLMoE (allenai/OLMoE-1B-7B-0924's config.json): every layer MoE, intermediate_size the
// experts' FFN size, no shared expert; attention biases on q, k, v and o only where
// attention_bias says so.
TEST(HfConfig, ReadsOlmoesExpertsAndOptionalAttentionBiases) {
  const std::string olmoe = R"({
      "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_experts": 64,
      "num_experts_per_tok": 8, "num_hidden_layers": 16, "num_attention_heads": 16,
      "num_key_value_heads": 16, "attention_bias": false, "clip_qkv": null})";
  const ModelSpec m = from(olmoe);
  EXPECT_EQ(m.num_experts, 64);
  EXPECT_EQ(m.top_k, 8);
  EXPECT_EQ(m.hidden_size, 2048);
  EXPECT_EQ(m.expert_ffn_size, 1024);
  EXPECT_EQ(m.moe_layers, 16);
  EXPECT_EQ(m.shared_experts, 0);
  EXPECT_EQ(m.attention_heads, 16);
  EXPECT_EQ(m.attention_qk_head_dim, 128);
  EXPECT_EQ(m.attention_v_head_dim, 128);
  EXPECT_EQ(m.dense_params_per_layer, 4LL * 2048 * 2048);
  nlohmann::json biased = nlohmann::json::parse(olmoe);
  biased["attention_bias"] = true;
  EXPECT_EQ(from(biased.dump()).dense_params_per_layer,
            4LL * 2048 * 2048 + (16 + 2 * 16) * 128 + 2048);
  biased["attention_bias"] = "yes";
  EXPECT_EQ(field_of_error(biased.dump()), "attention_bias");
  biased.erase("num_experts");
  biased["num_local_experts"] = 64;  // Mixtral's name for it; OLMoE's config has num_experts
  biased["attention_bias"] = false;
  EXPECT_EQ(field_of_error(biased.dump()), "num_experts");
}

// GLM-4.5 (zai-org/GLM-4.5's config.json): DeepSeek-V3's experts, shared expert and dense
// first layers, with grouped-query attention whose q, k and v carry biases (o none).
TEST(HfConfig, ReadsGlm45sDeepSeekStyleExpertsWithGroupedQueryAttention) {
  const ModelSpec m = from(R"({
      "model_type": "glm4_moe", "hidden_size": 5120, "intermediate_size": 12288,
      "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 1,
      "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_hidden_layers": 92,
      "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
      "attention_bias": true, "use_qk_norm": true, "partial_rotary_factor": 0.5,
      "n_group": 1, "topk_group": 1, "num_nextn_predict_layers": 1})");
  EXPECT_EQ(m.num_experts, 160);
  EXPECT_EQ(m.top_k, 8);
  EXPECT_EQ(m.expert_ffn_size, 1536);
  EXPECT_EQ(m.moe_layers, 89);  // layers 3 to 91; the MTP layer is not among num_hidden_layers
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.dense_ffn_size, 12288);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.shared_expert_ffn_size, 1536);
  EXPECT_EQ(m.attention_qk_head_dim, 128);
  EXPECT_EQ(m.attention_v_head_dim, 128);
  EXPECT_EQ(m.attention_kv_heads, 8);  // what the attention keeps for its backward
  EXPECT_FALSE(m.multi_latent_attention());
  EXPECT_EQ(m.dense_params_per_layer,
            2LL * 5120 * 96 * 128 + 2LL * 5120 * 8 * 128 + (96 + 2 * 8) * 128);
  // Its MTP module is a training choice (simulate --mtp-layers): the source says how to train it.
  EXPECT_NE(m.source.find("1 multi-token-prediction module(s) (num_nextn_predict_layers), "
                          "trained where simulate is given --mtp-layers 1"),
            std::string::npos)
      << m.source;
}

// Llama 4 (meta-llama/Llama-4-Maverick-17B-128E's config.json): the language model's fields in
// text_config; routed and one shared expert of intermediate_size, MoE every
// interleave_moe_layer_step-th layer or on the layers moe_layers lists.
TEST(HfConfig, ReadsLlama4sTextConfigAndItsInterleavedMoeLayers) {
  nlohmann::json maverick = nlohmann::json::parse(R"({
      "model_type": "llama4", "vision_config": {"hidden_size": 1408},
      "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_local_experts": 128, "num_experts_per_tok": 1,
        "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
        "head_dim": 128, "interleave_moe_layer_step": 2, "attention_bias": false}})");
  const ModelSpec m = from(maverick.dump());
  EXPECT_EQ(m.num_experts, 128);
  EXPECT_EQ(m.top_k, 1);
  EXPECT_EQ(m.hidden_size, 5120);
  EXPECT_EQ(m.expert_ffn_size, 8192);
  EXPECT_EQ(m.moe_layers, 24);    // layers 1, 3, ..., 47
  EXPECT_EQ(m.dense_layers, 24);  // layers 0, 2, ..., 46: FFNs of intermediate_size_mlp
  EXPECT_EQ(m.dense_ffn_size, 16384);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.shared_expert_ffn_size, 8192);
  EXPECT_EQ(m.dense_params_per_layer, 2LL * 5120 * 40 * 128 + 2LL * 5120 * 8 * 128);
  // Scout: every layer MoE.
  nlohmann::json scout = maverick;
  scout["text_config"]["interleave_moe_layer_step"] = 1;
  scout["text_config"]["num_local_experts"] = 16;
  EXPECT_EQ(from(scout.dump()).moe_layers, 48);
  EXPECT_EQ(from(scout.dump()).dense_layers, 0);
  // An explicit list wins over the step; a layer past the last is named.
  scout["text_config"]["moe_layers"] = {0, 5, 5, 47};
  EXPECT_EQ(from(scout.dump()).moe_layers, 3);
  scout["text_config"]["moe_layers"] = {0, 48};
  EXPECT_EQ(field_of_error(scout.dump()), "text_config.moe_layers");
  // Fields inside text_config are named with its path.
  maverick["text_config"].erase("num_local_experts");
  EXPECT_EQ(field_of_error(maverick.dump()), "text_config.num_local_experts");
  maverick.erase("text_config");
  EXPECT_EQ(field_of_error(maverick.dump()), "text_config");
  maverick["text_config"] = 7;
  EXPECT_EQ(field_of_error(maverick.dump()), "text_config");
}

// Each family's code decides which layers are MoE: DeepSeek's from first_k_dense_replace every
// moe_layer_freq-th, Qwen's every decoder_sparse_step-th but those in mlp_only_layers. The other
// layers are dense, with an FFN of intermediate_size.
TEST(HfConfig, CountsTheLayersEachFamilyMakesSparseAndTheDenseRest) {
  nlohmann::json deepseek = nlohmann::json::parse(R"({
      "model_type": "deepseek_v3", "hidden_size": 1024, "moe_intermediate_size": 256,
      "intermediate_size": 2816, "n_routed_experts": 16, "num_experts_per_tok": 2,
      "num_hidden_layers": 10, "first_k_dense_replace": 3, "moe_layer_freq": 2,
      "num_attention_heads": 8, "kv_lora_rank": 64, "qk_nope_head_dim": 32,
      "qk_rope_head_dim": 16, "v_head_dim": 32})");
  ModelSpec m = from(deepseek.dump());
  EXPECT_EQ(m.moe_layers, 3);     // layers 4, 6, 8
  EXPECT_EQ(m.expert_groups, 0);  // no n_group: no group limit
  // Group-limited routing: n_group must divide the experts, topk_group be at most n_group.
  deepseek["n_group"] = 4;
  deepseek["topk_group"] = 2;
  EXPECT_EQ(from(deepseek.dump()).expert_groups, 4);
  EXPECT_EQ(from(deepseek.dump()).expert_groups_per_token, 2);
  deepseek["topk_group"] = 5;
  EXPECT_EQ(field_of_error(deepseek.dump()), "topk_group");
  deepseek["n_group"] = 3;
  EXPECT_EQ(field_of_error(deepseek.dump()), "n_group");
  deepseek.erase("n_group");
  deepseek.erase("topk_group");
  EXPECT_EQ(m.dense_layers, 7);
  EXPECT_EQ(m.dense_ffn_size, 2816);
  nlohmann::json qwen = nlohmann::json::parse(R"({
      "model_type": "qwen3_moe", "hidden_size": 1024, "moe_intermediate_size": 256,
      "intermediate_size": 3072, "num_experts": 16, "num_experts_per_tok": 2,
      "num_hidden_layers": 10, "num_attention_heads": 8, "decoder_sparse_step": 2,
      "mlp_only_layers": [3, 5]})");
  m = from(qwen.dump());
  EXPECT_EQ(m.moe_layers, 3);  // layers 1, 7, 9
  EXPECT_EQ(m.dense_layers, 7);
  EXPECT_EQ(m.dense_ffn_size, 3072);
  // Dense layers need their FFN's size; a model whose every layer is MoE does not.
  qwen.erase("intermediate_size");
  EXPECT_EQ(field_of_error(qwen.dump()), "intermediate_size");
  qwen["decoder_sparse_step"] = 1;
  qwen["mlp_only_layers"] = nlohmann::json::array();
  EXPECT_EQ(from(qwen.dump()).dense_layers, 0);
  EXPECT_EQ(from(qwen.dump()).dense_ffn_size, 0);
  // The vocabulary, where the config gives it; tie_word_embeddings as it says (default false).
  EXPECT_EQ(from(qwen.dump()).vocab_size, 0);
  qwen["vocab_size"] = 151936;
  EXPECT_EQ(from(qwen.dump()).vocab_size, 151936);
  EXPECT_FALSE(from(qwen.dump()).tied_embeddings);
  qwen["tie_word_embeddings"] = true;
  EXPECT_TRUE(from(qwen.dump()).tied_embeddings);
  qwen["tie_word_embeddings"] = "yes";
  EXPECT_EQ(field_of_error(qwen.dump()), "tie_word_embeddings");
}

// gpt-oss (openai/gpt-oss-120b's and -20b's config.json, fields as GptOssConfig reads them):
// every layer MoE, intermediate_size the experts' FFN size, grouped-query attention with q, k,
// v and o biases (attention_bias defaults to true), and sliding-window attention on the layers
// layer_types marks, by default every other one from the first.
TEST(HfConfig, ReadsGptOssExpertsBiasesAndSlidingWindowLayers) {
  nlohmann::json config = nlohmann::json::parse(R"({
      "model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
      "num_local_experts": 128, "num_experts_per_tok": 4, "experts_per_token": 4,
      "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
      "head_dim": 64, "attention_bias": true, "sliding_window": 128})");
  config["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 36; ++i) {
    config["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  const ModelSpec m = from(config.dump());
  EXPECT_EQ(m.num_experts, 128);
  EXPECT_EQ(m.top_k, 4);
  EXPECT_EQ(m.expert_ffn_size, 2880);
  EXPECT_EQ(m.moe_layers, 36);
  EXPECT_EQ(m.shared_experts, 0);
  EXPECT_EQ(m.attention_qk_head_dim, 64);
  // q and o 2880 x 4096, k and v 2880 x 512, biases (64 + 2 x 8) x 64 + 2880.
  EXPECT_EQ(m.dense_params_per_layer, 2LL * 2880 * 4096 + 2LL * 2880 * 512 + 80 * 64 + 2880);
  EXPECT_EQ(m.attention_window, 128);
  EXPECT_EQ(m.attention_window_layers, 18);
  // gpt-oss-20b: 32 experts, 24 layers; layer_types left out: every other layer from the first.
  config["num_local_experts"] = 32;
  config["num_hidden_layers"] = 24;
  config.erase("layer_types");
  const ModelSpec small = from(config.dump());
  EXPECT_EQ(small.num_experts, 32);
  EXPECT_EQ(small.moe_layers, 24);
  EXPECT_EQ(small.attention_window_layers, 12);
  config.erase("attention_bias");  // GptOssConfig's default: biases
  EXPECT_EQ(from(config.dump()).dense_params_per_layer, m.dense_params_per_layer);
  config["attention_bias"] = false;
  EXPECT_EQ(from(config.dump()).dense_params_per_layer, 2LL * 2880 * 4096 + 2LL * 2880 * 512);
  config["sliding_window"] = nullptr;  // no window
  EXPECT_EQ(from(config.dump()).attention_window, 0);
  config["sliding_window"] = 0;  // none either
  EXPECT_EQ(from(config.dump()).attention_window_layers, 0);
  config["sliding_window"] = -1;
  EXPECT_EQ(field_of_error(config.dump()), "sliding_window");
  config["sliding_window"] = 128;
  config["layer_types"] = nlohmann::json::array({"full_attention"});  // one for 24 layers
  EXPECT_EQ(field_of_error(config.dump()), "layer_types");
  config["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 24; ++i) config["layer_types"].push_back("chunked_attention");
  EXPECT_EQ(field_of_error(config.dump()), "layer_types");
}

// ERNIE 4.5 (baidu/ERNIE-4.5-21B-A3B-PT's and -300B-A47B-PT's config.json, as
// Ernie4_5_MoeConfig reads them): top-k in moe_k, MoE from moe_layer_start_index to
// moe_layer_end_index (-1: the last) every moe_layer_interval-th layer, shared experts of
// moe_intermediate_size, q, k, v and o biases where use_bias.
TEST(HfConfig, ReadsErnie45sMoeLayerRangeAndSharedExperts) {
  nlohmann::json config = nlohmann::json::parse(R"({
      "model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
      "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4,
      "moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536,
      "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27,
      "moe_layer_interval": 1, "use_bias": false})");
  const ModelSpec m = from(config.dump());
  EXPECT_EQ(m.num_experts, 64);
  EXPECT_EQ(m.top_k, 6);
  EXPECT_EQ(m.expert_ffn_size, 1536);
  EXPECT_EQ(m.moe_layers, 27);  // layer 0 is dense
  EXPECT_EQ(m.shared_experts, 2);
  EXPECT_EQ(m.shared_expert_ffn_size, 1536);
  EXPECT_EQ(m.attention_qk_head_dim, 128);
  EXPECT_EQ(m.dense_params_per_layer, 2LL * 2560 * 2560 + 2LL * 2560 * 512);
  config["moe_layer_end_index"] = -1;  // the last layer
  EXPECT_EQ(from(config.dump()).moe_layers, 27);
  config["moe_layer_interval"] = 2;  // layers 1, 3, ..., 27
  EXPECT_EQ(from(config.dump()).moe_layers, 14);
  config["moe_layer_end_index"] = 9;  // layers 1, 3, 5, 7, 9
  EXPECT_EQ(from(config.dump()).moe_layers, 5);
  config["use_bias"] = true;
  EXPECT_EQ(from(config.dump()).dense_params_per_layer,
            2LL * 2560 * 2560 + 2LL * 2560 * 512 + (20 + 2 * 4) * 128 + 2560);
  config["moe_layer_end_index"] = -2;
  EXPECT_EQ(field_of_error(config.dump()), "moe_layer_end_index");
  config["moe_layer_end_index"] = 27;
  config["moe_k"] = 65;
  EXPECT_EQ(field_of_error(config.dump()), "moe_k");
  config.erase("moe_k");
  config["num_experts_per_tok"] = 6;  // the attribute name, not the config's field
  EXPECT_EQ(field_of_error(config.dump()), "moe_k");
}

// MiniMax-M2 (MiniMaxAI/MiniMax-M2's config.json, fields as MiniMaxM2Config reads them): every
// layer MoE with Mixtral's field names, full grouped-query attention without biases.
TEST(HfConfig, ReadsMiniMaxM2sExperts) {
  const ModelSpec m = from(R"({
      "model_type": "minimax_m2", "hidden_size": 3072, "intermediate_size": 1536,
      "num_local_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 62,
      "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128})");
  EXPECT_EQ(m.num_experts, 256);
  EXPECT_EQ(m.top_k, 8);
  EXPECT_EQ(m.expert_ffn_size, 1536);
  EXPECT_EQ(m.moe_layers, 62);
  EXPECT_EQ(m.shared_experts, 0);
  EXPECT_EQ(m.attention_window, 0);
  // q and o 3072 x 6144, k and v 3072 x 1024.
  EXPECT_EQ(m.dense_params_per_layer, 2LL * 3072 * 6144 + 2LL * 3072 * 1024);
}

// Mixtral's sliding_window, where a config sets it, windows every layer.
TEST(HfConfig, ReadsMixtralsSlidingWindowOnEveryLayer) {
  nlohmann::json config = nlohmann::json::parse(kPublished[2].config);
  EXPECT_EQ(from(config.dump()).attention_window, 0);
  config["sliding_window"] = nullptr;
  EXPECT_EQ(from(config.dump()).attention_window, 0);
  config["sliding_window"] = 4096;
  const ModelSpec windowed = from(config.dump());
  EXPECT_EQ(windowed.attention_window, 4096);
  EXPECT_EQ(windowed.attention_window_layers, 32);
}

TEST(HfConfig, RefusesWhatItCannotReadNamingTheField) {
  EXPECT_EQ(field_of_error(R"({"model_type": "llama", "hidden_size": 4096})"), "model_type");
  EXPECT_EQ(field_of_error(R"({"hidden_size": 4096})"), "model_type");
  EXPECT_EQ(field_of_error(R"({
      "model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_experts_per_tok": 2})"),
            "num_local_experts");
  EXPECT_EQ(field_of_error(R"({
      "model_type": "mixtral", "hidden_size": 4096.5, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_experts_per_tok": 2, "num_local_experts": 8,
      "intermediate_size": 14336})"),
            "hidden_size");
  EXPECT_EQ(field_of_error(R"({
      "model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_experts_per_tok": 9, "num_local_experts": 8,
      "intermediate_size": 14336})"),
            "num_experts_per_tok");
  EXPECT_EQ(field_of_error(R"({
      "model_type": "qwen3_moe", "hidden_size": 1024, "moe_intermediate_size": 256,
      "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 4,
      "num_attention_heads": 8, "decoder_sparse_step": 5})"),
            "num_hidden_layers");
  EXPECT_EQ(field_of_error(R"({
      "model_type": "qwen3_moe", "hidden_size": 1024, "moe_intermediate_size": 256,
      "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 4,
      "num_attention_heads": 8, "mlp_only_layers": "none"})"),
            "mlp_only_layers");
  EXPECT_EQ(field_of_error("[1, 2]"), "");
}

}  // namespace
}  // namespace topoep
