#pragma once
// static: no balancing. topoep: the TopoEP solver each microbatch, keeping the replicas of
// earlier microbatches of the same step as resident (free) instances, and telling it the
// replica gradients those microbatches already owe.

#include "solver/planners/planner.h"
#include "solver/topoep_solver.h"

namespace topoep {

class StaticPlanner : public Planner {
 public:
  explicit StaticPlanner(const PlannerContext& context) : context_(context) {}
  std::string name() const override { return "static"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;

 private:
  PlannerContext context_;
};

class TopoepPlanner : public Planner {
 public:
  TopoepPlanner(const PlannerContext& context, const PlannerOptions& options);
  std::string name() const override { return "topoep"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;
  // The static routing, keeping the replicas resident before the last record idle (free).
  bool static_fallback(PlannerDecision* out) const override;
  void ran_fallback(const PlannerDecision& fallback) override;

 private:
  TopoepProblem problem_;
  TopoepHostSolver solver_;  // its workspace, reused every record
  Picoseconds solve_ps_;
  // Adds the replicas of `replicas` ([R][S]) to the step's gradient chains.
  void note_used(const std::vector<ExpertId>& replicas);
  // The step's gradient chains so far as the solver's input (owed gradients, phase_times.h), or
  // empty.
  void count_owed();

  int step_ = -1;
  std::vector<ExpertId> resident_;       // replicas in place for the next record
  std::vector<ExpertId> last_resident_;  // ... and those the last record started with
  // Per expert, the ranks whose replica of it a record of this step ran with (ascending): the
  // step-end reduction reduces each (solver/gradient_chains.h).
  std::vector<std::vector<RankId>> holders_;
  std::vector<ExpertId> chained_;   // the experts with holders this step
  std::vector<std::int32_t> owed_;  // [4][R], or empty: nothing owed
};

}  // namespace topoep
