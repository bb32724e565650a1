#pragma once
// Topology presets compiled into the binary (topologies/presets/*.json) and the loader that
// accepts either a preset name or a file path wherever the CLI takes a topology.

#include <string>
#include <vector>

#include "topologies/topology.h"

namespace topoep {

// Preset names in alphabetical order, e.g. "h800-4x8".
std::vector<std::string> topology_preset_names();

// The presets with `num_gpus` GPUs, for messages that suggest one. Alphabetical.
std::vector<std::string> topology_presets_with_gpus(int num_gpus);

// Parses a topology file; errors name the path and the field (see parse_topology).
Topology load_topology_file(const std::string& path);

// A preset when `preset_or_path` is a preset's name and no file of that name exists; otherwise
// the file at that path. Throws FileInputError for an unknown name (listing the presets), an
// unreadable file or invalid contents.
Topology load_topology(const std::string& preset_or_path);

}  // namespace topoep
