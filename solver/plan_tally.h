#pragma once
// What pricing a plan sums from its routes, summed already: a planner that holds these sums
// (the TopoEP solver keeps them as it searches) hands them over with its plan, so that the
// simulator need not walk the routes to price it. Host only.

#include <utility>
#include <vector>

#include "solver/types.h"

namespace topoep {

struct PlanTally {
  // [num_ranks] each, in token assignments: the tokens each rank processes, and those it sends
  // and receives inside its node (NVLink) and across nodes (IB), as add_route_tokens()
  // (phase_times.h) counts a route.
  std::vector<TokenCount> loads, nvlink_out, nvlink_in, ib_out, ib_in;
  // (rank, tokens) of every expert instance that holds tokens, in no particular order.
  std::vector<std::pair<RankId, TokenCount>> instances;

  bool empty() const { return loads.empty(); }
};

}  // namespace topoep
