// The static planner and the TopoEP planner behind the Planner interface.
#include "solver/planners/basic_planners.h"

#include <algorithm>
#include <cmath>

#include "solver/gradient_chains.h"
#include "solver/static_plan.h"

namespace topoep {

PlannerDecision StaticPlanner::plan(const RecordId&, const RoutingCounts& counts) {
  return PlannerDecision{context_.placement, static_plan(counts, context_.placement), {}, {}};
}

TopoepPlanner::TopoepPlanner(const PlannerContext& context, const PlannerOptions& options)
    : problem_{context.topology, context.placement, context.cost, 0},
      solver_(problem_),
      solve_ps_(static_cast<Picoseconds>(std::llround(options.topoep_solve_us * 1e6))),
      holders_(static_cast<std::size_t>(context.placement.num_experts())) {}

PlannerDecision TopoepPlanner::plan(const RecordId& record, const RoutingCounts& counts) {
  // Replicas placed by earlier microbatches of the same step stay resident (free to keep); a
  // new step starts from the home layout.
  if (record.step != step_) {
    step_ = record.step;
    resident_.clear();
    for (const ExpertId expert : chained_) holders_[expert].clear();
    chained_.clear();
  }
  // The replicas the last record ran with are now part of the step's gradient reduction.
  note_used(resident_);
  count_owed();
  PlannerDecision decision;
  decision.placement = problem_.placement;
  decision.resident = resident_;
  check_topoep_inputs(problem_, counts, resident_, owed_);
  solver_.solve(counts, resident_, &decision.plan, owed_);
  decision.overhead.host_ps = solve_ps_;  // on the GPU, in the layer's stream: no host sync
  last_resident_ = std::move(resident_);
  resident_ = decision.plan.replica_expert;
  return decision;
}

bool TopoepPlanner::static_fallback(PlannerDecision* out) const {
  // Every token home; the replicas the record started with stay, idle and free.
  *out = PlannerDecision{problem_.placement, static_layout(problem_.placement), last_resident_, {}};
  out->overhead.host_ps = solve_ps_;  // the solve ran either way
  if (!last_resident_.empty()) out->plan.replica_expert = last_resident_;
  return true;
}

void TopoepPlanner::ran_fallback(const PlannerDecision& fallback) {
  resident_ = fallback.plan.replica_expert;
}

void TopoepPlanner::note_used(const std::vector<ExpertId>& replicas) {
  const int slots = problem_.placement.slots_per_rank;
  for (std::size_t j = 0; j < replicas.size(); ++j) {
    const ExpertId expert = replicas[j];
    if (expert == kNoExpert) continue;
    std::vector<RankId>& ranks = holders_[expert];
    const RankId rank = static_cast<RankId>(j / slots);
    const auto at = std::lower_bound(ranks.begin(), ranks.end(), rank);
    if (at != ranks.end() && *at == rank) continue;
    if (ranks.empty()) chained_.push_back(expert);
    ranks.insert(at, rank);
  }
}

void TopoepPlanner::count_owed() {
  owed_.clear();
  // Nothing owed, or gradients that cost nothing: the solver charges new replicas from zero.
  if (chained_.empty() || problem_.cost.replica_gradient_bytes == 0) return;
  owed_.assign(4 * static_cast<std::size_t>(problem_.topology.num_ranks()), 0);
  GradientHops hops;
  for (const ExpertId expert : chained_) {
    const std::vector<RankId>& ranks = holders_[expert];
    add_gradient_chain(problem_.placement.home_rank[expert], ranks.data(),
                       static_cast<int>(ranks.size()), problem_.topology, owed_.data(), hops);
  }
}

}  // namespace topoep
