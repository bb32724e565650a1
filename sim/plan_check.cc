#include "sim/plan_check.h"

#include <optional>
#include <stdexcept>

#include "solver/plan_validator.h"

namespace topoep {

void check_priced_plan(const std::string& where, const RoutingCounts& counts,
                       const PlannerDecision& decision, const std::vector<TokenCount>& loads) {
  const std::optional<PlanViolation> violation =
      find_plan_violation(counts, decision.placement, decision.plan, &loads);
  if (!violation) return;
  throw std::runtime_error("plan check: " + where + ": " + to_string(violation->kind) + ": " +
                           violation->message);
}

}  // namespace topoep
