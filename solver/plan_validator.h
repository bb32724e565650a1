#pragma once
// Checks a plan against every invariant of DESIGN.md and reports the first violation.

#include <optional>
#include <string>
#include <vector>

#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/routing_counts.h"

namespace topoep {

enum class PlanViolationKind {
  kShapeMismatch,       // plan, counts and placement disagree on R, E or S
  kReplicaOutOfRange,   // a slot names an expert outside [-1, E)
  kReplicaOnHomeRank,   // a replica sits on its expert's home rank
  kDuplicateReplica,    // one rank holds two replicas of one expert
  kReplicaOrder,        // a rank's slots are not filled-first in ascending expert order
  kRouteOutOfRange,     // a route names a rank or expert outside the shape
  kNonPositiveRoute,    // a route carries zero or negative tokens
  kRouteOrder,          // routes not strictly ascending by (src, expert, dst)
  kRouteToNonInstance,  // a route's destination holds neither home nor replica of its expert
  kTokensNotConserved,  // a (src, expert) pair's routes do not add up to its count
  kLoadMismatch,        // the reported per-rank loads differ from the plan's
};

// Short stable name of a kind, e.g. "replica_on_home_rank".
const char* to_string(PlanViolationKind kind);

struct PlanViolation {
  PlanViolationKind kind;
  std::string message;  // names the slot, route or rank and the values involved
};

// Returns the first violation, checking in the order of PlanViolationKind (shapes first, so
// later checks can index safely), or nullopt for a valid plan. `reported_loads` ([num_ranks]
// tokens), when given, must equal rank_loads(plan). Replicas that receive no tokens are allowed:
// a replica kept from an earlier microbatch may sit idle.
std::optional<PlanViolation> find_plan_violation(
    const RoutingCounts& counts, const Placement& placement, const Plan& plan,
    const std::vector<TokenCount>* reported_loads = nullptr);

}  // namespace topoep
