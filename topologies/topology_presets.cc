#include "topologies/topology_presets.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include "common/json_fields.h"
#include "tools/build_defs/embedded_file.h"
#include "topologies/topology_json.h"

namespace topoep {

// Defined by the generated library //topologies:embedded_presets.
const std::vector<EmbeddedFile>& embedded_topology_presets();

std::vector<std::string> topology_preset_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : embedded_topology_presets()) names.emplace_back(file.name);
  std::sort(names.begin(), names.end());
  return names;
}

Topology load_topology_file(const std::string& path) {
  return parse_topology(read_text_file(path), path);
}

Topology load_topology(const std::string& preset_or_path) {
  if (std::ifstream(preset_or_path).good()) return load_topology_file(preset_or_path);
  for (const EmbeddedFile& file : embedded_topology_presets()) {
    if (file.name == preset_or_path) {
      return parse_topology(std::string(file.text), "preset:" + preset_or_path);
    }
  }
  std::string known;
  for (const std::string& name : topology_preset_names())
    known += (known.empty() ? "" : ", ") + name;
  throw FileInputError(preset_or_path, "",
                       "no such file, and not a topology preset (presets: " + known + ")");
}

}  // namespace topoep
