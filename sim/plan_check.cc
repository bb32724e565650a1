#include "sim/plan_check.h"

#include <optional>
#include <stdexcept>

#include "solver/plan_validator.h"

namespace topoep {

void check_priced_plan(const std::string& planner, const TraceRecord& record,
                       const PlannerDecision& decision, const LayerCost& cost) {
  const std::optional<PlanViolation> violation =
      find_plan_violation(record.counts, decision.placement, decision.plan, &cost.loads);
  if (!violation) return;
  throw std::runtime_error(
      "plan check: planner '" + planner + "', step " + std::to_string(record.step) +
      " microbatch " + std::to_string(record.microbatch) + " layer " +
      std::to_string(record.layer) + ": " + to_string(violation->kind) + ": " + violation->message);
}

}  // namespace topoep
