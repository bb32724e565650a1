#pragma once
// The presets that routing implies when --model or --topology is not given: the one model
// preset with its experts and top-k, the one topology preset with its ranks as GPUs. Either is
// chosen only where exactly one preset fits; otherwise the flag is asked for.

#include <string>
#include <vector>

#include "common/text_list.h"
#include "models/model_json.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"

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
                                                            spoken_list(presets) + ": name one"));
}

// The topology preset with `num_gpus` GPUs. Throws InputError naming --topology where none or
// several have them.
inline std::string implied_topology(int num_gpus) {
  const std::vector<std::string> presets = topology_presets_with_gpus(num_gpus);
  if (presets.size() == 1) return presets.front();
  const std::string gpus = std::to_string(num_gpus) + " GPUs";
  throw InputError(
      "--topology",
      "not given, and " + (presets.empty() ? "no preset has " + gpus +
                                                 ": pass a file (topoep topology show h800-4x8 "
                                                 "--json gives one to edit)"
                                           : "the presets with " + gpus + " are " +
                                                 spoken_list(presets) + ": name one"));
}

}  // namespace topoep
