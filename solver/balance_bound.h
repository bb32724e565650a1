#pragma once
// A lower bound on the straggler's token load that any plan with S spare slots per rank can
// reach, so a planner's balance can be reported against what is achievable, not only against
// the perfect mean.

#include "solver/placement.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"

namespace topoep {

// The largest of three necessary conditions on the maximum rank load L of any valid plan that,
// like TopoEP's, never adds IB traffic:
//  1. L >= ceil(total / R): someone carries at least the mean;
//  2. replicas: the R x S slots must hold the replicas that every home rank needs: enough that
//     no instance exceeds L (ceil(T_e / L) - 1 per expert), and enough of its experts' replicas,
//     each carrying at most min(T_e, L), to take the home rank's load above L away;
//  3. locality: tokens that a node sends to experts homed in that node cannot leave the node,
//     so L >= ceil(those tokens / G) for every node.
// With S = 0 it is the static plan's maximum load, which is then exact. It is a bound: the
// best plan may need more.
TokenCount balance_lower_bound(const RoutingCounts& counts, const TopologyView& topology,
                               const Placement& placement);

}  // namespace topoep
