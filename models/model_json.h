#pragma once
// Model files (JSON, schema in models/README.md) and the presets compiled into the binary.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/model.h"

namespace topoep {

// Throws FileInputError naming the file and field for invalid JSON, a missing or unknown field,
// a wrong type or a value out of range.
ModelSpec parse_model(const std::string& text, const std::string& origin);
nlohmann::json model_to_json(const ModelSpec& model);

std::vector<std::string> model_preset_names();
// The presets with `num_experts` experts routed top-`top_k` (any top-k where `top_k` is 0): what
// routing of that shape can be priced with, for messages that suggest one. Alphabetical.
std::vector<std::string> model_presets_fitting(int num_experts, int top_k);
// The one preset with `num_experts` experts routed top-`top_k` (any top-k where `top_k` is 0:
// counts that do not say it), for routing whose model is not given. Throws InputError naming
// `field` where none or several fit.
std::string implied_model_preset(int num_experts, int top_k, const std::string& field);
// The model `topoep solve` weighs counts with when no model is given and no preset has their
// experts: the paper's model, DeepSeek-V3 (kDefaultModelPreset), its expert, attention and
// dtypes kept, with `num_experts` routed experts routed top-min(8, `num_experts`) (the solver
// reads the expert's and attention's sizes and the dtypes; top-k turns counts into tokens).
inline constexpr const char* kDefaultModelPreset = "deepseek-v3";
ModelSpec default_model_with_experts(int num_experts);
// The model file at `path` (never a preset): FileInputError naming the file if it cannot be read.
ModelSpec load_model_file(const std::string& path);
// A preset when `preset_or_path` names one and no such file exists; otherwise the file.
ModelSpec load_model(const std::string& preset_or_path);

}  // namespace topoep
