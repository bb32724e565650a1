#include "models/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/file_input_error.h"
#include "common/text_list.h"
#include "models/model_json.h"

namespace topoep {
namespace {

const std::vector<std::string> kMlaTypes = {"deepseek_v2", "deepseek_v3", "kimi_k2"};
const std::vector<std::string> kQwenTypes = {"qwen2_moe", "qwen3_moe"};
// The other families, as their config.json spells model_type (Llama 4's language model is read
// as llama4_text from its text_config).
const std::vector<std::string> kOtherTypes = {"ernie4_5_moe", "glm4_moe", "gpt_oss", "llama4",
                                              "minimax_m2",   "mixtral",  "olmoe"};

// Typed reads of the config's fields; a config has many more, which are ignored. A nested
// section (Llama 4's text_config) is read with its path as `prefix` of the fields errors name.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& config, std::string origin, std::string prefix = "")
      : config_(config), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!config_.is_object()) {
      throw FileInputError(
          origin_, prefix_.empty() ? "" : prefix_.substr(0, prefix_.size() - 1),
          prefix_.empty() ? "a config.json is a JSON object" : "must be an object");
    }
  }

  bool has(const std::string& key) const {
    return config_.contains(key) && !config_.at(key).is_null();
  }
  // A positive integer (non-negative where `zero_ok`), at most 2^24: larger is no real model.
  long long count(const std::string& key, bool zero_ok = false) const {
    if (!has(key)) fail(key, "is missing (this family's configs have it)");
    const nlohmann::json& value = config_.at(key);
    const long long low = zero_ok ? 0 : 1;
    if (!value.is_number_integer() || value.get<long long>() < low ||
        value.get<long long>() > (1LL << 24)) {
      fail(key, "must be an integer from " + std::to_string(low) + " to 2^24");
    }
    return value.get<long long>();
  }
  // An integer from -1 to 2^24 (ERNIE's -1 for "the last layer").
  long long signed_count(const std::string& key) const {
    const nlohmann::json& value = config_.at(key);
    if (!value.is_number_integer() || value.get<long long>() < -1 ||
        value.get<long long>() > (1LL << 24)) {
      fail(key, "must be an integer from -1 to 2^24");
    }
    return value.get<long long>();
  }
  long long count_or(const std::string& key, long long fallback, bool zero_ok = false) const {
    return has(key) ? count(key, zero_ok) : fallback;
  }
  // A true/false field, `fallback` where the config leaves it out.
  bool flag_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!config_.at(key).is_boolean()) fail(key, "must be true or false");
    return config_.at(key).get<bool>();
  }
  // The object at `key`, to read with its own ConfigFields.
  const nlohmann::json& section(const std::string& key) const {
    if (!has(key)) fail(key, "is missing (this family's configs have it)");
    return config_.at(key);
  }
  std::vector<long long> layer_list(const std::string& key) const {
    std::vector<long long> layers;
    if (!has(key)) return layers;
    const nlohmann::json& value = config_.at(key);
    if (!value.is_array()) fail(key, "must be a list of layer indices");
    for (const nlohmann::json& layer : value) {
      if (!layer.is_number_integer() || layer.get<long long>() < 0) {
        fail(key, "must be a list of layer indices");
      }
      layers.push_back(layer.get<long long>());
    }
    return layers;
  }
  // gpt-oss's layers of sliding-window attention: the "sliding_attention" entries of
  // layer_types, one per layer, or where it is absent every other layer from the first (as
  // GptOssConfig fills it in).
  long long sliding_layers(long long layers) const {
    if (!has("layer_types")) return (layers + 1) / 2;
    const nlohmann::json& value = config_.at("layer_types");
    if (!value.is_array() || static_cast<long long>(value.size()) != layers) {
      fail("layer_types", "must list one type for each of the " + std::to_string(layers) +
                              " layers (num_hidden_layers)");
    }
    long long sliding = 0;
    for (const nlohmann::json& kind : value) {
      if (kind == "sliding_attention") {
        ++sliding;
      } else if (kind != "full_attention") {
        fail("layer_types", "must hold \"sliding_attention\" or \"full_attention\"");
      }
    }
    return sliding;
  }
  std::string type() const {
    if (!config_.contains("model_type") || !config_.at("model_type").is_string()) {
      fail("model_type", "is missing: it says which family's fields to read");
    }
    return config_.at("model_type").get<std::string>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw FileInputError(origin_, prefix_ + key, message);
  }
  const std::string& origin() const { return origin_; }

 private:
  const nlohmann::json& config_;
  std::string origin_;
  std::string prefix_;
};

