#include "solver/plan_validator.h"

#include <string>

namespace topoep {
namespace {

using std::to_string;

std::string slot_name(RankId rank, int slot) {
  return "rank " + to_string(rank) + " slot " + to_string(slot);
}

std::string route_name(std::size_t index, const Route& route) {
  return "route " + to_string(index) + " (src " + to_string(route.src) + ", expert " +
         to_string(route.expert) + ", dst " + to_string(route.dst) + ", tokens " +
         to_string(route.tokens) + ")";
}

std::optional<PlanViolation> check_shapes(const RoutingCounts& counts, const Placement& placement,
                                          const Plan& plan) {
  auto mismatch = [](const std::string& what) {
    return PlanViolation{PlanViolationKind::kShapeMismatch, what};
  };
  if (plan.num_ranks != counts.num_ranks() || plan.num_ranks != placement.num_ranks) {
    return mismatch("plan has " + to_string(plan.num_ranks) + " ranks, counts " +
                    to_string(counts.num_ranks()) + ", placement " +
                    to_string(placement.num_ranks));
  }
  if (plan.num_experts != counts.num_experts() || plan.num_experts != placement.num_experts()) {
    return mismatch("plan has " + to_string(plan.num_experts) + " experts, counts " +
                    to_string(counts.num_experts()) + ", placement " +
                    to_string(placement.num_experts()));
  }
  if (plan.slots_per_rank != placement.slots_per_rank) {
    return mismatch("plan has " + to_string(plan.slots_per_rank) +
                    " spare slots per rank, placement " + to_string(placement.slots_per_rank));
  }
  const std::size_t num_slots = static_cast<std::size_t>(plan.num_ranks) * plan.slots_per_rank;
  if (plan.replica_expert.size() != num_slots) {
    return mismatch("plan lists " + to_string(plan.replica_expert.size()) +
                    " slots, expected ranks x slots_per_rank = " + to_string(num_slots));
  }
  return std::nullopt;
}

// Fills `hosts` ([ranks][experts]: rank holds an instance of expert) while checking replicas.
std::optional<PlanViolation> check_replicas(const Placement& placement, const Plan& plan,
                                            std::vector<char>& hosts) {
  const int num_experts = plan.num_experts;
  for (int expert = 0; expert < num_experts; ++expert) {
    hosts[static_cast<std::size_t>(placement.home_rank[expert]) * num_experts + expert] = 1;
  }
  for (RankId rank = 0; rank < plan.num_ranks; ++rank) {
    ExpertId previous = kNoExpert;
    for (int slot = 0; slot < plan.slots_per_rank; ++slot) {
      const ExpertId expert = plan.replica_at(rank, slot);
      if (expert < kNoExpert || expert >= num_experts) {
        return PlanViolation{PlanViolationKind::kReplicaOutOfRange,
                             slot_name(rank, slot) + " holds expert " + to_string(expert) +
                                 ", outside [-1, " + to_string(num_experts) + ")"};
      }
      if (expert == kNoExpert) {
        previous = kNoExpert;
        continue;
      }
      if (placement.home_rank[expert] == rank) {
        return PlanViolation{PlanViolationKind::kReplicaOnHomeRank,
                             slot_name(rank, slot) + " holds a replica of expert " +
                                 to_string(expert) + ", whose home is this rank"};
      }
      char& hosted = hosts[static_cast<std::size_t>(rank) * num_experts + expert];
      if (hosted) {
        return PlanViolation{
            PlanViolationKind::kDuplicateReplica,
            slot_name(rank, slot) + " holds a second replica of expert " + to_string(expert)};
      }
      if (slot > 0 && (previous == kNoExpert || previous > expert)) {
        return PlanViolation{PlanViolationKind::kReplicaOrder,
                             slot_name(rank, slot) + " holds expert " + to_string(expert) +
                                 " after " +
                                 (previous == kNoExpert ? std::string("an empty slot")
                                                        : "expert " + to_string(previous)) +
                                 "; filled slots come first, in ascending expert order"};
      }
      hosted = 1;
      previous = expert;
    }
  }
  return std::nullopt;
}

std::optional<PlanViolation> check_routes(const RoutingCounts& counts, const Plan& plan,
                                          const std::vector<char>& hosts) {
  const int num_experts = plan.num_experts;
  std::vector<TokenCount> assigned(static_cast<std::size_t>(plan.num_ranks) * num_experts, 0);
  for (std::size_t i = 0; i < plan.routes.size(); ++i) {
    const Route& route = plan.routes[i];
    if (route.src < 0 || route.src >= plan.num_ranks || route.dst < 0 ||
        route.dst >= plan.num_ranks || route.expert < 0 || route.expert >= num_experts) {
      return PlanViolation{PlanViolationKind::kRouteOutOfRange,
                           route_name(i, route) + " lies outside " + to_string(plan.num_ranks) +
                               " ranks x " + to_string(num_experts) + " experts"};
    }
    if (route.tokens <= 0) {
      return PlanViolation{PlanViolationKind::kNonPositiveRoute,
                           route_name(i, route) + " must carry a positive token count"};
    }
    if (i > 0 && !route_before(plan.routes[i - 1], route)) {
      return PlanViolation{PlanViolationKind::kRouteOrder,
                           route_name(i, route) + " does not come strictly after " +
                               route_name(i - 1, plan.routes[i - 1])};
    }
    if (!hosts[static_cast<std::size_t>(route.dst) * num_experts + route.expert]) {
      return PlanViolation{PlanViolationKind::kRouteToNonInstance,
                           route_name(i, route) + ": rank " + to_string(route.dst) +
                               " holds no instance of expert " + to_string(route.expert)};
    }
    assigned[static_cast<std::size_t>(route.src) * num_experts + route.expert] += route.tokens;
  }
  for (RankId src = 0; src < plan.num_ranks; ++src) {
    for (ExpertId expert = 0; expert < num_experts; ++expert) {
      const TokenCount got = assigned[static_cast<std::size_t>(src) * num_experts + expert];
      if (got != counts.at(src, expert)) {
        return PlanViolation{PlanViolationKind::kTokensNotConserved,
                             "src " + to_string(src) + ", expert " + to_string(expert) +
                                 ": routes assign " + to_string(got) + " tokens, counts hold " +
                                 to_string(counts.at(src, expert))};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(PlanViolationKind kind) {
  switch (kind) {
    case PlanViolationKind::kShapeMismatch:
      return "shape_mismatch";
    case PlanViolationKind::kReplicaOutOfRange:
      return "replica_out_of_range";
    case PlanViolationKind::kReplicaOnHomeRank:
      return "replica_on_home_rank";
    case PlanViolationKind::kDuplicateReplica:
      return "duplicate_replica";
    case PlanViolationKind::kReplicaOrder:
      return "replica_order";
    case PlanViolationKind::kRouteOutOfRange:
      return "route_out_of_range";
    case PlanViolationKind::kNonPositiveRoute:
      return "non_positive_route";
    case PlanViolationKind::kRouteOrder:
      return "route_order";
    case PlanViolationKind::kRouteToNonInstance:
      return "route_to_non_instance";
    case PlanViolationKind::kTokensNotConserved:
      return "tokens_not_conserved";
    case PlanViolationKind::kLoadMismatch:
      return "load_mismatch";
  }
  return "unknown";
}

std::optional<PlanViolation> find_plan_violation(const RoutingCounts& counts,
                                                 const Placement& placement, const Plan& plan,
                                                 const std::vector<TokenCount>* reported_loads) {
  if (auto violation = check_shapes(counts, placement, plan)) return violation;
  std::vector<char> hosts(static_cast<std::size_t>(plan.num_ranks) * plan.num_experts, 0);
  if (auto violation = check_replicas(placement, plan, hosts)) return violation;
  if (auto violation = check_routes(counts, plan, hosts)) return violation;
  if (reported_loads != nullptr) {
    const std::vector<TokenCount> loads = rank_loads(plan);
    if (reported_loads->size() != loads.size()) {
      return PlanViolation{PlanViolationKind::kLoadMismatch,
                           "reported loads list " + to_string(reported_loads->size()) +
                               " ranks, the plan has " + to_string(loads.size())};
    }
    for (std::size_t rank = 0; rank < loads.size(); ++rank) {
      if ((*reported_loads)[rank] != loads[rank]) {
        return PlanViolation{PlanViolationKind::kLoadMismatch,
                             "rank " + to_string(rank) + ": reported load " +
                                 to_string((*reported_loads)[rank]) +
                                 " tokens, the plan's routes give " + to_string(loads[rank])};
      }
    }
  }
  return std::nullopt;
}

}  // namespace topoep
