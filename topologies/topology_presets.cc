#include "topologies/topology_presets.h"

#include <vector>

#include "common/json_fields.h"
#include "common/preset_source.h"
#include "tools/build_defs/embedded_file.h"
#include "topologies/topology_json.h"

namespace topoep {

// Defined by the generated library //topologies:embedded_presets.
const std::vector<EmbeddedFile>& embedded_topology_presets();

std::vector<std::string> topology_preset_names() {
  return preset_names(embedded_topology_presets());
}

std::vector<std::string> topology_presets_with_gpus(int num_gpus) {
  std::vector<std::string> fitting;
  for (const std::string& name : topology_preset_names()) {
    if (load_topology(name).num_gpus() == num_gpus) fitting.push_back(name);
  }
  return fitting;
}

Topology load_topology_file(const std::string& path) {
  return parse_topology(read_text_file(path), path);
}

Topology load_topology(const std::string& preset_or_path) {
  const PresetSource source =
      resolve_preset_or_file(embedded_topology_presets(), preset_or_path, "topology");
  return parse_topology(source.text, source.origin);
}

}  // namespace topoep
