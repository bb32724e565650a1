#include "models/model_json.h"

#include <algorithm>

#include "common/json_fields.h"
#include "common/preset_source.h"
#include "common/text_list.h"
#include "solver/input_error.h"
#include "tools/build_defs/embedded_file.h"

namespace topoep {

// Defined by the generated library //models:embedded_presets.
const std::vector<EmbeddedFile>& embedded_model_presets();

ModelSpec parse_model(const std::string& text, const std::string& origin) {
  const nlohmann::json document = parse_json_text(text, origin);
  JsonObjectReader root(document, origin, "");
  ModelSpec model;
  model.origin = origin;
  model.name = root.string_field("name");
  model.source = root.string_field("source");
  model.num_experts = static_cast<int>(root.int_field("num_experts", 1, 1 << 16));
  model.top_k = static_cast<int>(root.int_field("top_k", 1, model.num_experts));
  model.hidden_size = static_cast<int>(root.int_field("hidden_size", 1, 1 << 20));
  model.expert_ffn_size = static_cast<int>(root.int_field("expert_ffn_size", 1, 1 << 20));
  model.moe_layers = static_cast<int>(root.int_field("moe_layers", 1, 1 << 12));
  model.dispatch_bytes = static_cast<int>(root.int_field("dispatch_bytes", 1, 8));
  model.dispatch_scale_block = static_cast<int>(root.int_field("dispatch_scale_block", 0, 1 << 20));
  model.combine_bytes = static_cast<int>(root.int_field("combine_bytes", 1, 8));
  model.weight_bytes = static_cast<int>(root.int_field("weight_bytes", 1, 8));
  model.dense_params_per_layer = root.int_field("dense_params_per_layer", 0, 1LL << 40);
  // Optional, for files written before these fields existed: absent means none.
  if (root.has("shared_experts")) {
    model.shared_experts = static_cast<int>(root.int_field("shared_experts", 0, 1 << 10));
    model.shared_expert_ffn_size =
        static_cast<int>(root.int_field("shared_expert_ffn_size", 0, 1 << 20));
  }
  if (root.has("attention_heads")) {
    model.attention_heads = static_cast<int>(root.int_field("attention_heads", 0, 1 << 12));
    model.attention_qk_head_dim =
        static_cast<int>(root.int_field("attention_qk_head_dim", 0, 1 << 14));
    model.attention_v_head_dim =
        static_cast<int>(root.int_field("attention_v_head_dim", 0, 1 << 14));
    model.sequence_length = static_cast<int>(root.int_field("sequence_length", 0, 1 << 24));
  }
  if (root.has("attention_kv_heads")) {
    if (model.attention_heads == 0) {
      root.fail("attention_kv_heads",
                "groups the attention's heads, but attention_heads and its head dimensions are "
                "not given");
    }
    model.attention_kv_heads =
        static_cast<int>(root.int_field("attention_kv_heads", 0, model.attention_heads));
    if (model.attention_kv_heads > 0 && model.attention_heads % model.attention_kv_heads != 0) {
      root.fail("attention_kv_heads", "is " + std::to_string(model.attention_kv_heads) +
                                          ", which does not divide attention_heads (" +
                                          std::to_string(model.attention_heads) + ")");
    }
  }
  if (root.has("attention_kv_lora_rank") || root.has("attention_q_lora_rank") ||
      root.has("attention_rope_head_dim")) {
    if (model.attention_heads == 0) {
      root.fail(root.has("attention_kv_lora_rank")  ? "attention_kv_lora_rank"
                : root.has("attention_q_lora_rank") ? "attention_q_lora_rank"
                                                    : "attention_rope_head_dim",
                "describes multi-head latent attention, but attention_heads and its head "
                "dimensions are not given");
    }
    model.attention_kv_lora_rank =
        static_cast<int>(root.int_field("attention_kv_lora_rank", 1, 1 << 20));
    model.attention_q_lora_rank =
        root.has("attention_q_lora_rank")
            ? static_cast<int>(root.int_field("attention_q_lora_rank", 0, 1 << 20))
            : 0;
    model.attention_rope_head_dim =
        static_cast<int>(root.int_field("attention_rope_head_dim", 0, model.attention_qk_head_dim));
    // MLA expands the latent to every head's keys and values.
    if (model.attention_kv_heads > 0 && model.attention_kv_heads != model.attention_heads) {
      root.fail("attention_kv_heads", "is " + std::to_string(model.attention_kv_heads) +
                                          ", but multi-head latent attention (attention_kv_lora_"
                                          "rank) gives every one of the " +
                                          std::to_string(model.attention_heads) +
                                          " heads its keys and values");
    }
  }
  if (root.has("attention_window")) {
    model.attention_window = static_cast<int>(root.int_field("attention_window", 0, 1 << 24));
    model.attention_window_layers =
        static_cast<int>(root.int_field("attention_window_layers", 0, model.moe_layers));
  }
  if (root.has("dense_layers") || root.has("dense_ffn_size")) {
    model.dense_layers = static_cast<int>(root.int_field("dense_layers", 0, 1 << 12));
    model.dense_ffn_size = static_cast<int>(root.int_field("dense_ffn_size", 0, 1 << 20));
    // A dense-only layer without an FFN, or an FFN size without layers, is a slip, not a model.
    if (model.dense_layers > 0 && model.dense_ffn_size == 0) {
      root.fail("dense_ffn_size", "is 0, but dense_layers is " +
                                      std::to_string(model.dense_layers) +
                                      ": give their FFN's intermediate size");
    }
    if (model.dense_layers == 0 && model.dense_ffn_size > 0) {
      root.fail("dense_ffn_size", "is " + std::to_string(model.dense_ffn_size) +
                                      ", but dense_layers is 0: no layer has that FFN");
    }
  }
  if (root.has("expert_groups") || root.has("expert_groups_per_token")) {
    model.expert_groups = static_cast<int>(root.int_field("expert_groups", 1, model.num_experts));
    if (model.num_experts % model.expert_groups != 0) {
      root.fail("expert_groups", "is " + std::to_string(model.expert_groups) +
                                     ", which does not divide num_experts (" +
                                     std::to_string(model.num_experts) + ")");
    }
    model.expert_groups_per_token =
        static_cast<int>(root.int_field("expert_groups_per_token", 1, model.expert_groups));
  }
  if (root.has("vocab_size") || root.has("tied_embeddings")) {
    model.vocab_size = static_cast<int>(root.int_field("vocab_size", 1, 1 << 24));
    if (root.has("tied_embeddings")) {
      const nlohmann::json& tied = root.raw_field("tied_embeddings");
      if (!tied.is_boolean()) {
        root.fail("tied_embeddings", "must be true or false, got " + tied.dump());
      }
      model.tied_embeddings = tied.get<bool>();
    }
  }
  if (root.has("gemm_precision")) {
    const std::string precision = root.string_field("gemm_precision");
    if (precision != "bf16" && precision != "fp8") {
      root.fail("gemm_precision", "must be \"bf16\" or \"fp8\", got \"" + precision + "\"");
    }
    model.fp8_gemms = precision == "fp8";
  }
  model.tokens_per_rank = static_cast<int>(root.int_field("tokens_per_rank", 1, 1 << 24));
  root.finish();
  return model;
}

nlohmann::json model_to_json(const ModelSpec& model) {
  nlohmann::json json = {{"name", model.name},
                         {"source", model.source},
                         {"num_experts", model.num_experts},
                         {"top_k", model.top_k},
                         {"hidden_size", model.hidden_size},
                         {"expert_ffn_size", model.expert_ffn_size},
                         {"moe_layers", model.moe_layers},
                         {"dispatch_bytes", model.dispatch_bytes},
                         {"dispatch_scale_block", model.dispatch_scale_block},
                         {"combine_bytes", model.combine_bytes},
                         {"weight_bytes", model.weight_bytes},
                         {"dense_params_per_layer", model.dense_params_per_layer},
                         {"shared_experts", model.shared_experts},
                         {"shared_expert_ffn_size", model.shared_expert_ffn_size},
                         {"attention_heads", model.attention_heads},
                         {"attention_qk_head_dim", model.attention_qk_head_dim},
                         {"attention_v_head_dim", model.attention_v_head_dim},
                         {"sequence_length", model.sequence_length},
                         {"tokens_per_rank", model.tokens_per_rank}};
  // Written only where set: a model without a window keeps the form it had before the field.
  if (model.attention_window > 0) {
    json["attention_window"] = model.attention_window;
    json["attention_window_layers"] = model.attention_window_layers;
  }
  if (model.dense_layers > 0) {
    json["dense_layers"] = model.dense_layers;
    json["dense_ffn_size"] = model.dense_ffn_size;
  }
  if (model.expert_groups > 0) {
    json["expert_groups"] = model.expert_groups;
    json["expert_groups_per_token"] = model.expert_groups_per_token;
  }
  if (model.attention_kv_heads > 0) json["attention_kv_heads"] = model.attention_kv_heads;
  if (model.multi_latent_attention()) {
    json["attention_q_lora_rank"] = model.attention_q_lora_rank;
    json["attention_kv_lora_rank"] = model.attention_kv_lora_rank;
    json["attention_rope_head_dim"] = model.attention_rope_head_dim;
  }
  if (model.fp8_gemms) json["gemm_precision"] = "fp8";
  if (model.vocab_size > 0) json["vocab_size"] = model.vocab_size;
  if (model.tied_embeddings) json["tied_embeddings"] = true;
  return json;
}

std::vector<std::string> model_preset_names() { return preset_names(embedded_model_presets()); }

std::vector<std::string> model_presets_fitting(int num_experts, int top_k) {
  std::vector<std::string> fitting;
  for (const std::string& name : model_preset_names()) {
    const ModelSpec model = load_model(name);
    if (model.num_experts == num_experts && (top_k == 0 || model.top_k == top_k)) {
      fitting.push_back(name);
    }
  }
  return fitting;
}

std::string implied_model_preset(int num_experts, int top_k, const std::string& field) {
  const std::vector<std::string> presets = model_presets_fitting(num_experts, top_k);
  if (presets.size() == 1) return presets.front();
  const std::string shape = std::to_string(num_experts) + " experts" +
                            (top_k > 0 ? " and top-" + std::to_string(top_k) : "");
  throw InputError(
      field, "not given, and " + (presets.empty() ? "no preset has " + shape +
                                                        ": pass a file (topoep model show "
                                                        "deepseek-v3 --json gives one to edit)"
                                                  : "the presets with " + shape + " are " +
                                                        spoken_list(presets) + ": name one"));
}

ModelSpec default_model_with_experts(int num_experts) {
  ModelSpec model = load_model(kDefaultModelPreset);
  model.name += " with " + std::to_string(num_experts) + " experts";
  model.origin.clear();  // no longer the preset's text
  model.num_experts = num_experts;
  model.top_k = std::min(model.top_k, num_experts);
  model.expert_groups = model.expert_groups_per_token = 0;  // its groups were of its 256
  return model;
}

ModelSpec load_model_file(const std::string& path) {
  return parse_model(read_text_file(path), path);
}

ModelSpec load_model(const std::string& preset_or_path) {
  const PresetSource source =
      resolve_preset_or_file(embedded_model_presets(), preset_or_path, "model");
  return parse_model(source.text, source.origin);
}

}  // namespace topoep
