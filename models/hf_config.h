#pragma once
// A model file from a Hugging Face `config.json`: the mapping of models/README.md ("From a
// Hugging Face config.json") done by code, for the MoE families it names.

#include <nlohmann/json.hpp>
#include <string>

#include "models/model.h"

namespace topoep {

// What a config.json does not say: the training run's choices.
struct HfRunChoices {
  std::string name;            // empty: the config's file name without ".json"
  bool fp8_dispatch = false;   // fp8 with an fp32 scale per 128 elements (DeepEP); else bf16
  bool fp8_gemms = false;      // the GEMMs in fp8 (ModelSpec::fp8_gemms); else bf16
  int sequence_length = 4096;  // training sequence length
  int tokens_per_rank = 4096;  // default tokens per rank per microbatch
};

// The model of `config` (read from `origin`, named in errors) for model_type deepseek_v2,
// deepseek_v3, kimi_k2 (DeepSeek's MLA and shared experts), glm4_moe (DeepSeek's experts,
// grouped-query attention), llama4 (its text_config), mixtral, olmoe, qwen2_moe or qwen3_moe:
// experts, top-k, dimensions, MoE layers (the layers the family's code makes sparse), shared
// experts, attention and the dense parameters per layer (attention projections, biases where the
// family has them; norms left out), with `source` saying what each came from and which numbers are
// `choices`. Throws FileInputError naming `origin` and the field for another model_type, a missing
// field or a value out of range.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& origin,
                               const HfRunChoices& choices);

}  // namespace topoep
