#pragma once
// The model preset that routing implies when --model is not given: the one preset with its
// experts and top-k. A wrong model is refused downstream (its experts or top-k differ), so the
// choice can only be made where exactly one preset fits.

#include <string>
#include <vector>

#include "common/text_list.h"
#include "models/model_json.h"
#include "solver/input_error.h"

namespace topoep {

// The preset with `num_experts` experts routed top-`top_k` (any top-k where `top_k` is 0: a
// counts file does not say it). Throws InputError naming --model where none or several fit.
inline std::string implied_model(int num_experts, int top_k) {
  const std::vector<std::string> presets = model_presets_fitting(num_experts, top_k);
  if (presets.size() == 1) return presets.front();
  const std::string shape = std::to_string(num_experts) + " experts" +
                            (top_k > 0 ? " and top-" + std::to_string(top_k) : "");
  throw InputError(
      "--model", "not given, and " + (presets.empty() ? "no preset has " + shape +
                                                            ": pass a file (topoep model show "
                                                            "deepseek-v3 --json gives one to edit)"
                                                      : "the presets with " + shape + " are " +
                                                            join_names(presets) + ": name one"));
}

}  // namespace topoep
