#pragma once
// static: no balancing. topoep: the TopoEP solver each microbatch, keeping the replicas of
// earlier microbatches of the same step as resident (free) instances, and telling it which
// replicas those microbatches used: their gradients are reduced with this one's.

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

// TopoEP's solve on the critical path per layer and microbatch: PlannerOptions::topoep_solve_us,
// or none without spare slots (every plan is then the static one: a deployment launches no solve).
Picoseconds topoep_solve_ps(const Placement& placement, const PlannerOptions& options);

class TopoepPlanner : public Planner {
 public:
  TopoepPlanner(const PlannerContext& context, const PlannerOptions& options);
  std::string name() const override { return "topoep"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;
  // The static routing, keeping the replicas resident before the last record idle (free).
  bool static_fallback(PlannerDecision* out) const override;
  void ran_fallback(const PlannerDecision& fallback) override;
  bool last_kept_moves(KeptMoves* out) const override {
    *out = solver_.last_kept_moves();
    return true;
  }

 private:
  TopoepProblem problem_;
  int microbatches_per_step_;
  bool routes_;              // PlannerContext::routes: false, only slots and the tally
  int replica_uses_max_;     // PlannerOptions::topoep_replica_uses
  TopoepHostSolver solver_;  // in its thread's workspace: a replay holds one planner per layer
  Picoseconds solve_ps_;
  // Adds the replicas of `replicas` ([R][S]) to the step's owed holders.
  void note_used(const std::vector<ExpertId>& replicas);

  int step_ = -1;
  std::vector<ExpertId> resident_;       // replicas in place for the next record
  std::vector<ExpertId> last_resident_;  // ... and those the last record started with
  PlanTally static_tally_;               // the last record's static plan, summed
  // [E][R] owed holders (phase_times.h): the replicas the step's records so far ran with, whose
  // gradients the step-end reduction reduces; empty while there are none (or gradients are
  // free)
  std::vector<std::uint8_t> owed_;
};

}  // namespace topoep