// A weight's dimensions as the source writes them: "7168x1536".
std::string shape(std::initializer_list<long long> dims) {
  std::string text;
  for (const long long dim : dims) text += (text.empty() ? "" : "x") + std::to_string(dim);
  return text;
}

// The model of one family's fields: `type` is the model_type they follow.
ModelSpec model_of_fields(const ConfigFields& f, const std::string& type,
                          const HfRunChoices& choices) {
  const std::string& origin = f.origin();
  const bool mla = is_listed(kMlaTypes, type), qwen = is_listed(kQwenTypes, type);
  // GLM-4.5's layers are DeepSeek-V3's (its experts, shared experts and dense first layers)
  // with grouped-query attention in place of MLA.
  const bool deepseek_experts = mla || type == "glm4_moe";
  if (!mla && !qwen && !is_listed(kOtherTypes, type) && type != "llama4_text") {
    f.fail("model_type", "'" + type + "' is not a family this command reads (" +
                             join_names(kMlaTypes) + ", " + join_names(kOtherTypes) + ", " +
                             join_names(kQwenTypes) +
                             "): write the model file by hand (models/README.md)");
  }
  ModelSpec m;
  m.name = choices.name.empty() ? std::filesystem::path(origin).stem().string() : choices.name;
  const long long h = f.count("hidden_size");
  const long long layers = f.count("num_hidden_layers");
  const long long heads = f.count("num_attention_heads");
  m.hidden_size = static_cast<int>(h);
  // ERNIE 4.5 names it moe_k (its config maps num_experts_per_tok to it).
  const std::string top_k_field = type == "ernie4_5_moe" ? "moe_k" : "num_experts_per_tok";
  m.top_k = static_cast<int>(f.count(top_k_field));
  m.attention_heads = static_cast<int>(heads);

  // The experts, and the layers the family's code makes sparse.
  long long moe_layers = 0;
  if (deepseek_experts) {
    m.num_experts = static_cast<int>(f.count("n_routed_experts"));
    m.expert_ffn_size = static_cast<int>(f.count("moe_intermediate_size"));
    m.shared_experts = static_cast<int>(f.count_or("n_shared_experts", 0, true));
    m.shared_expert_ffn_size = m.shared_experts > 0 ? m.expert_ffn_size : 0;
    // DeepSeek's code: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
    const long long first_dense = f.count_or("first_k_dense_replace", 0, true);
    const long long every = f.count_or("moe_layer_freq", 1);
    for (long long i = first_dense; i < layers; ++i) moe_layers += i % every == 0 ? 1 : 0;
    // Group-limited routing: a token's experts from topk_group of n_group groups (1: none).
    const long long groups = f.count_or("n_group", 1);
    if (groups > 1) {
      if (m.num_experts % groups != 0) {
        f.fail("n_group", "is " + std::to_string(groups) + ", which does not divide " +
                              "n_routed_experts (" + std::to_string(m.num_experts) + ")");
      }
      const long long per_token = f.count_or("topk_group", groups);
      if (per_token > groups) {
        f.fail("topk_group", "is " + std::to_string(per_token) + ", more than n_group (" +
                                 std::to_string(groups) + ")");
      }
      m.expert_groups = static_cast<int>(groups);
      m.expert_groups_per_token = static_cast<int>(per_token);
    }
  } else if (type == "llama4_text") {
    // Llama 4's MoE layers (Llama4TextMoe): routed experts and one shared expert, both of
    // intermediate_size; the layers in moe_layers, by default every interleave_moe_layer_step-th
    // from the step's last (Maverick 2: layers 1, 3, ...; Scout 1: all).
    m.num_experts = static_cast<int>(f.count("num_local_experts"));
    m.expert_ffn_size = static_cast<int>(f.count("intermediate_size"));
    m.shared_experts = 1;
    m.shared_expert_ffn_size = m.expert_ffn_size;
    if (f.has("moe_layers")) {
      std::vector<long long> listed = f.layer_list("moe_layers");
      std::sort(listed.begin(), listed.end());
      listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
      if (!listed.empty() && listed.back() >= layers) {
        f.fail("moe_layers", "lists layer " + std::to_string(listed.back()) + " of " +
                                 std::to_string(layers) + " (num_hidden_layers)");
      }
      moe_layers = static_cast<long long>(listed.size());
    } else {
      const long long step = f.count_or("interleave_moe_layer_step", 1);
      for (long long i = step - 1; i < layers; i += step) ++moe_layers;
    }
  } else if (type == "ernie4_5_moe") {
    // ERNIE 4.5's code: layer i is MoE when (i + 1) % moe_layer_interval == 0 and
    // moe_layer_start_index <= i <= moe_layer_end_index (-1: the last layer); its shared experts
    // are one MLP of moe_intermediate_size x moe_num_shared_experts, as many of that size.
    m.num_experts = static_cast<int>(f.count("moe_num_experts"));
    m.expert_ffn_size = static_cast<int>(f.count("moe_intermediate_size"));
    m.shared_experts = static_cast<int>(f.count_or("moe_num_shared_experts", 0, true));
    m.shared_expert_ffn_size = m.shared_experts > 0 ? m.expert_ffn_size : 0;
    const long long start = f.count_or("moe_layer_start_index", 0, true);
    const long long listed_end =
        f.has("moe_layer_end_index") ? f.signed_count("moe_layer_end_index") : -1;
    const long long end = listed_end >= 0 ? listed_end : layers - 1;
    const long long every = f.count_or("moe_layer_interval", 1);
    for (long long i = start; i <= end && i < layers; ++i)
      moe_layers += (i + 1) % every == 0 ? 1 : 0;
  } else if (type == "mixtral" || type == "olmoe" || type == "gpt_oss" || type == "minimax_m2") {
    // Every layer is MoE; intermediate_size is the experts' FFN size.
    m.num_experts =
        static_cast<int>(f.count(type == "olmoe" ? "num_experts" : "num_local_experts"));
    m.expert_ffn_size = static_cast<int>(f.count("intermediate_size"));
    moe_layers = layers;
  } else {
    m.num_experts = static_cast<int>(f.count("num_experts"));
    m.expert_ffn_size = static_cast<int>(f.count("moe_intermediate_size"));
    // Qwen's code: layer i is MoE unless listed in mlp_only_layers, when (i + 1) %
    // decoder_sparse_step == 0.
    const long long step = f.count_or("decoder_sparse_step", 1);
    const std::vector<long long> dense = f.layer_list("mlp_only_layers");
    for (long long i = 0; i < layers; ++i) {
      if ((i + 1) % step == 0 && std::find(dense.begin(), dense.end(), i) == dense.end()) {
        ++moe_layers;
      }
    }
    if (type == "qwen2_moe" && f.count_or("shared_expert_intermediate_size", 0, true) > 0) {
      m.shared_experts = 1;
      m.shared_expert_ffn_size = static_cast<int>(f.count("shared_expert_intermediate_size"));
    }
  }

  // The attention projections: the dense parameters a layer runs per token.
  std::string what;  // the source's account of them
  if (mla) {
    const long long nope = f.count("qk_nope_head_dim"), rope = f.count("qk_rope_head_dim");
    const long long v = f.count("v_head_dim"), kv_rank = f.count("kv_lora_rank");
    m.attention_qk_head_dim = static_cast<int>(nope + rope);
    m.attention_v_head_dim = static_cast<int>(v);
    m.attention_kv_lora_rank = static_cast<int>(kv_rank);
    m.attention_rope_head_dim = static_cast<int>(rope);
    // MLA projections: q (through q_lora_rank where the config has one), the compressed kv with
    // its RoPE key, its expansion to per-head keys and values, and the output.
    const long long q_rank = f.has("q_lora_rank") ? f.count("q_lora_rank") : 0;
    m.attention_q_lora_rank = static_cast<int>(q_rank);
    const long long q =
        q_rank > 0 ? h * q_rank + q_rank * heads * (nope + rope) : h * heads * (nope + rope);
    m.dense_params_per_layer =
        q + h * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * h;
    what = "MLA projections q " +
           (q_rank > 0 ? shape({h, q_rank}) + " + " + shape({q_rank, heads, nope + rope})
                       : shape({h, heads, nope + rope})) +
           " + kv_a " + shape({h, kv_rank + rope}) + " + kv_b " +
           shape({kv_rank, heads, nope + v}) + " + o " + shape({heads * v, h});
  } else {
    // Grouped-query attention: q and o over all heads, k and v over the key-value heads.
    const long long kv_heads = f.count_or("num_key_value_heads", heads);
    const long long head_dim = f.count_or("head_dim", h / heads);
    m.attention_qk_head_dim = m.attention_v_head_dim = static_cast<int>(head_dim);
    m.attention_kv_heads = static_cast<int>(kv_heads);
    // Biases: Qwen2-MoE's q, k and v always; GLM-4.5's q, k and v, and Llama 4's, OLMoE's and
    // gpt-oss's q, k, v and o, where attention_bias says so (gpt-oss's default: true), ERNIE
    // 4.5's where use_bias does; Mixtral's, MiniMax-M2's and Qwen3-MoE's none. (q and k norms and
    // gpt-oss's per-head sinks are left out, as norms are.)
    const long long qkv_biases = (heads + 2 * kv_heads) * head_dim;
    const bool attention_bias = type == "ernie4_5_moe"
                                    ? f.flag_or("use_bias", false)
                                    : f.flag_or("attention_bias", type == "gpt_oss");
    const long long biases = type == "qwen2_moe"                    ? qkv_biases
                             : type == "glm4_moe" && attention_bias ? qkv_biases
                             : (type == "olmoe" || type == "llama4_text" || type == "gpt_oss" ||
                                type == "ernie4_5_moe") &&
                                     attention_bias
                                 ? qkv_biases + h
                                 : 0;
    m.dense_params_per_layer = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim + biases;
    what = "q " + shape({h, heads * head_dim}) + " + k,v " + shape({h, kv_heads * head_dim}) +
           " each + o " + shape({heads * head_dim, h}) +
           (biases > 0 ? " + attention biases " + std::to_string(biases) : "");
  }
  if (moe_layers == 0) f.fail("num_hidden_layers", "leaves no MoE layer for this family's rules");
  // The other layers are dense: attention and one FFN of intermediate_size (Llama 4's
  // intermediate_size_mlp; its intermediate_size is the experts').
  const long long dense_layers = layers - moe_layers;
  if (dense_layers > 0) {
    m.dense_layers = static_cast<int>(dense_layers);
    m.dense_ffn_size = static_cast<int>(
        f.count(type == "llama4_text" ? "intermediate_size_mlp" : "intermediate_size"));
  }
  // Sliding-window attention: gpt-oss's layers marked "sliding_attention" in layer_types (by
  // default every other one from the first), Mixtral's every layer where sliding_window is set.
  // Both families are MoE in every layer, so the count is of MoE layers. A window of 0 (or
  // null) is none.
  long long windowed = 0;
  const long long window =
      type == "gpt_oss" || type == "mixtral" ? f.count_or("sliding_window", 0, true) : 0;
  if (window > 0) {
    m.attention_window = static_cast<int>(window);
    windowed = type == "mixtral" ? layers : f.sliding_layers(layers);
    m.attention_window_layers = static_cast<int>(windowed);
  }
  // The embedding and output head; a config without vocab_size leaves them uncounted.
  m.vocab_size = static_cast<int>(f.count_or("vocab_size", 0, true));
  m.tied_embeddings = m.vocab_size > 0 && f.flag_or("tie_word_embeddings", false);
  // Multi-token prediction (DeepSeek-V3, GLM-4.5): a training choice, so the file only says so.
  const long long mtp = f.count_or("num_nextn_predict_layers", 0, true);
  if (m.top_k > m.num_experts) f.fail(top_k_field, "is more than the routed experts");
  m.moe_layers = static_cast<int>(moe_layers);
  m.dispatch_bytes = choices.fp8_dispatch ? 1 : 2;
  m.dispatch_scale_block = choices.fp8_dispatch ? 128 : 0;
  m.fp8_gemms = choices.fp8_gemms;
  m.combine_bytes = 2;
  m.weight_bytes = 2;
  m.sequence_length = choices.sequence_length;
  m.tokens_per_rank = choices.tokens_per_rank;
  m.source = origin + " (model_type " + type +
             "), by `topoep model from-hf`: " + std::to_string(m.num_experts) +
             " routed experts, top-" + std::to_string(m.top_k) + ", hidden " + std::to_string(h) +
             ", expert FFN " + std::to_string(m.expert_ffn_size) + ", " +
             std::to_string(moe_layers) + " MoE layers of " + std::to_string(layers) +
             (dense_layers > 0 ? " (the other " + std::to_string(dense_layers) + " dense, FFN " +
                                     std::to_string(m.dense_ffn_size) + ")"
                               : "") +
             ", " + std::to_string(m.shared_experts) + " shared experts" +
             (m.expert_groups > 0
                  ? ", experts in " + std::to_string(m.expert_groups) + " groups, a token's from " +
                        std::to_string(m.expert_groups_per_token) + " (n_group, topk_group)"
                  : "") +
             "; dense params per layer: " + what + " = " +
             std::to_string(m.dense_params_per_layer) + " (norms left out)" +
             (m.vocab_size > 0 ? "; vocabulary " + std::to_string(m.vocab_size) +
                                     (m.tied_embeddings ? ", embeddings tied to the output head"
                                                        : ", embedding and output head untied")
                               : "; no vocab_size: embeddings and output head not counted") +
             (windowed > 0
                  ? "; " + std::to_string(windowed) + " layers attend within a sliding window of " +
                        std::to_string(m.attention_window) + " tokens"
                  : "") +
             (mtp > 0 ? "; " + std::to_string(mtp) +
                            " multi-token-prediction module(s) (num_nextn_predict_layers), "
                            "trained where simulate is given --mtp-layers " +
                            std::to_string(mtp)
                      : "") +
             ". The run's choices: " +
             (choices.fp8_dispatch ? "fp8 dispatch with an fp32 scale per 128" : "bf16 dispatch") +
             ", bf16 combine and weights, " + (choices.fp8_gemms ? "fp8" : "bf16") +
             " GEMMs, sequence_length " + std::to_string(choices.sequence_length) +
             ", tokens_per_rank " + std::to_string(choices.tokens_per_rank) + ".";
  // The checks every model file passes (ranges, consistency), on what was derived.
  return parse_model(model_to_json(m).dump(), origin);
}

}  // namespace

ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& origin,
                               const HfRunChoices& choices) {
  const ConfigFields f(config, origin);
  const std::string type = f.type();
  // Llama 4's config.json wraps the language model's fields in text_config (beside the vision
  // encoder's); Llama4ForCausalLM reads them as model_type llama4_text.
  if (type == "llama4") {
    return model_of_fields(ConfigFields(f.section("text_config"), origin, "text_config."),
                           "llama4_text", choices);
  }
  return model_of_fields(f, type, choices);
}

}  // namespace topoep
