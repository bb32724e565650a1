#include <string>

#include "solver/input_error.h"
#include "solver/planners/basic_planners.h"
#include "solver/planners/eplb_planner.h"
#include "solver/planners/shadowing_planner.h"

namespace topoep {

std::vector<std::string> planner_names() {
  return {"topoep", "static", "eplb", "eplb-microbatch", "shadowing"};
}

std::unique_ptr<Planner> make_planner(const std::string& name, const PlannerContext& context,
                                      const PlannerOptions& options) {
  if (options.eplb_period_steps < 1) throw InputError("eplb_period_steps", "must be at least 1");
  if (options.eplb_window_steps < 1) throw InputError("eplb_window_steps", "must be at least 1");
  if (name == "static") return std::make_unique<StaticPlanner>(context);
  if (name == "topoep") return std::make_unique<TopoepPlanner>(context, options);
  if (name == "eplb") return std::make_unique<EplbPlanner>(context, options, false);
  if (name == "eplb-microbatch") return std::make_unique<EplbPlanner>(context, options, true);
  if (name == "shadowing") return std::make_unique<ShadowingPlanner>(context);
  std::string known;
  for (const std::string& planner : planner_names()) known += (known.empty() ? "" : ", ") + planner;
  throw InputError("planner", "unknown planner '" + name + "' (available: " + known + ", ideal)");
}

}  // namespace topoep
