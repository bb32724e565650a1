#pragma once
// Routing counts for one or more layers as JSON: {"counts": [[...E...], ...R rows]} for one
// layer, or {"layers": [<R x E>, ...]} for several (the `topoep solve --counts` format).

#include <string>
#include <vector>

#include "solver/routing_counts.h"

namespace topoep {

// Throws FileInputError naming the file and the field (e.g. "layers[2][5][17]") for invalid
// JSON, neither or both of counts/layers, ragged rows, layers of different shapes, and counts
// that are negative, fractional or not numbers.
std::vector<RoutingCounts> read_counts_json(const std::string& path);

}  // namespace topoep
