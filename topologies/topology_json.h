#pragma once
// Reading and writing topology files (JSON; schema in topologies/README.md).

#include <nlohmann/json.hpp>
#include <string>

#include "topologies/topology.h"

namespace topoep {

// Parses and validates a topology. `origin` (a path or "preset:NAME") names the source in
// errors. Throws FileInputError naming the field for: invalid JSON, a missing or unknown field,
// a wrong type, a non-positive size or bandwidth, achieved bandwidth above spec, negative
// latency, total_gpus not divisible by gpus_per_node or disagreeing with nodes, and an
// efficiency curve that is empty, unsorted, of unequal lengths or outside (0, 1].
Topology parse_topology(const std::string& text, const std::string& origin);

// The canonical JSON form (parse_topology(to_json(t).dump()) == t); `nodes` is written,
// `total_gpus` is not.
nlohmann::json topology_to_json(const Topology& topology);

}  // namespace topoep
