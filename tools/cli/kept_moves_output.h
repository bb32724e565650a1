#pragma once
// `topoep solve --explain`: the moves a TopoEP plan keeps, for people (a table per layer) and
// for machines (JSON), from TopoepHostSolver::last_kept_moves().

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "solver/topoep_solver.h"

namespace topoep {

// {"run": "first"|"seeded"|"opened", "moves": [{"phase": "greedy"|"ib", "expert", "tokens",
// "from_rank", "from": "home"|"replica", "to_rank", "to": "home"|"replica"|"new replica",
// "ib_delta", "gain_us"}, ...]} in the order the search made them.
nlohmann::json kept_moves_json(const KeptMoves& kept);

// "<record>: N moves ..." and a table of the moves, ranks shown with their node (G GPUs per
// node); `record` names the layer, e.g. "layer 3".
void print_kept_moves(const KeptMoves& kept, const std::string& record, int gpus_per_node,
                      std::ostream& out);

}  // namespace topoep
