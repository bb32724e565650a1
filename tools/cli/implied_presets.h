#pragma once
// The topology preset that routing implies when --topology is not given: the one preset with
// its ranks as GPUs, chosen only where exactly one fits; otherwise the flag is asked for, with a
// reshape that fits where no preset does. (The model's twin, implied_model_preset(), is in
// models/model_json.h: sweeps use it too.)

#include <string>
#include <vector>

#include "common/text_list.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"

namespace topoep {

// The flags that run routing over `num_gpus` ranks, `gpus_per_node` to a node (the trace's own
// layout; 8 where the routing does not say), on the paper's H800 cluster reshaped to it:
// "--topology h800-4x8 --nodes 2", with "--gpus-per-node G" where G is not the preset's 8.
inline std::string h800_reshape_flags(int num_gpus, int gpus_per_node = 8) {
  if (gpus_per_node < 1 || num_gpus % gpus_per_node != 0) gpus_per_node = num_gpus;
  return "--topology h800-4x8 --nodes " + std::to_string(num_gpus / gpus_per_node) +
         (gpus_per_node != 8 ? " --gpus-per-node " + std::to_string(gpus_per_node) : "");
}

// The topology preset with `num_gpus` GPUs. Throws InputError naming --topology where none or
// several have them; where none does, it names the reshape of h800-4x8 to `gpus_per_node` GPUs
// a node that fits.
inline std::string implied_topology(int num_gpus, int gpus_per_node = 8) {
  const std::vector<std::string> presets = topology_presets_with_gpus(num_gpus);
  if (presets.size() == 1) return presets.front();
  const std::string gpus = std::to_string(num_gpus) + " GPUs";
  if (!presets.empty()) {
    throw InputError("--topology", "not given, and the presets with " + gpus + " are " +
                                       spoken_list(presets) + ": name one");
  }
  const std::string reshape = h800_reshape_flags(num_gpus, gpus_per_node);
  const std::string show = reshape.substr(std::string("--topology ").size());
  throw InputError("--topology", "not given, and no preset has " + gpus + ": reshape one (" +
                                     reshape + ") or pass a file (topoep topology show " + show +
                                     " --json gives one to edit)");
}

}  // namespace topoep
