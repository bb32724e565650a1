#pragma once
// The topology preset that routing implies when --topology is not given: the one preset with
// its ranks as GPUs, chosen only where exactly one fits; otherwise the flag is asked for (with a
// reshape that fits where no preset does). (The
// model's twin, implied_model_preset(), is in models/model_json.h: sweeps use it too.)

#include <string>
#include <vector>

#include "common/text_list.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"

namespace topoep {

// The topology preset with `num_gpus` GPUs. Throws InputError naming --topology where none or
// several have them.
inline std::string implied_topology(int num_gpus) {
  const std::vector<std::string> presets = topology_presets_with_gpus(num_gpus);
  if (presets.size() == 1) return presets.front();
  const std::string gpus = std::to_string(num_gpus) + " GPUs";
  if (!presets.empty()) {
    throw InputError("--topology", "not given, and the presets with " + gpus + " are " +
                                       spoken_list(presets) + ": name one");
  }
  // The paper's cluster, on as many 8-GPU nodes as the routing has ranks where that divides.
  const std::string reshape = num_gpus % 8 == 0
                                  ? "--nodes " + std::to_string(num_gpus / 8)
                                  : "--nodes 1 --gpus-per-node " + std::to_string(num_gpus);
  throw InputError("--topology", "not given, and no preset has " + gpus +
                                     ": reshape one (--topology h800-4x8 " + reshape +
                                     ") or pass a file (topoep topology show h800-4x8 " + reshape +
                                     " --json gives one to edit)");
}

}  // namespace topoep
